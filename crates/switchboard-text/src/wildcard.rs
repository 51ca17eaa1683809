//! Wildcard patterns over names: `*` any run of characters, `?` one character, the rest
//! literal, matched against the whole name. Used by the tool filter of a config entry and by
//! the gateway's policy rules. Matching takes at most pattern × name steps, whatever the
//! pattern (no backtracking blow-up).

use std::fmt;

/// One pattern.
#[derive(Clone, PartialEq, Eq)]
pub struct Wildcard {
    text: String,
    chars: Vec<char>,
    /// No `*` or `?`: matched by comparing strings.
    literal: bool,
}

impl fmt::Debug for Wildcard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.text, f)
    }
}

impl Wildcard {
    /// The pattern written as `text`.
    pub fn new(text: &str) -> Wildcard {
        Wildcard {
            text: text.to_owned(),
            chars: text.chars().collect(),
            literal: !text.contains(['*', '?']),
        }
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether `name` matches the whole pattern. Judged on every request a gateway policy
    /// sees, so the common cases allocate nothing: a pattern without wildcards is a string
    /// comparison, and ASCII pattern and name are matched byte by byte.
    pub fn matches(&self, name: &str) -> bool {
        if self.literal {
            return self.text == name;
        }
        if self.text.is_ascii() && name.is_ascii() {
            return matches_units(self.text.as_bytes(), name.as_bytes(), b'*', b'?');
        }
        let name: Vec<char> = name.chars().collect();
        matches_units(&self.chars, &name, '*', '?')
    }
}

/// Iterative matching over units (bytes of ASCII text, or chars): on a mismatch, go back
/// to the last `*` and let it take one more unit. Each `*` only ever moves forward, so the
/// work is at most pattern × name.
fn matches_units<T: Copy + PartialEq>(
    pattern: &[T],
    name: &[T],
    star_unit: T,
    any_unit: T,
) -> bool {
    let (mut p, mut n) = (0, 0);
    // After the last `*` seen: the pattern position following it, and where in the name
    // its match currently ends.
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some(&c) if c == star_unit => {
                star = Some((p + 1, n));
                p += 1;
            }
            Some(&c) if c == any_unit || c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some((after, taken)) => {
                    star = Some((after, taken + 1));
                    p = after;
                    n = taken + 1;
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|c| *c == star_unit)
}

#[cfg(test)]
mod tests {
    use super::Wildcard;

    #[test]
    fn stars_and_marks_match_whole_names() {
        let matches = |pattern: &str, name: &str| Wildcard::new(pattern).matches(name);
        assert!(matches("fs__read_*", "fs__read_file"));
        assert!(!matches("fs__read_*", "fs__write_file"));
        assert!(matches("a?c", "abc"));
        assert!(!matches("a?c", "abbc"));
        assert!(matches("*", ""));
        assert!(matches("exact", "exact"));
        assert!(!matches("exact", "exactly"));
        assert!(matches("*a*a*a*b", "aaaaaaaaaaaaaaaaaaaab"));
        assert!(!matches("*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaa"));
        // Not ASCII: matched by characters, `?` is one character whatever its bytes.
        assert!(matches("caf?__*", "café__lire"));
        assert!(!matches("caf??", "café"));
    }
}
