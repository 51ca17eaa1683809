//! Judging a run: the normalised transcript a case's snapshot holds (exit, stdout,
//! stderr; pids, ports, paths and timings replaced; control characters shown escaped), and
//! the list of what went wrong against the case's outcome.

use std::fmt::Write as _;

use super::run::{End, Observed};
use super::table::{Case, Check, Cmd};

/// Lines longer than this are cut in the transcript (with their length).
const LINE_CHARS: usize = 400;
/// Lines kept per stream in the transcript.
const MAX_LINES: usize = 40;

/// Everything wrong with a run; empty when the case holds.
pub(crate) fn problems(case: &Case, observed: &Observed) -> Vec<String> {
    let mut problems = Vec::new();
    let expected = case.outcome.exit.code();
    match &observed.end {
        End::Exited(code) if *code == expected => {}
        End::Exited(code) => problems.push(format!("exit code {code}, expected {expected}")),
        End::Signalled(signal) => problems.push(format!("killed by signal {signal}")),
        End::Hung => problems.push(format!(
            "still running after {:?}: a hang (killed)",
            case.outcome.deadline
        )),
        End::MemoryGuard(bytes) => problems.push(format!(
            "resident set reached {} MiB: killed by the memory guard",
            bytes / (1024 * 1024)
        )),
    }
    if !observed.leftovers.is_empty() {
        problems.push(format!(
            "{} process(es) left behind (killed now): {}",
            observed.leftovers.len(),
            observed.leftovers.join("; ")
        ));
    }
    problems.extend(
        observed
            .notes
            .iter()
            .filter(|n| n.contains("held open"))
            .cloned(),
    );
    let stdout = String::from_utf8_lossy(&observed.stdout);
    let stderr = String::from_utf8_lossy(&observed.stderr);
    for check in case.outcome.checks {
        match check {
            Check::StderrHas(text) => {
                if !stderr.contains(text) {
                    problems.push(format!("stderr does not say {text:?}"));
                }
            }
            Check::NoRawControls => {
                for (name, text) in [("stdout", &stdout), ("stderr", &stderr)] {
                    if let Some(at) = text.char_indices().find(|(_, c)| is_raw_control(*c)) {
                        let start = text[..at.0]
                            .char_indices()
                            .rev()
                            .nth(30)
                            .map_or(0, |(i, _)| i);
                        let context: String =
                            text[start..].chars().take(60).flat_map(char::escape_debug).collect();
                        problems.push(format!(
                            "{name} carries a raw control character {:?}: …{context}…",
                            at.1
                        ));
                    }
                }
            }
            Check::NoEscapeSequences => {
                if stderr.contains('\u{1b}') {
                    problems.push("stderr carries escape sequences (ESC)".to_owned());
                }
            }
            Check::SecretNeverShown => {
                if stdout.contains(&observed.secret) || stderr.contains(&observed.secret) {
                    problems.push("the secret was printed".to_owned());
                }
            }
            Check::TripwireUntouched => {
                if observed.tripwire_hits > 0 {
                    problems.push(format!(
                        "the tripwire (a URL the server handed out) was connected to {} time(s)",
                        observed.tripwire_hits
                    ));
                }
            }
            Check::PeakMemory(bound) => {
                if observed.peak_rss > bound.bytes {
                    problems.push(format!(
                        "peak RSS {} MiB is over the bound of {} MiB ({})",
                        observed.peak_rss / (1024 * 1024),
                        bound.bytes / (1024 * 1024),
                        bound.derivation
                    ));
                }
            }
            Check::GatewayAnswersEveryRequest => match &observed.gateway {
                Some(view) => problems.extend(view.problems()),
                None => problems.push("not a gateway case".to_owned()),
            },
            Check::GatewayFdsAtMost(limit) => {
                match observed.gateway.as_ref().and_then(|g| g.fds) {
                    Some(fds) if fds <= *limit => {}
                    Some(fds) => problems.push(format!(
                        "the gateway held {fds} open file descriptors once every request was answered (at most {limit})"
                    )),
                    None => problems.push(
                        "the gateway's descriptors were not counted (not every request was answered)"
                            .to_owned(),
                    ),
                }
            }
        }
    }
    problems
}

