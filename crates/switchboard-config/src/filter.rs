//! Per-tool filtering: which of a server's tools an entry lets through.
//!
//! An entry may name the tools it allows (`enabledTools`) and those it denies
//! (`disabledTools`), each as a list of patterns where `*` matches any run of characters
//! (none included) and `?` exactly one; everything else matches itself, case-sensitively.
//! Patterns are matched against a tool's name as its server lists it. A tool passes when no
//! deny pattern matches it and, if there is an allow list, one of its patterns does (an
//! empty allow list lets nothing through): deny wins.
//!
//! The matcher is ours (about thirty lines) rather than a glob crate's: only `*` and `?`
//! are wanted, names are not paths, and the crates that do globs well (`globset`) bring a
//! regex engine along. Its cost is bounded by the pattern's length times the name's, and
//! patterns are capped ([`ToolPattern::MAX_LEN`], [`ToolFilter::MAX_PATTERNS`]).

use std::fmt;

use switchboard_text::wildcard::Wildcard;

/// Why a pattern or a filter was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolFilterError {
    /// A pattern is the empty string (it would match no tool name).
    #[error("a tool pattern is empty; write a tool name or a glob like `read_*`")]
    EmptyPattern,
    /// A pattern is longer than [`ToolPattern::MAX_LEN`] bytes.
    #[error(
        "a tool pattern is {len} bytes long; at most {} are allowed",
        ToolPattern::MAX_LEN
    )]
    PatternTooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// A list has more than [`ToolFilter::MAX_PATTERNS`] patterns.
    #[error(
        "a tool list has {count} patterns; at most {} are allowed",
        ToolFilter::MAX_PATTERNS
    )]
    TooManyPatterns {
        /// How many it has.
        count: usize,
    },
}

impl ToolFilterError {
    /// Whether a pattern was empty.
    pub fn is_empty_pattern(&self) -> bool {
        matches!(self, ToolFilterError::EmptyPattern)
    }

    /// Whether a pattern was too long.
    pub fn is_pattern_too_long(&self) -> bool {
        matches!(self, ToolFilterError::PatternTooLong { .. })
    }

    /// Whether a list had too many patterns.
    pub fn is_too_many_patterns(&self) -> bool {
        matches!(self, ToolFilterError::TooManyPatterns { .. })
    }
}

/// One pattern: `*` any run of characters, `?` one character, the rest literal
/// (`switchboard_text::wildcard`), at most [`ToolPattern::MAX_LEN`] bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct ToolPattern(Wildcard);

impl fmt::Debug for ToolPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl ToolPattern {
    /// Longest pattern, in bytes.
    pub const MAX_LEN: usize = 256;

    /// A pattern from its text; refused when empty or longer than [`ToolPattern::MAX_LEN`].
    pub fn new(text: &str) -> Result<ToolPattern, ToolFilterError> {
        if text.is_empty() {
            return Err(ToolFilterError::EmptyPattern);
        }
        if text.len() > ToolPattern::MAX_LEN {
            return Err(ToolFilterError::PatternTooLong { len: text.len() });
        }
        Ok(ToolPattern(Wildcard::new(text)))
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// Whether `name` matches the whole pattern.
    pub fn matches(&self, name: &str) -> bool {
        self.0.matches(name)
    }
}

/// Which of a server's tools an entry lets through. The default lets every tool through.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolFilter {
    enabled: Option<Vec<ToolPattern>>,
    disabled: Vec<ToolPattern>,
}

impl ToolFilter {
    /// Most patterns in one list.
    pub const MAX_PATTERNS: usize = 1000;

