//! One MCP client session over one transport.
//!
//! [`Session::connect`] detects the server's protocol era (a `server/discover` probe, with a
//! fall-back to `initialize`), negotiates the version, and then offers typed requests with
//! deadlines, progress, cancellation and pagination guards. Everything the server sends
//! outside of responses is published as [`SessionEvent`]s; server-to-client requests are
//! answered through a [`ClientHandler`].
//!
//! The session knows one server and nothing about configuration files or other servers.

mod config;
mod error;
mod handler;
mod params;
mod session;
mod skills;

pub use config::{CallOptions, EraChoice, ForClient, SessionConfig};
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
