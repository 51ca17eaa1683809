//! Instructions per call, measured with `valgrind --tool=callgrind` on the client process
//! only (the server runs natively): total instructions of a run with `N_HIGH` calls minus
//! those of a run with `N_LOW` calls, divided by the difference, which cancels start-up,
//! handshake, warm-up and shutdown. Per-function costs are differenced the same way from
//! `callgrind_annotate`, giving the hot spots per call.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

use crate::driver::{
    Case, ClientKind, Paths, Regime, Scenario, ServerKind, run_bounded, start_http_server,
};

/// Calls in the shorter run.
pub const N_LOW: u64 = 1000;
/// Calls in the longer run.
pub const N_HIGH: u64 = 2000;
/// Repetitions of each pair of runs (to show the counts repeat).
pub const REPETITIONS: usize = 2;
/// How long one run under valgrind may take.
const RUN_TIMEOUT: Duration = Duration::from_secs(600);
/// How many functions to keep per list.
const KEEP: usize = 40;

/// The instruction counts of one client.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClientInstructions {
    /// The case measured (sequential).
    pub case: Case,
    /// Total instructions of each run: `(repetition, calls, instructions)`.
    pub runs: Vec<(usize, u64, u64)>,
    /// Instructions per call of each repetition.
    pub per_call: Vec<f64>,
}

/// One function's cost per call.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FunctionCost {
    /// `function` (source file dropped, costs of all its files added).
    pub function: String,
    /// Instructions per call.
    pub per_call: f64,
    /// Share of the client's instructions per call.
    pub share: f64,
}

/// Hot spots of one client against one server.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HotSpots {
    /// The case measured.
    pub case: Case,
    /// Instructions per call of the differenced runs.
    pub total_per_call: f64,
    /// Highest self (exclusive) cost per call.
    pub exclusive: Vec<FunctionCost>,
    /// Highest inclusive cost per call.
    pub inclusive: Vec<FunctionCost>,
}

/// The whole measurement.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CallgrindReport {
    /// Calls in the shorter run.
    pub n_low: u64,
    /// Calls in the longer run.
    pub n_high: u64,
    /// Untimed calls in both.
    pub warmup: u64,
    /// Per client.
    pub clients: Vec<ClientInstructions>,
    /// Per-function breakdown of the first repetition.
    pub hot_spots: Vec<HotSpots>,
}

impl CallgrindReport {
    /// Median instructions per call of `client` against `server`, if measured.
    pub fn per_call(&self, client: ClientKind, server: ServerKind) -> Option<f64> {
        self.clients
            .iter()
            .find(|c| c.case.client == client && c.case.server == server)
            .map(|c| crate::stats::median(&c.per_call))
    }
}

