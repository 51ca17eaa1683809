//! Accepted findings: the findings of `switchboard scan` a user has reviewed and accepts,
//! each for a reason. A finding one covers is shown as accepted (text, `--json`, a SARIF
//! suppression) and counts neither for the exit code nor against `--update` pinning; an
//! entry that covers nothing a scan looked for is reported as stale, so the file does not
//! rot. `docs/scan.md` describes the file for users.
//!
//! The file sits beside the config file, named after it as the tool lock is
//! ([`beside`]: `mcp.json` → `mcp.scan-accepted.toml`), and is TOML so that it can be read
//! and edited by hand (comments are kept when `scan --accept` or `--unaccept` rewrites it,
//! through `toml_edit`):
//!
//! ```toml
//! format = "switchboard-scan-accepted/1"
//!
//! [[accepted]]
//! server = "notes"                # required
//! tool = "echo"                   # optional: without it, every tool of the server
//! rule = "hidden-markup"          # required: a rule id of `scan` (docs/scan.md)
//! reason = "our licence header"   # required, not blank
//! accepted_at = "2026-12-06T20:00:00Z"   # written by `--accept`, optional
//! accepted_by = "alice"                  # written by `--accept` ($USER), optional
//! ```
//!
//! An entry accepts by server, tool and rule only — never by a finding's message, which is
//! the server's to change. It is a security file, so it fails closed: a file that is there
//! and cannot be used (unreadable, a folder, a link to nothing, empty, over [`MAX_FILE_BYTES`],
//! not UTF-8 or not TOML, without its `format`, an unknown key, an entry missing its server,
//! rule or reason, a rule id `scan` does not know, more than [`MAX_ENTRIES`] entries, a
//! name or reason over its cap) is an [`AcceptedFileError`], never an empty list: the scan
//! stops with a usage error rather than count findings differently than the user asked.
//! Names with control characters are kept as TOML escapes in the file and shown escaped
//! by the terminal module. It is written as every state file is: atomically, `0600`
//! (`switchboard_config::atomic`).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use switchboard_config::atomic::{Permissions, replace_file};
use switchboard_gateway::audit::rfc3339_seconds;
use switchboard_text::peer_text::needs_escape;
use toml_edit::{ArrayOfTables, DocumentMut, Item, Table, value};

/// The format this Switchboard reads and writes (the file's `format`).
pub(crate) const ACCEPTED_FORMAT: &str = "switchboard-scan-accepted/1";
/// The largest file read.
pub(crate) const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// The most entries a file may hold.
pub(crate) const MAX_ENTRIES: usize = 10_000;
/// The longest server or tool name an entry may hold, in characters.
const MAX_NAME_CHARS: usize = 1024;
/// The longest reason, in characters.
const MAX_REASON_CHARS: usize = 2000;
/// The longest `accepted_at` or `accepted_by`, in characters.
const MAX_STAMP_CHARS: usize = 256;
/// How much of a name an error message shows.
const SHOWN_NAME_CHARS: usize = 64;

/// The keys of the file's top level and of an entry.
const TOP_KEYS: [&str; 2] = ["format", "accepted"];
const ENTRY_KEYS: [&str; 6] = [
    "server",
    "tool",
    "rule",
    "reason",
    "accepted_at",
    "accepted_by",
];

/// What a new file starts with.
const NEW_FILE: &str = "\
# Findings `switchboard scan` shows as accepted and does not count (docs/scan.md).
# Each [[accepted]] names a server, one of its tools (leave `tool` out for all of them),
# a rule id and the reason. `switchboard scan --accept SERVER[/TOOL]:RULE --reason TEXT`
# adds one and `--unaccept SERVER[/TOOL]:RULE` removes one; editing by hand is fine too.
format = \"switchboard-scan-accepted/1\"
";

/// The file's usual place: beside `config`, named after it as the tool lock is
/// (`mcp.json` → `mcp.scan-accepted.toml`, `.mcp.json` → `.mcp.scan-accepted.toml`).
pub(crate) fn beside(config: &Path) -> PathBuf {
    switchboard_runtime::guards::file_beside(config, "scan-accepted.toml")
}

/// The server of findings about all servers together.
const ALL_SERVERS: &str = "*";

