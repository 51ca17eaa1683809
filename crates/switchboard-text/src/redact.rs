//! Secrets in what we show: a URL's display form (credentials and query values hidden),
//! the secret values a URL carries, and [`Secrets`], a set of known secret values replaced
//! wherever they appear in a text.
//!
//! A URL is redacted once, where it enters (`HttpOptions::display_url`, a config entry's
//! display form); every message that names the endpoint uses that form. Known values
//! (`${VAR}` expansions, environment and header values, URL credentials) are replaced in
//! text that may quote them back: a server's error body, a stderr tail, a library's error.

use std::borrow::Cow;
use std::fmt;

/// What a hidden part of a URL is shown as.
pub const HIDDEN: &str = "***";

/// What a known secret value is replaced with in free text.
pub const REDACTED: &str = "<redacted>";

/// Secret values shorter than this are not replaced in free text (they would blank out
/// common words and numbers); structured displays hide them by position instead.
pub const MIN_SECRET_LEN: usize = 4;

/// The parts of a URL, as written (no normalisation, so a `${VAR}` template splits too).
struct UrlParts<'a> {
    /// `https://`, or empty.
    scheme: &'a str,
    userinfo: Option<&'a str>,
    host: &'a str,
    path: &'a str,
    query: Option<&'a str>,
    fragment: Option<&'a str>,
}

fn split_url(url: &str) -> UrlParts<'_> {
    let (scheme, rest) = match url.find("://") {
        Some(at) => url.split_at(at + 3),
        None => ("", url),
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, rest) = rest.split_at(authority_end);
    let (userinfo, host) = match authority.rfind('@') {
        Some(at) => (Some(&authority[..at]), &authority[at + 1..]),
        None => (None, authority),
    };
    let (rest, fragment) = match rest.split_once('#') {
        Some((rest, fragment)) => (rest, Some(fragment)),
        None => (rest, None),
    };
    let (path, query) = match rest.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (rest, None),
    };
    UrlParts {
        scheme,
        userinfo,
        host,
        path,
        query,
        fragment,
    }
}

/// The form of a URL that may be shown: userinfo, query values and the fragment are
/// hidden (`https://u:p@h/mcp?key=v&flag` → `https://***@h/mcp?key=***&***`). Works on
/// any text, including a URL as written with `${VAR}` references.
pub fn url_for_display(url: &str) -> String {
    let parts = split_url(url);
    let mut out = String::with_capacity(url.len());
    out.push_str(parts.scheme);
    if parts.userinfo.is_some() {
        out.push_str(HIDDEN);
        out.push('@');
    }
    out.push_str(parts.host);
    out.push_str(parts.path);
    if let Some(query) = parts.query {
        out.push('?');
        let shown: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((key, "")) => format!("{key}="),
                Some((key, _)) => format!("{key}={HIDDEN}"),
                None if pair.is_empty() => String::new(),
                None => HIDDEN.to_owned(),
            })
            .collect();
        out.push_str(&shown.join("&"));
    }
    if let Some(fragment) = parts.fragment {
        out.push('#');
        if !fragment.is_empty() {
            out.push_str(HIDDEN);
        }
    }
    out
}

/// The secret values in a URL: the userinfo's user and password, every query value and
/// the fragment, as written and percent-decoded.
pub fn url_secret_values(url: &str) -> Vec<String> {
    let parts = split_url(url);
    let mut values = Vec::new();
    if let Some(userinfo) = parts.userinfo {
        values.push(userinfo.to_owned());
        if let Some((user, password)) = userinfo.split_once(':') {
            values.extend([user.to_owned(), password.to_owned()]);
        }
    }
    if let Some(query) = parts.query {
        for pair in query.split('&') {
            let value = pair.split_once('=').map_or(pair, |(_, value)| value);
            values.push(value.to_owned());
        }
    }
    values.extend(parts.fragment.map(str::to_owned));
    let decoded: Vec<String> = values
        .iter()
        .map(|v| percent_decode(&v.replace('+', " ")))
        .chain(values.iter().map(|v| percent_decode(v)))
        .collect();
    values.extend(decoded);
    values.retain(|v| !v.is_empty());
    values.sort();
    values.dedup();
    values
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&high), Some(&low)) if hex(high).is_some() && hex(low).is_some() => {
                let value = hex(high).unwrap_or(0) * 16 + hex(low).unwrap_or(0);
                out.push(u8::try_from(value).unwrap_or(b'?'));
                i += 3;
            }
            (byte, _, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A set of secret values, replaced by [`REDACTED`] wherever they appear. Values shorter
/// than [`MIN_SECRET_LEN`] are left out. `Debug` shows how many there are, never them.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secrets {
    /// Longest first, so a secret that contains another is replaced whole.
    values: Vec<String>,
}

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secrets({} values)", self.values.len())
    }
}

