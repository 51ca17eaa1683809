//! Process-tree inspection through `/proc` (Linux), used to make sure no descendant of a
//! server outlives it, including ones that left its process group or its session (see
//! [`crate::orphans`] for the marker and adoption that find those).

use std::fs;
use std::io::Read;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// A process, identified by pid and start time (so a reused pid is not mistaken for it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProcessId {
    /// The pid.
    pub pid: u32,
    /// Start time in clock ticks since boot (field 22 of `/proc/<pid>/stat`).
    pub start_time: u64,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct StatLine {
    pub(crate) pid: u32,
    pub(crate) ppid: u32,
    pub(crate) pgid: u32,
    pub(crate) sid: u32,
    pub(crate) start_time: u64,
    pub(crate) state: char,
}

impl StatLine {
    pub(crate) fn id(&self) -> ProcessId {
        ProcessId {
            pid: self.pid,
            start_time: self.start_time,
        }
    }

    pub(crate) fn is_zombie(&self) -> bool {
        self.state == 'Z'
    }
}

pub(crate) fn read_stat(pid: u32) -> Option<StatLine> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may contain anything; fields follow the last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(StatLine {
        pid,
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        pgid: fields.get(2)?.parse().ok()?,
        sid: fields.get(3)?.parse().ok()?,
        start_time: fields.get(19)?.parse().ok()?,
    })
}

pub(crate) fn all_processes() -> Vec<StatLine> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(read_stat)
        .collect()
}

/// `root` and every live process descended from it, found by parent links.
pub fn descendants(root: u32) -> Vec<ProcessId> {
    tree_in(&all_processes(), root)
}

/// [`descendants`] over a snapshot of the process table.
pub(crate) fn tree_in(all: &[StatLine], root: u32) -> Vec<ProcessId> {
    let mut found: Vec<ProcessId> = Vec::new();
    let mut frontier = vec![root];
    if let Some(me) = all.iter().find(|p| p.pid == root) {
        found.push(ProcessId {
            pid: me.pid,
            start_time: me.start_time,
        });
    }
    while let Some(parent) = frontier.pop() {
        for p in all.iter().filter(|p| p.ppid == parent && p.state != 'Z') {
            if found.iter().all(|f| f.pid != p.pid) {
                found.push(ProcessId {
                    pid: p.pid,
                    start_time: p.start_time,
                });
                frontier.push(p.pid);
            }
        }
    }
    found
}

/// Live (non-zombie) processes whose process group is `pgid`.
pub fn group_members(pgid: u32) -> Vec<u32> {
    all_processes()
        .into_iter()
        .filter(|p| p.pgid == pgid && p.state != 'Z')
        .map(|p| p.pid)
        .collect()
}

/// True while the process exists and is not a zombie.
pub fn is_alive(process: ProcessId) -> bool {
    read_stat(process.pid).is_some_and(|s| s.start_time == process.start_time && s.state != 'Z')
}

/// How much of a process's environment is read when looking for a variable: the marker is
/// set by us and sits among a few dozen entries; a process whose environment hides it
/// beyond this is treated as unmarked.
const ENVIRON_READ_CAP: u64 = 1024 * 1024;

/// The value of `name` in the environment `pid` was started with (`/proc/PID/environ`),
/// when it can be read: processes of other users, and zombies, have none to read.
pub(crate) fn environ_var(pid: u32, name: &str) -> Option<String> {
    let file = fs::File::open(format!("/proc/{pid}/environ")).ok()?;
    let mut bytes = Vec::new();
    file.take(ENVIRON_READ_CAP).read_to_end(&mut bytes).ok()?;
    bytes.split(|b| *b == 0).find_map(|entry| {
        let value = entry.strip_prefix(name.as_bytes())?.strip_prefix(b"=")?;
        String::from_utf8(value.to_vec()).ok()
    })
}

/// Sends SIGKILL to every process of `tree` that is still alive; returns how many.
pub fn kill_survivors(tree: &[ProcessId]) -> usize {
    let mut killed = 0;
    for process in tree {
        if is_alive(*process)
            && let Ok(pid) = i32::try_from(process.pid)
            && kill(Pid::from_raw(pid), Signal::SIGKILL).is_ok()
        {
            killed += 1;
        }
    }
    killed
}
