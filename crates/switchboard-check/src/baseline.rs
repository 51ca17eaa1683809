//! Baselines: known failures that should not fail CI, in the official conformance suite's
//! expected-failures YAML form.
//!
//! ```yaml
//! server:
//!   - cancellation            # this check may fail on every checked server
//!   - everything:http-origin  # only this check, only on server `everything`
//!   - legacy-server           # every check of server `legacy-server`
//! client: []                  # accepted and ignored (switchboard checks servers)
//! ```
//!
//! An entry is `CHECK-ID`, `SERVER` or `SERVER:CHECK-ID` (the official grammar is
//! `<scenario>` or `<scenario>:<check-id>`; here a server plays the scenario's part). A
//! flat top-level list is read as the `server:` list, and `SERVER: [CHECK-ID, …]` as a
//! shorthand for `SERVER:CHECK-ID` entries. As in the official runner, a failure or
//! warning listed in the baseline is expected; an unlisted failure is unexpected; and a
//! listed check that now passes is stale, which fails the run until the entry is removed.

use std::path::{Path, PathBuf};

use crate::catalog;
use crate::error::CheckError;
use crate::report::{Report, Status};

/// One baseline entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaselineEntry {
    /// The server it is limited to, if any.
    pub server: Option<String>,
    /// The check it is limited to, if any.
    pub check: Option<String>,
    /// The line it was written on.
    pub line: usize,
}

impl BaselineEntry {
    /// The entry as a user writes it.
    pub fn written(&self) -> String {
        match (&self.server, &self.check) {
            (Some(server), Some(check)) => format!("{server}:{check}"),
            (Some(server), None) => server.clone(),
            (None, Some(check)) => check.clone(),
            (None, None) => String::new(),
        }
    }

    fn covers(&self, server: &str, check: &str) -> bool {
        self.server.as_deref().is_none_or(|s| s == server)
            && self.check.as_deref().is_none_or(|c| c == check)
    }
}

/// A parsed baseline.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Baseline {
    /// The entries of its `server:` list.
    pub entries: Vec<BaselineEntry>,
}

/// What applying a baseline found, as `SERVER:CHECK-ID` strings.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BaselineOutcome {
    /// Failures and warnings the baseline lists.
    pub expected: Vec<String>,
    /// Failures it does not list.
    pub unexpected: Vec<String>,
    /// Entries whose checks now pass: remove them.
    pub stale: Vec<String>,
    /// Entries that cover no check of any server checked here (a misspelt check id reads
    /// as a server name), with their line: said, so a typo does not go unnoticed.
    pub unmatched: Vec<String>,
}

fn unquote(text: &str) -> &str {
    let t = text.trim();
    for quote in ['"', '\''] {
        if let Some(inner) = t.strip_prefix(quote).and_then(|s| s.strip_suffix(quote)) {
            return inner;
        }
    }
    t
}

fn strip_comment(line: &str) -> &str {
    let mut in_quote: Option<char> = None;
    let mut previous = ' ';
    for (at, c) in line.char_indices() {
        match in_quote {
            Some(q) if c == q => in_quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => in_quote = Some(c),
            None if c == '#' && previous.is_whitespace() => return &line[..at],
            None => {}
        }
        previous = c;
    }
    line
}

impl Baseline {
    /// The baseline that expects what `reports` found: each failure and warning as
    /// `SERVER:CHECK-ID`, with its status and summary as a comment (one line, cut), in the
    /// form [`Baseline::parse`] reads. For adopting a server as it is, then fixing it
    /// check by check: a check fixed later makes its entry stale, which the run says.
    pub fn written_for(reports: &[Report]) -> String {
        const SUMMARY_CHARS: usize = 100;
        let mut entries = Vec::new();
        for report in reports {
            for result in &report.results {
                let status = match result.status {
                    Status::Fail => "fail",
                    Status::Warn => "warn",
                    _ => continue,
                };
                let summary: String = result
                    .summary
                    .chars()
                    .map(|c| if c.is_control() { ' ' } else { c })
                    .take(SUMMARY_CHARS)
                    .collect();
                entries.push(format!(
                    "  - \"{}:{}\"  # {status}: {summary}\n",
                    report.server, result.id
                ));
            }
        }
        let mut text = String::from(
            "# Known failures and warnings (`switchboard check --write-baseline`); pass this file\n\
             # to `switchboard check --baseline` so that only new ones fail the run. An entry\n\
             # whose check passes again is stale: remove it.\n",
        );
        if entries.is_empty() {
            text.push_str("server: []\n");
        } else {
            text.push_str("server:\n");
            text.push_str(&entries.concat());
        }
        text.push_str("client: []\n");
        text
    }

