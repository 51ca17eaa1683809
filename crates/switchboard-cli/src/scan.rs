//! `switchboard scan [SERVER...]`: whether to trust the servers one has installed. Every
//! named (or every enabled) server is started in parallel as `status` starts them, and what
//! they offer a model is examined here, on this machine — nothing is sent anywhere:
//!
//! - tool poisoning: the runtime's lint (`switchboard_runtime::guards`, the sentence rules
//!   of `switchboard_text::poisoning`) on every text of every tool definition, every
//!   server's instructions and `serverInfo`, and the names, titles and descriptions of its
//!   prompts (and their arguments), resources and resource templates ([`offered_texts`]):
//!   hidden characters and layers, orders to the model, data sent out, orders about other
//!   tools, preference manipulation, concealment, markup that hides text, credentials;
//! - cross-server shadowing (`guards::find_shadowing`): texts naming another server's tools,
//!   tools redefining another server's;
//! - rug pulls: every tool definition against the lock file (`guards::ToolLock`, beside the
//!   config by default); `--update` pins what is offered now (written atomically, `0600`),
//!   and `switchboard serve` leaves out new and changed tools while the lock file exists
//!   (unless `--no-tool-lock`). A lock that is there and cannot be used is a usage error
//!   for `scan` and `--update` alike (it is left as it is) and stops `serve`; the message
//!   ([`unusable_lock_message`]) says how to recreate it or serve without it;
//! - context cost: the tokens each server's tool catalog costs (o200k_base, see
//!   [`catalog_tokens`]) against a budget, names clients refuse, more tools than clients take;
//! - schemas: an `inputSchema` or `outputSchema` that is not a valid JSON Schema with an
//!   object root ([`schema_problem`]).
//!
//! Findings the user accepted (`accepted.rs`: `mcp.json` → `mcp.scan-accepted.toml`, or
//! `--accepted FILE`; `--accept SERVER[/TOOL]:RULE --reason TEXT` and `--unaccept` edit it
//! before the scan) are judged after every finding is made, outside [`examine`]: each is
//! shown with its reason ([`Findings`]) and counts neither for the exit code nor against
//! `--update` pinning, and an entry the scan looked for ([`looked_for`]) that covers nothing
//! is a `stale-acceptance` finding. A file that cannot be used is a usage error
//! ([`unusable_accepted_message`]).
//!
//! Text, `--json` (`switchboard-scan/1`) or `--sarif` (SARIF 2.1.0). Exit codes: 0 no
//! findings (accepted ones aside), 1 findings, 2 usage or configuration error, 4 pins
//! refused, 5 the accepted findings could not be written. `docs/scan.md` describes each
//! finding.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use switchboard_config::Origin;
use switchboard_protocol::ArgumentCheck;
use switchboard_protocol::Tool;
use switchboard_runtime::guards::{self, Catalog, Change, NewTools, PinDiff, ToolLock};
use switchboard_runtime::naming::{MAX_NAME_LEN, is_provider_safe};
use switchboard_runtime::schema::{SchemaProblem, normalize};
use switchboard_runtime::{FindingKind, StateFileError};
use switchboard_text::poisoning::TextRole;

use crate::accepted::{Acceptance, AcceptedFile, Stamp, Subject};
use crate::status::{
    self, MAX_TOOLS_IN_ALL, MAX_TOOLS_PER_SERVER, Row, State, Target, WarningKind,
};
use crate::terminal::{self, JsonLayout};
use crate::{Common, Failure, futures_join_all};

/// A server's tool catalog costing more tokens than this is a finding, unless
/// `--token-budget` says otherwise.
const DEFAULT_TOKEN_BUDGET: usize = 10_000;

/// The tokenizer the counts are made with.
const TOKENIZER: &str = "o200k_base";

const EXIT_FINDINGS: u8 = 1;

/// `--update` pinned what it could and refused tools with error findings (no
/// `--accept-findings`).
const EXIT_PINS_REFUSED: u8 = 4;

/// Flags of `switchboard scan`.
#[derive(Debug, clap::Args)]
pub(crate) struct ScanArgs {
    /// Only these servers (left out with an ad-hoc server).
    servers: Vec<String>,
    /// Accept what the servers offer now: pin every scanned server's tool definitions in the
    /// lock file (changes are then no longer findings).
    #[arg(long)]
    update: bool,
    /// With --update: pin tools that have error findings too (without it they are not
    /// pinned: a changed one keeps its old pin, a new one stays unpinned, and the exit code
    /// is 4).
    #[arg(long, requires = "update")]
    accept_findings: bool,
    /// With --update: what the lock does with tools it does not pin — `hold` them (the
    /// default of a new lock) or `allow` them; written in the lock as `new_tools`.
    #[arg(long, value_name = "POLICY", requires = "update")]
    new_tools: Option<NewToolsArg>,
    /// Print SARIF 2.1.0 (for code-scanning views in CI) instead of text.
    #[arg(long, conflicts_with = "json")]
    sarif: bool,
    /// The lock file (default: beside the config file, `mcp.json` → `mcp.tool-lock.json`).
    #[arg(long, value_name = "FILE")]
    lock: Option<PathBuf>,
    /// The accepted findings (default: beside the config file, `mcp.json` →
    /// `mcp.scan-accepted.toml`).
    #[arg(long, value_name = "FILE")]
    accepted: Option<PathBuf>,
    /// Accept a finding before scanning: record SERVER[/TOOL]:RULE (without TOOL: every tool
    /// of the server) in the accepted findings, with --reason. An accepted finding is shown
    /// with its reason and counts neither for the exit code nor against --update.
    #[arg(long, value_name = "SERVER[/TOOL]:RULE", requires = "reason")]
    accept: Vec<String>,
    /// Why the findings of --accept are accepted (kept in the file, shown with them).
    #[arg(long, value_name = "TEXT", requires = "accept")]
    reason: Option<String>,
    /// Remove an accepted finding before scanning, SERVER[/TOOL]:RULE as it was accepted.
    #[arg(long, value_name = "SERVER[/TOOL]:RULE")]
    unaccept: Vec<String>,
    /// A server whose tool catalog costs more tokens than this is a finding.
    #[arg(long, value_name = "TOKENS", default_value_t = DEFAULT_TOKEN_BUDGET)]
    token_budget: usize,
    #[command(flatten)]
    common: Common,
}

/// `--new-tools`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum NewToolsArg {
    Hold,
    Allow,
}

impl From<NewToolsArg> for NewTools {
    fn from(arg: NewToolsArg) -> NewTools {
        match arg {
            NewToolsArg::Hold => NewTools::Hold,
            NewToolsArg::Allow => NewTools::Allow,
        }
    }
}

