//! The readable terminal report and JUnit XML.

use std::fmt::Write;
use std::time::Duration;

use serde_json::Value;

use crate::report::{CheckResult, Report, ReportSet, Status};

/// Widest check id, for alignment.
const ID_WIDTH: usize = 28;
/// Longest excerpt of a JSON value in the terminal report.
const VALUE_EXCERPT: usize = 240;
/// Most evidence lines per check in the terminal report.
const MAX_EVIDENCE_LINES: usize = 12;

fn seconds(duration: Duration) -> String {
    format!("{:.1} s", duration.as_secs_f64())
}

fn label(result: &CheckResult) -> &'static str {
    match (result.status, result.baselined) {
        (Status::Pass, _) => "pass",
        (Status::Fail, true) => "fail*",
        (Status::Fail, false) => "FAIL",
        (Status::Warn, _) => "warn",
        (Status::Skip, _) => "skip",
    }
}

/// A value for the terminal: compact JSON, except that an excerpt (a string standing for a
/// value too large to keep) is shown as it is.
fn value_text(value: &Value) -> String {
    let text = match value {
        Value::String(s) => s.clone(),
        Value::Object(map) if map.len() == 1 => {
            let (key, inner) = map
                .iter()
                .next()
                .map_or(("", &Value::Null), |(k, v)| (k.as_str(), v));
            match inner {
                Value::String(s) => format!("{key}: {s}"),
                other => format!("{key}: {other}"),
            }
        }
        other => other.to_string(),
    };
    switchboard_wire::excerpt(text.as_bytes(), VALUE_EXCERPT)
}

/// Every check of one server, one line each, with explanations under failures and warnings.
pub(crate) fn server_text(report: &Report) -> String {
    let mut out = String::new();
    let mut header = vec![report.transport.to_owned()];
    if let Some(sandbox) = &report.sandbox {
        header.push(format!("sandbox {sandbox}"));
    }
    if let (Some(era), Some(version)) = (&report.facts.era, &report.facts.protocol_version) {
        header.push(format!("{era} era, protocol {version}"));
    }
    if let Some(name) = &report.facts.server_name {
        let version = report.facts.server_version.as_deref().unwrap_or("");
        header.push(format!("server {name} {version}").trim_end().to_owned());
    }
    let _ = writeln!(out, "{} ({})", report.server, header.join(", "));
    for result in &report.results {
        let _ = writeln!(
            out,
            "  {:<5} {:<ID_WIDTH$} {}",
            label(result),
            result.id,
            result.summary
        );
        if matches!(result.status, Status::Fail | Status::Warn) {
            explain(&mut out, result);
        }
    }
    for note in &report.notes {
        let _ = writeln!(out, "  note: {note}");
    }
    let counts = report.counts();
    let mut line = format!(
        "  {}: {} passed, {} failed, {} warnings, {} skipped",
        report.server, counts.pass, counts.fail, counts.warn, counts.skip
    );
    if counts.baselined > 0 {
        line.push_str(&format!(
            " ({} failures expected by the baseline)",
            counts.baselined
        ));
    }
    let _ = writeln!(out, "{line} in {}", seconds(report.duration));
    out
}

fn explain(out: &mut String, result: &CheckResult) {
    let indent = "        ";
    let def = result.def();
    let _ = writeln!(
        out,
        "{indent}spec: {} ({})",
        def.spec,
        def.severity.as_str()
    );
    if let Some(fix) = &result.fix {
        let _ = writeln!(out, "{indent}fix:  {fix}");
    }
    let mut lines = Vec::new();
    for exchange in &result.evidence.exchanges {
        let elapsed = exchange
            .elapsed
            .map(|e| format!(" ({} ms)", e.as_millis()))
            .unwrap_or_default();
        lines.push(format!("{}{elapsed}", exchange.label));
        if let Some(sent) = &exchange.sent {
            lines.push(format!("  → {}", value_text(sent)));
        }
        if let Some(received) = &exchange.received {
            lines.push(format!("  ← {}", value_text(received)));
        }
    }
    lines.extend(result.evidence.notes.iter().map(|n| format!("· {n}")));
    if !lines.is_empty() {
        let _ = writeln!(out, "{indent}evidence:");
        let total = lines.len();
        for line in lines.iter().take(MAX_EVIDENCE_LINES) {
            let _ = writeln!(out, "{indent}  {line}");
        }
        if total > MAX_EVIDENCE_LINES {
            let _ = writeln!(
                out,
                "{indent}  … {} more lines in the JSON report (--json)",
                total - MAX_EVIDENCE_LINES
            );
        }
    }
    if let Some(tail) = &result.evidence.stderr_tail {
        let lines: Vec<&str> = tail.trim_end().lines().collect();
        if !lines.is_empty() {
            let _ = writeln!(out, "{indent}stderr (last lines):");
            for line in &lines[lines.len().saturating_sub(5)..] {
                let _ = writeln!(
                    out,
                    "{indent}  | {}",
                    switchboard_wire::excerpt(line.as_bytes(), 200)
                );
            }
        }
    }
}

