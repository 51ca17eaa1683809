//! Who a request comes from: [`ClientIdentity`], carried on every request
//! ([`super::ClientFacts::identity`]) and kept with every legacy HTTP session.
//!
//! A transport decides it once per request: stdio has one client, [`ClientIdentity::Local`];
//! over HTTP it is the credential that passed the guard — the static bearer token
//! ([`ClientIdentity::Token`], one token is one client whoever holds it), one of the
//! operator's named tokens ([`ClientIdentity::Client`], known by its name), an OAuth access
//! token's issuer and `sub` ([`ClientIdentity::Subject`], with the token's [`Grants`] —
//! `client_id`, scopes, groups — for a service's policy to read) — or, when the server takes no
//! credentials (or before they were checked), the peer's network address
//! ([`ClientIdentity::Peer`]: an IPv4 address, an IPv6 /64 prefix, since one host commonly
//! holds a whole /64). The HTTP transport counts its per-client limits by it, and a service
//! may scope what it tells clients by it ([`super::ServiceEvent::is_for`]).
//!
//! No identity shows a secret: a token is known by a fingerprint (HMAC-SHA-256 under a key
//! drawn at random once per process, 8 bytes of it), which names the token in logs without
//! allowing a guess at it to be checked offline.

use std::fmt;
use std::net::IpAddr;
use std::sync::{Arc, OnceLock};

/// Who a request comes from.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum ClientIdentity {
    /// The one client of a stdio transport, or an in-process caller.
    Local,
    /// A holder of the server's static bearer token.
    Token(TokenFingerprint),
    /// A holder of one of the operator's named bearer tokens: the token's name.
    Client(Arc<str>),
    /// An OAuth access token's subject: the issuer and its `sub` claim.
    Subject {
        /// `iss`.
        issuer: Arc<str>,
        /// `sub` (empty when the token had none).
        subject: Arc<str>,
        /// What the token grants (not part of who the client is: equal and hashed alike
        /// whatever it holds, so a token refreshed with other scopes is the same client).
        grants: Grants,
    },
    /// A client known only by its address (IPv4; IPv6 cut to its /64 prefix).
    Peer(IpAddr),
}

impl ClientIdentity {
    /// The identity of an unauthenticated peer at `address`: IPv4 (an IPv4-mapped IPv6
    /// address too) as it is, IPv6 cut to its /64 prefix.
    pub fn peer(address: IpAddr) -> ClientIdentity {
        let address = match address {
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => IpAddr::V4(v4),
                None => {
                    let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                    IpAddr::V6(prefix.into())
                }
            },
            v4 => v4,
        };
        ClientIdentity::Peer(address)
    }

    /// Whether the identity comes from a credential (a token or an OAuth subject).
    pub fn is_authenticated(&self) -> bool {
        matches!(
            self,
            ClientIdentity::Token(_) | ClientIdentity::Client(_) | ClientIdentity::Subject { .. }
        )
    }
}

/// What an OAuth access token grants its holder, as its claims say: `client_id` (or
/// `azp`), the scopes (`scope`, space-separated, or `scp`), and the groups and roles
/// (`groups`, `roles`). Read for policy; compared as equal whatever they hold (see
/// [`ClientIdentity::Subject`]).
#[derive(Debug, Clone, Default)]
pub struct Grants(Arc<GrantClaims>);

/// The claims behind [`Grants`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GrantClaims {
    /// `client_id`, else `azp`.
    pub client_id: Option<String>,
    /// `scope` split on spaces, or `scp` (a list).
    pub scopes: Vec<String>,
    /// `groups` and `roles` (lists of strings; a single string counts as one).
    pub groups: Vec<String>,
    /// The access token itself, for a gateway that exchanges it (RFC 8693) at an
    /// upstream's authorization server for a token of that server's own; never shown,
    /// never sent to a server.
    pub presented: Option<PresentedToken>,
}

/// An access token as its client presented it. Its `Debug` hides it.
#[derive(Clone, PartialEq, Eq)]
pub struct PresentedToken(Arc<str>);