/// Runs the measurement (unpinned, sequential calls against the fixture; the raw client
/// against the raw pipe server; ours also against the rmcp server, modern era; and over
/// Streamable HTTP ours in both eras and rmcp's client against the trivial HTTP server, and
/// the raw HTTP floor, each server started natively for each run).
pub fn measure(paths: &Paths, warmup: u64) -> anyhow::Result<CallgrindReport> {
    let dir = paths.out_dir.join("callgrind");
    std::fs::create_dir_all(&dir).context("creating target/bench/callgrind")?;
    let measured = [
        (ClientKind::Ours, ServerKind::Fixture),
        (ClientKind::Rmcp, ServerKind::Fixture),
        (ClientKind::Raw, ServerKind::RawPipe),
        // The rmcp server speaks the 2026-07-28 era with us: every request carries `_meta`.
        (ClientKind::Ours, ServerKind::RmcpPeer),
        (ClientKind::Ours, ServerKind::TrivialHttp),
        (ClientKind::Ours, ServerKind::TrivialHttpModern),
        (ClientKind::Rmcp, ServerKind::TrivialHttp),
        (ClientKind::Raw, ServerKind::RawHttp),
    ];
    let mut clients = Vec::new();
    let mut files: HashMap<(Case, usize, u64), PathBuf> = HashMap::new();
    for (client, server) in measured {
        let case = Case {
            scenario: Scenario::Sequential,
            server,
            client,
        };
        if let Some(why) = paths.missing_for(&case) {
            eprintln!("bench: callgrind: skipping {why}");
            continue;
        }
        let mut runs = Vec::new();
        let mut per_call = Vec::new();
        for rep in 0..REPETITIONS {
            let mut totals = Vec::new();
            for calls in [N_LOW, N_HIGH] {
                let stem = format!("{}-{}-{calls}-{rep}", client.name(), server.name());
                let out = dir.join(format!("{stem}.out"));
                let mut argv = vec![
                    "valgrind".to_owned(),
                    "--tool=callgrind".to_owned(),
                    format!("--callgrind-out-file={}", out.display()),
                ];
                argv.extend(paths.client_argv(&case, calls, warmup, 1, Regime::Unpinned));
                let log = dir.join(format!("{stem}.log"));
                let server = start_http_server(paths, server, Regime::Unpinned, &log)?;
                if let Some(server) = &server {
                    argv.extend(["--url".into(), server.url.clone()]);
                }
                run_bounded(&argv, &log, RUN_TIMEOUT)
                    .with_context(|| format!("callgrind run of {}", case.id()))?;
                drop(server);
                let total = total_instructions(&out)?;
                eprintln!(
                    "bench: callgrind {} {calls} calls: {total} instructions",
                    case.id()
                );
                runs.push((rep, calls, total));
                totals.push(total);
                files.insert((case, rep, calls), out);
            }
            per_call.push((totals[1] as f64 - totals[0] as f64) / (N_HIGH - N_LOW) as f64);
        }
        clients.push(ClientInstructions {
            case,
            runs,
            per_call,
        });
    }
    let mut hot_spots = Vec::new();
    for c in &clients {
        if c.case.client == ClientKind::Raw {
            continue;
        }
        let (Some(low), Some(high)) = (
            files.get(&(c.case, 0, N_LOW)),
            files.get(&(c.case, 0, N_HIGH)),
        ) else {
            continue;
        };
        match breakdown(c.case, low, high) {
            Ok(spots) => hot_spots.push(spots),
            Err(e) => eprintln!("bench: callgrind_annotate failed: {e:#}"),
        }
    }
    Ok(CallgrindReport {
        n_low: N_LOW,
        n_high: N_HIGH,
        warmup,
        clients,
        hot_spots,
    })
}

/// The `totals:` (or `summary:`) line of a callgrind output file.
pub fn total_instructions(out: &Path) -> anyhow::Result<u64> {
    let text =
        std::fs::read_to_string(out).with_context(|| format!("reading {}", out.display()))?;
    for prefix in ["totals:", "summary:"] {
        if let Some(line) = text.lines().find(|l| l.starts_with(prefix)) {
            let value = line[prefix.len()..].split_whitespace().next().unwrap_or("");
            return value
                .parse()
                .with_context(|| format!("parsing {line:?} in {}", out.display()));
        }
    }
    bail!("no totals in {}", out.display())
}

fn breakdown(case: Case, low: &Path, high: &Path) -> anyhow::Result<HotSpots> {
    let calls = (N_HIGH - N_LOW) as f64;
    let total = (total_instructions(high)? as f64 - total_instructions(low)? as f64) / calls;
    let diff = |inclusive: bool| -> anyhow::Result<Vec<FunctionCost>> {
        let lo = annotate(low, inclusive)?;
        let hi = annotate(high, inclusive)?;
        let mut costs: Vec<FunctionCost> = hi
            .iter()
            .map(|(function, &h)| {
                let l = lo.get(function).copied().unwrap_or(0);
                let per_call = (h as f64 - l as f64) / calls;
                FunctionCost {
                    function: function.clone(),
                    per_call,
                    share: if total > 0.0 { per_call / total } else { 0.0 },
                }
            })
            .filter(|c| c.per_call > 0.5)
            .collect();
        costs.sort_by(|a, b| b.per_call.total_cmp(&a.per_call));
        costs.truncate(KEEP);
        Ok(costs)
    };
    Ok(HotSpots {
        case,
        total_per_call: total,
        exclusive: diff(false)?,
        inclusive: diff(true)?,
    })
}

