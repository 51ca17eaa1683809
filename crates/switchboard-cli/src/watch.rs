//! `switchboard serve --watch`: re-reads the configuration when it changes and reconciles
//! the running servers with it ([`Runtime::reload`]: unchanged servers keep running, the
//! gateway's clients get `list_changed`).
//!
//! With `--config FILE` that file is followed. Without it, discovery's own files are
//! ([`WatchedConfig::Discovered`]): `$SWITCHBOARD_CONFIG`, every project and user file of
//! every client (those that exist and those that may appear in a folder that exists, such
//! as a `.mcp.json` added to the project) and the trust file, so that `switchboard config
//! trust NAME` starts the server it lets in. Folders are watched, not files, so an editor
//! that writes a new file and renames it over the old one is seen too; events for other
//! files are ignored. Changes are debounced (a burst of writes is read once, after it
//! settles, within a bounded wait).
//!
//! With `--config`, the file's team sections are read again too. `clients` and
//! `policies` ([`TeamReload`], `team.rs`) come first: when they do not read, nothing of
//! the reload is applied (servers must not change under a policy that is not the file's).
//! The others are read each by its own [`SectionReader`] (the rate limits:
//! `rate_limits.rs`), once the file and its served entries are usable; a section that does
//! not read keeps what is in force and says so.
//!
//! A file that no longer parses, or has a bad entry among the served ones, is reported on
//! stderr with file and line, and the running set is kept. Discovered files differ in two
//! ways, because other programs write some of them (`~/.claude.json` changes all the
//! time) and some may be broken for good: a file that was already unreadable, or an entry
//! of a server not served now (one defined in a project file and not trusted yet, say),
//! is left out as at the start rather than holding up the reload; and a change that leaves
//! the served servers' definitions as they were reloads nothing and says nothing.

use std::path::{Path, PathBuf};
use std::time::Duration;

use notify::{RecursiveMode, Watcher};
use serde_json::Value;
use switchboard_config::discover::{self, Discovered, Looked, Places};
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

/// Reads a team section of a reloaded `--config` file and puts it in force (or keeps what
/// is in force and says why): called once the file read and its served entries are usable.
pub(crate) type SectionReader = Box<dyn Fn(&ConfigFile) + Send + Sync>;

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

    /// Watches what `watched` names (the folders, filtered for its files) and reloads
    /// `runtime`, which serves `served` now, on each change; with `--config`, each of
    /// `sections` reads the file's team sections again.
    pub(crate) fn start(
        watched: WatchedConfig,
        selection: Selection,
        runtime: Runtime,
        served: Vec<ServerEntry>,
        team: TeamReload,
        sections: Vec<SectionReader>,
    ) -> Result<ConfigWatch, String> {
        let source = match watched {
            WatchedConfig::File(path) => Source::File(
                std::path::absolute(&path)
                    .map_err(|e| format!("--watch: cannot resolve {}: {e}", path.display()))?,
            ),
            WatchedConfig::Discovered => Source::Discovered(DiscoveredFiles::start()?),
        };
        let files = source.files();
        let mut folders: Vec<PathBuf> = Vec::new();
        for file in &files {
            let folder = file
                .parent()
                .map(Path::to_owned)
                .ok_or_else(|| format!("--watch: {} has no folder to watch", file.display()))?;
            // A folder that does not exist (a project's `.vscode/`) is not watched: what
            // appears in it is seen from the next start on.
            let watchable = matches!(source, Source::File(_)) || folder.is_dir();
            if watchable && !folders.contains(&folder) {
                folders.push(folder);
            }
        }
        // One pending "something changed" is enough: further events coalesce into it.
        let (changed, changes) = mpsc::channel::<()>(1);
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                let relevant = match &event {
                    Ok(event) => event.paths.iter().any(|p| is_one_of(p, &files)),
                    // A watcher error (e.g. an overflowed queue) may hide a change: re-read.
                    Err(_) => true,
                };
                if relevant && !event.as_ref().is_ok_and(|e| e.kind.is_access()) {
                    let _ = changed.try_send(());
                }
            })
            .map_err(|e| format!("--watch: cannot watch files: {e}"))?;
        for folder in &folders {
            watcher
                .watch(folder, RecursiveMode::NonRecursive)
                .map_err(|e| format!("--watch: cannot watch {}: {e}", folder.display()))?;
        }
        let (stop, stopped) = oneshot::channel();
        let reloader = Reloader {
            source,
            selection,
            runtime,
            served,
            team,
            sections,
        };
        let task = tokio::spawn(run(watcher, reloader, changes, stopped));
        Ok(ConfigWatch {
            task,
            stop: Some(stop),
        })
    }
}