    /// Reads a baseline file.
    pub fn load(path: &Path) -> Result<Baseline, CheckError> {
        let text = std::fs::read_to_string(path).map_err(|source| CheckError::BaselineRead {
            path: path.to_owned(),
            source,
        })?;
        Baseline::parse(&text, path)
    }

    /// Parses baseline text (`path` is for messages).
    pub fn parse(text: &str, path: &Path) -> Result<Baseline, CheckError> {
        let error = |line: usize, detail: String| CheckError::BaselineSyntax {
            path: PathBuf::from(path),
            line,
            detail,
        };
        // The section the current block items belong to: Some(None) = `server:`, Some(Some(s))
        // = the `s:` shorthand, None = ignored (`client:`).
        let mut section: Option<Option<String>> = Some(None);
        let mut entries = Vec::new();
        for (index, raw) in text.lines().enumerate() {
            let line_no = index + 1;
            let line = strip_comment(raw).trim_end();
            if line.trim().is_empty() || line.trim() == "---" {
                continue;
            }
            let indented = line.starts_with(' ') || line.starts_with('\t');
            let content = line.trim();
            if let Some(item) = content.strip_prefix('-') {
                if !item.is_empty() && !item.starts_with(' ') {
                    return Err(error(
                        line_no,
                        format!("`{content}`: write a space after `-`"),
                    ));
                }
                if let Some(target) = &section {
                    entries.push(parse_item(
                        unquote(item),
                        target.as_deref(),
                        line_no,
                        &error,
                    )?);
                }
                continue;
            }
            if indented {
                return Err(error(
                    line_no,
                    format!("unexpected indented line `{content}`"),
                ));
            }
            let Some((key, rest)) = content.split_once(':') else {
                return Err(error(
                    line_no,
                    format!("`{content}` is neither `key:` nor `- item`"),
                ));
            };
            let key = unquote(key);
            section = match key {
                "server" => Some(None),
                "client" => None,
                name => Some(Some(name.to_owned())),
            };
            let rest = rest.trim();
            if rest.is_empty() {
                continue;
            }
            let Some(flow) = rest.strip_prefix('[').and_then(|r| r.strip_suffix(']')) else {
                return Err(error(
                    line_no,
                    format!("`{key}:` must be followed by a list"),
                ));
            };
            if let Some(target) = &section {
                for item in flow.split(',').map(unquote).filter(|i| !i.is_empty()) {
                    entries.push(parse_item(item, target.as_deref(), line_no, &error)?);
                }
            }
        }
        Ok(Baseline { entries })
    }

    /// Marks listed failures in `reports` as baselined and says what was expected,
    /// unexpected and stale.
    pub fn apply(&self, reports: &mut [Report]) -> BaselineOutcome {
        let mut outcome = BaselineOutcome::default();
        for report in reports.iter_mut() {
            for result in &mut report.results {
                let listed = self
                    .entries
                    .iter()
                    .any(|e| e.covers(&report.server, result.id));
                let name = format!("{}:{}", report.server, result.id);
                match result.status {
                    Status::Fail | Status::Warn if listed => {
                        result.baselined = result.status == Status::Fail;
                        outcome.expected.push(name);
                    }
                    Status::Fail => outcome.unexpected.push(name),
                    _ => {}
                }
            }
        }
        for entry in &self.entries {
            let mut covered = reports
                .iter()
                .flat_map(|r| r.results.iter().map(move |c| (r, c)))
                .filter(|(r, c)| entry.covers(&r.server, c.id) && c.status != Status::Skip)
                .peekable();
            if covered.peek().is_none() {
                outcome
                    .unmatched
                    .push(format!("{} (line {})", entry.written(), entry.line));
                continue;
            }
            if covered.all(|(_, c)| c.status == Status::Pass) {
                outcome.stale.push(entry.written());
            }
        }
        outcome
    }
}

