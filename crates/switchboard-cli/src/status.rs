//! `switchboard status [SERVER...]`: every named (or every enabled) server started in
//! parallel, one row each — ready, or failed with the reason — with era, protocol version,
//! the counts of its tools, prompts and resources, how long it took to start, and warnings.
//! A failure never stops the others; the exit code is 3 when any failed.
//!
//! The warnings: what `switchboard_runtime::guards::lint_tool` finds in a tool's texts
//! (hidden characters, instruction-like text, credential-looking strings), tool names that
//! more than one server offers, more tools than common clients take
//! ([`MAX_TOOLS_PER_SERVER`], [`MAX_TOOLS_IN_ALL`]), and tools the tool lock beside the
//! config holds (`held`: why, and the command that accepts them; see `held.rs`).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard_config::{EntryError, ServerEntry};
use switchboard_protocol::{Prompt, Resource, ResourceTemplate, Tool};
use switchboard_session::{Negotiated, SessionError};
use switchboard_wire::codes::METHOD_NOT_FOUND;

use crate::browse::Browse;
use crate::connect::ConnectedServer;
use crate::terminal::{self, JsonLayout};
use crate::{EXIT_SERVER, Failure, Output, futures_join_all, pick_server};

/// More tools than this in one server is a warning: Cursor uses at most 40 tools (across
/// its servers) and leaves the rest out, and the more tools a model is shown, the worse it
/// picks among them.
pub(crate) const MAX_TOOLS_PER_SERVER: usize = 40;

/// More tools than this across all servers is a warning: 128 is the most tools one request
/// may carry to the OpenAI API, and the most VS Code's agent mode sends.
pub(crate) const MAX_TOOLS_IN_ALL: usize = 128;

/// How many names a warning lists before it says how many more there are.
const NAMES_SHOWN: usize = 8;

/// One server as `status` found it (`scan` starts servers the same way).
pub(crate) struct Row {
    pub(crate) name: String,
    pub(crate) state: State,
    /// From starting it until it was listed, or failed.
    took: Duration,
    pub(crate) warnings: Vec<Warning>,
    /// Its sandbox (`on`, `off`, `partial (…)`, `remote`).
    sandbox: String,
}

pub(crate) enum State {
    Ready(Box<Started>),
    Failed {
        /// One line: what failed, for the table.
        reason: String,
        /// The whole message (with the stderr tail, for example).
        message: String,
    },
}

/// What a ready server offers.
pub(crate) struct Started {
    pub(crate) negotiated: Negotiated,
    /// The tools its entry's filter lets through.
    pub(crate) tools: Vec<Tool>,
    /// `None` when the server does not offer prompts.
    pub(crate) prompts: Option<Vec<Prompt>>,
    /// `None` when the server does not offer resources.
    pub(crate) resources: Option<Vec<Resource>>,
    /// Its resource templates (none when it offers no resources or does not list them).
    pub(crate) templates: Vec<ResourceTemplate>,
}

/// Something about a server worth a look.
pub(crate) struct Warning {
    pub(crate) kind: WarningKind,
    tool: Option<String>,
    pub(crate) detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WarningKind {
    /// A tool's texts read like instructions to the model, or hide characters.
    Description,
    /// Tool names another server offers too.
    NameCollision,
    /// More tools than clients take.
    TooManyTools,
    /// A listing had entries that could not be used, or failed beside a usable start.
    Listing,
    /// A tool the tool lock holds (`serve` leaves it out until it is accepted).
    Held,
}

impl WarningKind {
    fn as_str(self) -> &'static str {
        match self {
            WarningKind::Description => "description",
            WarningKind::NameCollision => "name-collision",
            WarningKind::TooManyTools => "too-many-tools",
            WarningKind::Listing => "listing",
            WarningKind::Held => "held",
        }
    }
}