/// What a finding is about, one rule each in SARIF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rule {
    /// One of the runtime's findings (lint, shadowing, lock).
    Guard(FindingKind),
    /// A pinned tool the server no longer offers.
    RemovedTool,
    /// A tool name clients refuse or that the gateway must cut.
    ToolName,
    /// More tools than common clients take.
    TooManyTools,
    /// A tool catalog over the token budget.
    TokenBudget,
    /// A server that could not be started or listed.
    Unavailable,
    /// An accepted finding that no finding of this scan matched.
    StaleAcceptance,
}

/// The guard kinds a scan reports.
const GUARD_KINDS: [FindingKind; 15] = [
    FindingKind::HiddenCharacters,
    FindingKind::InstructionLike,
    FindingKind::Exfiltration,
    FindingKind::CrossToolInstruction,
    FindingKind::PreferenceManipulation,
    FindingKind::Concealment,
    FindingKind::HiddenMarkup,
    FindingKind::CredentialLike,
    FindingKind::Shadowing,
    FindingKind::ChangedTool,
    FindingKind::RenamedTool,
    FindingKind::NewTool,
    FindingKind::OutdatedLock,
    FindingKind::ListingProblem,
    FindingKind::InvalidSchema,
];

impl Rule {
    fn all() -> Vec<Rule> {
        let mut rules: Vec<Rule> = GUARD_KINDS.into_iter().map(Rule::Guard).collect();
        rules.extend([
            Rule::RemovedTool,
            Rule::ToolName,
            Rule::TooManyTools,
            Rule::TokenBudget,
            Rule::Unavailable,
            Rule::StaleAcceptance,
        ]);
        rules
    }

    /// The ids an accepted finding may name: every rule but `stale-acceptance`.
    fn acceptable_ids() -> Vec<&'static str> {
        Rule::all()
            .into_iter()
            .filter(|rule| *rule != Rule::StaleAcceptance)
            .map(Rule::id)
            .collect()
    }

    /// Whether findings of this rule come from comparing with the lock.
    fn compares_with_lock(self) -> bool {
        matches!(
            self,
            Rule::Guard(
                FindingKind::ChangedTool
                    | FindingKind::RenamedTool
                    | FindingKind::NewTool
                    | FindingKind::OutdatedLock
            ) | Rule::RemovedTool
        )
    }

    fn id(self) -> &'static str {
        match self {
            Rule::Guard(kind) => kind.id(),
            Rule::RemovedTool => "removed-tool",
            Rule::ToolName => "tool-name",
            Rule::TooManyTools => "too-many-tools",
            Rule::TokenBudget => "token-budget",
            Rule::Unavailable => "unavailable",
            Rule::StaleAcceptance => "stale-acceptance",
        }
    }

    fn summary(self) -> &'static str {
        match self {
            Rule::Guard(kind) => kind.summary(),
            Rule::RemovedTool => "A tool pinned in the lock file that the server no longer offers.",
            Rule::ToolName => {
                "A tool name that clients refuse (not 1-64 of a-z, A-Z, 0-9, _ and -) or that \
                 the gateway must shorten."
            }
            Rule::TooManyTools => {
                "More tools than common clients take (40 in Cursor, 128 in one request)."
            }
            Rule::TokenBudget => "A tool catalog that costs an agent more tokens than the budget.",
            Rule::Unavailable => {
                "A server that could not be started or listed, so it was not scanned."
            }
            Rule::StaleAcceptance => {
                "An accepted finding that nothing in the scan matched any more; remove it."
            }
        }
    }

    /// SARIF's level: `error` for what may turn a model against its user, `warning` for the rest.
    fn level(self) -> &'static str {
        match self {
            Rule::Guard(
                FindingKind::NewTool
                | FindingKind::OutdatedLock
                | FindingKind::ListingProblem
                | FindingKind::InvalidSchema,
            )
            | Rule::RemovedTool
            | Rule::ToolName
            | Rule::TooManyTools
            | Rule::TokenBudget
            | Rule::StaleAcceptance => "warning",
            Rule::Guard(_) | Rule::Unavailable => "error",
        }
    }
}

/// One thing worth a person's attention.
struct Found {
    rule: Rule,
    server: String,
    tool: Option<String>,
    message: String,
    /// For a changed tool: what changed since it was pinned.
    diff: Option<PinDiff>,
}

/// One scanned server.
struct Scanned {
    row: Row,
    origin: Origin,
    tokens: Option<usize>,
}