/// What one entry accepts: a rule's findings about a server, or about one of its tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Subject {
    pub(crate) server: String,
    /// `None`: every finding of the rule about the server, its tools' included.
    pub(crate) tool: Option<String>,
    pub(crate) rule: String,
}

impl Subject {
    /// Reads `SERVER[/TOOL]:RULE`. The rule is what follows the last `:` and must be one of
    /// `rules`; the server is the whole rest when that is one of `servers`, else the part
    /// before the first `/` that ends a name of `servers`, the tool the part after it (so
    /// a server or tool name may hold `/` and `:`).
    pub(crate) fn parse(spec: &str, servers: &[&str], rules: &[&str]) -> Result<Subject, String> {
        let Some((head, rule)) = spec.rsplit_once(':') else {
            return Err(format!(
                "`{}` is not SERVER[/TOOL]:RULE (no `:RULE`)",
                shown(spec)
            ));
        };
        check_rule(rule, rules)?;
        let rule = rule.to_owned();
        if servers.contains(&head) || head == ALL_SERVERS {
            return Ok(Subject {
                server: head.to_owned(),
                tool: None,
                rule,
            });
        }
        let split = head
            .match_indices('/')
            .map(|(at, _)| at)
            .find(|&at| servers.contains(&&head[..at]) && at + 1 < head.len());
        match split {
            Some(at) => Ok(Subject {
                server: head[..at].to_owned(),
                tool: Some(head[at + 1..].to_owned()),
                rule,
            }),
            None => Err(format!(
                "no server `{}` in the configuration (its servers: {})",
                shown(head.split('/').next().unwrap_or(head)),
                listed(servers)
            )),
        }
    }

    /// `SERVER[/TOOL]:RULE`, as `--accept` and `--unaccept` take it.
    pub(crate) fn spec(&self) -> String {
        match &self.tool {
            Some(tool) => format!("{}/{tool}:{}", self.server, self.rule),
            None => format!("{}:{}", self.server, self.rule),
        }
    }

    /// Whether a finding of `rule` about `server` (and `tool`) is covered.
    fn covers(&self, server: &str, tool: Option<&str>, rule: &str) -> bool {
        self.server == server
            && self.rule == rule
            && match &self.tool {
                None => true,
                Some(accepted) => tool == Some(accepted.as_str()),
            }
    }
}

/// One accepted finding: what, why, and when and by whom when the file says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Acceptance {
    pub(crate) subject: Subject,
    pub(crate) reason: String,
    pub(crate) accepted_at: Option<String>,
    pub(crate) accepted_by: Option<String>,
}

/// Who accepts now and when, written with a new entry.
#[derive(Debug, Clone)]
pub(crate) struct Stamp {
    pub(crate) at: String,
    pub(crate) by: Option<String>,
}

impl Stamp {
    /// Now (UTC, to the second) and the user (`$USER`, else `$LOGNAME`, when set).
    pub(crate) fn now() -> Stamp {
        let by = ["USER", "LOGNAME"]
            .iter()
            .filter_map(|name| std::env::var(name).ok())
            .find(|user| !user.trim().is_empty())
            .map(|user| user.chars().take(MAX_STAMP_CHARS).collect());
        Stamp {
            at: rfc3339_seconds(SystemTime::now()),
            by,
        }
    }
}

/// The accepted findings file, read (or empty when it is not there, or when there is no
/// place for one).
#[derive(Debug)]
pub(crate) struct AcceptedFile {
    path: Option<PathBuf>,
    present: bool,
    document: DocumentMut,
    entries: Vec<Acceptance>,
    /// The rule ids an entry may name.
    rules: Vec<String>,
}

/// What the accepted findings cover of one scan's findings.
#[derive(Debug, Default)]
pub(crate) struct Judgement {
    /// For each finding, in order: the index of the first entry covering it.
    pub(crate) covered_by: Vec<Option<usize>>,
    /// The entries that were looked for and covered nothing.
    pub(crate) stale: Vec<usize>,
}

impl AcceptedFile {
    /// No file (nowhere to put one: no config file and no `--accepted`).
    pub(crate) fn none(rules: &[&str]) -> AcceptedFile {
        AcceptedFile {
            path: None,
            present: false,
            document: DocumentMut::new(),
            entries: Vec::new(),
            rules: rules.iter().map(|r| (*r).to_owned()).collect(),
        }
    }