/// Applies a reloaded file's team sections (policy, rate limits) to the running gateway;
/// an error (what does not read) stops that reload before anything of it is applied.
pub(crate) type TeamReload = Box<dyn FnMut(&ConfigFile) -> Result<(), String> + Send>;

/// What `serve --watch` follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WatchedConfig {
    /// The `--config` file.
    File(PathBuf),
    /// The files discovery reads (no `--config`).
    Discovered,
}

/// Whether `path` is one of `files` (an event names the watched folder joined with the
/// file's name).
fn is_one_of(path: &Path, files: &[PathBuf]) -> bool {
    files
        .iter()
        .any(|file| path.file_name() == file.file_name() && path.parent() == file.parent())
}

/// What a change leads to.
struct Reloader {
    source: Source,
    selection: Selection,
    runtime: Runtime,
    /// The entries served now (the last applied).
    served: Vec<ServerEntry>,
    /// Applies the file's team sections.
    team: TeamReload,
    /// The team sections' readers (a `--config` file only: discovered files have none).
    sections: Vec<SectionReader>,
}

/// Where the configuration is read from, and what the reader remembers between reads.
enum Source {
    /// One file, absolute.
    File(PathBuf),
    /// Discovery's files.
    Discovered(DiscoveredFiles),
}

impl Source {
    /// The files whose changes are read.
    fn files(&self) -> Vec<PathBuf> {
        match self {
            Source::File(path) => vec![path.clone()],
            Source::Discovered(discovered) => discovered.files.clone(),
        }
    }

    /// Whether a bad entry of `name` holds up the reload: with one file, any the
    /// selection names (it is most likely an edit under way); discovered, only a served
    /// server's (others are left out, as at the start).
    fn holds_up(&self, name: &str, selection: &Selection, served: &[ServerEntry]) -> bool {
        match self {
            Source::File(_) => selection.includes(name),
            Source::Discovered(_) => served.iter().any(|entry| entry.name == name),
        }
    }
}

/// Discovery's files, the ones that could not be read the last time, and what the
/// servers' definitions were then.
struct DiscoveredFiles {
    places: Places,
    files: Vec<PathBuf>,
    unreadable: Vec<PathBuf>,
    definitions: Definitions,
}

/// The servers' definitions as written (first definition of each name) and the trust
/// file's text: when neither changed, the configuration did not.
#[derive(Debug, PartialEq)]
struct Definitions {
    servers: Vec<(String, Value, Option<String>)>,
    trust: Option<String>,
}

impl DiscoveredFiles {
    /// Discovery's places for this directory, and what they hold now.
    fn start() -> Result<DiscoveredFiles, String> {
        let cwd = std::env::current_dir()
            .map_err(|e| format!("--watch: cannot read the current directory: {e}"))?;
        let places = Places::from_vars(&cwd, &ProcessEnv);
        let mut files: Vec<PathBuf> = Vec::new();
        for place in discover::places(&places) {
            if !files.contains(&place.path) {
                files.push(place.path);
            }
        }
        files.extend(places.trust_file());
        let found = discover::discover(&places, &ProcessEnv);
        Ok(DiscoveredFiles {
            unreadable: unreadable(&found)
                .into_iter()
                .map(|(path, _)| path)
                .collect(),
            definitions: definitions(&found, &places),
            places,
            files,
        })
    }

    /// The configuration as discovery finds it now (project servers gated by trust), or
    /// `None` when it is not to be applied: a file became unreadable (said on stderr), or
    /// no definition changed.
    fn read(&mut self) -> Option<ConfigFile> {
        let found = discover::discover(&self.places, &ProcessEnv);
        let now_unreadable = unreadable(&found);
        let newly: Vec<&String> = now_unreadable
            .iter()
            .filter(|(path, _)| !self.unreadable.contains(path))
            .map(|(_, error)| error)
            .collect();
        if !newly.is_empty() {
            for error in newly {
                say(format_args!(
                    "switchboard serve: {error}; the config is not reloaded, the running servers stay"
                ));
            }
            return None;
        }
        self.unreadable = now_unreadable.into_iter().map(|(path, _)| path).collect();
        let definitions = definitions(&found, &self.places);
        if definitions == self.definitions {
            tracing::debug!("a discovered file changed, no server definition did");
            return None;
        }
        self.definitions = definitions;
        match crate::config_cmd::discovered_config() {
            Ok(Ok(file)) => Some(file),
            Ok(Err(_looked_at)) => Some(ConfigFile {
                path: PathBuf::from("<no config file with servers>"),
                servers: Vec::new(),
                team: Default::default(),
            }),
            Err(problem) => {
                say(format_args!(
                    "switchboard serve: {problem}; the config is not reloaded, the running servers stay"
                ));
                None
            }
        }
    }
}