/// A server to start, or a definition that cannot be used (shown as failed).
pub(crate) enum Target<'a> {
    Entry(&'a ServerEntry),
    Broken(&'a EntryError),
}

/// `switchboard status [SERVER...]`.
pub(crate) async fn run(browse: &Browse<'_>, names: &[String]) -> Result<u8, Failure> {
    let targets = targets(browse, names)?;
    let rows = futures_join_all(targets.iter().map(|target| start(target, browse.timeout))).await;
    let mut rows = rows;
    warn_about_shared_names(&mut rows);
    if let Some(lock) = crate::held::LockBeside::of(&browse.loaded.file.path) {
        warn_about_held_tools(&mut rows, &lock);
    }
    let overall = overall_warning(&rows);
    match browse.output {
        Output::Json => terminal::print_json(&status_json(&rows, &overall), JsonLayout::Compact),
        Output::Text => terminal::print(&status_text(&rows, &overall)),
    }
    let failed = rows.iter().any(|r| matches!(r.state, State::Failed { .. }));
    Ok(if failed { EXIT_SERVER } else { 0 })
}

/// The named servers (an unknown name is a usage error), or every enabled one and every
/// definition that cannot be used.
pub(crate) fn targets<'a>(
    browse: &Browse<'a>,
    names: &[String],
) -> Result<Vec<Target<'a>>, Failure> {
    let file = &browse.loaded.file;
    if names.is_empty() {
        let targets: Vec<Target<'a>> = file
            .servers
            .iter()
            .filter_map(|server| match server {
                Ok(entry) => entry.enabled.then_some(Target::Entry(entry)),
                Err(error) => Some(Target::Broken(error)),
            })
            .collect();
        if targets.is_empty() {
            return Err(Failure::Usage(format!(
                "no enabled servers in {}",
                file.path.display()
            )));
        }
        return Ok(targets);
    }
    names
        .iter()
        .map(|name| match file.find(name) {
            Some(Err(error)) => Ok(Target::Broken(error)),
            _ => pick_server(file, name).map(Target::Entry),
        })
        .collect()
}

/// Starts one server and lists what it offers; every wait is bounded by the session's
/// deadlines (the entry's `startupTimeout` for the start, the request timeout after).
pub(crate) async fn start(target: &Target<'_>, timeout: Option<Duration>) -> Row {
    let entry = match target {
        Target::Entry(entry) => *entry,
        Target::Broken(error) => {
            return Row {
                name: error.name.clone(),
                state: State::Failed {
                    reason: format!("not usable: {}", first_line(&error.detail)),
                    message: error.to_string(),
                },
                took: Duration::ZERO,
                warnings: Vec::new(),
                sandbox: "off".into(),
            };
        }
    };
    let started_at = Instant::now();
    let mut warnings = Vec::new();
    let state = match list_everything(entry, timeout, &mut warnings).await {
        Ok(started) => State::Ready(Box::new(started)),
        Err(error) => State::Failed {
            reason: reason(&error),
            message: error.to_string(),
        },
    };
    let took = started_at.elapsed();
    if let State::Ready(started) = &state {
        let mut listing_warnings = std::mem::take(&mut warnings);
        warnings = tool_warnings(&entry.name, &started.tools);
        warnings.append(&mut listing_warnings);
    }
    Row {
        name: entry.name.clone(),
        state,
        took,
        warnings,
        sandbox: switchboard_runtime::sandbox_status(entry),
    }
}

