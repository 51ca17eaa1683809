//! The launcher: applies a [`LaunchPolicy`] to the current process, then replaces it with
//! the server (`exec`). Run as `<launcher> __sandbox-exec --policy <json> -- PROGRAM ARGS…`
//! by `switchboard-wire`'s `stdio::spawn`; the `switchboard` binary answers it first thing
//! in `main`, before any thread or runtime exists (unsharing a user namespace needs a
//! single-threaded process).
//!
//! Order: the pids cgroup is joined (while we may still write to it), resource limits are
//! set, the user and network namespaces are entered (network `none`), Landlock restricts
//! the filesystem, TCP ports and scopes (and sets `no_new_privs`), then the program is
//! executed. Nothing is relaxed when the kernel lacks a feature: the launcher fails with a
//! [`LaunchError`] naming the missing protection and the key that relaxes it.

use std::ffi::{OsStr, OsString};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath,
    PathFd, Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, Scope,
};
use nix::sched::{CloneFlags, unshare};
use nix::sys::resource::{Resource, setrlimit};

use crate::policy::{NetworkPolicy, Scoping};
use crate::resolve::LaunchPolicy;

/// The launcher's hidden subcommand (the first argument).
pub const LAUNCH_SUBCOMMAND: &str = "__sandbox-exec";

/// The first line a launcher that failed writes to stderr, before its reason: what a
/// failure message quotes to tell a sandbox refusal apart.
pub const LAUNCH_FAILURE_PREFIX: &str = "switchboard sandbox:";

/// The exit code of a launcher that could not apply its policy or start the program.
pub const LAUNCH_FAILURE_EXIT: u8 = 126;

/// The Landlock filesystem rights handled (ABI 3: read, write, execute, make, remove,
/// refer, truncate).
const FS_ABI: ABI = ABI::V3;

/// Why the launcher did not start the server.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// The command line is not the launcher's.
    #[error("bad launcher arguments: {0}")]
    Arguments(String),
    /// The kernel (or the setup) lacks a protection the policy asks for.
    #[error(
        "the kernel cannot enforce {protection} ({why}); to start the server without it, {relax}"
    )]
    MissingProtection {
        /// What cannot be enforced.
        protection: &'static str,
        /// The underlying reason.
        why: String,
        /// The policy change that relaxes it.
        relax: &'static str,
    },
    /// The program could not be executed inside the sandbox.
    #[error("the sandbox denies running `{program}`: {source}; is it inside the readable paths?")]
    Exec {
        /// The program.
        program: String,
        /// Why.
        source: std::io::Error,
    },
}

/// The launcher's arguments after the launcher path: the subcommand, the policy and the
/// program with its arguments.
pub fn launcher_args(policy: &LaunchPolicy, program: &str, args: &[String]) -> Vec<OsString> {
    let json = serde_json::to_string(policy).unwrap_or_default();
    let mut out: Vec<OsString> = vec![
        LAUNCH_SUBCOMMAND.into(),
        "--policy".into(),
        json.into(),
        "--".into(),
        program.into(),
    ];
    out.extend(args.iter().map(OsString::from));
    out
}

/// True when this process was started as the launcher (`argv[1]` is the subcommand).
pub fn is_launch(args: &[OsString]) -> bool {
    args.get(1)
        .is_some_and(|a| a == OsStr::new(LAUNCH_SUBCOMMAND))
}

/// Applies the policy in `args` (the whole `argv`) and executes the program. Returns only
/// on failure.
pub fn launch(args: &[OsString]) -> LaunchError {
    let (policy, program, program_args) = match parse(args) {
        Ok(parsed) => parsed,
        Err(error) => return error,
    };
    if let Err(error) = apply(&policy) {
        return error;
    }
    let source = std::process::Command::new(&program)
        .args(program_args)
        .exec();
    LaunchError::Exec {
        program: program.to_string_lossy().into_owned(),
        source,
    }
}

