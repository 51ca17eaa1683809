//! The fuzz targets inside `cargo test`: a bounded, deterministic campaign per target, and
//! every saved crash input (`regressions/TARGET/*`) run once as a regression test.

use std::path::Path;

use switchboard_fuzz::TARGETS;
use switchboard_fuzz::campaign::{self, Budget, Outcome};

/// Runs a target's bounded campaign and fails with the first crashes' messages.
fn bounded(name: &str, executions: u64) {
    let target = switchboard_fuzz::target(name).unwrap_or_else(|| panic!("no target {name}"));
    let Outcome {
        crashes,
        crash_count,
        ..
    } = campaign::run(target, Budget::Executions(executions), 0x5eed);
    let messages: Vec<String> = crashes
        .iter()
        .take(3)
        .map(|crash| {
            format!(
                "{} (input {:?})",
                crash.message,
                String::from_utf8_lossy(&crash.input)
            )
        })
        .collect();
    assert_eq!(
        crash_count,
        0,
        "{name}: {crash_count} crashes:\n{}",
        messages.join("\n")
    );
}

#[test]
fn framing() {
    bounded("framing", 50_000);
}

#[test]
fn envelope() {
    bounded("envelope", 10_000);
}

#[test]
fn sse() {
    bounded("sse", 60_000);
}

#[test]
fn config() {
    bounded("config", 50_000);
}

#[test]
fn edit() {
    bounded("edit", 30_000);
}

#[test]
fn headers() {
    bounded("headers", 100_000);
}

#[test]
fn gateway() {
    bounded("gateway", 2_000);
}

/// Every input under `regressions/TARGET/` passes its target.
#[test]
fn regressions() {
    campaign::install_panic_hook();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions");
    let mut failures = Vec::new();
    let mut ran = 0;
    for target in TARGETS {
        let Ok(entries) = std::fs::read_dir(root.join(target.name)) else {
            continue;
        };
        let mut paths: Vec<_> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
        paths.sort();
        for path in paths {
            let input = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            ran += 1;
            if let Err(message) = campaign::check(target, &input) {
                failures.push(format!("{}: {message}", path.display()));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {ran} regression inputs fail:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
