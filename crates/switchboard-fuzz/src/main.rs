//! `switchboard-fuzz`: runs long fuzz campaigns (`scripts/fuzz.sh` builds and calls it).
//!
//! `switchboard-fuzz [TARGET…] [--executions N | --minutes M] [--seed S] [--crashes DIR]`
//! runs each target (all of them when none is named) in turn and prints one line per
//! target: executions, crashes, time, rate. Each kept crash input is written to
//! `DIR/TARGET/crash-HASH`; copy it into `crates/switchboard-fuzz/regressions/TARGET/` to
//! make it a test. `switchboard-fuzz --replay TARGET FILE…` runs saved inputs once;
//! `switchboard-fuzz --write-seeds DIR TARGET` writes a target's seed corpus (for AFL++).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use switchboard_fuzz::campaign::{self, Budget};
use switchboard_fuzz::{TARGETS, Target, corpus, target};

struct Args {
    targets: Vec<&'static Target>,
    budget: Budget,
    seed: u64,
    crashes: PathBuf,
    replay: Vec<PathBuf>,
    write_seeds: Option<PathBuf>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        targets: Vec::new(),
        budget: Budget::Executions(1_000_000),
        seed: 1,
        crashes: PathBuf::from("target/fuzz/crashes"),
        replay: Vec::new(),
        write_seeds: None,
    };
    let mut replaying = false;
    let mut words = std::env::args().skip(1);
    while let Some(word) = words.next() {
        let mut value = |name: &str| words.next().ok_or(format!("{name} needs a value"));
        match word.as_str() {
            "--executions" => {
                let n = value("--executions")?;
                args.budget = Budget::Executions(
                    n.parse()
                        .map_err(|_| format!("--executions {n}: not a number"))?,
                );
            }
            "--minutes" => {
                let m = value("--minutes")?;
                let minutes: f64 = m
                    .parse()
                    .map_err(|_| format!("--minutes {m}: not a number"))?;
                if !(minutes.is_finite() && minutes > 0.0) {
                    return Err(format!("--minutes {m}: must be positive"));
                }
                args.budget = Budget::Time(Duration::from_secs_f64(minutes * 60.0));
            }
            "--seed" => {
                let s = value("--seed")?;
                args.seed = s.parse().map_err(|_| format!("--seed {s}: not a number"))?;
            }
            "--crashes" => args.crashes = PathBuf::from(value("--crashes")?),
            "--replay" => replaying = true,
            "--write-seeds" => args.write_seeds = Some(PathBuf::from(value("--write-seeds")?)),
            "-h" | "--help" => {
                return Err(format!(
                    "usage: switchboard-fuzz [TARGET…] [--executions N | --minutes M] [--seed S] [--crashes DIR]\n       switchboard-fuzz --replay TARGET FILE…\n       switchboard-fuzz --write-seeds DIR TARGET\ntargets: {}",
                    names()
                ));
            }
            _ if replaying && !args.targets.is_empty() => args.replay.push(PathBuf::from(word)),
            name => match target(name) {
                Some(found) => args.targets.push(found),
                None => return Err(format!("unknown target `{name}`; targets: {}", names())),
            },
        }
    }
    if replaying && (args.targets.len() != 1 || args.replay.is_empty()) {
        return Err("--replay needs one target and at least one file".into());
    }
    if args.targets.is_empty() {
        args.targets = TARGETS.iter().collect();
    }
    Ok(args)
}

fn names() -> String {
    TARGETS
        .iter()
        .map(|t| t.name)
        .collect::<Vec<_>>()
        .join(", ")
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    if let Some(dir) = &args.write_seeds {
        return write_seeds(dir, &args.targets);
    }
    campaign::install_panic_hook();
    if !args.replay.is_empty() {
        return replay(args.targets[0], &args.replay);
    }
    let mut crashed = false;
    for target in &args.targets {
        let outcome = campaign::run(target, args.budget, args.seed);
        let seconds = outcome.elapsed.as_secs_f64();
        println!(
            "target {}: executions {}, crashes {}, seconds {:.0}, rate {:.0}/s",
            target.name,
            outcome.executions,
            outcome.crash_count,
            seconds,
            outcome.executions as f64 / seconds.max(1e-9)
        );
        for crash in &outcome.crashes {
            match save(&args.crashes, target.name, &crash.input) {
                Ok(path) => println!("  crash {}: {}", path.display(), first_line(&crash.message)),
                Err(error) => println!(
                    "  crash (not saved: {error}): {}",
                    first_line(&crash.message)
                ),
            }
        }
        crashed |= outcome.crash_count > 0;
    }
    if crashed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn write_seeds(dir: &Path, targets: &[&Target]) -> ExitCode {
    for target in targets {
        let folder = dir.join(target.name);
        let written = std::fs::create_dir_all(&folder).and_then(|()| {
            for (i, seed) in corpus::seeds(target.name).iter().enumerate() {
                std::fs::write(folder.join(format!("seed-{i:03}")), seed)?;
            }
            Ok(())
        });
        if let Err(error) = written {
            eprintln!("could not write seeds to {}: {error}", folder.display());
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

fn replay(target: &Target, files: &[PathBuf]) -> ExitCode {
    let mut failed = false;
    for file in files {
        let outcome = std::fs::read(file)
            .map_err(|e| format!("unreadable: {e}"))
            .and_then(|input| campaign::check(target, &input));
        match outcome {
            Ok(()) => println!("{}: ok", file.display()),
            Err(message) => {
                failed = true;
                println!("{}: {message}", file.display());
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn first_line(message: &str) -> &str {
    let line = message.lines().next().unwrap_or("");
    match line.char_indices().nth(300) {
        Some((cut, _)) => &line[..cut],
        None => line,
    }
}

/// Writes a crash input under `dir/target/`, named by its content's FNV-1a hash.
fn save(dir: &Path, target: &str, input: &[u8]) -> std::io::Result<PathBuf> {
    let hash = input.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    });
    let folder = dir.join(target);
    std::fs::create_dir_all(&folder)?;
    let path = folder.join(format!("crash-{hash:016x}"));
    std::fs::write(&path, input)?;
    Ok(path)
}
