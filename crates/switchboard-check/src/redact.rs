//! Hiding credential-looking strings (found by `switchboard_text::credentials`) together
//! with configured secret values (through `switchboard_text::redact`'s [`Secrets`], the one
//! replacement of known values) from everything a report shows.

use serde_json::Value;
use switchboard_text::credentials::find_credentials;
use switchboard_text::redact::Secrets;

/// Hides configured secret values and credential-looking strings.
#[derive(Debug, Default)]
pub(crate) struct Redactor {
    secrets: Secrets,
}

impl Redactor {
    pub(crate) fn new(secrets: Vec<String>) -> Redactor {
        Redactor {
            secrets: Secrets::new(secrets),
        }
    }

    pub(crate) fn text(&self, text: &str) -> String {
        let out = self.secrets.redact(text).into_owned();
        let found = find_credentials(&out);
        if found.is_empty() {
            return out;
        }
        let mut redacted = String::with_capacity(out.len());
        let mut last = 0;
        for m in found {
            redacted.push_str(&out[last..m.start]);
            redacted.push_str(&format!("<redacted: {}>", m.describe()));
            last = m.end;
        }
        redacted.push_str(&out[last..]);
        redacted
    }

    pub(crate) fn value(&self, value: &mut Value) {
        match value {
            Value::String(s) => *s = self.text(s),
            Value::Array(items) => items.iter_mut().for_each(|v| self.value(v)),
            Value::Object(map) => map.values_mut().for_each(|v| self.value(v)),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_secrets_and_credentials() {
        let redactor = Redactor::new(vec!["s3cr3t-value".into(), "ab".into()]);
        let aws = ["AKIA", "Q7X3M9K2W8P4R6T5"].concat();
        assert_eq!(
            redactor.text(&format!("env s3cr3t-value, key {aws}, ab")),
            "env <redacted>, key <redacted: an AWS access key id (20 characters)>, ab"
        );
    }
}