/// C0 controls other than newline and tab, DEL, C1 controls, bidi overrides and isolates.
fn is_raw_control(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// What the user saw, normalised for a snapshot.
pub(crate) fn transcript(case: &Case, observed: &Observed) -> String {
    let mut out = String::new();
    match &observed.end {
        End::Exited(code) => {
            let _ = writeln!(out, "exit {code}");
        }
        End::Signalled(signal) => {
            let _ = writeln!(out, "killed by signal {signal}");
        }
        End::Hung => out.push_str("hung (killed at the deadline)\n"),
        End::MemoryGuard(_) => out.push_str("killed by the memory guard\n"),
    }
    let stdout = match (&observed.gateway, &case.command) {
        (Some(view), Cmd::Serve { .. } | Cmd::ServeBesideLock { .. }) => {
            let mut responses = view.responses.clone();
            responses.sort_by_key(|(id, _)| (id.as_i64().unwrap_or(i64::MAX), id.to_string()));
            let mut lines: Vec<String> = responses.into_iter().map(|(_, line)| line).collect();
            if !view.notifications.is_empty() {
                let methods: Vec<&str> = view.notifications.iter().map(String::as_str).collect();
                lines.push(format!("(notifications: {})", methods.join(", ")));
            }
            lines.extend(view.other_lines.iter().cloned());
            lines.join("\n")
        }
        _ => {
            let text = String::from_utf8_lossy(&observed.stdout).into_owned();
            match case.command {
                Cmd::Check { .. } => check_findings(&text),
                _ => text,
            }
        }
    };
    let stderr = without_log_records(&String::from_utf8_lossy(&observed.stderr));
    for (name, text) in [("stdout", stdout), ("stderr", stderr)] {
        let text = normalise(&text, observed);
        if text.trim().is_empty() {
            let _ = writeln!(out, "--- {name}: empty");
            continue;
        }
        let _ = writeln!(out, "--- {name}");
        let lines: Vec<&str> = text.lines().collect();
        for line in lines.iter().take(MAX_LINES) {
            out.push_str(&cut(line));
            out.push('\n');
        }
        if lines.len() > MAX_LINES {
            let _ = writeln!(out, "… ({} more lines)", lines.len() - MAX_LINES);
        }
    }
    out
}

/// What the checker found: the report's header, its failing and warning checks (numbers
/// in their messages shown as `N`: counts and timings vary from run to run), and its
/// summary (passed and skipped counts derived from the registry: see
/// [`crate::check::derived_check_totals`]). Passing and skipped checks and the evidence blocks (the checker's own tests
/// pin those) are left out.
fn check_findings(report: &str) -> String {
    let mut kept = Vec::new();
    for line in report.lines() {
        let indent = line.len() - line.trim_start().len();
        if indent > 2 || line.starts_with("  pass ") || line.starts_with("  skip ") {
            continue;
        }
        if line.starts_with("  FAIL ") || line.starts_with("  warn ") {
            kept.push(digits_as_n(line));
        } else {
            kept.push(line.to_owned());
        }
    }
    crate::check::derived_check_totals(&kept.join("\n"))
}

fn digits_as_n(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_number = false;
    for c in line.chars() {
        if c.is_ascii_digit() {
            if !in_number {
                out.push('N');
            }
            in_number = true;
        } else {
            in_number = false;
            out.push(c);
        }
    }
    out
}

/// Stderr without Switchboard's log records (a timestamped line and the lines that
/// continue its message): their timestamps and their number (a failing server is retried
/// with jittered backoff) vary from run to run. Raw stderr is still checked for controls
/// and secrets.
fn without_log_records(stderr: &str) -> String {
    let mut kept = Vec::new();
    let mut in_record = false;
    for line in stderr.lines() {
        let bytes = line.as_bytes();
        let timestamped = bytes.len() > 19
            && bytes[..4].iter().all(u8::is_ascii_digit)
            && bytes[4] == b'-'
            && bytes[10] == b'T';
        if timestamped {
            in_record = true;
            continue;
        }
        if in_record && !line.starts_with("switchboard") {
            continue;
        }
        in_record = false;
        kept.push(line);
    }
    kept.join("\n")
}

fn cut(line: &str) -> String {
    let chars = line.chars().count();
    if chars <= LINE_CHARS {
        return line.to_owned();
    }
    let head: String = line.chars().take(LINE_CHARS - 40).collect();
    format!("{head}… ({} bytes)", line.len())
}

/// Paths, addresses, pids and timings replaced; control characters escaped.
pub(crate) fn normalise(text: &str, observed: &Observed) -> String {
    let mut text = text.to_owned();
    let mut replacements = observed.replacements.clone();
    // Longest first, so a path is replaced before a prefix of it.
    replacements.sort_by_key(|(from, _)| std::cmp::Reverse(from.len()));
    for (from, to) in &replacements {
        if !from.is_empty() {
            text = text.replace(from.as_str(), to);
        }
    }
    let text = numbers(&text);
    text.chars()
        .map(|c| {
            let invisible = matches!(c, '\u{200b}'..='\u{200f}' | '\u{2060}' | '\u{feff}');
            if c != '\n' && (is_raw_control(c) || invisible) {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Replaces pids, ports, measured durations and quoted request ids with placeholders. A
/// request id inside a JSON string (`\"id\":7`, an excerpt of a server's frame quoted in
/// the gateway's answer) is the gateway's own id for its request to that server, which
/// depends on how many requests it sent before (listing, re-listing).
fn numbers(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut in_pid_list = false;
    while let Some(c) = rest.chars().next() {
        let glued =
            out.ends_with(|p: char| p.is_ascii_alphanumeric() || matches!(p, '_' | '.' | '-'));
        if !c.is_ascii_digit() || glued {
            if c != ',' && c != ' ' && !c.is_ascii_digit() {
                in_pid_list = false;
            }
            out.push(c);
            rest = &rest[c.len_utf8()..];
            continue;
        }
        let len = rest
            .find(|d: char| !(d.is_ascii_digit() || d == '.'))
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(len);
        let unit_ends = |unit: &str| {
            after
                .strip_prefix(unit)
                .is_some_and(|rest| !rest.starts_with(|c: char| c.is_ascii_alphanumeric()))
        };
        let is_duration = unit_ends(" ms") || unit_ends("ms") || unit_ends(" s");
        let is_pid = out.ends_with("pid ")
            || out.ends_with("pids ")
            || out.ends_with("grandchild ")
            || (in_pid_list && out.ends_with(", "));
        if is_pid {
            in_pid_list = true;
            out.push_str("<pid>");
        } else if is_duration {
            out.push_str("<n>");
        } else if out.ends_with("127.0.0.1:") {
            out.push_str("<port>");
        } else if out.ends_with("\\\"id\\\":") {
            out.push_str("<id>");
        } else {
            out.push_str(number);
        }
        rest = after;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_hide_pids_ports_and_timings_only() {
        assert_eq!(
            numbers("pids 29533, 29538) at 127.0.0.1:4000 in 13 ms within 2s, 3 tools in 2.1 s\n"),
            "pids <pid>, <pid>) at 127.0.0.1:<port> in <n> ms within 2s, 3 tools in <n> s\n"
        );
        assert_eq!(
            numbers("tool_0001 exit status: 3"),
            "tool_0001 exit status: 3"
        );
        assert_eq!(
            numbers(r#"{"id":2,"text":"{\"id\":87,\"n\":1}"}"#),
            r#"{"id":2,"text":"{\"id\":<id>,\"n\":1}"}"#
        );
    }
}