/// Per-function instruction counts from `callgrind_annotate` (file names dropped). Self
/// costs of one function attributed to several files (inlining) are added; inclusive costs
/// are not additive, so the largest is kept.
fn annotate(out: &Path, inclusive: bool) -> anyhow::Result<HashMap<String, u64>> {
    let output = Command::new("callgrind_annotate")
        .args(["--auto=no", "--threshold=100"])
        .arg(format!(
            "--inclusive={}",
            if inclusive { "yes" } else { "no" }
        ))
        .arg(out)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .context("running callgrind_annotate")?;
    if !output.status.success() {
        bail!("callgrind_annotate exited with {}", output.status);
    }
    Ok(parse_annotate(
        &String::from_utf8_lossy(&output.stdout),
        inclusive,
    ))
}

/// Parses the `file:function` table of `callgrind_annotate`, whose lines look like
/// `1,234 (12.34%)  file.rs:crate::f [obj]`.
pub fn parse_annotate(text: &str, inclusive: bool) -> HashMap<String, u64> {
    let mut costs: HashMap<String, u64> = HashMap::new();
    let mut lines = text.lines();
    // Skip to the table: its header, then a dashed rule.
    for line in lines.by_ref() {
        if line.trim_end().ends_with("file:function") {
            break;
        }
    }
    let _rule = lines.next();
    for line in lines {
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with("--") {
            break;
        }
        let Some((count, rest)) = trimmed.split_once(' ') else {
            continue;
        };
        let Ok(count) = count.replace(',', "").parse::<u64>() else {
            continue;
        };
        let rest = rest.trim_start();
        let Some(close) = rest.find(')') else {
            continue;
        };
        if !rest.starts_with('(') {
            continue;
        }
        let mut name = rest[close + 1..].trim();
        if name.ends_with(']')
            && let Some(open) = name.rfind(" [")
        {
            name = &name[..open];
        }
        let function = match name.split_once(':') {
            Some((file, function)) if !file.is_empty() && !function.starts_with(':') => function,
            _ => name,
        };
        let entry = costs.entry(function.to_owned()).or_default();
        if inclusive {
            *entry = (*entry).max(count);
        } else {
            *entry += count;
        }
    }
    costs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_annotate_lines() {
        let text = "\
--------------------------------------------------------------------------------
128,705 (100.0%)  PROGRAM TOTALS

--------------------------------------------------------------------------------
Ir               file:function
--------------------------------------------------------------------------------
21,172 (16.45%)  ./elf/dl-lookup.c:do_lookup_x [/usr/lib/ld.so]
 8,262 ( 6.42%)  ./elf/dl-new-hash.h:_dl_lookup_symbol_x
 8,128 ( 6.32%)  ./elf/dl-lookup.c:_dl_lookup_symbol_x [/usr/lib/ld.so]
   900 ( 0.70%)  /x/src/session.rs:switchboard_session::session::Session::call_tool::{{closure}} [/x/bench]

--------------------------------------------------------------------------------
     5 ( 0.00%)  => not:in_the_table (2x)
";
        let costs = parse_annotate(text, false);
        assert_eq!(costs["do_lookup_x"], 21_172);
        assert_eq!(costs["_dl_lookup_symbol_x"], 16_390);
        assert_eq!(
            costs["switchboard_session::session::Session::call_tool::{{closure}}"],
            900
        );
        assert_eq!(costs.len(), 3);
        assert_eq!(parse_annotate(text, true)["_dl_lookup_symbol_x"], 8_262);
    }
}
