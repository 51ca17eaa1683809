//! Descendants that leave home: the marker every server's processes carry, adoption of
//! orphans (Linux's child subreaper), and the reaping of what was adopted, so that the owner
//! of a server can find, kill and reap every process it started, directly or not —
//! including ones that daemonised (`setsid`, fork, parent exits).
//!
//! # The marker
//!
//! Every child [`crate::stdio::spawn`] starts gets [`OWNER_VAR`] in its environment: a
//! token unique to that child (`<our pid>-<our start time>-<serial>`), appended with `:` to
//! the value this process inherited, so a switchboard started by another one extends its
//! owner's chain and the outer one finds the inner one's servers too. Environments are
//! inherited, so a server's descendants carry its token after they left its process group,
//! its session and its tree. Stopping a server kills every process that carries its token
//! (found through `/proc/PID/environ`, which lists the environment a process was started
//! with). A descendant that clears its environment loses the marker; adoption still finds it.
//!
//! # Adoption
//!
//! [`adopt_orphans`] makes this process a child subreaper: an orphan among its descendants
//! is re-parented to it instead of to PID 1, so it stays visible as our child. The returned
//! [`OrphanGuard`] runs a sweeper (on SIGCHLD, and every second) that reaps adopted zombies.
//! When the last guard goes, every adopted process still alive is killed and reaped, and
//! so is every process carrying the marker of a server that is no longer running. The
//! `switchboard` binary holds a guard while it runs servers; the checker holds one while it
//! runs; a runtime host takes one in its `main`.
//!
//! # Reaping contract
//!
//! Adopted processes are our children, so their zombies are ours to reap. Tokio reaps the
//! children it spawned by pid, and a host may wait for its own children; so a zombie child
//! is reaped here only when it is provably adopted: it was not started by this crate (whose
//! children tokio reaps), and it was killed here as a server's descendant, or seen alive
//! carrying one of our markers, or belongs to another session than ours, or to the process
//! group of a server we run. `waitpid(-1)` is never called. A host holding a guard must
//! therefore not wait for a child it starts itself in a session of its own (`setsid`): such
//! a child is taken for adopted, killed when the last guard goes, and its exit status may be
//! taken. Without a guard nothing is adopted or reaped here: orphans go to PID 1, and only
//! the marker finds them.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::Pid;
use tokio::task::JoinHandle;

use crate::proc::{self, ProcessId, StatLine};

/// The environment variable that carries the owner chain (see the module's comment).
pub const OWNER_VAR: &str = "SWITCHBOARD_OWNER";

/// An inherited owner chain longer than this is not extended (it is not ours to trust).
const MAX_INHERITED_CHAIN: usize = 4096;
/// The sweeper's pace when no SIGCHLD arrives.
const SWEEP_INTERVAL: Duration = Duration::from_secs(1);
/// Most rounds of "find, stop" before the found processes are killed (a fork loop makes new
/// ones until it is stopped).
const MAX_FREEZE_ROUNDS: usize = 8;
/// How many processes the bookkeeping remembers at most (beyond it, the oldest knowledge
/// is forgotten: it only costs an unreaped zombie until we exit).
const MAX_REMEMBERED: usize = 4096;
/// How long the last guard waits for what it killed to be reaped.
const RELEASE_REAP_WAIT: Duration = Duration::from_millis(500);

/// Who we are, for tokens.
struct Identity {
    /// `<pid>-<start time>-`: every token we hand out starts with it.
    prefix: String,
    /// The chain we inherited, if any.
    inherited: Option<String>,
    /// Our own start time (no descendant of ours started before it).
    start_time: u64,
    serial: AtomicU64,
}

fn identity() -> &'static Identity {
    static IDENTITY: OnceLock<Identity> = OnceLock::new();
    IDENTITY.get_or_init(|| {
        let pid = std::process::id();
        let start_time = proc::read_stat(pid).map_or(0, |s| s.start_time);
        let inherited = std::env::var(OWNER_VAR)
            .ok()
            .filter(|chain| !chain.is_empty() && chain.len() <= MAX_INHERITED_CHAIN);
        Identity {
            prefix: format!("{pid}-{start_time}-"),
            inherited,
            start_time,
            serial: AtomicU64::new(1),
        }
    })
}