    /// Reads the file at `path`, whose entries may name `rules`: empty when it is not there,
    /// an error when it is there and cannot be used (see the module docs).
    pub(crate) fn load(path: &Path, rules: &[&str]) -> Result<AcceptedFile, AcceptedFileError> {
        let failed = |problem| AcceptedFileError {
            path: path.to_owned(),
            problem,
        };
        let mut file = AcceptedFile::none(rules);
        file.path = Some(path.to_owned());
        let Some(text) = read_capped(path).map_err(failed)? else {
            return Ok(file);
        };
        let document: DocumentMut = text
            .parse()
            .map_err(|e: toml_edit::TomlError| failed(Problem::NotToml(e.to_string())))?;
        file.entries = read_entries(&document, rules).map_err(failed)?;
        file.document = document;
        file.present = true;
        Ok(file)
    }

    pub(crate) fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Whether the file was there when read, or has been written since.
    pub(crate) fn is_present(&self) -> bool {
        self.present
    }

    pub(crate) fn entries(&self) -> &[Acceptance] {
        &self.entries
    }

    /// The first entry covering a finding of `rule` about `server` (and `tool`).
    pub(crate) fn covering(
        &self,
        server: &str,
        tool: Option<&str>,
        rule: &str,
    ) -> Option<&Acceptance> {
        self.entries
            .iter()
            .find(|entry| entry.subject.covers(server, tool, rule))
    }

    /// Which entry covers each finding (`(server, tool, rule)`, in order), and which entries
    /// `looked_for` says the scan looked for and covered nothing.
    pub(crate) fn judge<'a>(
        &self,
        findings: impl Iterator<Item = (&'a str, Option<&'a str>, &'a str)>,
        looked_for: impl Fn(&Subject) -> bool,
    ) -> Judgement {
        let mut used = vec![false; self.entries.len()];
        let covered_by = findings
            .map(|(server, tool, rule)| {
                let index = self
                    .entries
                    .iter()
                    .position(|entry| entry.subject.covers(server, tool, rule));
                if let Some(index) = index {
                    used[index] = true;
                }
                index
            })
            .collect();
        let stale = (0..self.entries.len())
            .filter(|&index| !used[index] && looked_for(&self.entries[index].subject))
            .collect();
        Judgement { covered_by, stale }
    }

    /// Records `subject` as accepted for `reason` (an entry for the same subject is
    /// updated in place). The file is written by [`AcceptedFile::save`].
    pub(crate) fn accept(
        &mut self,
        subject: &Subject,
        reason: &str,
        stamp: &Stamp,
    ) -> Result<(), String> {
        check_reason(reason)?;
        check_name("server", &subject.server)?;
        if let Some(tool) = &subject.tool {
            check_name("tool", tool)?;
        }
        if !self.present && self.document.is_empty() {
            self.document = NEW_FILE.parse().map_err(|e| format!("{e}"))?;
        }
        let entries = match self.document.get_mut("accepted") {
            Some(Item::ArrayOfTables(entries)) => entries,
            _ => {
                self.document
                    .insert("accepted", Item::ArrayOfTables(ArrayOfTables::new()));
                match self.document.get_mut("accepted") {
                    Some(Item::ArrayOfTables(entries)) => entries,
                    _ => return Err("the file's `accepted` could not be made".into()),
                }
            }
        };
        let existing = entries
            .iter_mut()
            .find(|table| subject_of(table).as_ref() == Some(subject));
        match existing {
            Some(table) => fill(table, subject, reason, stamp),
            None => {
                let mut table = Table::new();
                fill(&mut table, subject, reason, stamp);
                entries.push(table);
            }
        }
        self.reread()
    }

    /// Removes every entry for exactly `subject`; whether there was one.
    pub(crate) fn unaccept(&mut self, subject: &Subject) -> Result<bool, String> {
        let before = self.entries.len();
        if let Some(Item::ArrayOfTables(entries)) = self.document.get_mut("accepted") {
            entries.retain(|table| subject_of(table).as_ref() != Some(subject));
        }
        self.reread()?;
        Ok(self.entries.len() < before)
    }

