//! The session-owned runtime controller.
//!
//! `enable`, `disable`, `reload` and `dispose` are serialised: duplicate requests merge,
//! conflicting ones run in order and the latest wanted state wins. Enabling discovers and
//! connects once, then publishes everything as one versioned [`Snapshot`]. Disabling first
//! unpublishes (tools, prompts, resources, instructions, and with them the system-prompt
//! section), withdraws children's access (cancelling their calls in flight), and only then
//! closes every transport and child process. Reload reconciles the configuration: unchanged
//! servers keep their connections and their tools never disappear (a changed tool filter is
//! applied to them without reconnecting); changed servers restart;
//! removed ones close; added ones start.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use switchboard_config::{DefaultSandbox, ProcessEnv, ServerEntry};
use switchboard_text::redact::Secrets;
use tokio::sync::{broadcast, mpsc, watch};
use tokio::task::JoinHandle;

use crate::guards::{LockPolicy, LockReading, ToolLock};
use crate::naming::Naming;
use crate::notice::{ListKind, NoticeKind, ServerNotice};
use crate::output::{OutputLimit, ToolOutput};
use crate::server::{
    Links, Listings, ServerPolicy, ServerShared, ServerSignal, ServerState, Supervisor, lock,
};
use crate::snapshot::{self, BridgedTool, CallRegistry, CallRouter, Snapshot, SnapshotInput};
use crate::sources::{self, ConfiguredServer, ServerSource, TrustStatus, TrustStore};
use crate::tool::{Tool, ToolContext, ToolFuture};

/// Everything a runtime is built from.
#[derive(Debug, Clone)]
pub struct RuntimeOptions {
    /// Where server definitions come from (read at enable and reload).
    pub source: ServerSource,
    /// Deadlines, restarts, grace periods.
    pub policy: ServerPolicy,
    /// Bound on each tool output.
    pub output_limit: OutputLimit,
    /// Bound on each server's instructions, in characters.
    pub instructions_limit: usize,
    /// Lock file for tool definitions (rug-pull guard), read at every enable and reload;
    /// strict and unusable (see [`ToolLock::read`]), no tool is served until a reload finds
    /// it usable.
    pub lock: Option<LockPolicy>,
    /// Trust store for project-scope servers (`None`: project servers are never started).
    pub trust_store: Option<std::path::PathBuf>,
    /// How long a call waits for a reconnecting server before failing.
    pub ready_wait: Duration,
    /// How tools are named in the snapshot (default `<server>__<tool>`).
    pub naming: Naming,
}

impl RuntimeOptions {
    /// Defaults for a source.
    pub fn new(source: ServerSource) -> RuntimeOptions {
        RuntimeOptions {
            source,
            policy: ServerPolicy::default(),
            output_limit: OutputLimit::default(),
            instructions_limit: 4000,
            lock: None,
            trust_store: None,
            ready_wait: Duration::from_secs(10),
            naming: Naming::Prefixed,
        }
    }
}

/// Why a runtime operation was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// Reload needs MCP to be on.
    #[error("reload is only available while MCP is enabled; enable it first")]
    ReloadWhileDisabled,
    /// The runtime was disposed.
    #[error("the MCP runtime was disposed with its session")]
    Disposed,
    /// A disable arrived before this enable finished: the connections in progress were
    /// cancelled and nothing runs.
    #[error("MCP was disabled before enabling finished; nothing was started")]
    EnableSuperseded,
    /// An enable arrived before this disable finished: MCP is on again.
    #[error("MCP was enabled again before disabling finished; it is on")]
    DisableSuperseded,
    /// Restart needs MCP to be on.
    #[error("restart is only available while MCP is enabled; enable it first")]
    RestartWhileDisabled,
    /// No server of that name runs (it is not configured, or not since the last enable or
    /// reload).
    #[error("no MCP server named `{0}` is configured; reload after adding it")]
    UnknownServer(String),
    /// The server may not start (disabled in the configuration, or not trusted).
    #[error("MCP server `{name}` is not started: {reason}")]
    NotStartable {
        /// The server.
        name: String,
        /// Why it may not start.
        reason: String,
    },
}

/// Why a request the host sends to one server ([`Runtime::call_tool_raw`],
/// [`ServerHandle::get_prompt`], [`ServerHandle::read_resource`] and the others) failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerRequestError {
    /// No server of that name is configured (or MCP is off).
    #[error("MCP server `{server}` is not configured")]
    NotConfigured {
        /// The name asked for.
        server: String,
    },
    /// The server is not ready and did not become ready in time.
    #[error("MCP server `{server}` is not available ({state})")]
    Unavailable {
        /// The server.
        server: String,
        /// Its state.
        state: String,
    },
    /// No tool of that exported name is in the current snapshot
    /// ([`Runtime::call_tool_raw`] only).
    #[error("no tool is named `{name}`")]
    UnknownTool {
        /// The name asked for.
        name: String,
    },
    /// The arguments are not a JSON object or do not fit the tool's input schema; nothing
    /// was sent ([`Runtime::call_tool_raw`] only).
    #[error("{detail}")]
    InvalidArguments {
        /// The tool's exported name.
        tool: String,
        /// What is wrong, naming the tool.
        detail: String,
    },
    /// A session of its own was asked of a server that is not reached over HTTP
    /// ([`ServerHandle::open_session_as`]).
    #[error("MCP server `{server}` is a local (stdio) server: it has no per-caller credentials")]
    NotHttp {
        /// The server.
        server: String,
    },
    /// A call was given a session of another server than the tool's
    /// ([`ToolContext::session`](crate::ToolContext)); nothing was sent.
    #[error("the session given for `{tool}` is one of `{given}`, not of `{server}`")]
    WrongSession {
        /// The tool's exported name.
        tool: String,
        /// The tool's server.
        server: String,
        /// The session's server.
        given: String,
    },
    /// The server answered with an error, or the session failed.
    #[error(transparent)]
    Session(#[from] switchboard_session::SessionError),
}

