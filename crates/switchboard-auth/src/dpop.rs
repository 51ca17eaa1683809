//! DPoP (RFC 9449): one ES256 key per client, generated in memory, never shown, and
//! written only to the private token file with the tokens bound to it; a fresh proof per HTTP request binding its method (`htm`), URL without query
//! or fragment (`htu`), time (`iat`), a unique `jti`, for a resource request the access
//! token's hash (`ath`), and the server's nonce once it has asked for one (§8 at the
//! token endpoint, §9 at the MCP server). The nonces are kept per server role. (The
//! integration tests verify proofs' signatures with the key they carry.)

use std::fmt;
use std::sync::Mutex;

use base64::Engine;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use url::Url;

use crate::error::{AuthError, KeyProblem};
use crate::fetch::{b64url, random_token, unix_now};

/// The JWS algorithm of the proofs.
pub(crate) const ALGORITHM: &str = "ES256";

/// The OAuth error with which a server asks for a nonce.
pub(crate) const USE_DPOP_NONCE: &str = "use_dpop_nonce";

/// Which server a nonce is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NonceFrom {
    /// The authorization server (its token endpoint).
    AuthorizationServer,
    /// The MCP server.
    ResourceServer,
}

/// A client's DPoP key and the nonces servers gave it.
pub(crate) struct Dpop {
    key: EcdsaKeyPair,
    /// The key as PKCS#8, for the token file.
    pkcs8: Vec<u8>,
    rng: SystemRandom,
    /// The public key as a JWK (no private part).
    jwk: Value,
    as_nonce: Mutex<Option<String>>,
    rs_nonce: Mutex<Option<String>>,
}

impl fmt::Debug for Dpop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dpop")
            .field("jwk_thumbprint", &self.thumbprint())
            .finish_non_exhaustive()
    }
}

/// What one proof is for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ProofFor<'a> {
    /// The HTTP method.
    pub(crate) method: &'a str,
    /// The request URL (its query and fragment are left out).
    pub(crate) url: &'a Url,
    /// The access token presented with it, for `ath`.
    pub(crate) access_token: Option<&'a str>,
    /// Whose nonce to include.
    pub(crate) nonce_from: NonceFrom,
}

