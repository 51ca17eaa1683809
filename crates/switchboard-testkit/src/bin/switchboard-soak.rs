//! The `switchboard-soak` binary: runs the gateway's chaos soak (`switchboard_testkit::soak`)
//! and prints its figures; exits 1 if it found a problem, 2 on a bad command line.
//!
//! ```text
//! switchboard-soak [--calls N] [--in-flight N] [--seed N] [--chaos-every-ms N]
//!                  [--switchboard PATH] [--fixture PATH]
//! ```
//!
//! Defaults: 100000 calls, 32 in flight, a seed from the clock, a chaos action every
//! 250 ms, `switchboard` and `switchboard-fixture` from the directory of this binary.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use switchboard_testkit::soak::{self, SoakPlan};

const USAGE: &str = "usage: switchboard-soak [--calls N] [--in-flight N] [--seed N] \
                     [--chaos-every-ms N] [--switchboard PATH] [--fixture PATH]";

fn main() -> ExitCode {
    let plan = match parse(std::env::args().skip(1)) {
        Ok(plan) => plan,
        Err(error) => {
            eprintln!("switchboard-soak: {error}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    eprintln!(
        "switchboard-soak: {} calls, {} in flight, seed {}, gateway {}",
        plan.calls,
        plan.in_flight,
        plan.seed,
        plan.switchboard.display()
    );
    let report = soak::run(&plan);
    println!("{report}");
    if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn parse(args: impl Iterator<Item = String>) -> Result<SoakPlan, String> {
    let here = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(PathBuf::from))
        .unwrap_or_default();
    let mut plan = SoakPlan::new(
        here.join("switchboard"),
        here.join("switchboard-fixture"),
        100_000,
    );
    plan.on_progress = Some(std::sync::Arc::new(|line: &str| {
        eprintln!("switchboard-soak: {line}")
    }));
    let mut args = args;
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        let number = |text: String| {
            text.parse::<u64>()
                .map_err(|_| format!("{flag}: `{text}` is not a number"))
        };
        match flag.as_str() {
            "--calls" => plan.calls = number(value()?)?,
            "--in-flight" => {
                plan.in_flight = usize::try_from(number(value()?)?.max(1)).unwrap_or(32)
            }
            "--seed" => plan.seed = number(value()?)?,
            "--chaos-every-ms" => plan.chaos_every = Duration::from_millis(number(value()?)?),
            "--switchboard" => plan.switchboard = PathBuf::from(value()?),
            "--fixture" => plan.fixture = PathBuf::from(value()?),
            "-h" | "--help" => return Err("help".into()),
            other => return Err(format!("unknown flag `{other}`")),
        }
    }
    for binary in [&plan.switchboard, &plan.fixture] {
        if !binary.is_file() {
            return Err(format!("{} is not a file", binary.display()));
        }
    }
    Ok(plan)
}