/// A `prompts/get` or `resources/read` a host sends for a client of its own
/// ([`ServerHandle::request_for_client`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ClientRequest {
    /// `prompts/get` or `resources/read`.
    pub method: &'static str,
    /// The parameters (`name` and `arguments`, or `uri`), without `_meta`.
    pub params: Value,
    /// The client's capabilities and its retry's input.
    pub for_client: switchboard_session::ForClient,
}

/// One server's outcome in a startup or reload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerOutcome {
    /// The server's name.
    pub name: String,
    /// Its state when the report was made.
    pub state: ServerState,
    /// Tools it contributes.
    pub tools: usize,
    /// The process id, for stdio servers.
    pub pid: Option<u32>,
    /// Its sandbox: `on`, `off`, `partial (what is relaxed)`, or `remote`.
    pub sandbox: String,
}

/// The result of enabling: every server's outcome. Partial success is normal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StartupReport {
    /// Configured servers, in configuration order.
    pub servers: Vec<ServerOutcome>,
    /// Definitions that could not be used (server name, problem).
    pub config_problems: Vec<(Option<String>, String)>,
    /// What the published snapshot found worth a person's attention: instructions or tool
    /// descriptions that read like orders to the model or hide characters, schemas left
    /// out, tools changed since approval, listing problems.
    pub warnings: Vec<crate::Finding>,
    /// The tools the tool lock holds (left out until approved), with why and what to do;
    /// each is among `warnings` too, as a `Quarantined` finding.
    pub held: Vec<crate::HeldTool>,
    /// The snapshot version published.
    pub version: u64,
}

impl StartupReport {
    /// Servers that are ready.
    pub fn ready(&self) -> impl Iterator<Item = &ServerOutcome> {
        self.servers
            .iter()
            .filter(|s| s.state == ServerState::Ready)
    }
}

impl fmt::Display for StartupReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for server in &self.servers {
            writeln!(
                f,
                "{}: {} ({} tools{})",
                server.name,
                server.state,
                server.tools,
                sandbox_suffix(&server.sandbox)
            )?;
        }
        for (name, problem) in &self.config_problems {
            writeln!(f, "{}: {problem}", name.as_deref().unwrap_or("config"))?;
        }
        for warning in &self.warnings {
            writeln!(f, "warning: {warning}")?;
        }
        Ok(())
    }
}

/// `; sandbox on` (`off`, or `partial (…)`) for a report line of a local server; nothing
/// for a remote one, where nothing runs here.
pub fn sandbox_suffix(sandbox: &str) -> String {
    match sandbox {
        "remote" => String::new(),
        shown => format!("; sandbox {shown}"),
    }
}

/// What a reload did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReloadReport {
    /// Servers whose definition did not change (or only its tool filter, applied to the
    /// running server): same connection.
    pub kept: Vec<String>,
    /// Servers whose definition changed: restarted.
    pub restarted: Vec<String>,
    /// New servers.
    pub added: Vec<String>,
    /// Servers no longer configured: closed.
    pub removed: Vec<String>,
    /// The outcome of every server after the reload.
    pub startup: StartupReport,
}

/// A step in the runtime's life, recorded in order (bounded journal).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LifecycleEvent {
    /// Servers started and the first snapshot was published.
    Enabled {
        /// Its version.
        version: u64,
    },
    /// Every server's listings were withdrawn (the published snapshot is empty).
    Unpublished {
        /// The empty snapshot's version.
        version: u64,
    },
    /// Children lost access; their calls in flight were cancelled.
    ChildAccessWithdrawn {
        /// How many calls were cancelled.
        cancelled_calls: usize,
    },
    /// The system-prompt section was rebuilt (published with the snapshot of that version).
    PromptRebuilt {
        /// The snapshot version carrying it.
        version: u64,
    },
    /// Transports and child processes were closed.
    TransportsClosed {
        /// How many servers were stopped.
        servers: usize,
    },
    /// A reload was published.
    Reloaded {
        /// The snapshot version.
        version: u64,
    },
    /// A snapshot was republished after a server changed (ready again, re-listed, broken).
    Republished {
        /// The version.
        version: u64,
    },
}

const JOURNAL_CAP: usize = 256;

mod handle;

pub use handle::ServerHandle;

/// The runtime. Cheap to clone; all clones control the same servers.
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<RuntimeInner>,
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("enabled", &self.is_enabled())
            .field("version", &self.snapshot().version)
            .finish()
    }
}

struct RuntimeInner {
    options: Mutex<RuntimeOptions>,
    /// Serialises transitions; holds the running servers.
    control: tokio::sync::Mutex<Control>,
    /// The state callers want; read again after each transition step (latest wins).
    /// (A watch, so that a start in progress sees a disable arrive and cuts itself short.)
    desired: watch::Sender<bool>,
    disposed: AtomicBool,
    enabled: AtomicBool,
    snapshot: watch::Sender<Arc<Snapshot>>,
    version: AtomicU64,
    /// Running servers by name, in configuration order, as published.
    roster: Mutex<Vec<(String, Arc<ServerShared>)>>,
    router: Arc<CallRouter>,
    child_calls: CallRegistry,
    child_access: AtomicBool,
    journal: Mutex<VecDeque<LifecycleEvent>>,
    tool_lock: Mutex<Option<LockReading>>,
    /// What servers say and do, for hosts that pass it on ([`Runtime::notices`]).
    notices: broadcast::Sender<ServerNotice>,
    /// The log level the host chose per server, applied again after every reconnect.
    log_levels: Arc<Mutex<HashMap<String, switchboard_protocol::LogLevel>>>,
    /// What the last publication carried of each server, to tell hosts what changed.
    published: Mutex<BTreeMap<String, PublishedServer>>,
    /// The listen streams that follow one resource of a 2026-07-28 server each, by
    /// (server, URI) ([`ServerHandle::subscribe_resource`]).
    resource_streams: Mutex<HashMap<(String, String), switchboard_wire::PendingCall>>,
    /// The servers' skill listings, held for loading ([`Runtime::skills`]).
    skills: crate::skills::SkillRegistry,
    /// The secret values of every definition read so far ([`Runtime::secrets`]).
    secrets: Mutex<Arc<Secrets>>,
}

