//! Wrapping a stdio server's start in the sandbox launcher: the one place where a
//! [`SandboxPolicy`] becomes a start. For each start this makes a private temp folder
//! (`${tmp}`, also the server's `TMPDIR`) and, where the system allows, a pids cgroup;
//! resolves the policy against the start's places (working folder, home, the program
//! found in the child's `PATH`, script arguments); and runs
//! `<launcher> __sandbox-exec --policy <json> -- PROGRAM ARGS…`, which applies the
//! policy to itself and executes the server. The temp folder and the cgroup are removed
//! when the [`ChildProcess`](crate::stdio::ChildProcess) goes.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

use switchboard_sandbox::{LaunchPolicy, SandboxPolicy, StartPlaces};

/// The sandbox one stdio server is started in.
#[derive(Clone, PartialEq, Eq)]
pub struct SandboxSpawn {
    /// The policy.
    pub policy: SandboxPolicy,
    /// The launcher executable: `switchboard` itself for the CLI; a library host names
    /// its own (any binary that answers `__sandbox-exec` through
    /// `switchboard_sandbox::launch`).
    pub launcher: PathBuf,
    /// Further paths never to open (the host's token and trust files when they are not
    /// in their default places).
    pub never_open: Vec<PathBuf>,
}

impl fmt::Debug for SandboxSpawn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SandboxSpawn")
            .field("policy", &self.policy.describe())
            .field("launcher", &self.launcher)
            .finish_non_exhaustive()
    }
}

/// What one sandboxed start left on the system; removed on drop.
#[derive(Debug)]
pub(crate) struct SandboxGuard {
    tmp: PathBuf,
    cgroup: Option<PathBuf>,
}

impl Drop for SandboxGuard {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.tmp);
        if let Some(cgroup) = &self.cgroup {
            // Empty once its processes are gone (killed before this runs).
            let _ = std::fs::remove_dir(cgroup);
        }
    }
}

/// A start prepared: the launcher to run with its arguments, the temp folder for `TMPDIR`,
/// and what to remove afterwards.
pub(crate) struct Prepared {
    pub(crate) launcher: PathBuf,
    pub(crate) args: Vec<OsString>,
    pub(crate) tmp: PathBuf,
    pub(crate) guard: SandboxGuard,
}

/// The child's environment as it will be (configured entries over inherited ones).
pub(crate) struct ChildEnv<'a> {
    pub(crate) configured: &'a [(String, String)],
}

impl ChildEnv<'_> {
    fn get(&self, name: &str) -> Option<OsString> {
        self.configured
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| OsString::from(v))
            .or_else(|| std::env::var_os(name))
    }
}

/// Prepares a sandboxed start of `program args` in `cwd`; the error is a detail for the
/// spawn error (what is wrong and what to do).
pub(crate) fn prepare(
    sandbox: &SandboxSpawn,
    program: &str,
    args: &[String],
    cwd: Option<&Path>,
    env: &ChildEnv<'_>,
    token: &str,
) -> Result<Prepared, String> {
    if !switchboard_sandbox::SUPPORTED {
        return Err("a `sandbox` is supported on Linux only; remove it from the entry".into());
    }
    let cwd = match cwd {
        Some(cwd) => cwd.to_owned(),
        None => std::env::current_dir().map_err(|e| format!("no working folder: {e}"))?,
    };
    let tmp = std::env::temp_dir().join(format!("switchboard-sandbox-{token}"));
    make_private_dir(&tmp).map_err(|e| {
        format!(
            "could not make the sandbox's temp folder `{}`: {e}",
            tmp.display()
        )
    })?;
    let guard = SandboxGuard {
        tmp: tmp.clone(),
        cgroup: make_pids_cgroup(token),
    };
    let found = find_program(program, &cwd, env.get("PATH"));
    let mut program_forms = Vec::new();
    if let Some(found) = &found {
        program_forms.push(found.clone());
        if let Ok(real) = found.canonicalize()
            && &real != found
        {
            program_forms.push(real);
        }
    }
    let script_files = args
        .iter()
        .filter(|a| !a.starts_with('-'))
        .map(|a| cwd.join(a))
        .filter(|p| p.is_file())
        .collect();
    let places = StartPlaces {
        cwd,
        tmp: tmp.clone(),
        home: env.get("HOME").map(PathBuf::from),
        program: program_forms,
        script_files,
    };
    let mut launch: LaunchPolicy = sandbox
        .policy
        .resolve(&places, &sandbox.never_open)
        .map_err(|e| e.to_string())?;
    launch.pids_cgroup = guard.cgroup.clone();
    // The launcher executes the program by the path found here: the same file the policy
    // was resolved for.
    let program = found.map_or_else(|| program.to_owned(), |p| p.display().to_string());
    #[cfg(target_os = "linux")]
    let launch_args = switchboard_sandbox::launch::launcher_args(&launch, &program, args);
    #[cfg(not(target_os = "linux"))]
    let launch_args = Vec::new();
    Ok(Prepared {
        launcher: sandbox.launcher.clone(),
        args: launch_args,
        tmp,
        guard,
    })
}

fn make_private_dir(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().mode(0o700).create(path)
}

/// `program` as a path: as given when it has a `/`, else the first executable file of
/// that name in the child's `PATH`.
fn find_program(program: &str, cwd: &Path, path: Option<OsString>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    if program.contains('/') {
        return Some(cwd.join(program));
    }
    let path = path?;
    std::env::split_paths(&path)
        .map(|dir| cwd.join(dir).join(program))
        .find(|candidate| {
            candidate
                .metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// A pids cgroup for one start, where this process may make one: cgroup v2 beside our own
/// cgroup when the `pids` controller is enabled there, else the v1 `pids` hierarchy.
/// `None` when neither can be made (then only RLIMIT_NPROC bounds processes, which binds
/// no root process).
fn make_pids_cgroup(token: &str) -> Option<PathBuf> {
    let name = format!("switchboard-{token}");
    let root = Path::new("/sys/fs/cgroup");
    let mut candidates = Vec::new();
    if root.join("cgroup.controllers").exists() {
        let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        if let Some(path) = own.lines().find_map(|l| l.strip_prefix("0::")) {
            let parent = root.join(path.trim_start_matches('/'));
            let enabled = std::fs::read_to_string(parent.join("cgroup.subtree_control"))
                .is_ok_and(|c| c.split_whitespace().any(|w| w == "pids"));
            if enabled {
                candidates.push(parent.join(&name));
            }
        }
    }
    candidates.push(root.join("pids").join(&name));
    candidates
        .into_iter()
        .find(|dir| std::fs::create_dir(dir).is_ok() && dir.join("pids.max").exists())
}

/// Text in a sandboxed server's stderr that may be a sandbox refusal.
const DENIAL_HINTS: &[&str] = &[
    "Permission denied",
    "EACCES",
    "EPERM",
    "Operation not permitted",
    "ECONNREFUSED",
    "Connection refused",
    "ENETUNREACH",
    "Network is unreachable",
];

/// What a sandboxed server's failure adds to its summary, judged from its stderr tail.
pub(crate) fn failure_note(stderr_tail: &str) -> Option<&'static str> {
    if stderr_tail.contains(switchboard_sandbox::launch_failure_prefix()) {
        return Some("the sandbox refused to start it (its stderr says why)");
    }
    DENIAL_HINTS
        .iter()
        .any(|hint| stderr_tail.contains(hint))
        .then_some("it runs in a sandbox, which denies what its stderr reports as refused (see docs/sandbox.md)")
}