/// The lock file and what this scan did with it.
struct LockState {
    path: Option<PathBuf>,
    present: bool,
    /// Servers pinned by `--update`.
    pinned: Vec<String>,
    /// Tools `--update` did not pin for their error findings: (server, tool, the findings' ids).
    refused: Vec<(String, String, Vec<&'static str>)>,
    /// What the lock does with tools it does not pin.
    new_tools: NewTools,
}

/// `switchboard scan`.
pub(crate) async fn run(args: ScanArgs) -> Result<u8, Failure> {
    let words = args.common.words(args.servers.clone());
    let names = words.rest();
    let loaded = args.common.load()?;
    let browse = args.common.browse(&loaded, None)?;
    let targets = status::targets(&browse, &names)?;
    let lock_path = match &args.lock {
        Some(path) => Some(path.clone()),
        None => loaded
            .file
            .path
            .is_file()
            .then(|| ToolLock::beside(&loaded.file.path)),
    };
    if args.update && lock_path.is_none() {
        return Err(Failure::Usage(
            "--update needs a lock file: give --lock FILE (there is no config file to put it beside)"
                .into(),
        ));
    }
    // A lock that cannot be used is refused, by `--update` too: it is left for the user to
    // look at, and replacing it would drop the pins of servers that fail to start now.
    let lock = match &lock_path {
        Some(path) => Some(ToolLock::load(path).map_err(|error| {
            Failure::Usage(match &args.lock {
                Some(_) => format!(
                    "{error}\n  move it aside, then `--update` writes a new one with the tools offered now (review them first)"
                ),
                None => unusable_lock_message(&error, &loaded.file.path),
            })
        })?),
        None => None,
    };
    let accepted = accepted_findings(&args, &loaded)?;
    let rows = futures_join_all(targets.iter().map(|t| status::start(t, browse.timeout))).await;
    let scanned: Vec<Scanned> = targets
        .iter()
        .zip(rows)
        .map(|(target, row)| {
            let origin = match target {
                Target::Entry(entry) => entry.origin.clone(),
                Target::Broken(error) => error.origin.clone(),
            };
            let tokens = match &row.state {
                State::Ready(started) => Some(catalog_tokens(&started.tools)),
                State::Failed { .. } => None,
            };
            Scanned {
                row,
                origin,
                tokens,
            }
        })
        .collect();
    let mut found = examine(&scanned, args.token_budget);
    let mut lock_state = LockState {
        present: lock_path.as_deref().is_some_and(Path::is_file),
        path: lock_path.clone(),
        pinned: Vec::new(),
        refused: Vec::new(),
        new_tools: lock.as_ref().map(ToolLock::new_tools).unwrap_or_default(),
    };
    if let (Some(path), Some(mut lock)) = (&lock_path, lock) {
        if args.update {
            if let Some(policy) = args.new_tools {
                lock.set_new_tools(policy.into());
            }
            lock_state.new_tools = lock.new_tools();
            for server in &scanned {
                if let State::Ready(started) = &server.row.state {
                    let name = &server.row.name;
                    let refused = if args.accept_findings {
                        Vec::new()
                    } else {
                        tools_with_errors(&found, name, &accepted)
                    };
                    let (keep, pin): (Vec<&Tool>, Vec<&Tool>) = started
                        .tools
                        .iter()
                        .partition(|t| refused.iter().any(|(tool, _)| *tool == t.name));
                    let keep: Vec<String> = keep.iter().map(|t| t.name.clone()).collect();
                    lock.approve_keeping(name, pin, &keep);
                    lock_state.pinned.push(name.clone());
                    lock_state.refused.extend(
                        refused
                            .into_iter()
                            .map(|(tool, ids)| (name.clone(), tool, ids)),
                    );
                }
            }
            lock.save(path).map_err(|e| Failure::Usage(e.to_string()))?;
            lock_state.present = true;
        } else if lock_state.present {
            found.extend(lock_findings(&lock, &scanned));
        }
    }
    let scope = Scope {
        scanned: &scanned,
        every_server: names.is_empty(),
        lock_compared: lock_state.present && !args.update,
    };
    let findings = Findings::judged(found, &accepted, &scope);
    if args.sarif {
        terminal::print_json(&sarif(&findings, &scanned), JsonLayout::Pretty);
    } else if args.common.json {
        terminal::print_json(
            &scan_json(&findings, &scanned, &lock_state, &accepted),
            JsonLayout::Pretty,
        );
    } else {
        terminal::print(&scan_text(&findings, &scanned, &lock_state, &accepted));
    }
    Ok(if !lock_state.refused.is_empty() {
        EXIT_PINS_REFUSED
    } else if findings.counted() == 0 {
        0
    } else {
        EXIT_FINDINGS
    })
}

/// The accepted findings file, read, with `--unaccept` and `--accept` applied and written:
/// a usage error when it cannot be used, or when what they name is not right.
fn accepted_findings(
    args: &ScanArgs,
    loaded: &crate::connect::LoadedConfig,
) -> Result<AcceptedFindings, Failure> {
    let acceptable = Rule::acceptable_ids();
    let config = &loaded.file.path;
    let path = match &args.accepted {
        Some(path) => Some(path.clone()),
        None => config.is_file().then(|| crate::accepted::beside(config)),
    };
    let mut file = match &path {
        Some(path) => AcceptedFile::load(path, &acceptable).map_err(|error| {
            Failure::Usage(unusable_accepted_message(
                &error,
                config.is_file().then_some(config.as_path()),
            ))
        })?,
        None => AcceptedFile::none(&acceptable),
    };
    let mut edits = AcceptedEdits::default();
    if args.accept.is_empty() && args.unaccept.is_empty() {
        return Ok(AcceptedFindings { file, edits });
    }
    let Some(path) = path else {
        return Err(Failure::Usage(
            "--accept and --unaccept need a file for the accepted findings: give --accepted FILE \
             (there is no config file to put it beside)"
                .into(),
        ));
    };
    let servers: Vec<&str> = loaded
        .file
        .servers
        .iter()
        .map(|server| match server {
            Ok(entry) => entry.name.as_str(),
            Err(error) => error.name.as_str(),
        })
        .collect();
    // An entry for a server gone from the config can still be removed.
    let known_to_file: Vec<String> = file
        .entries()
        .iter()
        .map(|entry| entry.subject.server.clone())
        .collect();
    let mut unaccepted = Vec::new();
    for spec in &args.unaccept {
        let mut known = servers.clone();
        known.extend(known_to_file.iter().map(String::as_str));
        unaccepted.push(Subject::parse(spec, &known, &acceptable).map_err(Failure::Usage)?);
    }
    let accepted: Vec<Subject> = args
        .accept
        .iter()
        .map(|spec| Subject::parse(spec, &servers, &acceptable))
        .collect::<Result<_, _>>()
        .map_err(Failure::Usage)?;
    for subject in &unaccepted {
        if !file.unaccept(subject).map_err(Failure::Usage)? {
            return Err(Failure::Usage(format!(
                "--unaccept {}: nothing is accepted as that in {}",
                crate::accepted::shown(&subject.spec()),
                path.display()
            )));
        }
        edits.removed.push(subject.spec());
    }
    let reason = args.reason.as_deref().unwrap_or_default();
    let stamp = Stamp::now();
    for subject in &accepted {
        file.accept(subject, reason, &stamp).map_err(|e| {
            let spec = crate::accepted::shown(&subject.spec());
            Failure::Usage(format!("--accept {spec}: {e}"))
        })?;
        edits.added.push(subject.spec());
    }
    file.save().map_err(|e| Failure::System(e.to_string()))?;
    Ok(AcceptedFindings { file, edits })
}

/// The accepted findings file, and what this run changed in it.
struct AcceptedFindings {
    file: AcceptedFile,
    edits: AcceptedEdits,
}

/// What `--accept` and `--unaccept` changed, as `SERVER[/TOOL]:RULE`.
#[derive(Default)]
struct AcceptedEdits {
    added: Vec<String>,
    removed: Vec<String>,
}

/// Accepted findings that cannot be used: what is wrong, then what the file is for and how
/// to go on.
pub(crate) fn unusable_accepted_message(
    error: &crate::accepted::AcceptedFileError,
    config: Option<&Path>,
) -> String {
    let rescan = match config {
        Some(config) => format!("`switchboard scan --config {}`", config.display()),
        None => "`switchboard scan`".into(),
    };
    format!(
        "{error}\n  it lists the findings `switchboard scan` shows as accepted and does not \
         count; fix it as said (docs/scan.md describes it), or move it aside and run {rescan} \
         to count every finding again"
    )
}

/// What this scan looked for: which accepted findings it can call stale.
struct Scope<'a> {
    scanned: &'a [Scanned],
    /// Every enabled server was scanned (none named): findings about all of them were made.
    every_server: bool,
    /// The tools were compared with the lock (it exists, and this is no `--update`).
    lock_compared: bool,
}

/// Whether the scan looked for the findings `subject` accepts: its server was scanned (and
/// started, unless the rule is `unavailable`), and a rule of the lock only when the tools
/// were compared with it. Findings about all servers (`*`) are made only when every server
/// is scanned.
fn looked_for(scope: &Scope<'_>, subject: &Subject) -> bool {
    let rule = Rule::all()
        .into_iter()
        .find(|rule| rule.id() == subject.rule);
    let Some(rule) = rule else { return false };
    if subject.server == "*" {
        return scope.every_server && subject.tool.is_none();
    }
    let Some(server) = scope.scanned.iter().find(|s| s.row.name == subject.server) else {
        return false;
    };
    match &server.row.state {
        State::Failed { .. } => rule == Rule::Unavailable,
        State::Ready(_) => !rule.compares_with_lock() || scope.lock_compared,
    }
}