fn parse(args: &[OsString]) -> Result<(LaunchPolicy, OsString, &[OsString]), LaunchError> {
    let bad = |what: &str| LaunchError::Arguments(what.to_owned());
    let [_, subcommand, flag, json, separator, program, rest @ ..] = args else {
        return Err(bad(
            "expected __sandbox-exec --policy JSON -- PROGRAM ARGS…",
        ));
    };
    if subcommand != LAUNCH_SUBCOMMAND || flag != "--policy" || separator != "--" {
        return Err(bad(
            "expected __sandbox-exec --policy JSON -- PROGRAM ARGS…",
        ));
    }
    let json = json
        .to_str()
        .ok_or_else(|| bad("the policy is not UTF-8"))?;
    let policy: LaunchPolicy =
        serde_json::from_str(json).map_err(|e| bad(&format!("the policy is unreadable: {e}")))?;
    Ok((policy, program.clone(), rest))
}

/// Applies everything but the exec, in order.
pub fn apply(policy: &LaunchPolicy) -> Result<(), LaunchError> {
    let cgroup_holds = match (&policy.pids_cgroup, policy.limits.processes) {
        (Some(cgroup), Some(max)) => join_pids_cgroup(cgroup, max).is_ok(),
        _ => false,
    };
    set_limits(policy, cgroup_holds)?;
    if policy.network == NetworkPolicy::None {
        enter_network_namespace()?;
    }
    restrict(policy)
}

/// Sets the cgroup's bound and moves this process into it. On cgroup v1 a single-threaded
/// process moves its one thread (`0` to `tasks`): moving a whole thread group through
/// `cgroup.procs` takes the kernel's global threadgroup lock for writing, which waits for an
/// RCU grace period (≈ 15 ms here), while moving the calling thread does not (≈ 0.3 ms).
/// The launcher runs before any thread exists, so the thread is the process.
fn join_pids_cgroup(cgroup: &Path, max: u64) -> std::io::Result<()> {
    std::fs::write(cgroup.join("pids.max"), max.to_string())?;
    let tasks = cgroup.join("tasks");
    if tasks.exists() && single_threaded() {
        return std::fs::write(tasks, "0");
    }
    std::fs::write(cgroup.join("cgroup.procs"), std::process::id().to_string())
}

fn single_threaded() -> bool {
    std::fs::read_dir("/proc/self/task").is_ok_and(|tasks| tasks.count() == 1)
}

fn set_limits(policy: &LaunchPolicy, cgroup_holds: bool) -> Result<(), LaunchError> {
    let limits = &policy.limits;
    let set = |resource: Resource, value: Option<u64>, protection: &'static str, relax| match value
    {
        Some(value) => {
            setrlimit(resource, value, value).map_err(|errno| LaunchError::MissingProtection {
                protection,
                why: errno.desc().to_owned(),
                relax,
            })
        }
        None => Ok(()),
    };
    set(
        Resource::RLIMIT_AS,
        limits.memory_bytes,
        "the memory limit",
        "set `sandbox.limits.memory` to \"unlimited\"",
    )?;
    set(
        Resource::RLIMIT_NOFILE,
        limits.open_files,
        "the open-file limit",
        "set `sandbox.limits.openFiles` to \"unlimited\"",
    )?;
    set(
        Resource::RLIMIT_CPU,
        limits.cpu_seconds,
        "the CPU-time limit",
        "set `sandbox.limits.cpuSeconds` to \"unlimited\"",
    )?;
    if let Some(max) = limits.processes {
        set(
            Resource::RLIMIT_NPROC,
            Some(max),
            "the process limit",
            "set `sandbox.limits.processes` to \"unlimited\"",
        )?;
        // RLIMIT_NPROC does not bind root (the kernel exempts the initial user): only a
        // pids cgroup holds then.
        if nix::unistd::getuid().is_root() && !cgroup_holds {
            return Err(LaunchError::MissingProtection {
                protection: "the process limit",
                why: "RLIMIT_NPROC does not bind root and no pids cgroup could be made".into(),
                relax: "set `sandbox.limits.processes` to \"unlimited\", or run as another user",
            });
        }
    }
    Ok(())
}