impl PresentedToken {
    /// The token `text`.
    pub fn new(text: &str) -> PresentedToken {
        PresentedToken(Arc::from(text))
    }

    /// The token, for the one request that needs it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for PresentedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PresentedToken(<redacted>)")
    }
}

impl Grants {
    /// Grants holding `claims`.
    pub fn new(claims: GrantClaims) -> Grants {
        Grants(Arc::new(claims))
    }

    /// The claims.
    pub fn claims(&self) -> &GrantClaims {
        &self.0
    }
}

impl PartialEq for Grants {
    fn eq(&self, _other: &Grants) -> bool {
        true
    }
}

impl Eq for Grants {}

impl std::hash::Hash for Grants {
    fn hash<H: std::hash::Hasher>(&self, _state: &mut H) {}
}

impl fmt::Debug for ClientIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for ClientIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientIdentity::Local => f.write_str("local"),
            ClientIdentity::Token(fingerprint) => write!(f, "token {fingerprint}"),
            ClientIdentity::Client(name) => {
                write!(f, "client {}", switchboard_text::peer_text::PeerLine(name))
            }
            ClientIdentity::Subject {
                issuer, subject, ..
            } => write!(
                f,
                "subject {} of {}",
                switchboard_text::peer_text::PeerLine(subject),
                switchboard_text::peer_text::PeerLine(issuer)
            ),
            ClientIdentity::Peer(IpAddr::V6(prefix)) => write!(f, "peer {prefix}/64"),
            ClientIdentity::Peer(address) => write!(f, "peer {address}"),
        }
    }
}

/// A token's fingerprint: 8 bytes of HMAC-SHA-256 of the token under this process's key.
/// Equal for equal tokens within a process; says nothing about the token.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TokenFingerprint([u8; 8]);

impl TokenFingerprint {
    /// The fingerprint of `token`.
    pub fn of(token: &[u8]) -> TokenFingerprint {
        let tag = ring::hmac::sign(process_key(), token);
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&tag.as_ref()[..8]);
        TokenFingerprint(bytes)
    }
}

impl fmt::Display for TokenFingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for byte in self.0 {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for TokenFingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TokenFingerprint({self})")
    }
}

/// The key fingerprints are made under, drawn once per process (from the operating
/// system's random source; should it fail, from the clock and the process id, which
/// still keeps fingerprints from being precomputed).
fn process_key() -> &'static ring::hmac::Key {
    static KEY: OnceLock<ring::hmac::Key> = OnceLock::new();
    KEY.get_or_init(|| {
        let mut bytes = [0u8; 32];
        if getrandom::fill(&mut bytes).is_err() {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |elapsed| elapsed.as_nanos());
            bytes[..16].copy_from_slice(&now.to_le_bytes());
            bytes[16..20].copy_from_slice(&std::process::id().to_le_bytes());
        }
        ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &bytes)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_known_by_a_fingerprint_only() {
        let token = ClientIdentity::Token(TokenFingerprint::of(b"s3cret-token"));
        let shown = format!("{token:?} {token}");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert_eq!(
            token,
            ClientIdentity::Token(TokenFingerprint::of(b"s3cret-token"))
        );
        assert_ne!(token, ClientIdentity::Token(TokenFingerprint::of(b"other")));
        assert!(token.is_authenticated());
    }

    #[test]
    fn peers_are_addresses_and_ipv6_prefixes() {
        let peer = |text: &str| ClientIdentity::peer(text.parse().expect("an address"));
        assert_eq!(peer("10.0.0.1"), peer("::ffff:10.0.0.1"));
        assert_eq!(peer("2001:db8::1"), peer("2001:db8::ffff:1"));
        assert_ne!(peer("2001:db8::1"), peer("2001:db8:0:1::1"));
        assert_eq!(peer("2001:db8::1").to_string(), "peer 2001:db8::/64");
        assert!(!peer("127.0.0.1").is_authenticated());
    }
}
