//! The checker's error type: the few things that can go wrong before a run starts
//! (a bad baseline file, a bad `--call`). A run itself never fails: everything it finds is
//! an outcome in the report.

use std::path::PathBuf;

/// Why the checker could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckError {
    /// The baseline file could not be read.
    #[error("could not read baseline file `{path}`: {source}")]
    BaselineRead {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The baseline file is not in the expected-failures format.
    #[error(
        "{path}:{line}: {detail}; a baseline is YAML with `server:` (and optionally `client:`) \
         lists of check ids, `SERVER` or `SERVER:CHECK-ID` entries"
    )]
    BaselineSyntax {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        detail: String,
    },
    /// A tool call given on the command line is not usable.
    #[error("invalid tool call `{tool}`: {detail}")]
    InvalidCall {
        /// The tool.
        tool: String,
        /// What is wrong and what to write instead.
        detail: String,
    },
}