impl Dpop {
    /// A new key.
    pub(crate) fn generate() -> Result<Dpop, AuthError> {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| AuthError::Key(KeyProblem::SigningFailed))?;
        Dpop::from_pkcs8(pkcs8.as_ref().to_vec())
    }

    /// The key a token file kept ([`Dpop::exported`]).
    pub(crate) fn import(exported: &str) -> Result<Dpop, AuthError> {
        let pkcs8 = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(exported)
            .map_err(|_| AuthError::Key(KeyProblem::NotPem))?;
        Dpop::from_pkcs8(pkcs8)
    }

    /// The key as the token file keeps it: PKCS#8, base64url.
    pub(crate) fn exported(&self) -> String {
        b64url(&self.pkcs8)
    }

    fn from_pkcs8(pkcs8: Vec<u8>) -> Result<Dpop, AuthError> {
        let rng = SystemRandom::new();
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &pkcs8, &rng)
            .map_err(|_| {
                AuthError::Key(KeyProblem::WrongKind {
                    expected: "a P-256",
                })
            })?;
        // Uncompressed point: 0x04, then x and y (32 bytes each).
        let point = key.public_key().as_ref();
        let (x, y) = match point {
            [0x04, rest @ ..] if rest.len() == 64 => rest.split_at(32),
            _ => return Err(AuthError::Key(KeyProblem::SigningFailed)),
        };
        let jwk = json!({"kty": "EC", "crv": "P-256", "x": b64url(x), "y": b64url(y)});
        Ok(Dpop {
            key,
            pkcs8,
            rng,
            jwk,
            as_nonce: Mutex::new(None),
            rs_nonce: Mutex::new(None),
        })
    }

    /// The JWK SHA-256 thumbprint of the public key (RFC 7638), as tokens bound to it
    /// carry in `cnf.jkt`.
    pub(crate) fn thumbprint(&self) -> String {
        let member = |name: &str| self.jwk.get(name).and_then(Value::as_str).unwrap_or("");
        let canonical = format!(
            r#"{{"crv":"{}","kty":"{}","x":"{}","y":"{}"}}"#,
            member("crv"),
            member("kty"),
            member("x"),
            member("y")
        );
        b64url(Sha256::digest(canonical.as_bytes()))
    }

    fn nonce_slot(&self, from: NonceFrom) -> &Mutex<Option<String>> {
        match from {
            NonceFrom::AuthorizationServer => &self.as_nonce,
            NonceFrom::ResourceServer => &self.rs_nonce,
        }
    }

    /// The nonce a server gave, if any.
    pub(crate) fn nonce(&self, from: NonceFrom) -> Option<String> {
        self.nonce_slot(from)
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Keeps a server's nonce; returns whether it differs from the one kept.
    pub(crate) fn set_nonce(&self, from: NonceFrom, nonce: &str) -> bool {
        let mut slot = self
            .nonce_slot(from)
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let changed = slot.as_deref() != Some(nonce);
        *slot = Some(nonce.to_owned());
        changed
    }

    /// A fresh proof for one request.
    pub(crate) fn proof(&self, target: ProofFor<'_>) -> Result<String, AuthError> {
        let mut htu = target.url.clone();
        htu.set_query(None);
        htu.set_fragment(None);
        let mut claims = json!({
            "jti": random_token(18)?,
            "htm": target.method,
            "htu": htu.as_str(),
            "iat": unix_now(),
        });
        if let Some(token) = target.access_token {
            claims["ath"] = json!(b64url(Sha256::digest(token.as_bytes())));
        }
        if let Some(nonce) = self.nonce(target.nonce_from) {
            claims["nonce"] = json!(nonce);
        }
        let header = json!({"typ": "dpop+jwt", "alg": ALGORITHM, "jwk": self.jwk});
        let signing_input = format!(
            "{}.{}",
            b64url(header.to_string()),
            b64url(claims.to_string())
        );
        let signature = self
            .key
            .sign(&self.rng, signing_input.as_bytes())
            .map_err(|_| AuthError::Key(KeyProblem::SigningFailed))?;
        Ok(format!("{signing_input}.{}", b64url(signature.as_ref())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(part: &str) -> Value {
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(part)
            .expect("base64url");
        serde_json::from_slice(&bytes).expect("json")
    }

    #[test]
    fn proofs_have_the_rfc_9449_shape() {
        let dpop = Dpop::generate().expect("key");
        let url = Url::parse("https://mcp.example.test/mcp?x=1#f").expect("url");
        let proof = dpop
            .proof(ProofFor {
                method: "POST",
                url: &url,
                access_token: Some("token-1"),
                nonce_from: NonceFrom::ResourceServer,
            })
            .expect("proof");
        let parts: Vec<&str> = proof.split('.').collect();
        assert_eq!(parts.len(), 3);
        let header = decode(parts[0]);
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert_eq!(header["jwk"]["kty"], "EC");
        assert!(
            header["jwk"].get("d").is_none(),
            "no private key in the proof"
        );
        let claims = decode(parts[1]);
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://mcp.example.test/mcp");
        assert_eq!(
            claims["ath"],
            b64url(Sha256::digest(b"token-1")).as_str(),
            "ath is the token's SHA-256"
        );
        assert!(claims["iat"].as_u64().is_some());
        assert!(claims.get("nonce").is_none());

        // Each proof is fresh; a nonce, once given, is carried.
        assert!(dpop.set_nonce(NonceFrom::ResourceServer, "n-1"));
        assert!(!dpop.set_nonce(NonceFrom::ResourceServer, "n-1"));
        let again = dpop
            .proof(ProofFor {
                method: "GET",
                url: &url,
                access_token: None,
                nonce_from: NonceFrom::ResourceServer,
            })
            .expect("proof");
        let claims_again = decode(again.split('.').nth(1).expect("claims"));
        assert_ne!(claims_again["jti"], claims["jti"]);
        assert_eq!(claims_again["nonce"], "n-1");
        assert_eq!(claims_again["htm"], "GET");
        assert!(dpop.nonce(NonceFrom::AuthorizationServer).is_none());
        assert!(!format!("{dpop:?}").contains(header["jwk"]["x"].as_str().expect("x")));
        let kept = Dpop::import(&dpop.exported()).expect("the key comes back");
        assert_eq!(kept.thumbprint(), dpop.thumbprint());
        assert!(!format!("{dpop:?}").contains(&dpop.exported()));
    }
}