    /// Writes the file: atomically, `0600`.
    pub(crate) fn save(&mut self) -> Result<(), AcceptedFileError> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        replace_file(
            path,
            self.document.to_string().as_bytes(),
            Permissions::OwnerOnly,
        )
        .map_err(|e| AcceptedFileError {
            path: path.clone(),
            problem: Problem::Unwritable(e.to_string()),
        })?;
        self.present = true;
        Ok(())
    }

    /// The entries again from the edited document (so that what is kept is what is written).
    fn reread(&mut self) -> Result<(), String> {
        let rules: Vec<&str> = self.rules.iter().map(String::as_str).collect();
        self.entries = read_entries(&self.document, &rules).map_err(|p| p.to_string())?;
        Ok(())
    }
}

/// Sets an entry's fields, in the file's order.
fn fill(table: &mut Table, subject: &Subject, reason: &str, stamp: &Stamp) {
    table.insert("server", escaped(&subject.server));
    match &subject.tool {
        Some(tool) => {
            table.insert("tool", escaped(tool));
        }
        None => {
            table.remove("tool");
        }
    }
    table.insert("rule", value(subject.rule.as_str()));
    table.insert("reason", escaped(reason.trim()));
    table.insert("accepted_at", value(stamp.at.as_str()));
    match &stamp.by {
        Some(by) => {
            table.insert("accepted_by", value(by.as_str()));
        }
        None => {
            table.remove("accepted_by");
        }
    }
}

/// `text` as a TOML string in which every character a terminal would not show as it is
/// (controls, bidirectional and invisible ones: `switchboard_text`'s rule) is a `\u`
/// escape, so that the file shows a hostile name as it is when read in a terminal; the
/// TOML value is the same.
fn escaped(text: &str) -> Item {
    if !text.chars().any(|c| needs_escape(c) || c.is_control()) {
        return value(text);
    }
    let mut raw = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => raw.push_str("\\\""),
            '\\' => raw.push_str("\\\\"),
            '\n' => raw.push_str("\\n"),
            '\t' => raw.push_str("\\t"),
            c if needs_escape(c) || c.is_control() => match u16::try_from(u32::from(c)) {
                Ok(unit) => raw.push_str(&format!("\\u{unit:04X}")),
                Err(_) => raw.push_str(&format!("\\U{:08X}", u32::from(c))),
            },
            c => raw.push(c),
        }
    }
    raw.push('"');
    match raw.parse::<toml_edit::Value>() {
        Ok(parsed) => Item::Value(parsed.decorated(" ", "")),
        Err(_) => value(text),
    }
}

/// The subject of an entry as written, if it has one.
fn subject_of(table: &Table) -> Option<Subject> {
    let text = |key: &str| table.get(key).and_then(Item::as_str).map(str::to_owned);
    Some(Subject {
        server: text("server")?,
        tool: text("tool"),
        rule: text("rule")?,
    })
}

/// The file's text: `None` when nothing is there.
fn read_capped(path: &Path) -> Result<Option<String>, Problem> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        // A link to nothing is something there: it reads as "not found", and is refused.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return match std::fs::symlink_metadata(path) {
                Err(_) => Ok(None),
                Ok(_) => Err(Problem::DanglingLink),
            };
        }
        Err(_) if path.is_dir() => return Err(Problem::Folder),
        Err(e) => return Err(Problem::Unreadable(e.to_string())),
    };
    if path.is_dir() {
        return Err(Problem::Folder);
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Problem::Unreadable(e.to_string()))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(Problem::TooLarge);
    }
    if bytes.is_empty() {
        return Err(Problem::Empty);
    }
    // A byte order mark is what some editors add; the text after it is read as it is.
    let bytes = bytes.strip_prefix(&[0xef, 0xbb, 0xbf]).unwrap_or(&bytes);
    String::from_utf8(bytes.to_vec())
        .map(Some)
        .map_err(|e| Problem::NotUtf8(e.utf8_error().valid_up_to()))
}

