//! The era memo: the era each server negotiated last, so that a server known to be legacy
//! is next sent `initialize` first and never the `server/discover` probe (a Python SDK 1.x
//! server logs a validation traceback for it). Only `auto` entries are remembered, keyed
//! by `switchboard_runtime::connect::server_identity` (command and arguments, or URL:
//! never environment values or headers), at most [`CAPACITY`] servers, the oldest
//! recorded dropped first.
//!
//! Who uses it: every connect of the verbs (`connect.rs`) and of `serve`'s upstream servers
//! (the runtime asks the CLI's connection hooks, [`hint_for`] before and [`learn`] after
//! each connect, restarts included) takes the hint and records the outcome. `check` only
//! records: it connects without the hint on purpose, because probing the 2026-07-28 era
//! first is what it checks a server for (how a legacy server answers `server/discover`,
//! whether a modern one is found), and a hint would skip exactly that; the era its first
//! session negotiated is remembered for the other commands.
//!
//! A hint only: a missing, unreadable or corrupt file is an empty memo and a failed write
//! is lost, each said in a debug log line, never an error. A connect that fails after a
//! legacy hint forgets the server, so the next one probes as if it had never been seen.
//!
//! The file: `SWITCHBOARD_ERA_MEMO` (`off` for none), else
//! `$XDG_CACHE_HOME/switchboard/eras.json`, else `~/.cache/switchboard/eras.json`.
//! Deleting it clears the memo.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use switchboard_config::ServerEntry;
use switchboard_protocol::Era;
use switchboard_runtime::ConnectOutcome;
use switchboard_text::redact::MIN_SECRET_LEN;

/// How many servers the memo holds.
pub(crate) const CAPACITY: usize = 256;

/// The file's `format`; a file with another is ignored (and replaced on the next write).
const FORMAT: &str = "switchboard-eras/1";

/// The environment variable naming the memo file, or `off`.
pub(crate) const MEMO_VAR: &str = "SWITCHBOARD_ERA_MEMO";

