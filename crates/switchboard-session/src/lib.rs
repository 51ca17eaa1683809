//! One MCP client session over one transport.
//!
//! [`Session::connect`] detects the server's protocol era (a `server/discover` probe, with a
//! fall-back to `initialize`), negotiates the version, and then offers typed requests with
//! deadlines, progress, cancellation and pagination guards. Everything the server sends
//! outside of responses is published as [`SessionEvent`]s; server-to-client requests are
//! answered through a [`ClientHandler`].
//!
//! The session knows one server and nothing about configuration files or other servers.
//!
//! # Map
//!
//! One client session over one transport (`session/mod.rs`: the public types and calls; it
//! tells the connection MCP's cancellation and each message's protocol version): era
//! detection and negotiation (`negotiate.rs`; `EraChoice::AutoLegacyFirst`, a host's hint,
//! sends `initialize` first and probes only when it is refused), capability gating,
//! requests with deadlines/progress/cancellation and MRTR input rounds (`requests.rs`; the
//! waiting requests' deadlines are kept by one sweep task per session, not a timer per
//! request, `deadlines.rs`; `Session::request_unanswered` hands an `input_required` result back unanswered, for the
//! checker), listings under caps on pages, entries and bytes (`listing.rs`; each page read
//! entry by entry from its text by `protocol`'s `ListPage`, so a bad entry is a listing
//! problem), the 2026-07-28 HTTP headers that mirror a request's content (`headers.rs`:
//! `Mcp-Name`, and `Mcp-Param-*` from the listed tools' `x-mcp-header` annotations; a tool
//! with an invalid one is a listing problem; a call whose headers the server refused,
//! -32020, lists the tools again and is sent once more; a request a server restart
//! interrupted — its 2026-07-28 response stream lost, which cannot be resumed — is sent
//! once more under a new id only when that is safe (`Repeatable`: reads, listings,
//! prompts, completions, and tools annotated read-only or idempotent), else it fails as
//! `SessionError::Restarted`, `requests.rs`), the dispatch task
//! answering server requests via `ClientHandler` and publishing
//! the `SessionEvent` stream (`dispatch.rs`, with the progress bookkeeping of
//! `progress.rs`), settings (`config.rs`), the skills extension (`session/skills.rs`:
//! `list_skills` under the listing caps, `get_skill`, `load_skill`/`read_skill_file`; the
//! checks in `skills.rs`: byte size, then SHA-256, then the YAML frontmatter field by
//! field, before any content is returned, under `SkillLimits`, failures a `SkillError`).
//! This crate is an API boundary: its public items are what other crates and hosts use.

mod config;
mod error;
mod handler;
mod params;
mod session;
mod skills;

pub use config::{
    CallOptions, EraChoice, ForClient, Repeatable, SessionConfig, TRACEPARENT, TRACESTATE,
    TraceContext, repeatable_method,
};
pub use error::{ListingCap, SessionError};
pub use handler::{ClientHandler, HandlerFuture, NoHandler};
pub use session::{
    ConnectionParts, LevelSet, Listing, ListingProblem, Negotiated, Session, SessionEvent,
    SessionStats,
};
pub use skills::{
    DynamicSkills, Integrity, LoadedSkill, SkillContent, SkillError, SkillLimits, first_difference,
    parse_frontmatter, split_frontmatter, verify_file,
};
pub use tokio_util::sync::CancellationToken;
