//! `WWW-Authenticate: Bearer …` parameters (RFC 6750 §3, RFC 9728 §5.1), and those of a
//! `DPoP …` challenge (RFC 9449 §7.1), which carry the same names.

use std::collections::BTreeMap;

/// The parameters of a Bearer (or DPoP) challenge, names lower-cased.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BearerChallenge {
    /// `name → value` with quotes and escapes removed.
    pub params: BTreeMap<String, String>,
}

impl BearerChallenge {
    /// Parses the Bearer challenge out of a header value, else the DPoP one (other
    /// schemes are skipped).
    pub fn parse(header: &str) -> Option<BearerChallenge> {
        let lower = header.to_ascii_lowercase();
        let (at, scheme) = match lower.find("bearer") {
            Some(at) => (at, "bearer"),
            None => (scheme_at(&lower, "dpop")?, "dpop"),
        };
        let mut rest = header[at + scheme.len()..].trim_start();
        let mut params = BTreeMap::new();
        while !rest.is_empty() {
            let Some(eq) = rest.find('=') else { break };
            let name = rest[..eq]
                .trim()
                .trim_start_matches(',')
                .trim()
                .to_ascii_lowercase();
            rest = rest[eq + 1..].trim_start();
            let value;
            if let Some(quoted) = rest.strip_prefix('"') {
                let mut out = String::new();
                let mut chars = quoted.char_indices();
                let mut end = quoted.len();
                while let Some((i, c)) = chars.next() {
                    match c {
                        '\\' => {
                            if let Some((_, escaped)) = chars.next() {
                                out.push(escaped);
                            }
                        }
                        '"' => {
                            end = i + 1;
                            break;
                        }
                        c => out.push(c),
                    }
                }
                value = out;
                rest = &quoted[end.min(quoted.len())..];
            } else {
                let end = rest.find(',').unwrap_or(rest.len());
                value = rest[..end].trim().to_owned();
                rest = &rest[end..];
            }
            // A new scheme starts (e.g. `, Basic realm=…`): stop at it.
            if name.contains(' ') {
                break;
            }
            params.insert(name, value);
            rest = rest.trim_start().trim_start_matches(',').trim_start();
        }
        Some(BearerChallenge { params })
    }

    /// A parameter.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.params.get(name).map(String::as_str)
    }

    /// The scopes named by `scope`, space-separated.
    pub fn scopes(&self) -> Vec<String> {
        self.get("scope")
            .map(|s| s.split_whitespace().map(str::to_owned).collect())
            .unwrap_or_default()
    }
}

/// Where `scheme` starts a challenge in `lower` (the lower-cased header): at the start or
/// after a comma or space, followed by a space, a comma or the end.
fn scheme_at(lower: &str, scheme: &str) -> Option<usize> {
    lower.match_indices(scheme).map(|(at, _)| at).find(|&at| {
        let before = lower[..at].chars().next_back();
        let after = lower[at + scheme.len()..].chars().next();
        matches!(before, None | Some(' ' | ',')) && matches!(after, None | Some(' ' | ','))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_and_plain_parameters() {
        let challenge = BearerChallenge::parse(r#"Bearer resource_metadata="https://a.test/.well-known/oauth-protected-resource", scope="files:read files:write", error=insufficient_scope, error_description="needs \"write\"""#).expect("bearer");
        assert_eq!(
            challenge.get("resource_metadata"),
            Some("https://a.test/.well-known/oauth-protected-resource")
        );
        assert_eq!(challenge.scopes(), ["files:read", "files:write"]);
        assert_eq!(challenge.get("error"), Some("insufficient_scope"));
        assert_eq!(challenge.get("error_description"), Some(r#"needs "write""#));
        assert_eq!(
            BearerChallenge::parse("Bearer").map(|c| c.params.len()),
            Some(0)
        );
        assert!(BearerChallenge::parse("Basic realm=x").is_none());
        let dpop = BearerChallenge::parse(
            r#"DPoP error="use_dpop_nonce", resource_metadata="https://a.test/.well-known/oauth-protected-resource/dpop""#,
        )
        .expect("dpop");
        assert_eq!(dpop.get("error"), Some("use_dpop_nonce"));
        assert_eq!(
            dpop.get("resource_metadata"),
            Some("https://a.test/.well-known/oauth-protected-resource/dpop")
        );
        assert!(BearerChallenge::parse("Basic realm=\"dpop\"").is_none());
    }
}