/// Every finding of the scan, each with the accepted finding that covers it, if one does.
struct Findings<'a> {
    found: Vec<Found>,
    /// In `found`'s order.
    accepted: Vec<Option<&'a Acceptance>>,
}

impl<'a> Findings<'a> {
    /// `found` judged against the accepted findings: each covered one marked, and a
    /// `stale-acceptance` finding added for each entry the scan looked for that covered
    /// nothing.
    fn judged(
        mut found: Vec<Found>,
        accepted: &'a AcceptedFindings,
        scope: &Scope<'_>,
    ) -> Findings<'a> {
        let file = &accepted.file;
        let judgement = file.judge(
            found
                .iter()
                .map(|f| (f.server.as_str(), f.tool.as_deref(), f.rule.id())),
            |subject| looked_for(scope, subject),
        );
        let mut covered: Vec<Option<&Acceptance>> = judgement
            .covered_by
            .iter()
            .map(|index| index.and_then(|i| file.entries().get(i)))
            .collect();
        let file_shown = file
            .path()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        for entry in judgement
            .stale
            .iter()
            .filter_map(|i| file.entries().get(*i))
        {
            found.push(Found {
                rule: Rule::StaleAcceptance,
                server: entry.subject.server.clone(),
                tool: entry.subject.tool.clone(),
                message: format!(
                    "`{}` is accepted ({}), but the scan found no such finding: remove it with \
                     `switchboard scan --unaccept {}` or from {file_shown}",
                    entry.subject.rule,
                    one_line(&entry.reason),
                    entry.subject.spec()
                ),
                diff: None,
            });
            covered.push(None);
        }
        Findings {
            found,
            accepted: covered,
        }
    }

    fn iter(&self) -> impl Iterator<Item = (&Found, Option<&'a Acceptance>)> {
        self.found.iter().zip(self.accepted.iter().copied())
    }

    /// The findings that count: not accepted.
    fn counted(&self) -> usize {
        self.accepted.iter().filter(|a| a.is_none()).count()
    }

    fn accepted_count(&self) -> usize {
        self.found.len() - self.counted()
    }
}

/// A reason on one line: runs of white space (line breaks included) as one space.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The tools of `server` with error findings of their own (the lint, shadowing) that are not
/// accepted, each with the findings' ids: what `--update` does not pin without
/// `--accept-findings`.
fn tools_with_errors(
    found: &[Found],
    server: &str,
    accepted: &AcceptedFindings,
) -> Vec<(String, Vec<&'static str>)> {
    let mut tools: Vec<(String, Vec<&'static str>)> = Vec::new();
    for finding in found.iter().filter(|f| {
        f.server == server
            && f.rule.level() == "error"
            && accepted
                .file
                .covering(&f.server, f.tool.as_deref(), f.rule.id())
                .is_none()
    }) {
        let Some(tool) = &finding.tool else { continue };
        match tools.iter_mut().find(|(name, _)| name == tool) {
            Some((_, ids)) if !ids.contains(&finding.rule.id()) => ids.push(finding.rule.id()),
            Some(_) => {}
            None => tools.push((tool.clone(), vec![finding.rule.id()])),
        }
    }
    tools
}

/// A tool lock beside `config` that cannot be used: what is wrong, then how to recreate it
/// and how to serve without it (`scan` and `serve` say the same).
pub(crate) fn unusable_lock_message(error: &StateFileError, config: &Path) -> String {
    let config = config.display();
    format!(
        "{error}\n  it pins the tools `switchboard serve` may serve from `{config}`; check what \
         happened to it, then move it aside and run `switchboard scan --config {config} --update` \
         to pin the tools offered now (review them first), or serve without it: \
         `switchboard serve --config {config} --no-tool-lock`"
    )
}

/// The tokens a catalog costs an agent: each tool as the function definition a model API is
/// sent (`{"name", "description", "parameters": inputSchema}`, compact JSON), counted with
/// OpenAI's o200k_base encoding, which the `tiktoken-rs` crate embeds (no download). Other
/// models' tokenizers differ by some percent; the count is for comparing and budgeting.
fn catalog_tokens(tools: &[Tool]) -> usize {
    let encoding = tiktoken_rs::o200k_base_singleton();
    tools
        .iter()
        .map(|tool| {
            let definition = json!({
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.input_schema,
            });
            encoding.encode_ordinary(&definition.to_string()).len()
        })
        .sum()
}

/// Everything but the lock: the lint, shadowing, names, counts, token budget, listing
/// problems and servers that could not be scanned.
fn examine(scanned: &[Scanned], token_budget: usize) -> Vec<Found> {
    let mut found = Vec::new();
    let from_guard = |finding: guards::Finding| Found {
        rule: Rule::Guard(finding.kind),
        server: finding.server,
        tool: finding.tool,
        message: finding.detail,
        diff: None,
    };
    let mut total_tools = 0;
    for server in scanned {
        let name = &server.row.name;
        let started = match &server.row.state {
            State::Ready(started) => started,
            State::Failed { message, .. } => {
                found.push(Found {
                    rule: Rule::Unavailable,
                    server: name.clone(),
                    tool: None,
                    message: format!("not scanned: {message}"),
                    diff: None,
                });
                continue;
            }
        };
        total_tools += started.tools.len();
        for tool in &started.tools {
            found.extend(guards::lint_tool(name, tool).into_iter().map(from_guard));
            if let Some(problem) = name_problem(name, &tool.name) {
                found.push(Found {
                    rule: Rule::ToolName,
                    server: name.clone(),
                    tool: Some(tool.name.clone()),
                    message: problem,
                    diff: None,
                });
            }
            let schemas = [
                (SchemaField::Input, Some(&tool.input_schema)),
                (SchemaField::Output, tool.output_schema.as_ref()),
            ];
            for (field, schema) in schemas {
                if let Some(problem) = schema.and_then(|schema| schema_problem(field, schema)) {
                    found.push(Found {
                        rule: Rule::Guard(FindingKind::InvalidSchema),
                        server: name.clone(),
                        tool: Some(tool.name.clone()),
                        message: problem,
                        diff: None,
                    });
                }
            }
        }
        let instructions = started
            .negotiated
            .instructions
            .as_deref()
            .map(|text| ("instructions".to_owned(), text, TextRole::Prose));
        for (field, text, role) in instructions.into_iter().chain(offered_texts(started)) {
            for (kind, detail) in guards::lint_text_as(text, role) {
                found.push(Found {
                    rule: Rule::Guard(kind),
                    server: name.clone(),
                    tool: None,
                    message: format!("{field}: {detail}"),
                    diff: None,
                });
            }
        }
        for warning in server
            .row
            .warnings
            .iter()
            .filter(|w| w.kind == WarningKind::Listing)
        {
            found.push(Found {
                rule: Rule::Guard(FindingKind::ListingProblem),
                server: name.clone(),
                tool: None,
                message: warning.detail.clone(),
                diff: None,
            });
        }
        if started.tools.len() > MAX_TOOLS_PER_SERVER {
            found.push(Found {
                rule: Rule::TooManyTools,
                server: name.clone(),
                tool: None,
                message: format!(
                    "{} tools, more than {MAX_TOOLS_PER_SERVER}: some clients (Cursor) use only \
                     {MAX_TOOLS_PER_SERVER} and leave the rest out; narrow it with enabledTools",
                    started.tools.len()
                ),
                diff: None,
            });
        }
        if let Some(tokens) = server.tokens.filter(|t| *t > token_budget) {
            found.push(Found {
                rule: Rule::TokenBudget,
                server: name.clone(),
                tool: None,
                message: format!(
                    "its tool catalog costs {tokens} tokens ({TOKENIZER}), more than the budget of \
                     {token_budget}: every request of an agent carries it; narrow it with enabledTools"
                ),
                diff: None,
            });
        }
    }
    if total_tools > MAX_TOOLS_IN_ALL {
        found.push(Found {
            rule: Rule::TooManyTools,
            server: "*".into(),
            tool: None,
            message: format!(
                "{total_tools} tools across all servers, more than {MAX_TOOLS_IN_ALL}: the OpenAI \
                 API and VS Code take at most {MAX_TOOLS_IN_ALL} tools in one request"
            ),
            diff: None,
        });
    }
    let catalogs: Vec<Catalog<'_>> = scanned
        .iter()
        .filter_map(|server| match &server.row.state {
            State::Ready(started) => Some(Catalog {
                server: &server.row.name,
                tools: &started.tools,
                instructions: started.negotiated.instructions.as_deref(),
            }),
            State::Failed { .. } => None,
        })
        .collect();
    found.extend(
        guards::find_shadowing(&catalogs)
            .into_iter()
            .map(from_guard),
    );
    found
}

/// What is wrong with a tool's name for clients: not `^[a-zA-Z0-9_-]{1,64}$`, or so long
/// that the gateway's `<server>__<tool>` must be cut.
fn name_problem(server: &str, tool: &str) -> Option<String> {
    if !is_provider_safe(tool) {
        let length = tool.chars().count();
        return Some(if length > MAX_NAME_LEN {
            format!("the name has {length} characters: clients refuse names over {MAX_NAME_LEN}")
        } else {
            "the name has characters clients refuse (they take a-z, A-Z, 0-9, _ and -)".into()
        });
    }
    let exported = server.len() + 2 + tool.len();
    (exported > MAX_NAME_LEN).then(|| {
        format!(
            "`{server}__{tool}` has {exported} characters, over {MAX_NAME_LEN}: `switchboard serve` \
             shortens it with a hash suffix, which agents see"
        )
    })
}

/// One of a tool's two schemas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SchemaField {
    /// `inputSchema`: the arguments, which the model writes.
    Input,
    /// `outputSchema`: the `structuredContent` of results.
    Output,
}

