//! The typed error of the runtime's own state files (the tool lock and the trust store):
//! which file, and whether it could not be read, did not parse, had another format or
//! could not be written.

use std::path::{Path, PathBuf};

/// Which state file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StateFileKind {
    /// The tool lock ([`crate::ToolLock`]).
    ToolLock,
    /// The trust store ([`crate::sources::TrustStore`]).
    TrustStore,
}

impl std::fmt::Display for StateFileKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StateFileKind::ToolLock => "tool lock",
            StateFileKind::TrustStore => "trust store",
        })
    }
}

/// What went wrong with a state file.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StateFileProblem {
    /// It exists but could not be read (the I/O error, described).
    Unreadable(String),
    /// It is not JSON (the parser's message).
    NotJson(String),
    /// It is JSON in another format than this one.
    WrongFormat(&'static str),
    /// It could not be written (the I/O error, described).
    Unwritable(String),
    /// What it should hold could not be encoded (the encoder's message).
    Unencodable(String),
}

/// A state file the runtime cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.describe())]
pub struct StateFileError {
    /// Which file.
    pub kind: StateFileKind,
    /// Where it is.
    pub path: PathBuf,
    /// What went wrong.
    pub problem: StateFileProblem,
}

impl StateFileError {
    pub(crate) fn new(kind: StateFileKind, path: &Path, problem: StateFileProblem) -> Self {
        StateFileError {
            kind,
            path: path.to_owned(),
            problem,
        }
    }

    /// The file could not be written.
    pub fn is_unwritable(&self) -> bool {
        matches!(self.problem, StateFileProblem::Unwritable(_))
    }

    fn describe(&self) -> String {
        let (kind, path) = (self.kind, self.path.display());
        match &self.problem {
            StateFileProblem::Unreadable(e) => format!("could not read {kind} `{path}`: {e}"),
            StateFileProblem::NotJson(e) => format!("{kind} `{path}` is not valid JSON: {e}"),
            StateFileProblem::WrongFormat(format) => {
                format!("{kind} `{path}` is not in the {format} format")
            }
            StateFileProblem::Unwritable(e) => format!("could not write {kind} `{path}`: {e}"),
            StateFileProblem::Unencodable(e) => format!("could not encode {kind} `{path}`: {e}"),
        }
    }
}

/// Why [`crate::Runtime::approve_tools`] failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ApproveError {
    /// The runtime has no tool lock to record approvals in.
    #[error("no tool lock file is configured")]
    NoLockFile,
    /// The server is unknown or has not listed its tools yet.
    #[error("server `{server}` is not ready")]
    NotReady {
        /// The name asked for.
        server: String,
    },
    /// The lock file cannot be used.
    #[error(transparent)]
    File(#[from] StateFileError),
}

impl ApproveError {
    /// The server is unknown or not ready.
    pub fn is_not_ready(&self) -> bool {
        matches!(self, ApproveError::NotReady { .. })
    }
}

/// Why [`crate::Runtime::trust`] failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TrustError {
    /// The runtime has no trust store.
    #[error("no trust store is configured")]
    NoTrustStore,
    /// No server of that name is configured.
    #[error("no server named `{server}` is configured")]
    UnknownServer {
        /// The name asked for.
        server: String,
    },
    /// The trust store cannot be used.
    #[error(transparent)]
    File(#[from] StateFileError),
}

impl TrustError {
    /// No server of that name is configured.
    pub fn is_unknown_server(&self) -> bool {
        matches!(self, TrustError::UnknownServer { .. })
    }
}
