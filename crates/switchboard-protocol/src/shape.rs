//! [`ShapeError`]: peer JSON that does not have the shape MCP gives it.

use std::fmt;

/// Peer JSON that does not have the shape MCP gives it: text that is not JSON, a required
/// field missing, a field of the wrong type. What is wrong, in words a person reads (the
/// field's name, what was expected); callers show it, make it a listing problem or a
/// protocol error, and never decide anything on its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeError {
    what: String,
}

impl ShapeError {
    /// What is wrong, as said to a person.
    pub fn new(what: impl Into<String>) -> ShapeError {
        ShapeError { what: what.into() }
    }
}

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.what)
    }
}

impl std::error::Error for ShapeError {}

impl From<String> for ShapeError {
    fn from(what: String) -> ShapeError {
        ShapeError::new(what)
    }
}

impl From<&str> for ShapeError {
    fn from(what: &str) -> ShapeError {
        ShapeError::new(what)
    }
}
