//! The CLI's part in sandboxing servers: `switchboard` is its own launcher (the hidden
//! `__sandbox-exec`, answered first thing in `main`), and decides which servers whose entry
//! says nothing are sandboxed: project-scoped ones always, every one with `--sandbox` or
//! `SWITCHBOARD_SANDBOX=on`. See `docs/sandbox.md`.

use std::path::PathBuf;
use std::sync::OnceLock;

use switchboard_config::{ConfigFile, DefaultSandbox};
use switchboard_runtime::connect::SandboxLauncher;

/// The user-level setting: `on` sandboxes every server whose entry says nothing.
pub(crate) const SANDBOX_VAR: &str = "SWITCHBOARD_SANDBOX";

static HOST_DEFAULT: OnceLock<DefaultSandbox> = OnceLock::new();

/// Whether `--sandbox` was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SandboxFlag {
    Given,
    Absent,
}

/// Records the default for this run: `--sandbox`, else `SWITCHBOARD_SANDBOX` (`on`/`1`).
pub(crate) fn init(flag: SandboxFlag) {
    let from_env =
        std::env::var(SANDBOX_VAR).is_ok_and(|value| matches!(value.trim(), "on" | "1" | "true"));
    let default = if flag == SandboxFlag::Given || from_env {
        DefaultSandbox::On
    } else {
        DefaultSandbox::Off
    };
    let _ = HOST_DEFAULT.set(default);
}

/// The default for servers whose entry says nothing (project-scoped servers excepted).
pub(crate) fn host_default() -> DefaultSandbox {
    HOST_DEFAULT.get().copied().unwrap_or(DefaultSandbox::Off)
}

/// Applies the host default to every entry of `file` that says nothing.
pub(crate) fn apply_host_default(file: &mut ConfigFile) {
    let default = host_default();
    for entry in file.servers.iter_mut().flatten() {
        entry.sandbox = entry.sandbox.or_default(default);
    }
}

/// This executable as the launcher, with the token file and configuration named by variables (the
/// default places are under the home folder's credential paths already).
pub(crate) fn launcher() -> Option<SandboxLauncher> {
    let path = std::env::current_exe().ok()?;
    let never_open: Vec<PathBuf> = ["SWITCHBOARD_TOKEN_FILE", "SWITCHBOARD_CONFIG"]
        .iter()
        .filter_map(|name| std::env::var_os(name).map(PathBuf::from))
        .chain(std::env::var_os("XDG_CONFIG_HOME").map(|d| PathBuf::from(d).join("switchboard")))
        .chain(std::env::var_os("XDG_DATA_HOME").map(|d| PathBuf::from(d).join("switchboard")))
        .collect();
    Some(SandboxLauncher { path, never_open })
}
