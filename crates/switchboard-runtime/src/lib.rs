//! The Switchboard runtime: operates many MCP servers for an agent.
//!
//! Off by default: constructing a [`Runtime`] and loading configuration never starts or
//! connects anything; only [`Runtime::enable`] does. One session-owned controller serialises
//! enable, disable and reload; servers' tools, prompts, resources and instructions are
//! published together as one versioned [`Snapshot`]; bridged tools go through the same
//! [`ToolOutput`] boundary as the host's own tools; child tasks share the parent's live
//! connections through proxies.

pub mod connect;
pub mod guards;
pub mod naming;
mod notice;
pub mod output;
mod pin_diff;
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
    RuntimeError, RuntimeOptions, ServerOutcome, ServerRequestError, StartupReport, sandbox_suffix,
};
pub use server::{
    AuthorizerFor, Authorizers, Capabilities, ConnectHooks, ConnectOutcome, ConnectionHooks,
    HostHandler, RestartPolicy, ServerPolicy, ServerState, sandbox_status,
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
