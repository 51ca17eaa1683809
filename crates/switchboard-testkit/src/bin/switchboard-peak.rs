//! `switchboard-peak --report FILE -- PROGRAM ARGS…`: runs a program as its only child, with
//! this process's stdin, stdout and stderr, and writes to FILE the child's pid (at once) and,
//! when it ended, its peak resident set and how it ended. Exits 0 once the report is written.
//!
//! Why a process in between: a child's `ru_maxrss` starts from the memory of the process
//! that spawned it (Linux saves the spawner's high-water mark when the child calls `exec`,
//! for `fork` and `vfork` alike), so a test process of 100 MiB that spawns a 20 MiB command
//! reads 100 MiB. This launcher is small when it spawns, so the figure it reports is the
//! command's own, to within the launcher's few MiB.
//!
//! The report is lines of `key value`: `pid N`, then `maxrss-kib N` and `exit N` or
//! `signal N`.

use std::io::Write as _;
use std::os::unix::process::ExitStatusExt as _;
use std::process::{Command, ExitCode};

use nix::sys::resource::{UsageWho, getrusage};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (report, program, program_args) = match args.as_slice() {
        [flag, report, separator, program, rest @ ..]
            if flag == "--report" && separator == "--" =>
        {
            (report, program, rest)
        }
        _ => {
            let _ = writeln!(
                std::io::stderr(),
                "usage: switchboard-peak --report FILE -- PROGRAM [ARGS…]"
            );
            return ExitCode::from(64);
        }
    };
    let mut file = match std::fs::File::create(report) {
        Ok(file) => file,
        Err(error) => {
            let _ = writeln!(std::io::stderr(), "switchboard-peak: {report}: {error}");
            return ExitCode::from(70);
        }
    };
    let mut child = match Command::new(program).args(program_args).spawn() {
        Ok(child) => child,
        Err(error) => {
            let _ = writeln!(std::io::stderr(), "switchboard-peak: {program}: {error}");
            return ExitCode::from(70);
        }
    };
    let _ = writeln!(file, "pid {}", child.id());
    let _ = file.flush();
    let status = match child.wait() {
        Ok(status) => status,
        Err(error) => {
            let _ = writeln!(std::io::stderr(), "switchboard-peak: wait: {error}");
            return ExitCode::from(70);
        }
    };
    // The only child this process ever had, so the children's peak is its peak.
    let peak_kib = getrusage(UsageWho::RUSAGE_CHILDREN).map_or(0, |usage| usage.max_rss());
    let end = match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit {code}"),
        (None, Some(signal)) => format!("signal {signal}"),
        (None, None) => "exit -1".to_owned(),
    };
    let _ = writeln!(file, "maxrss-kib {peak_kib}\n{end}");
    let _ = file.sync_all();
    ExitCode::SUCCESS
}
