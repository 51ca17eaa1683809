//! The runtime's own state files (the tool lock and the trust store): how they are read and
//! written, and their typed error.
//!
//! Both are security files, so reading one fails closed: a file that exists but cannot be
//! used — unreadable (permissions, a folder, a link to nothing), empty, cut short, not
//! JSON, starting with a byte order mark, of another format or version — is a
//! [`StateFileError`] saying which file and what is wrong ([`StateFileProblem`]), never an
//! empty lock or store. Only a file that is not there at all reads as empty. A BOM is
//! refused rather than skipped: Switchboard writes these files without one, so a BOM means
//! another program re-saved the file, and what else it changed cannot be told; the message
//! says so, and recreating the file is one command.
//!
//! Writing goes through `switchboard_config::atomic` (a new file beside the old one,
//! synced, renamed over it, the folder synced; `0600`, in a `0700` folder when the folder is
//! made): a kill at any moment leaves the old file or the new one, never an empty one.

use std::path::{Path, PathBuf};

use serde_json::Value;
use switchboard_config::atomic::{Permissions, replace_file};

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
    /// It exists but could not be read (the I/O error, described): permissions, say.
    Unreadable(String),
    /// A folder is where the file belongs.
    Folder,
    /// It is a symbolic link to a file that does not exist.
    DanglingLink,
    /// It is empty (a write in place that was cut short leaves a file so).
    Empty,
    /// It starts with a UTF-8 byte order mark, which Switchboard never writes.
    ByteOrderMark,
    /// Its JSON ends before it is complete (the parser's message).
    CutShort(String),
    /// It is not JSON (the parser's message).
    NotJson(String),
    /// It is JSON in another format than this one, or another version of it.
    WrongFormat {
        /// The format this Switchboard reads (`switchboard-tool-lock/1`).
        expected: &'static str,
        /// The format the file names, if it names one (cut to 64 characters).
        found: Option<String>,
    },
    /// It is JSON of its format, but a part does not fit the format (what does not).
    Malformed(String),
    /// It could not be written (the I/O error, described).
    Unwritable(String),
    /// What it should hold could not be encoded (the encoder's message).
    Unencodable(String),
}

impl std::fmt::Display for StateFileProblem {
    /// The problem in words, starting with "it" (the file).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl StateFileProblem {
    /// Whether the file is of that other format (a version of it this Switchboard knows).
    pub fn is_format(&self, format: &str) -> bool {
        matches!(self, StateFileProblem::WrongFormat { found: Some(found), .. } if found == format)
    }

    fn describe(&self) -> String {
        match self {
            StateFileProblem::Folder => "it is a folder, not a file".to_owned(),
            StateFileProblem::DanglingLink => {
                "it is a symbolic link to a file that does not exist".to_owned()
            }
            StateFileProblem::Unreadable(e) => format!("it cannot be read: {e}"),
            StateFileProblem::Empty => {
                "it is empty (a write that was cut short leaves it so)".to_owned()
            }
            StateFileProblem::ByteOrderMark => "it starts with a UTF-8 byte order mark (BOM): \
                 another program saved it, and Switchboard, which writes it without one, \
                 does not guess what else changed"
                .to_owned(),
            StateFileProblem::CutShort(e) => format!("its JSON ends early, cut short ({e})"),
            StateFileProblem::NotJson(e) => format!("it is not valid JSON ({e})"),
            StateFileProblem::WrongFormat {
                expected,
                found: Some(found),
            } => format!(
                "its format is {found:?}, and this Switchboard reads only {expected:?} (another \
                 version of Switchboard wrote it?)"
            ),
            StateFileProblem::WrongFormat {
                expected,
                found: None,
            } => format!("it does not say `\"format\": {expected:?}`: it is not one"),
            StateFileProblem::Malformed(e) => format!("its content does not fit its format: {e}"),
            StateFileProblem::Unwritable(e) => format!("it cannot be written: {e}"),
            StateFileProblem::Unencodable(e) => format!("it cannot be encoded: {e}"),
        }
    }
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
        matches!(
            self.problem,
            StateFileProblem::Unwritable(_) | StateFileProblem::Unencodable(_)
        )
    }

    /// The file exists and could not be read or understood (anything but a failed write).
    pub fn is_unusable(&self) -> bool {
        !self.is_unwritable()
    }

    fn describe(&self) -> String {
        let (kind, path) = (self.kind, self.path.display());
        let problem = self.problem.describe();
        if self.is_unwritable() {
            format!("the {kind} `{path}` was not saved: {problem}")
        } else {
            format!("the {kind} `{path}` cannot be used: {problem}")
        }
    }
}

/// Reads the state file at `path` of format `format` (its top-level `"format"`): `None`
/// when nothing is there, else its JSON, or what makes it unusable.
pub(crate) fn read_state_file(
    kind: StateFileKind,
    path: &Path,
    format: &'static str,
) -> Result<Option<Value>, StateFileError> {
    Ok(read_versioned_state_file(kind, path, &[format])?.map(|(_, value)| value))
}