impl SchemaField {
    fn key(self) -> &'static str {
        match self {
            SchemaField::Input => "inputSchema",
            SchemaField::Output => "outputSchema",
        }
    }
}

/// What is wrong with a tool's `inputSchema` or `outputSchema`, if anything (the first
/// problem found):
///
/// - a root that is not an object with `type: "object"`, which MCP requires of both;
/// - for `inputSchema`, what the runtime's normalisation refuses (a `$ref` out of the
///   schema, one that does not resolve or nests too deep);
/// - a schema the argument check does not compile (`ArgumentCheck`: `jsonschema`, against the
///   meta-schema of the schema's `$schema` dialect, 2020-12 without one; a `$ref` it cannot
///   resolve within the schema — nothing is fetched: the crate is built without remote
///   resolution).
///
/// An `inputSchema` the runtime cannot normalise is left out by `switchboard serve`; the
/// message says so. A missing (or `null`) schema is not a problem: the runtime reads a
/// missing `inputSchema` as one without arguments, and `outputSchema` is optional.
fn schema_problem(field: SchemaField, schema: &Value) -> Option<String> {
    if schema.is_null() {
        return None;
    }
    let key = field.key();
    let normalized = match field {
        SchemaField::Input => Some(normalize(schema)),
        SchemaField::Output => None,
    };
    let problem = root_problem(key, schema)
        .or_else(|| match &normalized {
            Some(Err(SchemaProblem(problem))) => Some(format!("`{key}`: {problem}")),
            _ => None,
        })
        .or_else(|| compile_problem(key, schema))?;
    Some(if matches!(normalized, Some(Err(_))) {
        format!("{problem}; `switchboard serve` leaves the tool out")
    } else {
        problem
    })
}

/// A schema root that is not an object with `type: "object"`.
fn root_problem(key: &str, schema: &Value) -> Option<String> {
    let Value::Object(root) = schema else {
        return Some(format!(
            "`{key}` is not a JSON object but {}",
            switchboard_protocol::json_kind(schema)
        ));
    };
    match root.get("type") {
        Some(Value::String(kind)) if kind == "object" => None,
        Some(other) => Some(format!(
            "the root of `{key}` has type {other}; MCP requires \"object\""
        )),
        None => Some(format!(
            "the root of `{key}` has no `type: \"object\"`, which MCP requires"
        )),
    }
}

/// Why the runtime's validator does not compile `schema`, if it does not.
fn compile_problem(key: &str, schema: &Value) -> Option<String> {
    // The validator is a library fed a peer's data: a panic in it is this schema's
    // problem, not the end of the scan.
    match catch_unwind(AssertUnwindSafe(|| ArgumentCheck::new(schema))) {
        Ok(Ok(_)) => None,
        Ok(Err(invalid)) => Some(format!("`{key}`: {invalid}")),
        Err(_) => Some(format!("`{key}`: the JSON Schema validator failed on it")),
    }
}