/// A server's marker: its own token and the chain its environment carries.
#[derive(Debug, Clone)]
pub(crate) struct Marker {
    pub(crate) token: Arc<str>,
    pub(crate) chain: String,
}

impl Marker {
    pub(crate) fn new() -> Marker {
        let me = identity();
        let serial = me.serial.fetch_add(1, Ordering::Relaxed);
        let token = format!("{}{serial}", me.prefix);
        let chain = match &me.inherited {
            Some(inherited) => format!("{inherited}:{token}"),
            None => token.clone(),
        };
        Marker {
            token: token.into(),
            chain,
        }
    }
}

/// The tokens in `pid`'s owner chain, if it has one we can read.
fn chain_of(pid: u32) -> Option<String> {
    proc::environ_var(pid, OWNER_VAR)
}

fn chain_has(chain: &str, token: &str) -> bool {
    chain.split(':').any(|t| t == token)
}

fn chain_has_ours(chain: &str) -> bool {
    let prefix = &identity().prefix;
    chain.split(':').any(|t| t.starts_with(prefix.as_str()))
}

/// What this process knows about its children and their descendants.
#[derive(Default)]
struct State {
    /// Children started by this crate that tokio has not reaped yet, by pid, with their
    /// token. Tokio reaps them; they are never reaped here.
    spawned: HashMap<u32, Arc<str>>,
    /// Processes known to be our servers' descendants: killed here, or seen carrying one of
    /// our markers.
    owned: HashSet<ProcessId>,
    /// Live children seen without a marker of ours (not re-read on every sweep).
    unmarked: HashSet<ProcessId>,
    /// Holders of [`OrphanGuard`]s.
    holders: usize,
}

fn state() -> MutexGuard<'static, State> {
    static STATE: OnceLock<Mutex<State>> = OnceLock::new();
    // A poisoned lock only means a panic elsewhere; every update here is a single insert,
    // remove or counter change, so the state stays consistent.
    STATE
        .get_or_init(|| Mutex::new(State::default()))
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Starts a child through `start` (which forks) with the registry locked, so that no sweep
/// ever sees the new child unregistered; registers its pid with `token`.
pub(crate) fn register_spawn<T>(
    token: &Arc<str>,
    start: impl FnOnce() -> std::io::Result<T>,
    pid_of: impl Fn(&T) -> Option<u32>,
) -> std::io::Result<T> {
    let mut state = state();
    let started = start()?;
    if let Some(pid) = pid_of(&started) {
        state.spawned.insert(pid, token.clone());
    }
    Ok(started)
}

/// Tokio reaped `pid`: it is no longer ours to protect.
pub(crate) fn forget_spawned(pid: u32) {
    state().spawned.remove(&pid);
}

/// Live processes (other than us) that started at or after `not_before` and carry `token`
/// in their owner chain.
pub(crate) fn carrying(all: &[StatLine], token: &str, not_before: u64) -> Vec<ProcessId> {
    let me = std::process::id();
    all.iter()
        .filter(|p| !p.is_zombie() && p.pid != me && p.start_time >= not_before)
        .filter(|p| chain_of(p.pid).is_some_and(|chain| chain_has(&chain, token)))
        .map(StatLine::id)
        .collect()
}

