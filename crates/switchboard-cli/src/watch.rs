//! `switchboard serve --watch`: re-reads the config file when it changes and reconciles the
//! running servers with it ([`Runtime::reload`]: unchanged servers keep running, the
//! gateway's clients get `list_changed`).
//!
//! The file's folder is watched, not the file, so an editor that writes a new file and
//! renames it over the old one is seen too; events for other files are ignored. Changes are
//! debounced (a burst of writes is read once, after it settles, within a bounded wait). A
//! file that no longer parses, or has a bad entry among the served ones, is reported on
//! stderr with file and line, and the running set is kept.

use std::path::{Path, PathBuf};
use std::time::Duration;

use notify::{RecursiveMode, Watcher};
use switchboard_config::{ConfigFile, ProcessEnv, ServerEntry};
use switchboard_runtime::sources::ServerSource;
use switchboard_runtime::{ReloadReport, Runtime, RuntimeError};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::terminal::say;

/// Quiet time after the last change before the file is read.
const DEBOUNCE: Duration = Duration::from_millis(200);
/// Longest a burst of changes may postpone the read.
const MAX_DELAY: Duration = Duration::from_secs(2);
/// How often a reload refused while the runtime is still starting is tried again.
const RETRY: Duration = Duration::from_millis(200);
/// Longest a change waits for the first start to finish before it is given up.
const STARTING_WAIT: Duration = Duration::from_secs(120);

/// Which servers of the file are served.
#[derive(Debug, Clone)]
pub(crate) struct Selection {
    /// `--server` names (empty: every enabled server).
    pub(crate) names: Vec<String>,
}

impl Selection {
    pub(crate) fn includes(&self, name: &str) -> bool {
        self.names.is_empty() || self.names.iter().any(|s| s == name)
    }

    /// The selected, usable entries, or why the file cannot be served as it is: a `--server`
    /// name it no longer defines.
    pub(crate) fn entries(&self, file: &ConfigFile) -> Result<Vec<ServerEntry>, String> {
        if let Some(unknown) = self.names.iter().find(|name| file.find(name).is_none()) {
            let configured: Vec<&str> = file.entries().map(|e| e.name.as_str()).collect();
            return Err(format!(
                "--server {unknown}: no server of that name in {}; configured: {}",
                file.path.display(),
                configured.join(", ")
            ));
        }
        Ok(file
            .entries()
            .filter(|entry| self.includes(&entry.name))
            .cloned()
            .collect())
    }
}

/// The watcher of one config file, owned by `serve`: [`ConfigWatch::stop`] ends it before the
/// runtime is disposed (dropping it aborts it).
pub(crate) struct ConfigWatch {
    task: JoinHandle<()>,
    stop: Option<oneshot::Sender<()>>,
}

impl Drop for ConfigWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl ConfigWatch {
    /// Ends the watcher and waits for it: a reload under way finishes first (within the
    /// servers' connect deadlines), so every server it started is the runtime's to stop.
    pub(crate) async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = (&mut self.task).await;
    }

    /// Watches `path` (its folder, filtered for it) and reloads `runtime` on each change.
    pub(crate) fn start(
        path: &Path,
        selection: Selection,
        runtime: Runtime,
    ) -> Result<ConfigWatch, String> {
        let path = std::path::absolute(path)
            .map_err(|e| format!("--watch: cannot resolve {}: {e}", path.display()))?;
        let folder = path
            .parent()
            .map(Path::to_owned)
            .ok_or_else(|| format!("--watch: {} has no folder to watch", path.display()))?;
        // One pending "something changed" is enough: further events coalesce into it.
        let (changed, changes) = mpsc::channel::<()>(1);
        let file_name = path.file_name().map(ToOwned::to_owned);
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                let relevant = match &event {
                    Ok(event) => event
                        .paths
                        .iter()
                        .any(|p| p.file_name() == file_name.as_deref()),
                    // A watcher error (e.g. an overflowed queue) may hide a change: re-read.
                    Err(_) => true,
                };
                if relevant && !event.as_ref().is_ok_and(|e| e.kind.is_access()) {
                    let _ = changed.try_send(());
                }
            })
            .map_err(|e| format!("--watch: cannot watch files: {e}"))?;
        watcher
            .watch(&folder, RecursiveMode::NonRecursive)
            .map_err(|e| format!("--watch: cannot watch {}: {e}", folder.display()))?;
        let (stop, stopped) = oneshot::channel();
        let reloader = Reloader {
            path,
            selection,
            runtime,
        };
        let task = tokio::spawn(run(watcher, reloader, changes, stopped));
        Ok(ConfigWatch {
            task,
            stop: Some(stop),
        })
    }
}