/// Resources of 2026-07-28 servers followed at once at most (a listen stream each).
const MAX_RESOURCE_STREAMS: usize = 4096;

/// Server notices buffered for a slow host before it is told it lagged.
const NOTICE_BUFFER: usize = 256;

#[derive(Default)]
struct Control {
    servers: BTreeMap<String, Supervisor>,
    publisher: Option<JoinHandle<()>>,
    signals: Option<mpsc::UnboundedSender<ServerSignal>>,
    report: StartupReport,
}

impl Runtime {
    /// A runtime that is off. Nothing is read, started or connected until [`Runtime::enable`].
    pub fn new(options: RuntimeOptions) -> Runtime {
        let router = Arc::new(CallRouter {
            servers: Mutex::new(BTreeMap::new()),
            limit: options.output_limit.clone(),
            ready_wait: options.ready_wait,
            stopping: AtomicBool::new(false),
        });
        Runtime {
            inner: Arc::new(RuntimeInner {
                options: Mutex::new(options),
                control: tokio::sync::Mutex::new(Control::default()),
                desired: watch::channel(false).0,
                disposed: AtomicBool::new(false),
                enabled: AtomicBool::new(false),
                snapshot: watch::channel(Arc::new(Snapshot::default())).0,
                version: AtomicU64::new(0),
                roster: Mutex::new(Vec::new()),
                router,
                child_calls: CallRegistry::default(),
                child_access: AtomicBool::new(false),
                journal: Mutex::new(VecDeque::new()),
                tool_lock: Mutex::new(None),
                notices: broadcast::channel(NOTICE_BUFFER).0,
                log_levels: Arc::default(),
                published: Mutex::new(BTreeMap::new()),
                resource_streams: Mutex::new(HashMap::new()),
                skills: crate::skills::SkillRegistry::default(),
                secrets: Mutex::default(),
            }),
        }
    }

    /// Turns MCP on: reads the configuration, starts every enabled, trusted server in
    /// parallel (each within its connect deadline), then publishes one snapshot. Returns the
    /// startup report (the current one if already enabled). A disable (or dispose) that
    /// arrives while servers are still connecting cuts it short: the connects are cancelled
    /// at once, nothing is published, and this returns [`RuntimeError::EnableSuperseded`].
    pub async fn enable(&self) -> Result<StartupReport, RuntimeError> {
        self.transition(true).await
    }

    /// Turns MCP off: unpublish, withdraw children's access, then close every server (an
    /// enable in progress is cut short). [`RuntimeError::DisableSuperseded`] when an enable
    /// arrived before it finished and MCP is on again.
    pub async fn disable(&self) -> Result<(), RuntimeError> {
        self.transition(false).await.map(|_| ())
    }

    /// Re-reads the configuration and reconciles the running servers with it.
    pub async fn reload(&self) -> Result<ReloadReport, RuntimeError> {
        let mut control = self.inner.control.lock().await;
        if self.inner.disposed.load(Ordering::SeqCst) {
            return Err(RuntimeError::Disposed);
        }
        if !self.inner.enabled.load(Ordering::SeqCst) {
            return Err(RuntimeError::ReloadWhileDisabled);
        }
        Ok(self.inner.reload(&mut control).await)
    }

    /// Replaces where definitions come from (read by the next enable or reload).
    pub fn set_source(&self, source: ServerSource) {
        lock(&self.inner.options).source = source;
    }

    /// Stops everything for good (as disable), then refuses further requests. Idempotent.
    pub async fn dispose(&self) {
        // Said before waiting: an enable in progress cuts itself short.
        self.inner.desired.send_replace(false);
        let mut control = self.inner.control.lock().await;
        self.inner.disposed.store(true, Ordering::SeqCst);
        if self.inner.enabled.load(Ordering::SeqCst) {
            self.inner.stop(&mut control).await;
        }
        lock(&self.inner.resource_streams).clear();
    }

    /// The secret values of every server definition this runtime has read (what `${VAR}`
    /// expansions substituted, environment and header values, URL credentials and query
    /// values): what a host must hide in the servers' text before passing it on (a gateway
    /// in everything it sends its clients). The set only grows: a value stays hidden after
    /// a reload removed its server, whose last errors may still be on their way.
    pub fn secrets(&self) -> Arc<Secrets> {
        lock(&self.inner.secrets).clone()
    }

    /// Whether MCP is on.
    pub fn is_enabled(&self) -> bool {
        self.inner.enabled.load(Ordering::SeqCst)
    }

