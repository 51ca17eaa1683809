//! The Switchboard runtime: operates many MCP servers for an agent.
//!
//! Off by default: constructing a [`Runtime`] and loading configuration never starts or
//! connects anything; only [`Runtime::enable`] does. One session-owned controller serialises
//! enable, disable and reload; servers' tools, prompts, resources and instructions are
//! published together as one versioned [`Snapshot`]; bridged tools go through the same
//! [`ToolOutput`] boundary as the host's own tools; child tasks share the parent's live
//! connections through proxies.
//!
//! # Map
//!
//! Many servers for an agent (and `connect`: `Endpoint`, the one description of how to
//! reach a server, and `connect_endpoint`, the one way from it to a connected session;
//! `connect` does both for a config entry, with `ConnectOverrides` for what a caller sets
//! beyond the entry, `era_hint` among them: the era a host remembers for the server, keyed
//! by `server_identity`; the CLI connects its entries through it too, and the checker the
//! endpoint it checks; the supervisor asks the host's
//! `ConnectionHooks`, `ServerPolicy::connect_hooks`, for each connect's tap and era hint
//! and tells it what the connect came to, `ConnectOutcome`). `Runtime` (the session-owned
//! controller: `enable`/`disable`/`reload`/`dispose`, serialised, latest request wins;
//! `Runtime::server(name)` gives a `ServerHandle`, `runtime/handle.rs`, for what concerns
//! one server alone: restart it — serialised with the rest —, its requests, log level,
//! subscriptions, skills, identity, stderr tail, tool approval and trust; it holds only the
//! name, looked up by each operation),
//! `sources` (config scopes, project trust; `trust_key` for hosts that read project files
//! themselves, as the CLI does), a supervisor per server (`server.rs`: explicit states
//! configured → connecting → ready → backoff → broken, restart with backoff and jitter,
//! circuit breaker — a reload starts a broken server again —, list-changed re-listing;
//! a ready HTTP server that dies between calls is noticed within seconds by pings while it
//! is silent, `liveness.rs`),
//! `Snapshot` (everything published, one version at a time; a change during a transition is
//! published after it by the publisher, which waits for the controller; the system-prompt
//! section fences each server's instructions), `BridgedTool` and the `Tool` trait with the
//! `ToolOutput` boundary (`output.rs`: size bound on every output, errors included, middle
//! truncation, spill) for agents; the host's `ServerPolicy::host` answers the servers'
//! elicitation and sampling requests; and beside it `Runtime::call_tool_raw` for hosts that
//! serve MCP (same routing and argument checks, the server's result or a typed
//! `ServerRequestError` unconverted; with the handle's `get_prompt`, `read_resource`,
//! `complete_raw`; a call a server restart interrupted is sent again once when that is
//! safe — reads, listings, prompts, completions, tools annotated read-only or idempotent —
//! on the server's next session, else fails as `SessionError::Restarted`, `restarts.rs`;
//! `subscribe_resource` (`resources/subscribe` to a legacy server, a listen stream
//! following the resource on a 2026-07-28 one), `set_log_level` (`logging/setLevel` to a
//! legacy server, `_meta` on every request to a 2026-07-28 one, applied again after every
//! reconnect), and `notices()`, the host's feed as `ServerNotice`s (`notice.rs`: the
//! servers' log messages, resource updates and every other notification but list changes,
//! each server's state changes with the failure's reason, which snapshot version first
//! carries a server's changed lists or instructions — `publish` compares each server's
//! lists with the last publication —, frames that were no usable message, and the runtime's
//! own lag; every string and JSON value cut to 16 KiB, 256 queued, a lagging host told how
//! many it missed); an enable is cut short by a disable that arrives while servers connect
//! (`desired` is a watch the start waits on beside its servers: connects cancelled, nothing
//! published, `RuntimeError::EnableSuperseded`); the startup report's `warnings` are the
//! snapshot's findings, instructions linted like descriptions), `skills` (`Runtime::skills`
//! lists the servers that declare the extension and holds each listing per connection;
//! `load_skill`/`read_skill_file` load from the held entry and read only from the skill's
//! own server), `naming` (exported names via a route table: provider-safe
//! `<server>__<tool>` by default, or each tool's own name with `Naming::Unprefixed`, which
//! `serve --server NAME --no-prefix` uses; the gateway then presents that server's
//! `serverInfo` (`ServerHandle::identity`) and instructions), `schema` (normalisation;
//! arguments are checked with the protocol crate's `ArgumentCheck`), `guards` (tool lock file — `ToolLock::beside` its config, where
//! `scan --update` writes it and `serve` applies it strictly unless `--no-tool-lock`;
//! `tool_lock.rs`: format 2 pins each tool's whole definition (hash and, up to 64 KiB, the
//! definition itself, for `pin_diff.rs`'s diffs and rename detection), the lock's
//! `new_tools` policy; `state_file.rs` reads it and the trust store failing closed: only a
//! missing file is empty; `Snapshot::held` names each held tool with why and the command
//! that accepts it —, description lint: hidden characters, instruction-like text,
//! exfiltration phrasing, orders about other tools, markup that hides text, credentials;
//! `find_shadowing` across servers), `ChildRuntime`/`ProxyTool` (children share the
//! parent's connections). `examples/agent_host.rs` walks a host through the whole life.
//! This crate is an API boundary: its public items are what other crates and hosts use.

pub mod connect;
pub mod guards;
mod liveness;
pub mod naming;
mod notice;
pub mod output;
mod pin_diff;
mod restarts;
mod runtime;
pub mod schema;
mod server;
pub mod skills;
mod snapshot;
pub mod sources;
mod state_file;
pub mod tool;
mod tool_lock;

pub use guards::{Finding, FindingKind, LockPolicy, ToolLock};
pub use notice::{ListKind, NOTICE_TEXT_LIMIT, NoticeKind, ServerNotice};
pub use output::{OutputLimit, ToolOutput, Truncation};
pub use runtime::{
    ChildAccess, ChildRuntime, ClientRequest, LifecycleEvent, ProxyTool, ReloadReport, Runtime,
    RuntimeError, RuntimeOptions, ServerHandle, ServerOutcome, ServerRequestError, StartupReport,
    sandbox_suffix,
};
pub use server::{
    AuthorizerFor, Authorizers, ConnectHooks, ConnectOutcome, ConnectionHooks, HostHandler,
    Listings, RestartPolicy, ServerPolicy, ServerState, sandbox_status,
};
pub use skills::{ServerSkills, SkillCatalog, SkillListingFailure, SkillLoadError};
pub use snapshot::{BridgedTool, FromServer, HeldTool, Snapshot};
pub use state_file::{ApproveError, StateFileError, StateFileKind, StateFileProblem, TrustError};
pub use switchboard_protocol::LogLevel;
pub use switchboard_session::LevelSet;
/// A host owns its servers' descendants, including those that daemonise, by holding the
/// guard of [`adopt_orphans`] in its `main` (see [`switchboard_wire::orphans`]). Without
/// it, stopping a server still kills every descendant that kept its marker.
pub use switchboard_wire::orphans::{AdoptError, OrphanGuard, adopt_orphans};
pub use tool::{Tool, ToolContext, ToolFuture};