#[derive(Debug, Serialize, Deserialize)]
struct MemoFile {
    format: String,
    /// Oldest recorded first.
    servers: Vec<Remembered>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Remembered {
    server: String,
    era: EraName,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum EraName {
    Legacy,
    Modern,
}

impl EraName {
    fn of(era: Era) -> EraName {
        match era {
            Era::Legacy => EraName::Legacy,
            Era::Modern => EraName::Modern,
        }
    }

    fn era(self) -> Era {
        match self {
            EraName::Legacy => Era::Legacy,
            EraName::Modern => Era::Modern,
        }
    }
}

/// The memo's entry for one server: where the file is and the server's key in it.
#[derive(Debug)]
pub(crate) struct EraMemo {
    path: PathBuf,
    server: String,
}

impl EraMemo {
    /// The memo entry for `entry`, or `None` when there is no memo (`off`, no home) or
    /// the entry's era is not negotiated (it names one or pins a version).
    pub(crate) fn for_entry(entry: &ServerEntry) -> Option<EraMemo> {
        let server = switchboard_runtime::connect::server_identity(entry)?;
        // The identity leaves out what the configuration treats as secret; a secret that
        // shows in it all the same (a literal argument equal to one) keeps it out.
        let secret_inside = entry
            .secret_values()
            .iter()
            .any(|secret| secret.len() >= MIN_SECRET_LEN && server.contains(secret.as_str()));
        if secret_inside {
            return None;
        }
        Some(EraMemo {
            path: memo_path()?,
            server,
        })
    }

    /// The era this server negotiated last, if remembered.
    pub(crate) fn recall(&self) -> Option<Era> {
        load(&self.path)
            .servers
            .iter()
            .find(|r| r.server == self.server)
            .map(|r| r.era.era())
    }

    /// Remembers `era` for this server (the file is written only when it changes).
    pub(crate) fn remember(&self, era: Era) {
        let mut memo = load(&self.path);
        let era = EraName::of(era);
        if memo
            .servers
            .iter()
            .any(|r| r.server == self.server && r.era == era)
        {
            return;
        }
        memo.servers.retain(|r| r.server != self.server);
        memo.servers.push(Remembered {
            server: self.server.clone(),
            era,
        });
        let excess = memo.servers.len().saturating_sub(CAPACITY);
        memo.servers.drain(..excess);
        store(&self.path, &memo);
    }

    /// Forgets this server.
    pub(crate) fn forget(&self) {
        let mut memo = load(&self.path);
        let before = memo.servers.len();
        memo.servers.retain(|r| r.server != self.server);
        if memo.servers.len() != before {
            store(&self.path, &memo);
        }
    }
}

/// The era remembered for `entry`, to hand to its connect as `ConnectOverrides::era_hint`.
pub(crate) fn hint_for(entry: &ServerEntry) -> Option<Era> {
    EraMemo::for_entry(entry).as_ref().and_then(EraMemo::recall)
}

/// Records what a connect of `entry` given `hint` came to: the era it negotiated, or, when
/// it failed after a legacy hint, that the hint may be what failed (the next connect
/// probes afresh). Another failure teaches nothing.
pub(crate) fn learn(entry: &ServerEntry, hint: Option<Era>, outcome: ConnectOutcome<'_>) {
    let Some(memo) = EraMemo::for_entry(entry) else {
        return;
    };
    match outcome {
        ConnectOutcome::Negotiated(era) => memo.remember(era),
        ConnectOutcome::Failed(_) if hint == Some(Era::Legacy) => memo.forget(),
        ConnectOutcome::Failed(_) => {}
    }
}

/// `SWITCHBOARD_ERA_MEMO`, else under `$XDG_CACHE_HOME`, else under `~/.cache`.
fn memo_path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(MEMO_VAR) {
        return (path != "off" && !path.is_empty()).then(|| PathBuf::from(path));
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    Some(cache.join("switchboard").join("eras.json"))
}

fn empty() -> MemoFile {
    MemoFile {
        format: FORMAT.into(),
        servers: Vec::new(),
    }
}

/// The memo in `path`; empty when there is none or it cannot be used.
fn load(path: &Path) -> MemoFile {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return empty(),
        Err(e) => {
            tracing::debug!(path = %path.display(), error = %e, "era memo unreadable; ignored");
            return empty();
        }
    };
    match serde_json::from_str::<MemoFile>(&text) {
        Ok(memo) if memo.format == FORMAT => memo,
        Ok(memo) => {
            tracing::debug!(path = %path.display(), format = %memo.format, "era memo of another format; ignored");
            empty()
        }
        Err(e) => {
            tracing::debug!(path = %path.display(), error = %e, "era memo corrupt; ignored");
            empty()
        }
    }
}

/// Writes the memo atomically (temp file and rename, `switchboard_config::atomic`), `0600`
/// as every state file; a failure is only logged.
fn store(path: &Path, memo: &MemoFile) {
    let text = match serde_json::to_string_pretty(memo) {
        Ok(text) => text + "\n",
        Err(e) => {
            tracing::debug!(error = %e, "era memo not serialisable; not written");
            return;
        }
    };
    let written = switchboard_config::atomic::replace_file(
        path,
        text.as_bytes(),
        switchboard_config::atomic::Permissions::OwnerOnly,
    );
    if let Err(e) = written {
        tracing::debug!(path = %path.display(), error = %e, "era memo not written");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memo_at(path: &Path, server: &str) -> EraMemo {
        EraMemo {
            path: path.to_owned(),
            server: server.into(),
        }
    }

    fn temp_path(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "switchboard-era-memo-{}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        dir.join("eras.json")
    }

    #[test]
    fn remembers_forgets_and_drops_the_oldest_past_the_cap() {
        let path = temp_path("cap");
        let first = memo_at(&path, "first");
        assert_eq!(first.recall(), None);
        first.remember(Era::Legacy);
        assert_eq!(first.recall(), Some(Era::Legacy));
        for n in 0..CAPACITY {
            memo_at(&path, &format!("s{n}")).remember(Era::Modern);
        }
        assert_eq!(first.recall(), None, "the oldest is dropped");
        assert_eq!(memo_at(&path, "s0").recall(), Some(Era::Modern));
        assert_eq!(load(&path).servers.len(), CAPACITY);
        memo_at(&path, "s0").forget();
        assert_eq!(memo_at(&path, "s0").recall(), None);
        let _ = std::fs::remove_dir_all(path.parent().expect("a folder"));
    }

    #[test]
    fn a_corrupt_or_foreign_file_is_an_empty_memo() {
        let path = temp_path("corrupt");
        std::fs::create_dir_all(path.parent().expect("a folder")).expect("mkdir");
        let memo = memo_at(&path, "x");
        for text in [
            "{not json",
            r#"{"format":"other/9","servers":[]}"#,
            "\u{0}\u{1}",
        ] {
            std::fs::write(&path, text).expect("write");
            assert_eq!(memo.recall(), None);
        }
        memo.remember(Era::Legacy);
        assert_eq!(
            memo.recall(),
            Some(Era::Legacy),
            "a corrupt file is replaced"
        );
        let _ = std::fs::remove_dir_all(path.parent().expect("a folder"));
    }
}