    /// The current snapshot (never half of one).
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.inner.snapshot.borrow().clone()
    }

    /// Follows snapshot publications.
    pub fn subscribe(&self) -> watch::Receiver<Arc<Snapshot>> {
        self.inner.snapshot.subscribe()
    }

    /// The lifecycle journal, oldest first.
    pub fn journal(&self) -> Vec<LifecycleEvent> {
        lock(&self.inner.journal).iter().cloned().collect()
    }

    /// Every configured server's state, in configuration order.
    pub fn servers(&self) -> Vec<ServerOutcome> {
        self.inner.outcomes()
    }

    /// Server processes this runtime owns that are alive now.
    pub fn live_processes(&self) -> usize {
        lock(&self.inner.roster)
            .iter()
            .filter_map(|(_, shared)| shared.session())
            .filter(|session| session.process().is_some_and(|p| p.exit_status().is_none()))
            .count()
    }

    /// Calls the tool exported as `name` in the current snapshot and returns the server's
    /// result unchanged (`isError`, `structuredContent`, `_meta` and every content block as
    /// the server sent them), for hosts that serve MCP themselves, such as a gateway. The
    /// call is routed, its arguments checked against the bridged schema and its server
    /// waited for as a bridged tool call is; the context's cancellation, progress sink and
    /// timeout apply as there. Unlike [`Tool::call`](crate::Tool::call), nothing is turned
    /// into a [`ToolOutput`](crate::ToolOutput): an upstream JSON-RPC error, a timeout or a
    /// failed session is a typed [`ServerRequestError`], and no output bound applies
    /// beyond the connection's frame cap.
    pub async fn call_tool_raw(
        &self,
        name: &str,
        arguments: Value,
        context: ToolContext,
    ) -> Result<Value, ServerRequestError> {
        let tool = self.exported_tool(name)?;
        snapshot::call_raw(&tool, arguments, context, None).await
    }

    /// [`Runtime::call_tool_raw`] made for a client of the host's own, as a 2026-07-28
    /// gateway does: the client's capabilities go to the server in place of the session's,
    /// a multi-round-trip `input_required` result comes back as the server sent it (for
    /// the client to fulfil), and the client's retry carries its `inputResponses` and
    /// `requestState` to the same server unchanged.
    pub async fn call_tool_for_client(
        &self,
        name: &str,
        arguments: Value,
        for_client: switchboard_session::ForClient,
        context: ToolContext,
    ) -> Result<Value, ServerRequestError> {
        let tool = self.exported_tool(name)?;
        snapshot::call_raw(&tool, arguments, context, Some(for_client)).await
    }

    /// The tool exported as `name` in the current snapshot.
    fn exported_tool(&self, name: &str) -> Result<crate::BridgedTool, ServerRequestError> {
        self.snapshot()
            .tool(name)
            .cloned()
            .ok_or_else(|| ServerRequestError::UnknownTool {
                name: name.to_owned(),
            })
    }

    /// What the servers say and do, as it happens: their log messages, updates of
    /// subscribed resources and other notifications; each server's state changes (ready,
    /// failed and retrying, stopped by the breaker, with the reason); and which snapshot
    /// version first carries a server's changed lists or instructions. Every notice is
    /// bounded ([`NOTICE_TEXT_LIMIT`](crate::NOTICE_TEXT_LIMIT)); a host that lags more
    /// than 256 behind is told how many it missed (`RecvError::Lagged`).
    pub fn notices(&self) -> broadcast::Receiver<ServerNotice> {
        self.inner.notices.subscribe()
    }

    /// The skills of the ready servers that declare the skills extension (SEP-2640): each
    /// one's `skills/list`, read now and held for [`ServerHandle::load_skill`]. No skill file is
    /// read.
    pub async fn skills(&self) -> crate::skills::SkillCatalog {
        let servers = lock(&self.inner.router.servers)
            .iter()
            .map(|(name, shared)| (name.clone(), shared.clone()))
            .collect();
        self.inner.skills.list(servers).await
    }

    /// Reads a file of a loaded skill from the server it was loaded from: only a file its
    /// entry lists, verified against it before it is returned.
    pub async fn read_skill_file(
        &self,
        skill: &switchboard_session::LoadedSkill,
        uri: &str,
    ) -> Result<switchboard_session::SkillContent, crate::skills::SkillLoadError> {
        let session = self.server(&skill.server).ready_session().await?;
        Ok(session.read_skill_file(skill, uri).await?)
    }

    /// The server configured as `name`, for what concerns it alone (restart it, send it a
    /// request, follow its resources, approve its tools, trust it). Nothing is looked up
    /// here: each operation finds the server when it runs.
    pub fn server<'a>(&'a self, name: &'a str) -> ServerHandle<'a> {
        ServerHandle::new(self, name)
    }

    /// A view for a child task: [`ChildAccess::ParentServers`] shares this runtime's live
    /// connections through proxies while it is enabled; [`ChildAccess::Nothing`] (the
    /// default) exposes nothing. A child never discovers or starts servers itself.
    pub fn child(&self, access: ChildAccess) -> ChildRuntime {
        ChildRuntime {
            parent: match access {
                ChildAccess::ParentServers => Some(self.inner.clone()),
                ChildAccess::Nothing => None,
            },
        }
    }

    async fn transition(&self, want: bool) -> Result<StartupReport, RuntimeError> {
        self.inner.desired.send_replace(want);
        let mut control = self.inner.control.lock().await;
        loop {
            if self.inner.disposed.load(Ordering::SeqCst) {
                return Err(RuntimeError::Disposed);
            }
            let desired = *self.inner.desired.borrow();
            let enabled = self.inner.enabled.load(Ordering::SeqCst);
            if desired == enabled {
                return match (want, enabled) {
                    (true, false) => Err(RuntimeError::EnableSuperseded),
                    (false, true) => Err(RuntimeError::DisableSuperseded),
                    _ => Ok(control.report.clone()),
                };
            }
            if desired {
                self.inner.start(&mut control).await;
            } else {
                self.inner.stop(&mut control).await;
            }
        }
    }
}

impl RuntimeInner {
    fn record(&self, event: LifecycleEvent) {
        tracing::debug!(?event, "mcp runtime");
        let mut journal = lock(&self.journal);
        if journal.len() == JOURNAL_CAP {
            journal.pop_front();
        }
        journal.push_back(event);
    }