/// The places that could not be read, with why.
fn unreadable(found: &Discovered) -> Vec<(PathBuf, String)> {
    found
        .looked
        .iter()
        .filter_map(|(place, looked)| match looked {
            Looked::Failed(error) => Some((place.path.clone(), error.to_string())),
            Looked::Missing | Looked::Read(_) => None,
        })
        .collect()
}

fn definitions(found: &Discovered, places: &Places) -> Definitions {
    Definitions {
        servers: found
            .servers
            .iter()
            .map(|server| {
                let problem = server.server.as_ref().err().map(|e| e.detail.clone());
                (server.name().to_owned(), server.written.clone(), problem)
            })
            .collect(),
        trust: places
            .trust_file()
            .and_then(|path| std::fs::read_to_string(path).ok()),
    }
}

/// The same servers, defined the same way (where in its file each stands aside).
fn same_entries(left: &[ServerEntry], right: &[ServerEntry]) -> bool {
    let unplaced = |entry: &ServerEntry| {
        let mut entry = entry.clone();
        entry.origin.line = None;
        entry
    };
    left.len() == right.len()
        && left
            .iter()
            .zip(right)
            .all(|(l, r)| unplaced(l) == unplaced(r))
}

/// Applies changes until told to stop (between reloads, never during one).
async fn run<W: Watcher>(
    _watcher: W,
    mut reloader: Reloader,
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
    async fn apply(&mut self) {
        let file = match &mut self.source {
            Source::File(path) => match switchboard_config::load(path, &ProcessEnv) {
                Ok(file) => file,
                Err(error) => {
                    say(format_args!(
                        "switchboard serve: {error}; the config is not reloaded, the running servers stay"
                    ));
                    return;
                }
            },
            Source::Discovered(discovered) => match discovered.read() {
                Some(file) => file,
                None => return,
            },
        };
        let (bad, left_out): (Vec<_>, Vec<_>) = file
            .errors()
            .filter(|problem| self.selection.includes(&problem.name))
            .partition(|problem| {
                self.source
                    .holds_up(&problem.name, &self.selection, &self.served)
            });
        if !bad.is_empty() {
            for problem in bad {
                say(format_args!("switchboard serve: {problem}"));
            }
            say(format_args!(
                "switchboard serve: the config is not reloaded, the running servers stay"
            ));
            return;
        }
        for problem in left_out {
            say(format_args!(
                "switchboard serve: `{}` is left out: {}",
                problem.name, problem.detail
            ));
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
        if let Err(problem) = (self.team)(&file) {
            say(format_args!(
                "switchboard serve: {}: {problem}; the config is not reloaded: the policy and the running servers stay as they were",
                file.path.display()
            ));
            return;
        }
        if matches!(self.source, Source::File(_)) {
            for read in &self.sections {
                read(&file);
            }
        }
        if matches!(self.source, Source::Discovered(_)) && same_entries(&entries, &self.served) {
            tracing::debug!("the discovered servers are defined as they were; nothing to reload");
            return;
        }
        crate::terminal::hide_secrets(
            entries
                .iter()
                .flat_map(ServerEntry::secret_values)
                .collect(),
        );
        self.runtime
            .set_source(ServerSource::Entries(entries.clone()));
        let give_up = tokio::time::Instant::now() + STARTING_WAIT;
        loop {
            match self.runtime.reload().await {
                Ok(report) => {
                    self.served = entries;
                    return announce(&report);
                }
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

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::time::Instant;

    /// Sends a change every `every`, `count` times.
    fn changes_every(every: Duration, count: u32, to: mpsc::Sender<()>) -> JoinHandle<()> {
        tokio::spawn(async move {
            for _ in 0..count {
                tokio::time::sleep(every).await;
                let _ = to.send(()).await;
            }
        })
    }

    /// On Tokio's paused clock, so the times are exact: a lone change is read after
    /// [`DEBOUNCE`] of quiet, a burst once it settles, and a burst that never settles at
    /// [`MAX_DELAY`].
    #[tokio::test(start_paused = true)]
    async fn a_burst_of_changes_is_read_once_it_settles_or_at_the_longest_delay() {
        let (to, mut changes) = mpsc::channel(64);
        let waited = |started: Instant| Instant::now() - started;

        let started = Instant::now();
        settle(&mut changes).await;
        assert_eq!(waited(started), DEBOUNCE, "a lone change");

        let burst = changes_every(Duration::from_millis(100), 10, to.clone());
        let started = Instant::now();
        settle(&mut changes).await;
        assert_eq!(
            waited(started),
            Duration::from_millis(1000) + DEBOUNCE,
            "ten changes 100 ms apart"
        );
        burst.await.expect("burst");

        let endless = changes_every(Duration::from_millis(100), 100, to);
        let started = Instant::now();
        settle(&mut changes).await;
        assert_eq!(waited(started), MAX_DELAY, "changes that never settle");
        endless.abort();
    }
}