    /// A filter from an allow list (`None`: every tool not denied) and a deny list; refused
    /// when a list has more than [`ToolFilter::MAX_PATTERNS`] patterns.
    pub fn new(
        enabled: Option<Vec<ToolPattern>>,
        disabled: Vec<ToolPattern>,
    ) -> Result<ToolFilter, ToolFilterError> {
        let longest = enabled.as_ref().map_or(0, Vec::len).max(disabled.len());
        if longest > ToolFilter::MAX_PATTERNS {
            return Err(ToolFilterError::TooManyPatterns { count: longest });
        }
        Ok(ToolFilter { enabled, disabled })
    }

    /// Whether the tool named `tool` (its name on the server) passes: no deny pattern
    /// matches it and, when there is an allow list, one of its patterns does.
    pub fn allows(&self, tool: &str) -> bool {
        if self.is_everything() {
            return true;
        }
        let denied = self.disabled.iter().any(|p| p.matches(tool));
        let allowed = self
            .enabled
            .as_ref()
            .is_none_or(|list| list.iter().any(|p| p.matches(tool)));
        allowed && !denied
    }

    /// Whether the filter lets every tool through (no allow list, no deny patterns).
    pub fn is_everything(&self) -> bool {
        self.enabled.is_none() && self.disabled.is_empty()
    }

    /// The allow list, if there is one.
    pub fn enabled(&self) -> Option<&[ToolPattern]> {
        self.enabled.as_deref()
    }

    /// The deny list (empty when none was given).
    pub fn disabled(&self) -> &[ToolPattern] {
        &self.disabled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patterns(texts: &[&str]) -> Vec<ToolPattern> {
        texts
            .iter()
            .map(|t| ToolPattern::new(t).expect("valid pattern"))
            .collect()
    }

    #[test]
    fn stars_and_question_marks() {
        let cases: &[(&str, &str, bool)] = &[
            ("read_file", "read_file", true),
            ("read_file", "read_files", false),
            ("read_file", "Read_file", false),
            ("read_*", "read_", true),
            ("read_*", "read_file", true),
            ("read_*", "write_file", false),
            ("*_file", "read_file", true),
            ("*", "", true),
            ("*", "anything", true),
            ("?", "", false),
            ("?", "é", true),
            ("?ead", "read", true),
            ("r??d", "read", true),
            ("r??d", "reed_", false),
            ("*a*b*", "xxaxxbxx", true),
            ("*a*b*", "xxbxxaxx", false),
            ("a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false),
            ("*.*", "a.b", true),
            ("**", "x", true),
        ];
        let failures: Vec<String> = cases
            .iter()
            .filter(|(pattern, name, want)| {
                ToolPattern::new(pattern).expect("valid").matches(name) != *want
            })
            .map(|(pattern, name, want)| format!("{pattern} vs {name}: wanted {want}"))
            .collect();
        assert!(failures.is_empty(), "{failures:#?}");
    }

    #[test]
    fn deny_wins_and_an_empty_allow_list_lets_nothing_through() {
        let both = ToolFilter::new(Some(patterns(&["read_*", "list"])), patterns(&["*_secret"]))
            .expect("filter");
        let passed: Vec<&str> = ["read_file", "read_secret", "list", "write_file"]
            .into_iter()
            .filter(|name| both.allows(name))
            .collect();
        assert_eq!(passed, ["read_file", "list"]);
        let none = ToolFilter::new(Some(Vec::new()), Vec::new()).expect("filter");
        assert!(!none.allows("read_file"));
        assert!(!none.is_everything());
        assert!(ToolFilter::default().allows("anything"));
    }

    #[test]
    fn limits() {
        assert!(ToolPattern::new("").is_err_and(|e| e.is_empty_pattern()));
        let long = "x".repeat(ToolPattern::MAX_LEN + 1);
        assert!(ToolPattern::new(&long).is_err_and(|e| e.is_pattern_too_long()));
        assert!(ToolPattern::new(&long[1..]).is_ok());
        let many = patterns(&vec!["x"; ToolFilter::MAX_PATTERNS + 1]);
        assert!(ToolFilter::new(None, many).is_err_and(|e| e.is_too_many_patterns()));
    }
}