/// A user namespace (to be allowed a network namespace without privileges) mapping our own
/// ids to themselves, and a network namespace with nothing but a loopback that is down.
fn enter_network_namespace() -> Result<(), LaunchError> {
    let missing = |why: String| LaunchError::MissingProtection {
        protection: "network isolation (a user and network namespace)",
        why,
        relax: "set `sandbox.network` to \"any\" or {\"tcp\": [ports]}",
    };
    let uid = nix::unistd::getuid();
    let gid = nix::unistd::getgid();
    unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNET)
        .map_err(|errno| missing(format!("unshare: {}", errno.desc())))?;
    let write = |file: &str, text: String| {
        std::fs::write(Path::new("/proc/self").join(file), text)
            .map_err(|e| missing(format!("/proc/self/{file}: {e}")))
    };
    write("setgroups", "deny".into())?;
    write("uid_map", format!("{uid} {uid} 1"))?;
    write("gid_map", format!("{gid} {gid} 1"))
}

fn landlock_missing(
    protection: &'static str,
    relax: &'static str,
) -> impl Fn(landlock::RulesetError) -> LaunchError {
    move |error| LaunchError::MissingProtection {
        protection,
        why: format!("Landlock: {error}"),
        relax,
    }
}

fn restrict(policy: &LaunchPolicy) -> Result<(), LaunchError> {
    let fs_missing = landlock_missing(
        "filesystem restriction (Landlock ABI 3, Linux 6.2)",
        "set `sandbox` to false",
    );
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(FS_ABI))
        .map_err(&fs_missing)?;
    if let NetworkPolicy::Tcp(_) = policy.network {
        ruleset = ruleset
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
            .map_err(landlock_missing(
                "TCP port filtering (Landlock ABI 4, Linux 6.7)",
                "set `sandbox.network` to \"any\" or \"none\"",
            ))?;
    }
    if policy.scopes == Scoping::On {
        ruleset = ruleset
            .scope(Scope::AbstractUnixSocket | Scope::Signal)
            .map_err(landlock_missing(
                "signal and abstract-socket scoping (Landlock ABI 6, Linux 6.12)",
                "set `sandbox.scopes` to false",
            ))?;
    }
    let mut created = ruleset.create().map_err(&fs_missing)?;
    let read = AccessFs::from_read(FS_ABI);
    let all = AccessFs::from_all(FS_ABI);
    created = add_paths(created, &policy.read, read)?;
    created = add_paths(created, &policy.write, all)?;
    if let NetworkPolicy::Tcp(ports) = &policy.network {
        for port in ports {
            created = created
                .add_rule(NetPort::new(*port, AccessNet::ConnectTcp))
                .map_err(landlock_missing(
                    "TCP port filtering",
                    "set `sandbox.network` to \"any\"",
                ))?;
        }
    }
    created.restrict_self().map_err(&fs_missing)?;
    Ok(())
}

/// Adds a rule per path that exists (a missing default such as `/lib32` is skipped);
/// files get only the rights that apply to files.
fn add_paths(
    mut created: RulesetCreated,
    paths: &[PathBuf],
    access: BitFlags<AccessFs>,
) -> Result<RulesetCreated, LaunchError> {
    for path in paths {
        let Ok(metadata) = std::fs::metadata(path) else {
            continue;
        };
        let Ok(fd) = PathFd::new(path) else {
            continue;
        };
        let access = if metadata.is_dir() {
            access
        } else {
            access & AccessFs::from_file(FS_ABI)
        };
        created = created
            .add_rule(PathBeneath::new(fd, access))
            .map_err(|error| LaunchError::MissingProtection {
                protection: "filesystem restriction",
                why: format!("Landlock rule for `{}`: {error}", path.display()),
                relax: "remove the path from `sandbox.filesystem`",
            })?;
    }
    Ok(created)
}