    fn options(&self) -> RuntimeOptions {
        lock(&self.options).clone()
    }

    /// What a supervisor reports to and reads from.
    fn links(&self, signals: mpsc::UnboundedSender<ServerSignal>) -> Links {
        Links {
            signals,
            notices: self.notices.clone(),
            log_levels: self.log_levels.clone(),
        }
    }

    /// Loads definitions and decides, per server, whether it may start.
    fn configured(&self) -> Configured {
        let options = self.options();
        let loaded = load_definitions(&options);
        let has_launcher = options
            .policy
            .connect_hooks
            .as_ref()
            .is_some_and(|hooks| hooks.0.sandbox_launcher().is_some());
        let trust = options.trust_store.as_deref().map(TrustStore::load);
        let mut problems = loaded.problems;
        if let Some(Err(problem)) = &trust {
            problems.push((None, problem.to_string()));
        }
        let servers = loaded
            .servers
            .into_iter()
            .map(|server| {
                let blocked = if !server.entry.enabled {
                    Some("disabled in the configuration".to_owned())
                } else {
                    let status = match &trust {
                        Some(Ok(store)) => store.status(&server),
                        _ if server.scope != sources::Scope::Project => TrustStatus::NotNeeded,
                        _ => TrustStatus::Untrusted,
                    };
                    match status {
                        // A sandbox this host cannot give is a setting, not a failure to
                        // retry: the server waits, idle, for a host that names a launcher.
                        TrustStatus::NotNeeded | TrustStatus::Trusted
                            if server.entry.sandbox.policy().is_some() && !has_launcher =>
                        {
                            Some(
                                "its entry asks for a sandbox, and this host names no sandbox \
                                 launcher (`ConnectionHooks::sandbox_launcher`); it is not \
                                 started unsandboxed"
                                    .to_owned(),
                            )
                        }
                        TrustStatus::NotNeeded | TrustStatus::Trusted => None,
                        TrustStatus::Changed => Some(format!(
                            "defined in a project file ({}) whose definition changed since it was \
                             trusted; look at it, then trust it again to let it start",
                            server.entry.origin
                        )),
                        TrustStatus::Untrusted => Some(format!(
                            "defined in a project file ({}) and not trusted yet; trust it to let it start",
                            server.entry.origin
                        )),
                    }
                };
                (server, blocked)
            })
            .collect::<Vec<_>>();
        self.remember_secrets(servers.iter().map(|(server, _)| &server.entry));
        Configured { servers, problems }
    }