/// Connects and lists tools (needed to be ready), prompts and resources (a failure of
/// those is a warning).
async fn list_everything(
    entry: &ServerEntry,
    timeout: Option<Duration>,
    warnings: &mut Vec<Warning>,
) -> Result<Started, SessionError> {
    let server = ConnectedServer::connect(entry, timeout).await?;
    let session = &server.session;
    let tools = match session.list_tools().await {
        Ok(listing) => listing,
        Err(error) => {
            server.close().await;
            return Err(error);
        }
    };
    let mut listing_warning = |what: &str, detail: String| {
        warnings.push(Warning {
            kind: WarningKind::Listing,
            tool: None,
            detail: format!("{what}: {detail}"),
        });
    };
    for problem in &tools.problems {
        listing_warning(
            "tools/list",
            format!("page {}: {}", problem.page, problem.detail),
        );
    }
    let capabilities = &session.negotiated().capabilities;
    let mut prompts = None;
    if capabilities.prompts.is_some() {
        match session.list_prompts().await {
            Ok(listing) => prompts = Some(listing.items),
            Err(error) => listing_warning("prompts/list failed", error.to_string()),
        }
    }
    let mut resources = None;
    let mut templates = Vec::new();
    if capabilities.resources.is_some() {
        match session.list_resources().await {
            Ok(listing) => resources = Some(listing.items),
            Err(error) => listing_warning("resources/list failed", error.to_string()),
        }
        // Templates are optional: a server that does not know the method has none.
        match session.list_resource_templates().await {
            Ok(listing) => templates = listing.items,
            Err(error)
                if error
                    .rpc_error()
                    .is_some_and(|e| e.code == METHOD_NOT_FOUND) => {}
            Err(error) => listing_warning("resources/templates/list failed", error.to_string()),
        }
    }
    let started = Started {
        negotiated: session.negotiated().clone(),
        tools: tools
            .items
            .into_iter()
            .filter(|tool| entry.tool_filter.allows(&tool.name))
            .collect(),
        prompts,
        resources,
        templates,
    };
    server.close().await;
    Ok(started)
}

/// The description lint of each tool, and too many tools in this one server.
fn tool_warnings(server: &str, tools: &[Tool]) -> Vec<Warning> {
    let mut warnings: Vec<Warning> = tools
        .iter()
        .flat_map(|tool| switchboard_runtime::guards::lint_tool(server, tool))
        .map(|finding| Warning {
            kind: WarningKind::Description,
            tool: finding.tool,
            detail: finding.detail,
        })
        .collect();
    if tools.len() > MAX_TOOLS_PER_SERVER {
        warnings.push(Warning {
            kind: WarningKind::TooManyTools,
            tool: None,
            detail: format!(
                "{} tools, more than {MAX_TOOLS_PER_SERVER}: some clients (Cursor) use only \
                 {MAX_TOOLS_PER_SERVER} and leave the rest out; narrow it with enabledTools",
                tools.len()
            ),
        });
    }
    warnings
}

/// Adds to each ready server a warning for each tool the tool lock holds: why, and the
/// command that accepts it.
fn warn_about_held_tools(rows: &mut [Row], lock: &crate::held::LockBeside) {
    for row in rows {
        let State::Ready(started) = &row.state else {
            continue;
        };
        let held = lock.held(&row.name, &started.tools);
        row.warnings.extend(held.into_iter().map(|held| Warning {
            kind: WarningKind::Held,
            detail: held.told,
            tool: Some(held.tool),
        }));
    }
}

/// Adds to each ready server a warning for each other server that offers tools of the same
/// name (a client that does not prefix tool names sees only one of each).
fn warn_about_shared_names(rows: &mut [Row]) {
    let mut servers_by_tool: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (at, row) in rows.iter().enumerate() {
        if let State::Ready(started) = &row.state {
            for tool in &started.tools {
                servers_by_tool
                    .entry(tool.name.as_str())
                    .or_default()
                    .push(at);
            }
        }
    }
    // (server, other server) → the names both offer, in name order.
    let mut shared: BTreeMap<(usize, usize), Vec<String>> = BTreeMap::new();
    for (tool, servers) in &servers_by_tool {
        for &server in servers {
            for &other in servers.iter().filter(|&&other| other != server) {
                shared
                    .entry((server, other))
                    .or_default()
                    .push((*tool).to_owned());
            }
        }
    }
    for ((server, other), names) in shared {
        let detail = format!(
            "{} also offered by `{}`: {} (a client that does not prefix tool names sees one of each)",
            if names.len() == 1 { "tool" } else { "tools" },
            rows[other].name,
            listed(&names)
        );
        rows[server].warnings.push(Warning {
            kind: WarningKind::NameCollision,
            tool: None,
            detail,
        });
    }
}