/// Stops (SIGSTOP) every live process `select` picks, scanning again until no new one
/// appears (a fork loop cannot outrun a stopped parent), then kills them all (SIGKILL).
/// What was killed is remembered as ours, so its zombie is reaped once adopted. Returns
/// the processes killed.
pub(crate) fn freeze_and_kill(
    mut select: impl FnMut(&[StatLine]) -> Vec<ProcessId>,
) -> Vec<ProcessId> {
    let me = std::process::id();
    let mut stopped: Vec<ProcessId> = Vec::new();
    for _ in 0..MAX_FREEZE_ROUNDS {
        let all = proc::all_processes();
        let mut found_new = false;
        for process in select(&all) {
            if process.pid == me || stopped.contains(&process) || !proc::is_alive(process) {
                continue;
            }
            if signal(process, Signal::SIGSTOP) {
                stopped.push(process);
                found_new = true;
            }
        }
        if !found_new {
            break;
        }
    }
    let mut killed: Vec<ProcessId> = stopped
        .iter()
        .copied()
        .filter(|p| signal(*p, Signal::SIGKILL))
        .collect();
    // Anything that slipped in between (a fork that completed as its parent was stopped).
    let all = proc::all_processes();
    for process in select(&all) {
        if process.pid != me && !killed.contains(&process) && signal(process, Signal::SIGKILL) {
            killed.push(process);
        }
    }
    let mut state = state();
    for process in &killed {
        remember(&mut state.owned, *process);
    }
    killed
}

fn signal(process: ProcessId, signal: Signal) -> bool {
    // Re-check identity right before signalling: a pid reused since the scan is not ours.
    proc::is_alive(process)
        && i32::try_from(process.pid).is_ok_and(|pid| kill(Pid::from_raw(pid), signal).is_ok())
}

fn remember(set: &mut HashSet<ProcessId>, process: ProcessId) {
    if set.len() >= MAX_REMEMBERED
        && let Some(any) = set.iter().next().copied()
    {
        set.remove(&any);
    }
    set.insert(process);
}

/// While this process adopts orphans: reaps every provably adopted zombie child (see the
/// module's reaping contract) and learns which live children carry our markers. Cheap: one
/// pass over `/proc`. Without a guard it does nothing: nothing was adopted.
pub(crate) fn sweep() {
    if is_adopting() {
        sweep_now();
    }
}

fn sweep_now() {
    let me = std::process::id();
    let Ok(my_sid) = nix::unistd::getsid(None) else {
        return;
    };
    let my_sid = my_sid.as_raw().unsigned_abs();
    // Locked before the scan: a child being spawned is either registered or not forked yet.
    let mut state = state();
    let all = proc::all_processes();
    let present: HashSet<ProcessId> = all.iter().map(StatLine::id).collect();
    let present_pids: HashSet<u32> = all.iter().map(|p| p.pid).collect();
    state.spawned.retain(|pid, _| present_pids.contains(pid));
    state.owned.retain(|p| present.contains(p));
    state.unmarked.retain(|p| present.contains(p));
    let State {
        spawned,
        owned,
        unmarked,
        ..
    } = &mut *state;
    for child in all
        .iter()
        .filter(|p| p.ppid == me && !spawned.contains_key(&p.pid))
    {
        let id = child.id();
        if child.is_zombie() {
            let adopted =
                owned.contains(&id) || child.sid != my_sid || spawned.contains_key(&child.pgid);
            if adopted && let Ok(pid) = i32::try_from(child.pid) {
                let _ = waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG));
                owned.remove(&id);
            }
        } else if !owned.contains(&id) && !unmarked.contains(&id) {
            match chain_of(child.pid) {
                Some(chain) if chain_has_ours(&chain) => remember(owned, id),
                _ => remember(unmarked, id),
            }
        }
    }
}