    /// Adds the secret values of `entries` to [`Runtime::secrets`].
    fn remember_secrets<'a>(&self, entries: impl Iterator<Item = &'a ServerEntry>) {
        let values: Vec<String> = entries.flat_map(ServerEntry::secret_values).collect();
        let mut secrets = lock(&self.secrets);
        let mut grown = Secrets::clone(&secrets);
        grown.extend(values);
        if grown != **secrets {
            *secrets = Arc::new(grown);
        }
    }

    async fn start(self: &Arc<Self>, control: &mut Control) {
        self.router.stopping.store(false, Ordering::SeqCst);
        let options = self.options();
        self.read_tool_lock(&options);
        let (signals_tx, signals_rx) = mpsc::unbounded_channel();
        control.signals = Some(signals_tx.clone());
        let Configured {
            servers: configured,
            problems,
        } = self.configured();
        let mut order = Vec::new();
        for (server, blocked) in &configured {
            let supervisor = match blocked {
                Some(reason) => Supervisor::idle(server.entry.clone(), reason.clone()),
                None => Supervisor::start(
                    server.entry.clone(),
                    options.policy.clone(),
                    self.links(signals_tx.clone()),
                ),
            };
            order.push((server.entry.name.clone(), supervisor.shared.clone()));
            control
                .servers
                .insert(server.entry.name.clone(), supervisor);
        }
        let settled = settle(
            order.iter().map(|(_, s)| s.clone()).collect(),
            settle_deadline(&options),
        );
        let mut desired = self.desired.subscribe();
        let superseded = tokio::select! {
            () = settled => false,
            _ = desired.wait_for(|want| !*want) => true,
        };
        if superseded {
            // Nothing was published: stopping the supervisors cancels their connects.
            control.signals = None;
            let servers: Vec<Supervisor> =
                std::mem::take(&mut control.servers).into_values().collect();
            stop_all(servers).await;
            return;
        }
        self.set_roster(order);
        self.enabled.store(true, Ordering::SeqCst);
        self.child_access.store(true, Ordering::SeqCst);
        let version = self.publish(true);
        self.record(LifecycleEvent::Enabled { version });
        control.report = StartupReport {
            servers: self.outcomes(),
            config_problems: problems,
            warnings: self.snapshot.borrow().findings.clone(),
            held: self.snapshot.borrow().held.clone(),
            version,
        };
        // Signals sent while starting are reflected in the snapshot just published.
        let mut signals_rx = signals_rx;
        while signals_rx.try_recv().is_ok() {}
        control.publisher = Some(tokio::spawn(publisher(Arc::downgrade(self), signals_rx)));
    }

    async fn stop(self: &Arc<Self>, control: &mut Control) {
        self.router.stopping.store(true, Ordering::SeqCst);
        if let Some(publisher) = control.publisher.take() {
            publisher.abort();
        }
        control.signals = None;
        self.enabled.store(false, Ordering::SeqCst);
        let version = self.publish(false);
        self.record(LifecycleEvent::Unpublished { version });
        self.child_access.store(false, Ordering::SeqCst);
        let cancelled_calls = self.child_calls.cancel_all();
        self.record(LifecycleEvent::ChildAccessWithdrawn { cancelled_calls });
        self.record(LifecycleEvent::PromptRebuilt { version });
        let servers: Vec<Supervisor> = std::mem::take(&mut control.servers).into_values().collect();
        let count = servers.len();
        stop_all(servers).await;
        self.set_roster(Vec::new());
        self.record(LifecycleEvent::TransportsClosed { servers: count });
        control.report = StartupReport::default();
    }

    /// Reads the tool lock, at every enable and reload. A lock that became unusable is not
    /// replaced by the one read before: a strict policy then serves no tool.
    fn read_tool_lock(&self, options: &RuntimeOptions) {
        let Some(policy) = &options.lock else {
            return;
        };
        let reading = match ToolLock::load(&policy.path) {
            Ok(tool_lock) => LockReading::Pinned(tool_lock),
            Err(problem) => {
                if policy.strict {
                    tracing::warn!(%problem, "no tool is served until the tool lock is usable");
                } else {
                    tracing::warn!(%problem, "tool lock not read; tools are not compared");
                }
                LockReading::Unusable(problem)
            }
        };
        *lock(&self.tool_lock) = Some(reading);
    }

    /// Stops server `name` and starts it again ([`ServerHandle::restart`]).
    async fn restart(self: &Arc<Self>, name: &str) -> Result<ServerOutcome, RuntimeError> {
        let mut control = self.control.lock().await;
        if self.disposed.load(Ordering::SeqCst) {
            return Err(RuntimeError::Disposed);
        }
        if !self.enabled.load(Ordering::SeqCst) {
            return Err(RuntimeError::RestartWhileDisabled);
        }
        let Some(signals) = control.signals.clone() else {
            return Err(RuntimeError::RestartWhileDisabled);
        };
        let Some(old) = control.servers.get(name) else {
            return Err(RuntimeError::UnknownServer(name.to_owned()));
        };
        if let ServerState::Disabled { reason } = &*old.shared.state.borrow() {
            return Err(RuntimeError::NotStartable {
                name: name.to_owned(),
                reason: reason.clone(),
            });
        }
        let Some(old) = control.servers.remove(name) else {
            return Err(RuntimeError::UnknownServer(name.to_owned()));
        };
        let entry = old.entry.clone();
        // The old process goes first: a server may hold what its successor needs (a lock,
        // a port).
        old.stop().await;
        let options = self.options();
        let fresh = Supervisor::start(entry, options.policy.clone(), self.links(signals));
        let shared = fresh.shared.clone();
        control.servers.insert(name.to_owned(), fresh);
        let roster: Vec<(String, Arc<ServerShared>)> = lock(&self.roster)
            .iter()
            .map(|(server, current)| {
                let current = if server == name {
                    shared.clone()
                } else {
                    current.clone()
                };
                (server.clone(), current)
            })
            .collect();
        self.set_roster(roster);
        settle(vec![shared], settle_deadline(&options)).await;
        let version = self.publish(true);
        self.record(LifecycleEvent::Republished { version });
        self.outcomes()
            .into_iter()
            .find(|outcome| outcome.name == name)
            .ok_or_else(|| RuntimeError::UnknownServer(name.to_owned()))
    }

    /// The running server `name` (as published), if any.
    fn running(&self, name: &str) -> Option<Arc<ServerShared>> {
        lock(&self.roster)
            .iter()
            .find(|(server, _)| server == name)
            .map(|(_, shared)| shared.clone())
    }

    async fn reload(self: &Arc<Self>, control: &mut Control) -> ReloadReport {
        let options = self.options();
        let Some(signals) = control.signals.clone() else {
            return ReloadReport::default();
        };
        self.read_tool_lock(&options);
        let Configured {
            servers: configured,
            problems,
        } = self.configured();
        let mut report = ReloadReport::default();
        let mut next: BTreeMap<String, Supervisor> = BTreeMap::new();
        let mut order = Vec::new();
        let mut starting = Vec::new();
        let mut retired = Vec::new();
        for (server, blocked) in &configured {
            let name = server.entry.name.clone();
            let old = control.servers.remove(&name);
            // A server the breaker stopped is started again: whatever made it fail may be
            // gone, and reload is how a host says "try again".
            let unchanged = old.as_ref().is_some_and(|old| {
                let state = old.shared.state.borrow();
                // An idle server is kept only for the same reason (a trust given, a
                // sandbox that cannot be had, are news its state must say).
                let same_idleness = match (&*state, blocked) {
                    (ServerState::Disabled { reason }, Some(now)) => reason == now,
                    (ServerState::Disabled { .. }, None) | (_, Some(_)) => false,
                    (_, None) => true,
                };
                let broken = matches!(*state, ServerState::Broken { .. });
                same_definition(&old.entry, &server.entry) && same_idleness && !broken
            });
            let supervisor = match (old, unchanged) {
                (Some(mut old), true) => {
                    report.kept.push(name.clone());
                    // The filter is applied at publication: the next snapshot uses the new one.
                    old.shared.set_tool_filter(&server.entry.tool_filter);
                    old.entry.tool_filter = server.entry.tool_filter.clone();
                    old
                }
                (old, _) => {
                    if let Some(old) = old {
                        report.restarted.push(name.clone());
                        retired.push(old);
                    } else {
                        report.added.push(name.clone());
                    }
                    let fresh = match blocked {
                        Some(reason) => Supervisor::idle(server.entry.clone(), reason.clone()),
                        None => Supervisor::start(
                            server.entry.clone(),
                            options.policy.clone(),
                            self.links(signals.clone()),
                        ),
                    };
                    starting.push(fresh.shared.clone());
                    fresh
                }
            };
            order.push((name.clone(), supervisor.shared.clone()));
            next.insert(name, supervisor);
        }
        for (name, old) in std::mem::take(&mut control.servers) {
            report.removed.push(name);
            retired.push(old);
        }
        // Old servers keep serving (and their tools stay published) until the new ones settle.
        settle(starting, settle_deadline(&options)).await;
        control.servers = next;
        self.set_roster(order);
        let version = self.publish(true);
        self.record(LifecycleEvent::Reloaded { version });
        stop_all(retired).await;
        control.report = StartupReport {
            servers: self.outcomes(),
            config_problems: problems,
            warnings: self.snapshot.borrow().findings.clone(),
            held: self.snapshot.borrow().held.clone(),
            version,
        };
        report.startup = control.report.clone();
        report
    }

    fn set_roster(&self, roster: Vec<(String, Arc<ServerShared>)>) {
        *lock(&self.router.servers) = roster.iter().map(|(n, s)| (n.clone(), s.clone())).collect();
        *lock(&self.roster) = roster;
    }

    /// Builds and swaps in a new snapshot; returns its version.
    fn publish(&self, enabled: bool) -> u64 {
        let options = self.options();
        let servers: Vec<snapshot::ServerInput> = if enabled {
            lock(&self.roster)
                .iter()
                .filter_map(|(name, shared)| {
                    let listings = shared.listings()?;
                    Some(snapshot::ServerInput {
                        name: name.clone(),
                        listings,
                        tool_filter: shared.tool_filter(),
                    })
                })
                .collect()
        } else {
            Vec::new()
        };
        let carried: BTreeMap<String, PublishedServer> = servers
            .iter()
            .map(|server| {
                let published = PublishedServer {
                    listings: server.listings.clone(),
                    tool_filter: server.tool_filter.clone(),
                };
                (server.name.clone(), published)
            })
            .collect();
        let tool_lock = lock(&self.tool_lock).clone();
        let version = self.version.fetch_add(1, Ordering::SeqCst) + 1;
        let snapshot = snapshot::build(SnapshotInput {
            version,
            enabled,
            servers,
            router: &self.router,
            instructions_limit: options.instructions_limit,
            lock: tool_lock.as_ref(),
            policy: options.lock.as_ref(),
            naming: options.naming,
        });
        self.snapshot.send_replace(Arc::new(snapshot));
        let before = std::mem::replace(&mut *lock(&self.published), carried.clone());
        self.tell_changes(version, &before, &carried);
        version
    }

    /// Tells hosts which servers' lists and instructions the publication of `version`
    /// changed.
    fn tell_changes(
        &self,
        version: u64,
        before: &BTreeMap<String, PublishedServer>,
        after: &BTreeMap<String, PublishedServer>,
    ) {
        let names: std::collections::BTreeSet<&String> =
            before.keys().chain(after.keys()).collect();
        for name in names {
            let (old, new) = (before.get(name), after.get(name));
            let lists = PublishedServer::changed_lists(old, new);
            let tell = |kind| {
                let _ = self.notices.send(ServerNotice {
                    server: name.clone(),
                    kind,
                });
            };
            if !lists.is_empty() {
                tell(NoticeKind::ListsChanged { version, lists });
            }
            let instructions =
                |p: Option<&PublishedServer>| p.and_then(|p| p.listings.instructions.clone());
            if instructions(old) != instructions(new) {
                tell(NoticeKind::InstructionsChanged { version });
            }
        }
    }

    fn outcomes(&self) -> Vec<ServerOutcome> {
        lock(&self.roster)
            .iter()
            .map(|(name, shared)| ServerOutcome {
                name: name.clone(),
                state: shared.state.borrow().clone(),
                tools: shared.allowed_tools().len(),
                pid: shared.session().and_then(|s| s.pid()),
                sandbox: shared.sandbox.clone(),
            })
            .collect()
    }
}