/// The warning about the tools of all servers together, if there are too many.
fn overall_warning(rows: &[Row]) -> Option<String> {
    let total: usize = rows
        .iter()
        .map(|row| match &row.state {
            State::Ready(started) => started.tools.len(),
            State::Failed { .. } => 0,
        })
        .sum();
    (total > MAX_TOOLS_IN_ALL).then(|| {
        format!(
            "{total} tools across all servers, more than {MAX_TOOLS_IN_ALL}: the OpenAI API and \
             VS Code take at most {MAX_TOOLS_IN_ALL} tools in one request"
        )
    })
}

/// What failed, in one line: the exit status and the stderr tail's last line of a process,
/// the HTTP status of an answer, the request a deadline passed on.
fn reason(error: &SessionError) -> String {
    let with_stderr = |text: String, tail: Option<&str>| match tail.and_then(last_line) {
        Some(line) => format!("{text}; stderr: {line}"),
        None => text,
    };
    match error {
        SessionError::Closed { reason, .. } => {
            let mut text = reason.summary.clone();
            if let Some(status) = &reason.exit_status {
                text.push_str(&format!(" ({status})"));
            }
            with_stderr(text, reason.stderr_tail.as_deref())
        }
        SessionError::Timeout {
            method,
            after,
            stderr_tail,
            ..
        } => with_stderr(
            format!("timed out: no answer to `{method}` within {after:?}"),
            stderr_tail.as_deref(),
        ),
        SessionError::Transport { method, error, .. } => match error.http_status() {
            Some(status) => format!(
                "HTTP {status} to `{method}`: {}",
                first_line(&error.to_string())
            ),
            None => format!("`{method}`: {}", first_line(&error.to_string())),
        },
        other => first_line(&other.to_string()).to_owned(),
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("").trim()
}

fn last_line(text: &str) -> Option<&str> {
    text.lines()
        .rev()
        .map(str::trim)
        .find(|line| !line.is_empty())
}

/// Up to [`NAMES_SHOWN`] names, and how many more.
fn listed(names: &[String]) -> String {
    let shown: Vec<&str> = names.iter().take(NAMES_SHOWN).map(String::as_str).collect();
    match names.len().saturating_sub(NAMES_SHOWN) {
        0 => shown.join(", "),
        more => format!("{} and {more} more", shown.join(", ")),
    }
}

/// A duration as people read it: `850 ms`, `1.2 s`.
fn duration_text(took: Duration) -> String {
    if took < Duration::from_secs(1) {
        format!("{} ms", took.as_millis())
    } else {
        format!("{:.1} s", took.as_secs_f64())
    }
}

/// The sandbox column's word: `on`, `off`, `partial` or `remote` (the first word of the
/// server's sandbox description, whose detail goes on a line of its own).
fn sandbox_word(description: &str) -> &str {
    description.split_whitespace().next().unwrap_or("off")
}

fn count_text(count: Option<usize>) -> String {
    count.map_or_else(|| "-".to_owned(), |n| n.to_string())
}

const HEADER: [&str; 9] = [
    "SERVER",
    "STATE",
    "SANDBOX",
    "ERA",
    "PROTOCOL",
    "TOOLS",
    "PROMPTS",
    "RESOURCES",
    "START",
];

/// The table: one row a server, its reason or warnings on indented lines under it, and a
/// summary line.
fn status_text(rows: &[Row], overall: &Option<String>) -> String {
    let cells: Vec<[String; 9]> = rows
        .iter()
        .map(|row| {
            let took = duration_text(row.took);
            let sandbox = sandbox_word(&row.sandbox).to_owned();
            let cells = match &row.state {
                State::Ready(started) => [
                    row.name.clone(),
                    "ready".into(),
                    sandbox,
                    started.negotiated.era.to_string(),
                    started.negotiated.protocol_version.clone(),
                    started.tools.len().to_string(),
                    count_text(started.prompts.as_ref().map(Vec::len)),
                    count_text(started.resources.as_ref().map(Vec::len)),
                    took,
                ],
                State::Failed { .. } => {
                    let none = || "-".to_owned();
                    [
                        row.name.clone(),
                        "failed".into(),
                        sandbox,
                        none(),
                        none(),
                        none(),
                        none(),
                        none(),
                        took,
                    ]
                }
            };
            cells.map(|cell| switchboard_text::peer_text::neutralize(&cell).into_owned())
        })
        .collect();
    let mut widths = HEADER.map(|h| h.chars().count());
    for row in &cells {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut out = String::new();
        for (at, (cell, width)) in cells.iter().zip(widths).enumerate() {
            if at + 1 == cells.len() {
                out.push_str(cell);
            } else {
                out.push_str(&format!("{cell:width$}  "));
            }
        }
        out.push('\n');
        out
    };
    let mut out = line(&HEADER.map(str::to_owned));
    for (row, cells) in rows.iter().zip(&cells) {
        out.push_str(&line(cells));
        // The column says `partial`; this line says which parts.
        if row.sandbox != sandbox_word(&row.sandbox) {
            out.push_str(&format!("  sandbox: {}\n", row.sandbox));
        }
        if let State::Failed { reason, .. } = &row.state {
            out.push_str(&format!("  failed: {reason}\n"));
        }
        for warning in &row.warnings {
            match &warning.tool {
                Some(tool) => {
                    out.push_str(&format!("  warning: tool `{tool}`: {}\n", warning.detail))
                }
                None => out.push_str(&format!("  warning: {}\n", warning.detail)),
            }
        }
    }
    let ready = rows
        .iter()
        .filter(|r| matches!(r.state, State::Ready(_)))
        .count();
    out.push_str(&format!("{ready} of {} server(s) ready\n", rows.len()));
    if let Some(overall) = overall {
        out.push_str(&format!("warning: {overall}\n"));
    }
    out
}

/// The same as objects: `{"servers": [...], "warnings": [...]}`.
fn status_json(rows: &[Row], overall: &Option<String>) -> Value {
    let servers: Vec<Value> = rows
        .iter()
        .map(|row| {
            let warnings: Vec<Value> = row
                .warnings
                .iter()
                .map(|w| json!({"kind": w.kind.as_str(), "tool": w.tool, "detail": w.detail}))
                .collect();
            let start_ms = u64::try_from(row.took.as_millis()).unwrap_or(u64::MAX);
            match &row.state {
                State::Ready(started) => {
                    let n = &started.negotiated;
                    json!({
                        "name": row.name,
                        "state": "ready",
                        "era": n.era.to_string(),
                        "protocolVersion": n.protocol_version,
                        "serverInfo": n.server_info.as_ref().map(|i| json!({"name": i.name, "version": i.version})),
                        "tools": started.tools.len(),
                        "prompts": started.prompts.as_ref().map(Vec::len),
                        "resources": started.resources.as_ref().map(Vec::len),
                        "startMs": start_ms,
                        "warnings": warnings,
                    })
                }
                State::Failed { reason, message } => json!({
                    "name": row.name,
                    "state": "failed",
                    "reason": reason,
                    "error": message,
                    "startMs": start_ms,
                    "warnings": warnings,
                }),
            }
        })
        .collect();
    let servers: Vec<Value> = servers
        .into_iter()
        .zip(rows)
        .map(|(mut server, row)| {
            if let Value::Object(fields) = &mut server {
                fields.insert("sandbox".into(), row.sandbox.clone().into());
            }
            server
        })
        .collect();
    json!({"servers": servers, "warnings": overall.iter().collect::<Vec<_>>()})
}