/// Every server's report, then the totals (and the baseline's verdict).
pub(crate) fn set_text(set: &ReportSet) -> String {
    let mut out = String::new();
    for (i, report) in set.reports.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&server_text(report));
    }
    if let Some(baseline) = &set.baseline {
        out.push('\n');
        for (title, list) in [
            ("expected by the baseline", &baseline.expected),
            ("unexpected (not in the baseline)", &baseline.unexpected),
            (
                "stale baseline entries (they pass now: remove them)",
                &baseline.stale,
            ),
            (
                "baseline entries that match no check of the servers checked here (a misspelt \
                 check id reads as a server name)",
                &baseline.unmatched,
            ),
        ] {
            if !list.is_empty() {
                let _ = writeln!(out, "{title}: {}", list.join(", "));
            }
        }
    }
    if set.reports.len() > 1 {
        let counts = set.counts();
        let _ = writeln!(
            out,
            "\nall servers: {} passed, {} failed, {} warnings, {} skipped",
            counts.pass, counts.fail, counts.warn, counts.skip
        );
    }
    out
}

/// Escapes text for XML attributes and content; characters XML 1.0 cannot carry become
/// U+FFFD.
pub(crate) fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' => out.push(c),
            // Controls (which XML 1.0 mostly forbids), C1, bidi and invisible characters are
            // shown as text, as on the terminal: a report file may end up `cat`-ed.
            c if switchboard_text::peer_text::needs_escape(c) => {
                out.extend(c.escape_unicode());
            }
            '\u{FFFE}' | '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

fn details(result: &CheckResult) -> String {
    let mut text = String::new();
    let def = result.def();
    let _ = writeln!(text, "{}", result.summary);
    let _ = writeln!(text, "spec: {}", def.spec_url());
    if let Some(fix) = &result.fix {
        let _ = writeln!(text, "fix: {fix}");
    }
    for exchange in &result.evidence.exchanges {
        let _ = writeln!(text, "{}", exchange.label);
        if let Some(sent) = &exchange.sent {
            let _ = writeln!(text, "  sent: {}", value_text(sent));
        }
        if let Some(received) = &exchange.received {
            let _ = writeln!(text, "  received: {}", value_text(received));
        }
    }
    for note in &result.evidence.notes {
        let _ = writeln!(text, "- {note}");
    }
    if let Some(tail) = &result.evidence.stderr_tail {
        let _ = writeln!(text, "stderr:\n{}", tail.trim_end());
    }
    text
}

/// JUnit XML: one `<testsuite>` per server, one `<testcase>` per check. Failures are
/// `<failure>`, skips and baselined failures `<skipped>`, warnings pass with the warning in
/// `<system-out>`.
pub(crate) fn junit(set: &ReportSet) -> String {
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let counts = set.counts();
    let total_time: f64 = set.reports.iter().map(|r| r.duration.as_secs_f64()).sum();
    let tests: usize = set.reports.iter().map(|r| r.results.len()).sum();
    let _ = writeln!(
        out,
        "<testsuites name=\"switchboard check\" tests=\"{tests}\" failures=\"{}\" skipped=\"{}\" time=\"{total_time:.3}\">",
        counts.fail - counts.baselined,
        counts.skip + counts.baselined
    );
    for report in &set.reports {
        let c = report.counts();
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" time=\"{:.3}\">",
            xml_escape(&report.server),
            report.results.len(),
            c.fail - c.baselined,
            c.skip + c.baselined,
            report.duration.as_secs_f64()
        );
        for result in &report.results {
            let _ = write!(
                out,
                "    <testcase classname=\"switchboard-check.{}\" name=\"{}\" time=\"{:.3}\"",
                xml_escape(&report.server),
                result.id,
                result.duration.as_secs_f64()
            );
            let summary = xml_escape(&result.summary);
            match (result.status, result.baselined) {
                (Status::Pass, _) => out.push_str("/>\n"),
                (Status::Skip, _) => {
                    let _ = writeln!(
                        out,
                        ">\n      <skipped message=\"{summary}\"/>\n    </testcase>"
                    );
                }
                (Status::Fail, true) => {
                    let _ = writeln!(
                        out,
                        ">\n      <skipped message=\"expected failure (baseline): {summary}\"/>\n      <system-out>{}</system-out>\n    </testcase>",
                        xml_escape(&details(result))
                    );
                }
                (Status::Fail, false) => {
                    let _ = writeln!(
                        out,
                        ">\n      <failure message=\"{summary}\" type=\"{}\">{}</failure>\n    </testcase>",
                        result.def().severity.as_str(),
                        xml_escape(&details(result))
                    );
                }
                (Status::Warn, _) => {
                    let _ = writeln!(
                        out,
                        ">\n      <system-out>warning: {}</system-out>\n    </testcase>",
                        xml_escape(&details(result))
                    );
                }
            }
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_escaping_covers_markup_and_control_characters() {
        assert_eq!(
            xml_escape("a<b>&\"c'\u{1}\n\r\u{1b}[2J\u{9b}\u{202e}\u{FFFF}"),
            "a&lt;b&gt;&amp;&quot;c&apos;\\u{1}\n\\u{d}\\u{1b}[2J\\u{9b}\\u{202e}\u{FFFD}"
        );
    }
}