/// The entries of a parsed file, every one checked.
fn read_entries(document: &DocumentMut, rules: &[&str]) -> Result<Vec<Acceptance>, Problem> {
    if let Some((key, _)) = document.iter().find(|(key, _)| !TOP_KEYS.contains(key)) {
        return Err(Problem::Malformed(format!(
            "an unknown key `{}` (the file holds `format` and `[[accepted]]` entries)",
            shown(key)
        )));
    }
    match document.get("format").map(|f| f.as_str()) {
        Some(Some(ACCEPTED_FORMAT)) => {}
        Some(Some(other)) => {
            return Err(Problem::WrongFormat {
                found: Some(shown(other)),
            });
        }
        Some(None) | None => return Err(Problem::WrongFormat { found: None }),
    }
    let tables = match document.get("accepted") {
        None => return Ok(Vec::new()),
        Some(Item::ArrayOfTables(tables)) => tables,
        Some(_) => {
            return Err(Problem::Malformed(
                "`accepted` is not a list of `[[accepted]]` tables".into(),
            ));
        }
    };
    if tables.len() > MAX_ENTRIES {
        return Err(Problem::Malformed(format!(
            "it has {} entries, more than {MAX_ENTRIES}",
            tables.len()
        )));
    }
    tables
        .iter()
        .enumerate()
        .map(|(index, table)| {
            read_entry(table, rules)
                .map_err(|problem| Problem::Malformed(format!("entry {}: {problem}", index + 1)))
        })
        .collect()
}

/// One `[[accepted]]` table.
fn read_entry(table: &Table, rules: &[&str]) -> Result<Acceptance, String> {
    if let Some((key, _)) = table.iter().find(|(key, _)| !ENTRY_KEYS.contains(key)) {
        return Err(format!(
            "an unknown key `{}` (an entry holds {})",
            shown(key),
            ENTRY_KEYS.join(", ")
        ));
    }
    let text = |key: &str| -> Result<Option<String>, String> {
        match table.get(key) {
            None => Ok(None),
            Some(item) => item
                .as_str()
                .map(|s| Some(s.to_owned()))
                .ok_or_else(|| format!("`{key}` is not a string")),
        }
    };
    let required = |key: &str| -> Result<String, String> {
        text(key)?.ok_or_else(|| format!("it has no `{key}`"))
    };
    let server = required("server")?;
    check_name("server", &server)?;
    let tool = text("tool")?;
    if let Some(tool) = &tool {
        check_name("tool", tool)?;
    }
    let rule = required("rule")?;
    check_rule(&rule, rules)?;
    let reason = required("reason")?;
    check_reason(&reason)?;
    let stamp = |key: &str| -> Result<Option<String>, String> {
        let value = text(key)?;
        if value
            .as_ref()
            .is_some_and(|v| v.chars().count() > MAX_STAMP_CHARS)
        {
            return Err(format!(
                "`{key}` is longer than {MAX_STAMP_CHARS} characters"
            ));
        }
        Ok(value)
    };
    Ok(Acceptance {
        subject: Subject { server, tool, rule },
        reason,
        accepted_at: stamp("accepted_at")?,
        accepted_by: stamp("accepted_by")?,
    })
}

fn check_rule(rule: &str, rules: &[&str]) -> Result<(), String> {
    if rules.contains(&rule) {
        return Ok(());
    }
    Err(format!(
        "`{}` is not a rule of `switchboard scan`; the rules are: {}",
        shown(rule),
        rules.join(", ")
    ))
}

fn check_name(what: &str, name: &str) -> Result<(), String> {
    let length = name.chars().count();
    if length == 0 {
        return Err(format!("the {what} name is empty"));
    }
    if length > MAX_NAME_CHARS {
        return Err(format!(
            "the {what} name has {length} characters, more than {MAX_NAME_CHARS}"
        ));
    }
    Ok(())
}

fn check_reason(reason: &str) -> Result<(), String> {
    if reason.trim().is_empty() {
        return Err("the reason is empty: say why the finding is accepted".into());
    }
    let length = reason.chars().count();
    if length > MAX_REASON_CHARS {
        return Err(format!(
            "the reason has {length} characters, more than {MAX_REASON_CHARS}"
        ));
    }
    Ok(())
}

/// A name for a message: cut to [`SHOWN_NAME_CHARS`] characters.
pub(crate) fn shown(name: &str) -> String {
    if name.chars().count() <= SHOWN_NAME_CHARS {
        return name.to_owned();
    }
    let cut: String = name.chars().take(SHOWN_NAME_CHARS).collect();
    format!("{cut}…")
}