/// Reads the state file at `path` of one of `formats` (newest first; a refusal names the
/// newest): `None` when nothing is there, else the format it has and its JSON.
pub(crate) fn read_versioned_state_file(
    kind: StateFileKind,
    path: &Path,
    formats: &[&'static str],
) -> Result<Option<(&'static str, Value)>, StateFileError> {
    let failed = |problem| StateFileError::new(kind, path, problem);
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        // A link to nothing is something there: it reads as "not found", and is refused.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return match std::fs::symlink_metadata(path) {
                Err(_) => Ok(None),
                Ok(_) => Err(failed(StateFileProblem::DanglingLink)),
            };
        }
        Err(_) if path.is_dir() => return Err(failed(StateFileProblem::Folder)),
        Err(e) => return Err(failed(StateFileProblem::Unreadable(e.to_string()))),
    };
    if bytes.is_empty() {
        return Err(failed(StateFileProblem::Empty));
    }
    if bytes.starts_with(&[0xef, 0xbb, 0xbf]) {
        return Err(failed(StateFileProblem::ByteOrderMark));
    }
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| {
        failed(if e.is_eof() {
            StateFileProblem::CutShort(e.to_string())
        } else {
            StateFileProblem::NotJson(e.to_string())
        })
    })?;
    let read = match value.get("format") {
        Some(Value::String(found)) => formats.iter().find(|f| **f == found.as_str()).copied(),
        _ => None,
    };
    match (read, value.get("format")) {
        (Some(format), _) => Ok(Some((format, value))),
        (None, found) => Err(failed(StateFileProblem::WrongFormat {
            expected: formats.first().copied().unwrap_or_default(),
            found: found.map(|f| {
                let text = f.as_str().map_or_else(|| f.to_string(), str::to_owned);
                text.chars().take(64).collect()
            }),
        })),
    }
}

/// Writes `value` as the state file at `path`: pretty JSON, atomically, `0600`.
pub(crate) fn write_state_file(
    kind: StateFileKind,
    path: &Path,
    value: &Value,
) -> Result<(), StateFileError> {
    let failed = |problem| StateFileError::new(kind, path, problem);
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| failed(StateFileProblem::Unencodable(e.to_string())))?;
    replace_file(path, (text + "\n").as_bytes(), Permissions::OwnerOnly)
        .map_err(|e| failed(StateFileProblem::Unwritable(e.to_string())))
}

/// Why [`crate::ServerHandle::approve_tools`] failed.
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

/// Why [`crate::ServerHandle::trust`] failed.
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

#[cfg(test)]
mod tests {
    use crate::ToolLock;

    #[test]
    fn a_lock_that_is_there_and_cannot_be_used_is_refused_never_empty() {
        let dir = std::env::temp_dir().join(format!("sb-state-file-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("mkdir");
        let lock = dir.join("mcp.tool-lock.json");
        let good = r#"{"format":"switchboard-tool-lock/2","servers":{"s":{"t":{"hash":"00"}}}}"#;
        let mut seen = String::new();
        let mut write = |name: &str, leave: &dyn Fn()| {
            let _ = std::fs::remove_file(&lock);
            let _ = std::fs::remove_dir(&lock);
            leave();
            let outcome = match ToolLock::read(&lock) {
                Ok(None) => "none".to_owned(),
                Ok(Some(read)) => format!("pins s: {}", read.has_server("s")),
                Err(error) => format!("{:?}", error.problem),
            };
            seen.push_str(&format!("{name}: {outcome}\n"));
        };
        write("missing", &|| {});
        write("good", &|| std::fs::write(&lock, good).expect("write"));
        write("empty", &|| std::fs::write(&lock, "").expect("write"));
        write("bom", &|| {
            std::fs::write(&lock, format!("\u{feff}{good}")).expect("write")
        });
        write("cut short", &|| {
            std::fs::write(&lock, &good[..30]).expect("write")
        });
        write("not json", &|| {
            std::fs::write(&lock, "pins: s").expect("write")
        });
        write("other version", &|| {
            std::fs::write(&lock, good.replace("lock/2", "lock/3")).expect("write")
        });
        write("no format", &|| std::fs::write(&lock, "[]").expect("write"));
        write("folder", &|| std::fs::create_dir(&lock).expect("mkdir"));
        write("link to nothing", &|| {
            std::os::unix::fs::symlink(dir.join("gone"), &lock).expect("link")
        });
        expect_test::expect![[r#"
            missing: none
            good: pins s: true
            empty: Empty
            bom: ByteOrderMark
            cut short: CutShort("EOF while parsing a string at line 1 column 30")
            not json: NotJson("expected value at line 1 column 1")
            other version: WrongFormat { expected: "switchboard-tool-lock/2", found: Some("switchboard-tool-lock/3") }
            no format: WrongFormat { expected: "switchboard-tool-lock/2", found: None }
            folder: Folder
            link to nothing: DanglingLink
        "#]]
        .assert_eq(&seen);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