/// Sweeps until none of `killed` is an unreaped child of ours, or `deadline` passes.
pub(crate) async fn reap(killed: &[ProcessId], deadline: Duration) {
    let until = Instant::now() + deadline;
    loop {
        sweep();
        if !any_child_left(killed) || Instant::now() >= until {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn any_child_left(processes: &[ProcessId]) -> bool {
    let me = std::process::id();
    processes.iter().any(|p| {
        proc::read_stat(p.pid).is_some_and(|s| s.start_time == p.start_time && s.ppid == me)
    })
}

/// True while an [`OrphanGuard`] is held: orphans of our descendants are re-parented to
/// this process, so even one that cleared its environment stays visible.
pub fn is_adopting() -> bool {
    state().holders > 0
}

/// Live children of ours that this crate did not start, that are outside our own process
/// group (where a host's plain children are) and carry no marker of ours: adopted orphans
/// that cleared their environment (or a host's children started in a group of their own).
/// The checker compares this before and after a server ran.
pub fn unmarked_children() -> Vec<ProcessId> {
    let me = std::process::id();
    let my_pgid = nix::unistd::getpgrp().as_raw().unsigned_abs();
    let spawned: HashSet<u32> = state().spawned.keys().copied().collect();
    proc::all_processes()
        .iter()
        .filter(|p| p.ppid == me && !p.is_zombie() && !spawned.contains(&p.pid))
        .filter(|p| p.pgid != my_pgid)
        .filter(|p| !chain_of(p.pid).is_some_and(|chain| chain_has_ours(&chain)))
        .map(StatLine::id)
        .collect()
}

/// Why this process could not adopt orphans.
#[derive(Debug, thiserror::Error)]
pub enum AdoptError {
    /// There is no Tokio runtime to run the sweeper on.
    #[error("adopting orphans needs a Tokio runtime (call it from async code)")]
    NoRuntime,
    /// The kernel refused (not Linux, or a sandbox forbids `prctl`).
    #[error("could not become a child subreaper: {0}")]
    Refused(#[source] nix::Error),
}

/// Makes this process adopt the orphans of its descendants (Linux's child subreaper), and
/// reap and kill them as the module's comment says, for as long as the returned guard (or
/// another one) lives. Call it from async code: the guard's sweeper runs on the current
/// Tokio runtime.
pub fn adopt_orphans() -> Result<OrphanGuard, AdoptError> {
    let handle = tokio::runtime::Handle::try_current().map_err(|_| AdoptError::NoRuntime)?;
    {
        let mut state = state();
        if state.holders == 0 {
            nix::sys::prctl::set_child_subreaper(true).map_err(AdoptError::Refused)?;
        }
        state.holders += 1;
    }
    let sweeper = handle.spawn(sweep_loop());
    Ok(OrphanGuard { sweeper })
}

async fn sweep_loop() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut children = signal(SignalKind::child()).ok();
    let mut tick = tokio::time::interval(SWEEP_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        match &mut children {
            Some(children) => {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = children.recv() => {}
                }
            }
            None => {
                tick.tick().await;
            }
        }
        sweep();
    }
}

/// Holds this process's adoption of orphans (see [`adopt_orphans`]). When the last guard is
/// dropped, every adopted process still alive and every process carrying the marker of a
/// server that is no longer running is killed and (bounded, at most half a second) reaped,
/// and the process stops adopting.
#[derive(Debug)]
pub struct OrphanGuard {
    sweeper: JoinHandle<()>,
}

impl Drop for OrphanGuard {
    fn drop(&mut self) {
        self.sweeper.abort();
        let last = {
            let mut state = state();
            state.holders = state.holders.saturating_sub(1);
            state.holders == 0
        };
        if last {
            release();
        }
    }
}

/// The last guard went: kill what was adopted and what carries a dead server's marker.
fn release() {
    let me = std::process::id();
    let my_sid = nix::unistd::getsid(None).map_or(0, |sid| sid.as_raw().unsigned_abs());
    let not_before = identity().start_time;
    let killed = freeze_and_kill(|all| {
        let (spawned, owned): (HashMap<u32, Arc<str>>, HashSet<ProcessId>) = {
            let state = state();
            (state.spawned.clone(), state.owned.clone())
        };
        let live_tokens: HashSet<&str> = spawned.values().map(|t| &**t).collect();
        all.iter()
            .filter(|p| !p.is_zombie() && p.pid != me && !spawned.contains_key(&p.pid))
            .filter(|p| p.start_time >= not_before)
            .filter(|p| {
                let adopted_child = p.ppid == me && (owned.contains(&p.id()) || p.sid != my_sid);
                adopted_child
                    || chain_of(p.pid).is_some_and(|chain| {
                        chain.split(':').any(|t| {
                            t.starts_with(identity().prefix.as_str()) && !live_tokens.contains(t)
                        })
                    })
            })
            .map(StatLine::id)
            .collect()
    });
    let until = Instant::now() + RELEASE_REAP_WAIT;
    loop {
        sweep_now();
        if !any_child_left(&killed) || Instant::now() >= until {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = nix::sys::prctl::set_child_subreaper(false);
}