/// Names for a message: the first few, cut, and how many more.
fn listed(names: &[&str]) -> String {
    const SHOWN: usize = 10;
    if names.is_empty() {
        return "none".into();
    }
    let mut out: Vec<String> = names.iter().take(SHOWN).map(|n| shown(n)).collect();
    if names.len() > SHOWN {
        out.push(format!("{} more", names.len() - SHOWN));
    }
    out.join(", ")
}

/// Accepted findings that cannot be used or saved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.describe())]
pub(crate) struct AcceptedFileError {
    path: PathBuf,
    problem: Problem,
}

impl AcceptedFileError {
    /// The file could not be written (anything else: it could not be read or understood).
    pub(crate) fn is_unwritable(&self) -> bool {
        matches!(self.problem, Problem::Unwritable(_))
    }

    fn describe(&self) -> String {
        let path = self.path.display();
        if self.is_unwritable() {
            format!(
                "the accepted findings `{path}` were not saved: {}",
                self.problem
            )
        } else {
            format!(
                "the accepted findings `{path}` cannot be used: {}",
                self.problem
            )
        }
    }
}

/// What is wrong with the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum Problem {
    #[error("it cannot be read: {0}")]
    Unreadable(String),
    #[error("it is a folder, not a file")]
    Folder,
    #[error("it is a symbolic link to a file that does not exist")]
    DanglingLink,
    #[error("it is empty (a write that was cut short leaves it so)")]
    Empty,
    #[error("it is larger than {} KiB", MAX_FILE_BYTES / 1024)]
    TooLarge,
    #[error("it is not UTF-8 text (a bad byte after {0} bytes)")]
    NotUtf8(usize),
    #[error("it is not valid TOML: {}", .0.trim_end())]
    NotToml(String),
    #[error("{}", match found {
        Some(found) => format!("its format is {found:?}, and this Switchboard reads only {ACCEPTED_FORMAT:?}"),
        None => format!("it does not say `format = {ACCEPTED_FORMAT:?}`"),
    })]
    WrongFormat { found: Option<String> },
    #[error("{0}")]
    Malformed(String),
    #[error("it cannot be written: {0}")]
    Unwritable(String),
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::{Subject, beside, rfc3339_seconds};

    #[test]
    fn timestamps_are_utc_dates() {
        let at = |seconds| rfc3339_seconds(UNIX_EPOCH + Duration::from_secs(seconds));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_796_558_399), "2026-12-06T11:59:59Z");
    }

    #[test]
    fn the_file_is_named_after_the_config() {
        assert_eq!(
            beside("/p/mcp.json".as_ref()),
            std::path::PathBuf::from("/p/mcp.scan-accepted.toml")
        );
        assert_eq!(
            beside("/p/.mcp.json".as_ref()),
            std::path::PathBuf::from("/p/.mcp.scan-accepted.toml")
        );
    }

    #[test]
    fn specs_split_at_a_known_server_and_the_last_colon() {
        let servers = ["fx", "a/b", "notes"];
        let rules = ["tool-name", "unavailable"];
        let parse = |spec| match Subject::parse(spec, &servers, &rules) {
            Ok(subject) => format!("{:?} {:?} {:?}", subject.server, subject.tool, subject.rule),
            Err(error) => error,
        };
        assert_eq!(parse("fx:unavailable"), r#""fx" None "unavailable""#);
        assert_eq!(
            parse("fx/we:ird/name:tool-name"),
            r#""fx" Some("we:ird/name") "tool-name""#
        );
        assert_eq!(parse("a/b/c:tool-name"), r#""a/b" Some("c") "tool-name""#);
        assert_eq!(parse("a/b:tool-name"), r#""a/b" None "tool-name""#);
        assert_eq!(
            parse("fx/echo:nope"),
            "`nope` is not a rule of `switchboard scan`; the rules are: tool-name, unavailable"
        );
        assert_eq!(
            parse("zz/echo:tool-name"),
            "no server `zz` in the configuration (its servers: fx, a/b, notes)"
        );
        assert_eq!(parse("fx"), "`fx` is not SERVER[/TOOL]:RULE (no `:RULE`)");
    }
}