/// Every scanned server's tools against the lock: new, changed and removed tools.
fn lock_findings(lock: &ToolLock, scanned: &[Scanned]) -> Vec<Found> {
    let mut found = Vec::new();
    for server in scanned {
        let State::Ready(started) = &server.row.state else {
            continue;
        };
        let name = &server.row.name;
        if !lock.has_server(name) {
            found.push(Found {
                rule: Rule::Guard(FindingKind::NewTool),
                server: name.clone(),
                tool: None,
                message: format!(
                    "the server is not pinned: its {} tool(s) were never approved \
                     (`switchboard scan --update` pins them)",
                    started.tools.len()
                ),
                diff: None,
            });
            continue;
        }
        let review = lock.review(name, &started.tools);
        if review.legacy {
            found.push(Found {
                rule: Rule::Guard(FindingKind::OutdatedLock),
                server: name.clone(),
                tool: None,
                message: "its tools are pinned as switchboard-tool-lock/1 pinned them, without \
                          icons, `execution` or `_meta` (changes there go unnoticed); \
                          `switchboard scan --update` pins them again to cover those"
                    .into(),
                diff: None,
            });
        }
        for (tool, change) in &review.changes {
            let held = if lock.holds(change) {
                "; `switchboard serve` holds it until `switchboard scan --update` accepts it"
            } else {
                "; `switchboard serve` serves it (the lock's `new_tools` is `allow`)"
            };
            let (message, diff) = match change {
                Change::New => (format!("a tool that was never pinned{held}"), None),
                Change::Changed {
                    diff: Some(diff), ..
                } => (
                    format!(
                        "its {} changed since it was pinned{held}",
                        diff.field_names()
                    ),
                    Some(diff.clone()),
                ),
                other => (format!("{}{held}", other.describe()), None),
            };
            found.push(Found {
                rule: Rule::Guard(change.kind()),
                server: name.clone(),
                tool: Some(tool.clone()),
                message,
                diff,
            });
        }
        for removed in review.removed {
            found.push(Found {
                rule: Rule::RemovedTool,
                server: name.clone(),
                tool: Some(removed),
                message: "pinned, but the server no longer offers it".into(),
                diff: None,
            });
        }
    }
    found
}

fn subject(found: &Found) -> String {
    match &found.tool {
        Some(tool) => format!("{}/{tool}", found.server),
        None => found.server.clone(),
    }
}

/// One block a server (its count of tools and tokens, or why it failed), the findings, and
/// a summary with the lock file.
fn scan_text(
    findings: &Findings<'_>,
    scanned: &[Scanned],
    lock: &LockState,
    accepted: &AcceptedFindings,
) -> String {
    let mut out = String::new();
    for server in scanned {
        match &server.row.state {
            State::Ready(started) => out.push_str(&format!(
                "{}: {} tool(s), {} tokens\n",
                server.row.name,
                started.tools.len(),
                server.tokens.unwrap_or(0)
            )),
            State::Failed { reason, .. } => {
                out.push_str(&format!("{}: not scanned: {reason}\n", server.row.name))
            }
        }
        for (finding, acceptance) in findings.iter().filter(|(f, _)| f.server == server.row.name) {
            out.push_str(&format!(
                "  {} {}: {}: {}\n",
                finding.rule.level(),
                finding.rule.id(),
                subject(finding),
                finding.message
            ));
            for line in finding.diff.iter().flat_map(PinDiff::report_lines) {
                out.push_str(&format!("      {line}\n"));
            }
            if let Some(acceptance) = acceptance {
                out.push_str(&format!("      {}\n", accepted_line(acceptance)));
            }
        }
    }
    for (finding, acceptance) in findings.iter().filter(|(f, _)| f.server == "*") {
        out.push_str(&format!(
            "{} {}: {}\n",
            finding.rule.level(),
            finding.rule.id(),
            finding.message
        ));
        if let Some(acceptance) = acceptance {
            out.push_str(&format!("    {}\n", accepted_line(acceptance)));
        }
    }
    let tools: usize = scanned
        .iter()
        .map(|s| match &s.row.state {
            State::Ready(started) => started.tools.len(),
            State::Failed { .. } => 0,
        })
        .sum();
    let tokens: usize = scanned.iter().filter_map(|s| s.tokens).sum();
    let accepted_count = match findings.accepted_count() {
        0 => String::new(),
        count => format!(", {count} accepted"),
    };
    out.push_str(&format!(
        "{} server(s), {tools} tool(s), {tokens} tokens ({TOKENIZER}); {} finding(s){accepted_count}\n",
        scanned.len(),
        findings.counted()
    ));
    match (&lock.path, lock.present) {
        (Some(path), _) if !lock.pinned.is_empty() => {
            out.push_str(&format!(
                "pinned the tools of {} in {} (new tools: {})\n",
                lock.pinned.join(", "),
                path.display(),
                lock.new_tools
            ));
            for (server, tool, ids) in &lock.refused {
                out.push_str(&format!(
                    "not pinned: {server}/{tool}: it has error findings ({}); review them, then \
                     `--update --accept-findings` pins it anyway\n",
                    ids.join(", ")
                ));
            }
        }
        (Some(path), true) => out.push_str(&format!(
            "lock: {} (new tools: {})\n",
            path.display(),
            lock.new_tools
        )),
        (Some(path), false) => out.push_str(&format!(
            "lock: none yet at {}; `switchboard scan --update` pins the tools shown, and \
             `switchboard serve` then leaves out tools that change\n",
            path.display()
        )),
        (None, _) => out.push_str("lock: none (no config file; give --lock FILE)\n"),
    }
    out.push_str(&accepted_file_text(accepted));
    out
}

/// `accepted: REASON (by WHO, WHEN)`, on one line.
fn accepted_line(acceptance: &Acceptance) -> String {
    let mut line = format!("accepted: {}", one_line(&acceptance.reason));
    let who = acceptance.accepted_by.as_deref().map(one_line);
    let when = acceptance.accepted_at.as_deref().map(one_line);
    match (who, when) {
        (Some(who), Some(when)) => line.push_str(&format!(" (by {who}, {when})")),
        (Some(who), None) => line.push_str(&format!(" (by {who})")),
        (None, Some(when)) => line.push_str(&format!(" ({when})")),
        (None, None) => {}
    }
    line
}

/// The accepted findings file's line, when there is one, and what this run changed in it.
fn accepted_file_text(accepted: &AcceptedFindings) -> String {
    let (Some(path), true) = (accepted.file.path(), accepted.file.is_present()) else {
        return String::new();
    };
    let mut out = format!(
        "accepted findings: {} ({} entr{})\n",
        path.display(),
        accepted.file.entries().len(),
        if accepted.file.entries().len() == 1 {
            "y"
        } else {
            "ies"
        }
    );
    for spec in &accepted.edits.removed {
        out.push_str(&format!("  removed {spec}\n"));
    }
    for spec in &accepted.edits.added {
        out.push_str(&format!("  added {spec}\n"));
    }
    out
}

/// `{"reason", "accepted_at"?, "accepted_by"?}`.
fn acceptance_json(acceptance: &Acceptance) -> Value {
    let mut json = json!({"reason": acceptance.reason});
    if let Some(at) = &acceptance.accepted_at {
        json["accepted_at"] = json!(at);
    }
    if let Some(by) = &acceptance.accepted_by {
        json["accepted_by"] = json!(by);
    }
    json
}

fn location_json(origin: &Origin) -> Value {
    json!({"file": origin.file, "line": origin.line})
}