fn parse_item(
    item: &str,
    section_server: Option<&str>,
    line: usize,
    error: &dyn Fn(usize, String) -> CheckError,
) -> Result<BaselineEntry, CheckError> {
    if item.is_empty() {
        return Err(error(line, "empty entry".into()));
    }
    if item.contains(": ") {
        return Err(error(
            line,
            format!("`{item}`: remove the space after the colon (`SERVER:CHECK-ID`)"),
        ));
    }
    // A retired id (`catalog::RENAMED`) stands for the check that took it over.
    let known = |check: &str| -> Result<String, CheckError> {
        if let Some(def) = catalog::find_current(check) {
            Ok(def.id.to_owned())
        } else {
            Err(error(
                line,
                format!(
                    "unknown check id `{check}`; known ids: {}",
                    catalog::CHECKS
                        .iter()
                        .map(|c| c.id)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ))
        }
    };
    if let Some(server) = section_server {
        let check = known(item)?;
        return Ok(BaselineEntry {
            server: Some(server.to_owned()),
            check: Some(check),
            line,
        });
    }
    match item.split_once(':') {
        Some((server, check)) if !server.is_empty() && !check.is_empty() => {
            let check = known(check)?;
            Ok(BaselineEntry {
                server: Some(server.to_owned()),
                check: Some(check),
                line,
            })
        }
        Some(_) => Err(error(
            line,
            format!("`{item}`: both sides of the colon are required"),
        )),
        None => match catalog::find_current(item) {
            Some(def) => Ok(BaselineEntry {
                server: None,
                check: Some(def.id.to_owned()),
                line,
            }),
            None => Ok(BaselineEntry {
                server: Some(item.to_owned()),
                check: None,
                line,
            }),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<String>, String> {
        Baseline::parse(text, Path::new("b.yml"))
            .map(|b| b.entries.iter().map(BaselineEntry::written).collect())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_written_baseline_with_nothing_to_expect_reads_as_empty() {
        let written = Baseline::written_for(&[]);
        assert_eq!(parse(&written), Ok(Vec::new()), "{written}");
    }

    #[test]
    fn reads_the_official_shape_and_shorthands() {
        let text = "# known failures\nserver:\n  - cancellation   # everywhere\n  - 'everything:http-origin'\n  - legacy\nclient:\n  - tools_call\n";
        assert_eq!(
            parse(text),
            Ok(vec![
                "cancellation".into(),
                "everything:http-origin".into(),
                "legacy".into()
            ])
        );
        assert_eq!(
            parse("server: [shutdown, a:reconnect]\n"),
            Ok(vec!["shutdown".into(), "a:reconnect".into()])
        );
        assert_eq!(parse("- shutdown\n"), Ok(vec!["shutdown".into()]));
        assert_eq!(
            parse("everything: [cancellation]\n"),
            Ok(vec!["everything:cancellation".into()])
        );
        assert_eq!(parse(""), Ok(vec![]));
        assert_eq!(
            parse("server:\n  - everything: cancellation\n"),
            Err("b.yml:2: `everything: cancellation`: remove the space after the colon (`SERVER:CHECK-ID`); a baseline is YAML with `server:` (and optionally `client:`) lists of check ids, `SERVER` or `SERVER:CHECK-ID` entries".into())
        );
        assert!(
            parse("server:\n  - x:nope\n").is_err_and(|e| e.contains("unknown check id `nope`"))
        );
    }

    #[test]
    fn a_retired_check_id_stands_for_the_check_that_took_it_over() {
        assert_eq!(
            parse("server: [http-delete, everything:http-delete]\n"),
            Ok(vec!["shutdown".into(), "everything:shutdown".into()])
        );
        assert_eq!(parse("- http-delete\n"), Ok(vec!["shutdown".into()]));
    }
}