impl Secrets {
    /// The set of these values (short and empty ones left out).
    pub fn new(values: impl IntoIterator<Item = String>) -> Secrets {
        let mut secrets = Secrets::default();
        secrets.extend(values);
        secrets
    }

    /// Adds values.
    pub fn extend(&mut self, values: impl IntoIterator<Item = String>) {
        self.values.extend(
            values
                .into_iter()
                .filter(|v| v.chars().count() >= MIN_SECRET_LEN),
        );
        self.values
            .sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        self.values.dedup();
    }

    /// True when there is nothing to hide.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The longest value, in bytes (0 when empty): how much text a streaming writer keeps
    /// back so that a secret split across writes is still found.
    pub fn longest(&self) -> usize {
        self.values.first().map_or(0, String::len)
    }

    /// `text` with every value replaced by [`REDACTED`]; borrowed when none occurs.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for value in &self.values {
            if out.contains(value.as_str()) {
                out = Cow::Owned(out.replace(value.as_str(), REDACTED));
            }
        }
        out
    }

    /// Replaces every value in `json`'s strings, object keys and numbers (a number that
    /// shows a value becomes the string [`REDACTED`]); nothing is touched when the set is
    /// empty or no value occurs. For JSON that leaves the process: a trace line, an answer
    /// to a client. (Text is replaced inside the decoded strings, never in the encoded
    /// JSON, where a value could straddle a quote and the replacement break the document.)
    pub fn redact_json(&self, json: &mut serde_json::Value) {
        use serde_json::Value;
        if self.is_empty() {
            return;
        }
        match json {
            Value::String(text) => {
                if let Cow::Owned(clean) = self.redact(text) {
                    *text = clean;
                }
            }
            Value::Number(number) => {
                if let Cow::Owned(_) = self.redact(&number.to_string()) {
                    *json = Value::String(REDACTED.to_owned());
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|item| self.redact_json(item)),
            Value::Object(members) => {
                if members
                    .keys()
                    .any(|key| matches!(self.redact(key), Cow::Owned(_)))
                {
                    *members = std::mem::take(members)
                        .into_iter()
                        .map(|(key, member)| (self.redact(&key).into_owned(), member))
                        .collect();
                }
                members
                    .values_mut()
                    .for_each(|member| self.redact_json(member));
            }
            Value::Null | Value::Bool(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_shown_without_credentials_or_query_values() {
        let shown: Vec<String> = [
            "https://u:p@h.example/mcp?key=v&flag&empty=",
            "http://127.0.0.1:8080/mcp",
            "https://h/${TOKEN}/mcp?key=${TOKEN}#frag",
            "https://tok@h?x=1",
            "not a url?token=abc",
        ]
        .iter()
        .map(|url| url_for_display(url))
        .collect();
        expect_test::expect![[r#"
            https://***@h.example/mcp?key=***&***&empty=
            http://127.0.0.1:8080/mcp
            https://h/${TOKEN}/mcp?key=***#***
            https://***@h?x=***
            not a url?token=***"#]]
        .assert_eq(&shown.join("\n"));
    }

    #[test]
    fn a_urls_secret_values_are_found_as_written_and_decoded() {
        expect_test::expect![[r#"["a b+c", "a+b%2Bc", "a+b+c", "frag", "p%40ss", "p@ss", "user", "user:p%40ss", "user:p@ss"]"#]]
            .assert_eq(&format!(
                "{:?}",
                url_secret_values("https://user:p%40ss@h/mcp/x?key=a+b%2Bc#frag")
            ));
    }

    #[test]
    fn known_values_are_replaced_longest_first() {
        let secrets = Secrets::new([
            "s3cret".to_owned(),
            "s3cret-long".to_owned(),
            "ab".to_owned(),
        ]);
        assert_eq!(
            secrets.redact("x s3cret-long y s3cret z ab"),
            "x <redacted> y <redacted> z ab"
        );
        assert!(matches!(secrets.redact("nothing here"), Cow::Borrowed(_)));
        assert_eq!(format!("{secrets:?}"), "Secrets(2 values)");
    }

    #[test]
    fn json_is_redacted_in_strings_keys_and_numbers_and_keeps_its_shape() {
        let secrets = Secrets::new(["s3cret\"q".to_owned(), "424242".to_owned()]);
        let mut json = serde_json::json!({
            "message": "token s3cret\"q here",
            "s3cret\"q": [1, 424242, "x424242x", true, null],
            "kept": {"a": "plain"},
        });
        secrets.redact_json(&mut json);
        expect_test::expect![[r#"{"message":"token <redacted> here","<redacted>":[1,"<redacted>","x<redacted>x",true,null],"kept":{"a":"plain"}}"#]]
            .assert_eq(&json.to_string());
    }
}