/// What a change leads to.
struct Reloader {
    path: PathBuf,
    selection: Selection,
    runtime: Runtime,
}

/// Applies changes until told to stop (between reloads, never during one).
async fn run<W: Watcher>(
    _watcher: W,
    reloader: Reloader,
    mut changes: mpsc::Receiver<()>,
    mut stopped: oneshot::Receiver<()>,
) {
    loop {
        tokio::select! {
            _ = &mut stopped => return,
            change = changes.recv() => if change.is_none() { return },
        }
        tokio::select! {
            _ = &mut stopped => return,
            () = settle(&mut changes) => {},
        }
        reloader.apply().await;
    }
}

/// Waits until no change came for [`DEBOUNCE`], or [`MAX_DELAY`] passed.
async fn settle(changes: &mut mpsc::Receiver<()>) {
    let give_up = tokio::time::Instant::now() + MAX_DELAY;
    loop {
        let quiet = tokio::time::sleep(DEBOUNCE);
        tokio::select! {
            more = changes.recv() => if more.is_none() { return },
            () = quiet => return,
            () = tokio::time::sleep_until(give_up) => return,
        }
    }
}

impl Reloader {
    async fn apply(&self) {
        let file = match switchboard_config::load(&self.path, &ProcessEnv) {
            Ok(file) => file,
            Err(error) => {
                say(format_args!(
                    "switchboard serve: {error}; the config is not reloaded, the running servers stay"
                ));
                return;
            }
        };
        let bad: Vec<_> = file
            .errors()
            .filter(|problem| self.selection.includes(&problem.name))
            .collect();
        if !bad.is_empty() {
            for problem in bad {
                say(format_args!("switchboard serve: {problem}"));
            }
            say(format_args!(
                "switchboard serve: the config is not reloaded, the running servers stay"
            ));
            return;
        }
        let entries = match self.selection.entries(&file) {
            Ok(entries) => entries,
            Err(problem) => {
                say(format_args!(
                    "switchboard serve: {problem}; the config is not reloaded, the running servers stay"
                ));
                return;
            }
        };
        crate::terminal::hide_secrets(
            entries
                .iter()
                .flat_map(ServerEntry::secret_values)
                .collect(),
        );
        self.runtime.set_source(ServerSource::Entries(entries));
        let give_up = tokio::time::Instant::now() + STARTING_WAIT;
        loop {
            match self.runtime.reload().await {
                Ok(report) => return announce(&report),
                // The first start is still under way (and may have read the old file).
                Err(RuntimeError::ReloadWhileDisabled) if tokio::time::Instant::now() < give_up => {
                    tokio::time::sleep(RETRY).await;
                }
                Err(error) => {
                    say(format_args!("switchboard serve: reload refused: {error}"));
                    return;
                }
            }
        }
    }
}

fn announce(report: &ReloadReport) {
    let names = |list: &[String]| {
        if list.is_empty() {
            "none".to_owned()
        } else {
            list.join(", ")
        }
    };
    say(format_args!(
        "switchboard serve: config reloaded: added {}; removed {}; restarted {}; kept {}",
        names(&report.added),
        names(&report.removed),
        names(&report.restarted),
        names(&report.kept)
    ));
    for server in &report.startup.servers {
        if report.added.contains(&server.name) || report.restarted.contains(&server.name) {
            let state = server.state.to_string();
            say(format_args!(
                "  {}: {} ({} tools)",
                server.name,
                state.lines().next().unwrap_or(""),
                server.tools
            ));
        }
    }
}