/// `{"format": "switchboard-scan/1", "tokenizer", "lock", "accepted", "servers", "findings"}`.
fn scan_json(
    findings: &Findings<'_>,
    scanned: &[Scanned],
    lock: &LockState,
    accepted: &AcceptedFindings,
) -> Value {
    let servers: Vec<Value> = scanned
        .iter()
        .map(|server| match &server.row.state {
            State::Ready(started) => json!({
                "name": server.row.name,
                "state": "ready",
                "tools": started.tools.len(),
                "tokens": server.tokens,
                "location": location_json(&server.origin),
            }),
            State::Failed { reason, .. } => json!({
                "name": server.row.name,
                "state": "failed",
                "reason": reason,
                "location": location_json(&server.origin),
            }),
        })
        .collect();
    let findings: Vec<Value> = findings
        .iter()
        .map(|(f, acceptance)| {
            let mut finding = json!({
                "rule": f.rule.id(),
                "level": f.rule.level(),
                "server": f.server,
                "tool": f.tool,
                "message": f.message,
            });
            if let Some(diff) = &f.diff {
                finding["diff"] = diff.to_json();
            }
            if let Some(acceptance) = acceptance {
                finding["accepted"] = acceptance_json(acceptance);
            }
            finding
        })
        .collect();
    json!({
        "format": "switchboard-scan/1",
        "tokenizer": TOKENIZER,
        "lock": {
            "path": lock.path.as_ref().map(|p| p.display().to_string()),
            "present": lock.present,
            "pinned": lock.pinned,
            "refused": lock.refused.iter().map(|(server, tool, ids)| json!({
                "server": server, "tool": tool, "findings": ids,
            })).collect::<Vec<_>>(),
            "new_tools": lock.new_tools.id(),
        },
        "accepted": {
            "path": accepted.file.path().map(|p| p.display().to_string()),
            "present": accepted.file.is_present(),
            "entries": accepted.file.entries().len(),
            "added": accepted.edits.added,
            "removed": accepted.edits.removed,
        },
        "servers": servers,
        "findings": findings,
    })
}

/// SARIF 2.1.0: one run of the driver `switchboard` with a rule per finding kind; each
/// result points at the config file (and the line of the server's entry, when known), with
/// the server and tool as its logical location. An accepted finding carries a suppression
/// (`kind: external`: the accepted findings file, with its reason as the justification).
fn sarif(findings: &Findings<'_>, scanned: &[Scanned]) -> Value {
    let rules = Rule::all();
    let rule_json: Vec<Value> = rules
        .iter()
        .map(|rule| {
            json!({
                "id": rule.id(),
                "shortDescription": {"text": rule.summary()},
                "defaultConfiguration": {"level": rule.level()},
            })
        })
        .collect();
    let results: Vec<Value> = findings
        .iter()
        .map(|(f, acceptance)| {
            let mut location = json!({
                "logicalLocations": [{"fullyQualifiedName": subject(f), "kind": "module"}],
            });
            if let Some(origin) = scanned
                .iter()
                .find(|s| s.row.name == f.server)
                .map(|s| &s.origin)
                .filter(|o| Path::new(&o.file).is_file())
            {
                let mut physical = json!({"artifactLocation": {"uri": artifact_uri(&origin.file)}});
                if let Some(line) = origin.line {
                    physical["region"] = json!({"startLine": line});
                }
                location["physicalLocation"] = physical;
            }
            let mut result = json!({
                "ruleId": f.rule.id(),
                "ruleIndex": rules.iter().position(|r| *r == f.rule),
                "level": f.rule.level(),
                "message": {"text": format!("{}: {}", subject(f), f.message)},
                "locations": [location],
            });
            if let Some(acceptance) = acceptance {
                result["suppressions"] = json!([{
                    "kind": "external",
                    "status": "accepted",
                    "justification": acceptance.reason,
                }]);
            }
            result
        })
        .collect();
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "switchboard",
                "rules": rule_json,
            }},
            "results": results,
        }],
    })
}

/// A config file as a SARIF artifact URI: relative to the current directory when it is
/// inside it (as code-scanning views expect), else a `file://` URI; percent-encoded either
/// way (SARIF's `uri` is an RFC 3986 URI reference, so a space is `%20`).
fn artifact_uri(file: &str) -> String {
    // The file exists (only then is it a location), so it has a canonical absolute path.
    let absolute = std::fs::canonicalize(file).unwrap_or_else(|_| PathBuf::from(file));
    let Ok(uri) = url::Url::from_file_path(&absolute) else {
        return file.to_owned();
    };
    if let Ok(current) = std::env::current_dir()
        && absolute.starts_with(&current)
        && let Ok(base) = url::Url::from_directory_path(&current)
        && let Some(relative) = base.make_relative(&uri)
    {
        return relative;
    }
    uri.to_string()
}

/// Every text of a server's prompts, resources and resource templates a model may read, and
/// of its `serverInfo`, each named by where it is (`prompt `review` argument `style`
/// description`) and read as what it is (names as names, argument descriptions as a
/// parameter's).
fn offered_texts(started: &status::Started) -> Vec<(String, &str, TextRole)> {
    let mut texts = Texts::default();
    if let Some(info) = &started.negotiated.server_info {
        texts.add("serverInfo", "name", Some(&info.name), TextRole::Identifier);
        texts.add(
            "serverInfo",
            "title",
            info.title.as_deref(),
            TextRole::Prose,
        );
        texts.add(
            "serverInfo",
            "version",
            Some(&info.version),
            TextRole::Prose,
        );
        let description = info.description.as_deref();
        texts.add("serverInfo", "description", description, TextRole::Prose);
        let website = info.website_url.as_deref();
        texts.add("serverInfo", "websiteUrl", website, TextRole::Value);
    }
    for prompt in started.prompts.iter().flatten() {
        let place = format!("prompt `{}`", prompt.name);
        texts.add(&place, "name", Some(&prompt.name), TextRole::Identifier);
        texts.add(&place, "title", prompt.title.as_deref(), TextRole::Prose);
        texts.add(
            &place,
            "description",
            prompt.description.as_deref(),
            TextRole::Prose,
        );
        for argument in &prompt.arguments {
            let place = format!("{place} argument `{}`", argument.name);
            texts.add(&place, "name", Some(&argument.name), TextRole::Identifier);
            let description = argument.description.as_deref();
            texts.add(&place, "description", description, TextRole::Parameter);
        }
    }
    for resource in started.resources.iter().flatten() {
        let place = format!("resource `{}`", resource.uri);
        texts.add(&place, "name", Some(&resource.name), TextRole::Prose);
        texts.add(&place, "title", resource.title.as_deref(), TextRole::Prose);
        let description = resource.description.as_deref();
        texts.add(&place, "description", description, TextRole::Prose);
    }
    for template in &started.templates {
        let place = format!("resource template `{}`", template.uri_template);
        texts.add(&place, "name", Some(&template.name), TextRole::Prose);
        let description = template.description.as_deref();
        texts.add(&place, "description", description, TextRole::Prose);
    }
    texts.0
}