/// What one publication carried of a server.
#[derive(Clone)]
struct PublishedServer {
    listings: Arc<Listings>,
    tool_filter: Arc<switchboard_config::ToolFilter>,
}

impl PublishedServer {
    /// The tools a publication carried (those the filter lets through).
    fn tools(published: Option<&PublishedServer>) -> Vec<&switchboard_protocol::Tool> {
        published.map_or_else(Vec::new, |p| {
            p.listings
                .tools
                .iter()
                .filter(|t| p.tool_filter.allows(&t.name))
                .collect()
        })
    }

    /// The lists that differ between two publications of a server (absent: nothing
    /// published).
    fn changed_lists(
        old: Option<&PublishedServer>,
        new: Option<&PublishedServer>,
    ) -> Vec<ListKind> {
        if let (Some(old), Some(new)) = (old, new)
            && Arc::ptr_eq(&old.listings, &new.listings)
            && Arc::ptr_eq(&old.tool_filter, &new.tool_filter)
        {
            return Vec::new();
        }
        let empty = Listings::default();
        let old_listings = old.map_or(&empty, |p| &*p.listings);
        let new_listings = new.map_or(&empty, |p| &*p.listings);
        let mut lists = Vec::new();
        if PublishedServer::tools(old) != PublishedServer::tools(new) {
            lists.push(ListKind::Tools);
        }
        if old_listings.prompts != new_listings.prompts {
            lists.push(ListKind::Prompts);
        }
        if old_listings.resources != new_listings.resources
            || old_listings.templates != new_listings.templates
        {
            lists.push(ListKind::Resources);
        }
        lists
    }
}

/// Loaded definitions, each with the reason it may not start (disabled, untrusted).
/// The definitions the options' source holds, with the host's sandbox default applied to
/// those whose entry says nothing (project-scoped ones are sandboxed whatever it says).
fn load_definitions(options: &RuntimeOptions) -> sources::LoadedServers {
    let mut loaded = sources::load(&options.source, &ProcessEnv);
    let host_default = options
        .policy
        .connect_hooks
        .as_ref()
        .map_or(DefaultSandbox::Off, |hooks| hooks.0.default_sandbox());
    sources::apply_sandbox_defaults(&mut loaded.servers, host_default);
    loaded
}

