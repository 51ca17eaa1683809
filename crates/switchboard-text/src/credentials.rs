//! Credential-looking strings in text a peer controls (a tool's description, a prompt, an
//! instructions block): API keys and tokens by their known prefixes, JSON Web Tokens,
//! bearer tokens, private key blocks, and `password=…`-style assignments. Used to warn
//! about them (the checker's `no-credentials` check, the runtime's description lint) and to
//! hide them from reports. A match names what the string looks like and its length, never
//! the string.

/// One credential-looking span in a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialMatch {
    /// What it looks like.
    pub kind: &'static str,
    /// Byte range in the text.
    pub start: usize,
    pub end: usize,
}

impl CredentialMatch {
    /// A description that does not reveal the value.
    pub fn describe(&self) -> String {
        format!("{} ({} characters)", self.kind, self.end - self.start)
    }
}

fn is_token_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// Length of the run of bytes from `start` satisfying `pred`.
fn run(bytes: &[u8], start: usize, pred: impl Fn(u8) -> bool) -> usize {
    bytes[start.min(bytes.len())..]
        .iter()
        .take_while(|b| pred(**b))
        .count()
}

/// Prefixed tokens: (prefix, kind, minimum length of the part after the prefix, allowed chars).
/// Which bytes may follow a prefix.
type Allowed = fn(u8) -> bool;

const PREFIXED: &[(&str, &str, usize, Allowed)] = &[
    ("AKIA", "an AWS access key id", 16, |b| {
        b.is_ascii_uppercase() || b.is_ascii_digit()
    }),
    ("ASIA", "an AWS temporary access key id", 16, |b| {
        b.is_ascii_uppercase() || b.is_ascii_digit()
    }),
    ("ghp_", "a GitHub token", 30, |b| b.is_ascii_alphanumeric()),
    ("gho_", "a GitHub token", 30, |b| b.is_ascii_alphanumeric()),
    ("ghu_", "a GitHub token", 30, |b| b.is_ascii_alphanumeric()),
    ("ghs_", "a GitHub token", 30, |b| b.is_ascii_alphanumeric()),
    ("ghr_", "a GitHub token", 30, |b| b.is_ascii_alphanumeric()),
    ("github_pat_", "a GitHub token", 22, |b| {
        b.is_ascii_alphanumeric() || b == b'_'
    }),
    ("xoxb-", "a Slack token", 10, is_token_char),
    ("xoxp-", "a Slack token", 10, is_token_char),
    ("xoxa-", "a Slack token", 10, is_token_char),
    ("xoxr-", "a Slack token", 10, is_token_char),
    ("xoxs-", "a Slack token", 10, is_token_char),
    ("sk-", "an API secret key", 20, is_token_char),
    ("sk_live_", "a Stripe secret key", 16, |b| {
        b.is_ascii_alphanumeric()
    }),
    ("sk_test_", "a Stripe secret key", 16, |b| {
        b.is_ascii_alphanumeric()
    }),
    ("rk_live_", "a Stripe restricted key", 16, |b| {
        b.is_ascii_alphanumeric()
    }),
    ("AIza", "a Google API key", 30, is_token_char),
];

/// Words that introduce a secret in `word=value` or `word: value` form.
const SECRET_WORDS: &[&str] = &[
    "password",
    "passwd",
    "pwd",
    "secret",
    "api_key",
    "apikey",
    "api-key",
    "access_token",
    "auth_token",
    "client_secret",
    "private_key",
    "token",
];

/// Every credential-looking span in `text`, in order, not overlapping.
pub fn find_credentials(text: &str) -> Vec<CredentialMatch> {
    let bytes = text.as_bytes();
    let lower = text.to_ascii_lowercase();
    let lower = lower.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let boundary = i == 0 || !is_token_char(bytes[i - 1]);
        if let Some(m) = boundary.then(|| match_at(bytes, lower, i)).flatten() {
            i = m.end.max(i + 1);
            found.push(m);
        } else {
            i += 1;
        }
    }
    found
}

