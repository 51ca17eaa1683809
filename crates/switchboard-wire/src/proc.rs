//! Process-tree inspection through `/proc` (Linux), used to make sure no descendant of a
//! server outlives it, including ones that left its process group.

use std::fs;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// A process, identified by pid and start time (so a reused pid is not mistaken for it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessId {
    /// The pid.
    pub pid: u32,
    /// Start time in clock ticks since boot (field 22 of `/proc/<pid>/stat`).
    pub start_time: u64,
}

struct StatLine {
    pid: u32,
    ppid: u32,
    pgid: u32,
    start_time: u64,
    state: char,
}

fn read_stat(pid: u32) -> Option<StatLine> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may contain anything; fields follow the last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(StatLine {
        pid,
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        pgid: fields.get(2)?.parse().ok()?,
        start_time: fields.get(19)?.parse().ok()?,
    })
}

fn all_processes() -> Vec<StatLine> {
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
    let all = all_processes();
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

/// Opens `url` in the user's browser without a shell: the URL is one argument to the
/// platform's opener (`xdg-open`, or `open` on macOS). Only `https` URLs, or `http` to a
/// loopback host, are opened. Waits at most five seconds for the opener to hand over.
pub fn open_in_browser(url: &str) -> std::io::Result<()> {
    let lower = url.to_ascii_lowercase();
    let loopback = ["http://127.0.0.1", "http://localhost", "http://[::1]"]
        .iter()
        .any(|p| lower.starts_with(p));
    if !(lower.starts_with("https://") || loopback) {
        return Err(std::io::Error::other(format!(
            "refusing to open {url:?}: only https (or http on loopback) URLs are opened"
        )));
    }
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let mut child = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    let started = std::time::Instant::now();
    loop {
        match child.try_wait()? {
            Some(status) if status.success() => return Ok(()),
            Some(status) => {
                return Err(std::io::Error::other(format!("{opener} failed ({status})")));
            }
            None if started.elapsed() > std::time::Duration::from_secs(5) => {
                let _ = child.kill();
                let _ = child.wait();
                return Ok(());
            }
            None => std::thread::sleep(std::time::Duration::from_millis(50)),
        }
    }
}
