//! What the tool lock beside the config file holds, for the verbs that reach a server's
//! tools directly rather than through the gateway: `tools` marks a held tool, `status`
//! warns about it, `call` refuses it (unless `--no-tool-lock`), as `switchboard serve`
//! leaves it out — each saying why and which command accepts it. The rule is the runtime's
//! (`ToolLock::review` and `ToolLock::holds`); a lock that is there and cannot be used holds
//! every tool, as it does for `serve`.

use std::path::{Path, PathBuf};

use switchboard_protocol::Tool;
use switchboard_runtime::StateFileError;
use switchboard_runtime::guards::{Hold, ToolLock};

/// The lock beside a config file, as read once for one command.
pub(crate) struct LockBeside {
    config: PathBuf,
    lock: PathBuf,
    reading: Result<Option<ToolLock>, StateFileError>,
}

/// A tool the lock holds, and the sentence that says why and what to do.
pub(crate) struct HeldHere {
    /// The tool's wire name.
    pub(crate) tool: String,
    /// Why it is held (`its description changed since it was pinned (…)`).
    pub(crate) reason: String,
    /// `` `echo` is held by mcp.tool-lock.json: …; run `…` to accept it``.
    pub(crate) message: String,
    /// The same without the tool's name, for a line that names it already: ``held by
    /// mcp.tool-lock.json: …; run `…` to accept it``.
    pub(crate) told: String,
}

impl LockBeside {
    /// The lock beside `config`, read now; `None` when `config` is not a file (the bundled
    /// example, an ad-hoc server).
    pub(crate) fn of(config: &Path) -> Option<LockBeside> {
        if !config.is_file() {
            return None;
        }
        let lock = ToolLock::beside(config);
        Some(LockBeside {
            config: config.to_owned(),
            reading: ToolLock::read(&lock),
            lock,
        })
    }

    /// Whether there is a lock (usable or not): without one nothing is held, and nothing
    /// needs to be listed to know it.
    pub(crate) fn is_there(&self) -> bool {
        !matches!(self.reading, Ok(None))
    }

    /// The tools of `server` among `tools` that the lock holds, in the order given.
    pub(crate) fn held<'t>(
        &self,
        server: &str,
        tools: impl IntoIterator<Item = &'t Tool>,
    ) -> Vec<HeldHere> {
        let tools: Vec<&Tool> = tools.into_iter().collect();
        let holds: Vec<(String, Hold)> = match &self.reading {
            Ok(None) => Vec::new(),
            Err(error) => tools
                .iter()
                .map(|t| (t.name.clone(), Hold::UnusableLock(error.clone())))
                .collect(),
            Ok(Some(lock)) => lock
                .review(server, tools.iter().copied())
                .changes
                .into_iter()
                .filter(|(_, change)| lock.holds(change))
                .map(|(name, change)| (name, Hold::Change(change)))
                .collect(),
        };
        let file = self.lock.file_name().map_or_else(
            || self.lock.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let accept = crate::serve::accept_command(&self.config);
        holds
            .into_iter()
            .map(|(tool, hold)| {
                let reason = hold.reason();
                let told =
                    format!("held by {file}: {reason}; run `{accept} {server}` to accept it");
                HeldHere {
                    message: format!("`{tool}` is {told}"),
                    told,
                    tool,
                    reason,
                }
            })
            .collect()
    }
}