struct Configured {
    servers: Vec<(ConfiguredServer, Option<String>)>,
    problems: Vec<(Option<String>, String)>,
}

/// Definitions are the same when everything but their position in the file and their tool
/// filter is (a new filter is applied to the running server's tools).
fn same_definition(old: &ServerEntry, new: &ServerEntry) -> bool {
    old.transport == new.transport
        && old.enabled == new.enabled
        && old.timeout == new.timeout
        && old.startup_timeout == new.startup_timeout
        && old.era == new.era
        && old.protocol_version == new.protocol_version
}

/// How long startup waits for servers' first outcome: two connect deadlines (start, then
/// listing) plus a second.
fn settle_deadline(options: &RuntimeOptions) -> Duration {
    options.policy.connect_timeout * 2 + Duration::from_secs(1)
}

/// Waits until every server has left `Configured`/`Connecting`, or the deadline passes.
async fn settle(servers: Vec<Arc<ServerShared>>, deadline: Duration) {
    let waits = servers.into_iter().map(|shared| async move {
        let mut state = shared.state.subscribe();
        let _ = state
            .wait_for(|s| !matches!(s, ServerState::Configured | ServerState::Connecting { .. }))
            .await;
    });
    let mut set = tokio::task::JoinSet::new();
    for wait in waits {
        set.spawn(wait);
    }
    let _ =
        tokio::time::timeout(deadline, async { while set.join_next().await.is_some() {} }).await;
}

/// Stops servers in parallel, each bounded by its grace periods.
async fn stop_all(servers: Vec<Supervisor>) {
    let mut set = tokio::task::JoinSet::new();
    for server in servers {
        set.spawn(server.stop());
    }
    while set.join_next().await.is_some() {}
}

/// Republishes when a server's listings change after enable (ready again, re-listed,
/// broken). Bursts are coalesced into one publication. A change during a transition is
/// published once the transition is over (it waits for the controller, so no half state is
/// published, and none is lost: a reload that published before stopping the servers it
/// retired is followed by this publication). A disable aborts the waiting publisher.
async fn publisher(
    runtime: std::sync::Weak<RuntimeInner>,
    mut signals: mpsc::UnboundedReceiver<ServerSignal>,
) {
    while signals.recv().await.is_some() {
        let Some(runtime) = runtime.upgrade() else {
            break;
        };
        let control = runtime.control.lock().await;
        // Whatever arrived while waiting is in this publication too.
        while signals.try_recv().is_ok() {}
        if runtime.enabled.load(Ordering::SeqCst) {
            let version = runtime.publish(true);
            runtime.record(LifecycleEvent::Republished { version });
        }
        drop(control);
    }
}

/// What a child task's runtime reaches ([`Runtime::child`]). A host that was given no
/// policy for the child uses the default, [`ChildAccess::Nothing`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ChildAccess {
    /// No servers: the child sees no tools, prompts or resources.
    #[default]
    Nothing,
    /// The parent's live connections, through proxies, while the parent is enabled.
    ParentServers,
}

/// A child task's view of the runtime. It never discovers or starts servers.
#[derive(Clone)]
pub struct ChildRuntime {
    parent: Option<Arc<RuntimeInner>>,
}

impl fmt::Debug for ChildRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildRuntime")
            .field("shares_parent", &self.parent.is_some())
            .finish()
    }
}

impl ChildRuntime {
    /// The parent's current tools as proxies (none if the policy was disabled or omitted, or
    /// the parent is off).
    pub fn tools(&self) -> Vec<ProxyTool> {
        let Some(parent) = &self.parent else {
            return Vec::new();
        };
        if !parent.child_access.load(Ordering::SeqCst) {
            return Vec::new();
        }
        let snapshot = parent.snapshot.borrow().clone();
        snapshot
            .tools
            .iter()
            .map(|tool| ProxyTool {
                tool: tool.clone(),
                parent: parent.clone(),
            })
            .collect()
    }

    /// One proxy by exported name.
    pub fn tool(&self, name: &str) -> Option<ProxyTool> {
        self.tools().into_iter().find(|t| t.name() == name)
    }
}

/// A parent's bridged tool as a child sees it: calls go through the parent's connection
/// (its reconnects included) and end when the parent withdraws access.
#[derive(Clone)]
pub struct ProxyTool {
    tool: BridgedTool,
    parent: Arc<RuntimeInner>,
}

impl fmt::Debug for ProxyTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProxyTool")
            .field("tool", &self.tool)
            .finish()
    }
}

impl Tool for ProxyTool {
    fn name(&self) -> &str {
        self.tool.name()
    }

    fn description(&self) -> &str {
        self.tool.description()
    }

    fn input_schema(&self) -> &Value {
        self.tool.input_schema()
    }

    fn call(&self, arguments: Value, mut context: ToolContext) -> ToolFuture {
        let parent = self.parent.clone();
        let tool = self.tool.clone();
        Box::pin(async move {
            let token = context.cancel.child_token();
            let registration = parent.child_calls.register(token.clone());
            // Checked after registering, so a withdrawal cannot slip in between.
            if !parent.child_access.load(Ordering::SeqCst) {
                parent.child_calls.finish(registration);
                return ToolOutput::error(
                    "MCP access was withdrawn: the parent task turned MCP off",
                );
            }
            context.cancel = token.clone();
            let output = tool.call(arguments, context).await;
            parent.child_calls.finish(registration);
            if token.is_cancelled() && !parent.child_access.load(Ordering::SeqCst) {
                return ToolOutput::error(
                    "MCP was disabled while the call was in flight: the parent task turned MCP off, so the call was cancelled",
                );
            }
            output
        })
    }
}