/// Texts a model reads, each with where it is and how it is read.
#[derive(Default)]
struct Texts<'a>(Vec<(String, &'a str, TextRole)>);

impl<'a> Texts<'a> {
    fn add(&mut self, place: &str, field: &str, text: Option<&'a str>, role: TextRole) {
        if let Some(text) = text {
            self.0.push((format!("{place} {field}"), text, role));
        }
    }
}

#[cfg(test)]
mod tests {
    use expect_test::expect;
    use serde_json::{Value, json};

    use super::{SchemaField, schema_problem};

    /// Each schema with what a scan says of it (`ok` for nothing).
    fn verdicts(cases: &[(SchemaField, Value)]) -> String {
        cases
            .iter()
            .map(|(field, schema)| {
                let verdict = schema_problem(*field, schema).unwrap_or_else(|| "ok".into());
                format!("{} {schema}\n  {verdict}\n", field.key())
            })
            .collect()
    }

    #[test]
    fn input_schemas_need_an_object_root_and_must_compile() {
        let actual = verdicts(&[
            (SchemaField::Input, Value::Null),
            (
                SchemaField::Input,
                json!({"type": "object", "properties": {"p": {"$ref": "#/$defs/p"}},
                       "$defs": {"p": {"type": "string"}}}),
            ),
            (SchemaField::Input, json!("object")),
            (SchemaField::Input, json!({"type": 5})),
            (
                SchemaField::Input,
                json!({"type": "array", "items": {"type": "string"}}),
            ),
            (
                SchemaField::Input,
                json!({"properties": {"x": {"type": "string"}}}),
            ),
            (
                SchemaField::Input,
                json!({"type": "object", "properties": {"x": {"type": 5}}}),
            ),
            (
                SchemaField::Input,
                json!({"type": "object", "required": "x"}),
            ),
            (
                SchemaField::Input,
                json!({"type": "object", "properties": {"x": {"$ref": "http://127.0.0.1:9/s.json"}}}),
            ),
            (
                SchemaField::Input,
                json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/loop"}},
                       "$defs": {"loop": {"$ref": "#/$defs/loop"}}}),
            ),
        ]);
        expect![[r##"
            inputSchema null
              ok
            inputSchema {"type":"object","properties":{"p":{"$ref":"#/$defs/p"}},"$defs":{"p":{"type":"string"}}}
              ok
            inputSchema "object"
              `inputSchema` is not a JSON object but a string; `switchboard serve` leaves the tool out
            inputSchema {"type":5}
              the root of `inputSchema` has type 5; MCP requires "object"; `switchboard serve` leaves the tool out
            inputSchema {"type":"array","items":{"type":"string"}}
              the root of `inputSchema` has type "array"; MCP requires "object"; `switchboard serve` leaves the tool out
            inputSchema {"properties":{"x":{"type":"string"}}}
              the root of `inputSchema` has no `type: "object"`, which MCP requires
            inputSchema {"type":"object","properties":{"x":{"type":5}}}
              `inputSchema`: invalid JSON Schema: 5 is not valid under any of the schemas listed in the 'anyOf' keyword
            inputSchema {"type":"object","required":"x"}
              `inputSchema`: invalid JSON Schema: "x" is not of type "array"
            inputSchema {"type":"object","properties":{"x":{"$ref":"http://127.0.0.1:9/s.json"}}}
              `inputSchema`: `$ref` to "http://127.0.0.1:9/s.json" points outside the schema; it is not fetched; `switchboard serve` leaves the tool out
            inputSchema {"type":"object","properties":{"x":{"$ref":"#/$defs/loop"}},"$defs":{"loop":{"$ref":"#/$defs/loop"}}}
              `inputSchema`: `$ref` "#/$defs/loop" nests deeper than 16 levels (recursive schema); `switchboard serve` leaves the tool out
        "##]]
        .assert_eq(&actual);
    }

    #[test]
    fn output_schemas_are_held_to_the_same_rules_without_the_gateways_limits() {
        let actual = verdicts(&[
            (
                SchemaField::Output,
                json!({"type": "object", "properties": {"sum": {"type": "integer"}}}),
            ),
            (SchemaField::Output, Value::Null),
            (SchemaField::Output, json!([])),
            (
                SchemaField::Output,
                json!({"type": "array", "items": {"type": "integer"}}),
            ),
            (
                SchemaField::Output,
                json!({"type": "object", "properties": {"n": {"minimum": "zero"}}}),
            ),
            (
                SchemaField::Output,
                json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                       "properties": {"pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]}}}),
            ),
            (
                SchemaField::Output,
                json!({"type": "object", "properties": {"pair": {"type": "array", "items": [{"type": "string"}]}}}),
            ),
            (
                SchemaField::Output,
                json!({"type": "object", "properties": {"x": {"$ref": "http://127.0.0.1:9/s.json"}}}),
            ),
            (
                SchemaField::Output,
                json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/loop"}},
                       "$defs": {"loop": {"$ref": "#/$defs/loop"}}}),
            ),
            (
                SchemaField::Output,
                json!({"$schema": "https://example.invalid/dialect", "type": "object"}),
            ),
        ]);
        expect![[r##"
            outputSchema {"type":"object","properties":{"sum":{"type":"integer"}}}
              ok
            outputSchema null
              ok
            outputSchema []
              `outputSchema` is not a JSON object but an array
            outputSchema {"type":"array","items":{"type":"integer"}}
              the root of `outputSchema` has type "array"; MCP requires "object"
            outputSchema {"type":"object","properties":{"n":{"minimum":"zero"}}}
              `outputSchema`: invalid JSON Schema: "zero" is not of type "number"
            outputSchema {"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"pair":{"type":"array","items":[{"type":"string"},{"type":"integer"}]}}}
              ok
            outputSchema {"type":"object","properties":{"pair":{"type":"array","items":[{"type":"string"}]}}}
              `outputSchema`: invalid JSON Schema: [{"type":"string"}] is not of types "boolean", "object"
            outputSchema {"type":"object","properties":{"x":{"$ref":"http://127.0.0.1:9/s.json"}}}
              `outputSchema`: invalid JSON Schema: Resource 'http://127.0.0.1:9/s.json' is not present in a registry and retrieving it failed: `resolve-http` feature or a custom resolver is required to resolve external schemas via HTTP
            outputSchema {"type":"object","properties":{"x":{"$ref":"#/$defs/loop"}},"$defs":{"loop":{"$ref":"#/$defs/loop"}}}
              ok
            outputSchema {"$schema":"https://example.invalid/dialect","type":"object"}
              `outputSchema`: invalid JSON Schema: Unknown meta-schema: 'https://example.invalid/dialect'. Custom meta-schemas must be registered in the registry before use
        "##]]
        .assert_eq(&actual);
    }
}