fn match_at(bytes: &[u8], lower: &[u8], i: usize) -> Option<CredentialMatch> {
    let rest = &bytes[i..];
    for (prefix, kind, min, allowed) in PREFIXED {
        if rest.starts_with(prefix.as_bytes()) {
            let body = run(bytes, i + prefix.len(), allowed);
            if body >= *min {
                return Some(CredentialMatch {
                    kind,
                    start: i,
                    end: i + prefix.len() + body,
                });
            }
        }
    }
    if rest.starts_with(b"eyJ") {
        // A JSON Web Token: three base64url segments, the first two starting with `eyJ`.
        let seg = |from: usize| run(bytes, from, is_token_char);
        let first = seg(i);
        let second_start = i + first + 1;
        if first >= 10 && bytes.get(i + first) == Some(&b'.') {
            let second = seg(second_start);
            let third_start = second_start + second + 1;
            if second >= 10 && bytes.get(second_start + second) == Some(&b'.') {
                let third = seg(third_start);
                if third >= 10 {
                    return Some(CredentialMatch {
                        kind: "a JSON Web Token",
                        start: i,
                        end: third_start + third,
                    });
                }
            }
        }
    }
    if rest.starts_with(b"-----BEGIN") {
        let head_len = run(bytes, i + 10, |b| b != b'\n');
        let head = &lower[i..i + 10 + head_len];
        if head.windows(11).any(|w| w == b"private key") {
            let end = find(&lower[i..], b"-----end")
                .map(|at| i + at + 8 + run(bytes, i + at + 8, |b| b != b'\n'))
                .unwrap_or(bytes.len());
            return Some(CredentialMatch {
                kind: "a private key",
                start: i,
                end,
            });
        }
    }
    let lower_rest = &lower[i..];
    if lower_rest.starts_with(b"bearer ") {
        let value = run(bytes, i + 7, |b| {
            is_token_char(b) || matches!(b, b'.' | b'~' | b'+' | b'/' | b'=')
        });
        if value >= 20 {
            return Some(CredentialMatch {
                kind: "a bearer token",
                start: i,
                end: i + 7 + value,
            });
        }
    }
    for word in SECRET_WORDS {
        if !lower_rest.starts_with(word.as_bytes()) {
            continue;
        }
        let mut at = i + word.len();
        if bytes.get(at).is_some_and(|b| is_token_char(*b)) {
            continue;
        }
        at += run(bytes, at, |b| b == b' ' || b == b'"' || b == b'\'');
        if !matches!(bytes.get(at), Some(b'=') | Some(b':')) {
            continue;
        }
        at += 1;
        at += run(bytes, at, |b| b == b' ' || b == b'"' || b == b'\'');
        let len = run(bytes, at, |b| {
            !b.is_ascii_whitespace() && !matches!(b, b'"' | b'\'' | b',' | b';' | b')')
        });
        let value = &bytes[at..at + len];
        let has_digit = value.iter().any(u8::is_ascii_digit);
        let has_alpha = value.iter().any(u8::is_ascii_alphabetic);
        let placeholder = value.starts_with(b"<")
            || value.starts_with(b"${")
            || value.starts_with(b"{")
            || value.to_ascii_lowercase().starts_with(b"your");
        if len >= 8 && has_digit && has_alpha && !placeholder {
            return Some(CredentialMatch {
                kind: "a secret assignment",
                start: i,
                end: at + len,
            });
        }
    }
    None
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<&'static str> {
        find_credentials(text).into_iter().map(|m| m.kind).collect()
    }

    #[test]
    fn finds_credential_shapes_and_leaves_prose_alone() {
        let aws = ["AKIA", "Q7X3M9K2W8P4R6T5"].concat();
        assert_eq!(kinds(&format!("key {aws} here")), ["an AWS access key id"]);
        let gh = ["ghp_", &"a1".repeat(18)].concat();
        assert_eq!(kinds(&gh), ["a GitHub token"]);
        let sk = ["sk-", "proj-", &"Ab3".repeat(8)].concat();
        assert_eq!(kinds(&format!("use {sk}")), ["an API secret key"]);
        let jwt = [
            "eyJhbGciOiJIUzI1NiJ9",
            ".eyJzdWIiOiIxMjM0NTY3ODkwIn0",
            ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        ]
        .concat();
        assert_eq!(kinds(&jwt), ["a JSON Web Token"]);
        assert_eq!(kinds("password=hunter2024x"), ["a secret assignment"]);
        assert_eq!(
            kinds(&format!("Authorization: Bearer {}", "x9".repeat(12))),
            ["a bearer token"]
        );
        assert_eq!(
            kinds("-----BEGIN RSA PRIVATE KEY-----\nabc\n-----END RSA PRIVATE KEY-----"),
            ["a private key"]
        );
        for prose in [
            "Returns the given text.",
            "token: the page token returned by the last call",
            "password: <your password>",
            "api_key=${API_KEY}",
            "a task-manager for the desk",
            "Uses AKIA-style keys",
        ] {
            assert!(kinds(prose).is_empty(), "{prose}");
        }
    }
}
