//! `docs/dev/faults.md`'s case list, generated from the tables: every case with its hostile
//! input, command, asserted outcome and status. The file's prose is hand-written; only the
//! part between the markers is generated (`UPDATE_EXPECT=1` rewrites it).

use std::fmt::Write as _;
use std::path::PathBuf;

use switchboard_testkit::locate::workspace_root;

use super::table::{Area, Case, Check, Close, Cmd, LockFile, ServeScript, Server, Status};

pub(crate) const BEGIN: &str = "<!-- fault-matrix:begin (generated from crates/switchboard-cli/tests/it/faults/cases/; UPDATE_EXPECT=1 refreshes) -->";
pub(crate) const END: &str = "<!-- fault-matrix:end -->";

pub(crate) fn path() -> PathBuf {
    workspace_root().join("docs/dev/faults.md")
}

/// The generated part: one table per area, in the order of `tables` (cases that hold first).
pub(crate) fn render(tables: &[&[Case]]) -> String {
    let mut out = String::new();
    let all = || tables.iter().flat_map(|table| table.iter());
    let count = |status: fn(&Status) -> bool| all().filter(|c| status(&c.status)).count();
    let _ = writeln!(
        out,
        "{} cases: {} run by the matrix and hold ({} of them since their defect was fixed, {} since the matrix found and fixed them, {} since their Hardening 2 item was fixed), {} fixed and asserted by another test, {} open (being fixed), {} open (found).\n",
        all().count(),
        count(Status::holds),
        count(|s| matches!(s, Status::Fixed { .. })),
        count(|s| *s == Status::FoundFixed),
        count(|s| matches!(s, Status::Hardened { .. })),
        count(|s| s.elsewhere_test().is_some()),
        count(|s| matches!(s, Status::BeingFixed { .. })),
        count(|s| *s == Status::Found),
    );
    let mut areas: Vec<Area> = all().map(|c| c.area).collect();
    areas.sort();
    areas.dedup();
    for area in areas {
        let _ = writeln!(out, "### {}\n", area.title());
        out.push_str("| case | hostile input | command | asserted outcome | status |\n");
        out.push_str("| --- | --- | --- | --- | --- |\n");
        for case in all().filter(|c| c.area == area) {
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} | {} |",
                case.name,
                cell(&hostile(case)),
                cell(&command(case)),
                cell(&outcome(case)),
                status(case.status),
            );
        }
        out.push('\n');
    }
    out
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

fn hostile(case: &Case) -> String {
    let servers: Vec<String> = case
        .servers
        .iter()
        .map(|server| match server {
            Server::Fixture(args) => {
                format!(
                    "`{}`",
                    ["switchboard-fixture"]
                        .iter()
                        .chain(*args)
                        .copied()
                        .collect::<Vec<_>>()
                        .join(" ")
                )
            }
            Server::FixtureHttp { fault, args } => format!(
                "`switchboard-fixture --http --http-fault {fault}{}{}`",
                if args.is_empty() { "" } else { " " },
                args.join(" ")
            ),
            Server::Canned { script, url } => {
                if *url == super::table::CANNED_URL {
                    format!("canned HTTP `{script:?}`")
                } else {
                    format!("canned HTTP `{script:?}` at `{url}`")
                }
            }
            Server::Command { program, args } => {
                format!(
                    "`{}`",
                    [*program]
                        .iter()
                        .chain(*args)
                        .copied()
                        .collect::<Vec<_>>()
                        .join(" ")
                )
            }
            Server::Nowhere => "an HTTP URL where nothing listens".to_owned(),
            Server::Entry(text) => format!("entry `{text}`"),
        })
        .collect();
    if servers.is_empty() {
        return case.hostile.to_owned();
    }
    format!("{} ({})", case.hostile, servers.join(" + "))
}

fn command(case: &Case) -> String {
    if let Some(test) = case.status.elsewhere_test() {
        return format!("(asserted by `{test}`)");
    }
    match &case.command {
        Cmd::Tools => "`tools`".to_owned(),
        Cmd::Call { tool, args } => format!("`call s {tool} '{args}'`"),
        Cmd::Check { flags: [] } => "`check s`".to_owned(),
        Cmd::Check { flags } => format!("`check s {}`", flags.join(" ")),
        Cmd::Login => "`login s --no-browser`".to_owned(),
        Cmd::Serve { script, close } => {
            let fed = match script {
                ServeScript::Lines(lines) => format!("{} line(s)", lines.len()),
                ServeScript::ManyCalls { tool, count, .. } => {
                    format!("handshake + {count} calls of `{tool}`")
                }
            };
            let close = match close {
                Close::AfterAnswers => "stdin closed after the answers",
                Close::AtOnce => "stdin closed at once",
            };
            format!("`serve` ({fed}; {close})")
        }
        Cmd::ServeBesideLock { lock } => {
            let lock = match lock {
                LockFile::Bytes(bytes) => format!("{:?}", String::from_utf8_lossy(bytes)),
                LockFile::Directory => "a folder".to_owned(),
                LockFile::DanglingLink => "a link to nothing".to_owned(),
            };
            format!(
                "`serve` with `mcp.tool-lock.json` beside the config: {lock} (handshake + `tools/list`; stdin closed after the answers)"
            )
        }
    }
}

fn outcome(case: &Case) -> String {
    let outcome = &case.outcome;
    if case.status.elsewhere_test().is_some() {
        return outcome.says.to_owned();
    }
    let mut parts = vec![format!("exit {}: {}", outcome.exit.code(), outcome.says)];
    for check in outcome.checks {
        parts.push(match check {
            Check::StderrHas(text) => format!("stderr says {text:?}"),
            Check::NoRawControls => "no raw control character on stdout or stderr".to_owned(),
            Check::NoEscapeSequences => "no escape sequence at all on stderr".to_owned(),
            Check::SecretNeverShown => "the secret is never shown".to_owned(),
            Check::TripwireUntouched => "the handed-out URL is never contacted".to_owned(),
            Check::PeakMemory(bound) => format!(
                "peak RSS ≤ {} MiB ({})",
                bound.bytes / (1024 * 1024),
                bound.derivation
            ),
            Check::GatewayAnswersEveryRequest => {
                "every request answered once, by its id".to_owned()
            }
            Check::GatewayFdsAtMost(n) => format!(
                "≤ {n} open fds within {} s of the answers",
                super::run::FD_SETTLE.as_secs()
            ),
        });
    }
    parts.push(format!(
        "no hang within {} s; 0 processes left",
        outcome.deadline.as_secs()
    ));
    parts.join("; ")
}

fn status(status: Status) -> String {
    match status {
        Status::Holds => "holds".to_owned(),
        Status::Fixed { defect } => format!("holds (fixed: defect {defect})"),
        Status::BeingFixed { defect } => format!("open (being fixed: defect {defect})"),
        Status::Found => "open (found)".to_owned(),
        Status::FoundFixed => "holds (found and fixed)".to_owned(),
        Status::TestedBy { defect, .. } => format!("holds (fixed: defect {defect})"),
        Status::Hardened { item } | Status::HardenedElsewhere { item, .. } => {
            format!("holds (fixed: Hardening 2 item {item})")
        }
    }
}
