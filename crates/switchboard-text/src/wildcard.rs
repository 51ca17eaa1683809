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
        }
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether `name` matches the whole pattern.
    pub fn matches(&self, name: &str) -> bool {
        if !self.chars.contains(&'*') && !self.chars.contains(&'?') {
            return self.text == name;
        }
        let name: Vec<char> = name.chars().collect();
        self.matches_chars(&name)
    }

    /// Iterative matching: on a mismatch, go back to the last `*` and let it take one more
    /// character. Each `*` only ever moves forward, so the work is at most pattern × name.
    fn matches_chars(&self, name: &[char]) -> bool {
        let pattern = &self.chars;
        let (mut p, mut n) = (0, 0);
        // After the last `*` seen: the pattern position following it, and where in the name
        // its match currently ends.
        let mut star: Option<(usize, usize)> = None;
        while n < name.len() {
            match pattern.get(p) {
                Some('*') => {
                    star = Some((p + 1, n));
                    p += 1;
                }
                Some(&c) if c == '?' || c == name[n] => {
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
        pattern[p..].iter().all(|c| *c == '*')
    }
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
    }
}
