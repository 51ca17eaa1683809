//! Containment for stdio servers (Linux): the policy an entry's `sandbox` object asks for
//! ([`SandboxChoice`], [`SandboxPolicy`]), its resolution for one start ([`LaunchPolicy`]:
//! templates expanded, default paths added, paths that would open credentials refused),
//! and the launcher that applies a launch policy to its own process and then executes the
//! server (`launch`, Linux only).
//!
//! Its own crate, free of tokio, because the configuration reader, the process spawner
//! (`switchboard-wire`) and the launcher (the `switchboard` binary's first lines) all need
//! it, and the launcher must start fast. `docs/sandbox.md` describes each protection.

#[cfg(target_os = "linux")]
pub mod launch;
mod policy;
mod resolve;

pub use policy::{
    DEFAULT_OPEN_FILES, DEFAULT_PROCESSES, DefaultSandbox, FilesystemPolicy, Limits, NetworkPolicy,
    PolicyError, SandboxChoice, SandboxPolicy, Scoping,
};
pub use resolve::{
    DEVICES_WRITE, HOME_SECRETS, LaunchPolicy, SYSTEM_READ, SecretPathError, StartPlaces, prefix_of,
};

/// Whether this platform can sandbox a server (Linux only).
pub const SUPPORTED: bool = cfg!(target_os = "linux");

/// The first words a launcher that failed writes to stderr (see `launch`), on every
/// platform, so that a failure message can tell a sandbox refusal apart.
pub fn launch_failure_prefix() -> &'static str {
    "switchboard sandbox:"
}
