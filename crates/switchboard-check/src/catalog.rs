//! The check registry: every check declared once, as data (stable id, title, severity, the
//! specification section it rests on, the transports and eras it applies to, what it
//! verifies, how to fix a failure) with how it runs ([`Runs`]). Reports, baselines, counts,
//! the run's skip lists, documentation and the fixture pairing test all read this table.
//!
//! A check runs in one of two ways. Most of the original checks are decided by a *stage*
//! of the run ([`Stage`]) that judges several of them from one probe (one tool listing is
//! judged as `tools-list`, `pagination`, `tool-names`, …); `run.rs` calls the stage and the
//! registry says which checks it decides, so a skip ("the tool listing failed") reaches
//! exactly those. A newer check is a *unit* of its own: one function, shaped probe (talk to
//! the server) → evidence (what was seen) → judgement (pass, fail, warn or skip with a
//! message), which the run calls for every entry that names one, gated by the entry's
//! transport and era. Adding a unit check is its entry here, its function, and its test.

use crate::checks::http_responses;

/// How bad a finding of a check is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Severity {
    /// A finding breaks a MUST of the specification or a step of the seed's compatibility
    /// bar: the check fails and the run exits 1.
    Error,
    /// A finding breaks a SHOULD or a practical limit: the check warns; the exit code is
    /// not affected.
    Warning,
}

impl Severity {
    /// `error` or `warning`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// Which protocol eras a check applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Eras {
    /// Both eras (a check that needs one of them says so in its own skip).
    Both,
    /// The legacy era (`initialize`): skipped when the entry pins 2026-07-28.
    Legacy,
    /// 2026-07-28: skipped for a server whose session negotiated the legacy era.
    Modern,
}

/// A stage of the run that decides several checks from one probe (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    /// The connection: `handshake::judge_ready` (or `judge_failed`).
    Handshake,
    /// One listing of the tools: `listing::run`.
    Listing,
    /// One successful call: `calls::successful_call`.
    Call,
    /// One call with schema-violating arguments and one of an unknown tool:
    /// `calls::invalid_input`.
    InvalidInput,
    /// The long call cancelled: `cancel::run` (legacy HTTP: `http_cancel::run`).
    Cancellation,
    /// Connections of their own: `lifecycle::run` (over HTTP `shutdown` ends the session
    /// `http-session` opened: `http_shutdown`).
    Lifecycle,
    /// Raw HTTP exchanges: `http::origin`, `http::sessions`, `http_responses::responses`.
    Http,
    /// The 2026-07-28 rules: `modern::run`.
    Modern,
    /// The main session's last requests: `utilities::run`, `features::run`.
    SessionEnd,
    /// Everything the sessions recorded, judged at the end: `observed::*`,
    /// `wire_schema::run`.
    Observed,
}

/// What a unit check's function returns: its run, to be awaited.
pub(crate) type UnitFuture<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = crate::report::CheckResult> + Send + 'a>>;

/// A unit check on raw HTTP requests: probe → evidence → judgement in one function.
pub(crate) type RawHttpUnit = for<'a> fn(&'a crate::checks::http::HttpTarget<'a>) -> UnitFuture<'a>;

/// How a check runs.
#[derive(Clone, Copy)]
pub(crate) enum Runs {
    /// Decided by this stage together with the other checks it decides.
    Stage(Stage),
    /// A unit of its own on raw HTTP requests (HTTP servers only).
    RawHttp(RawHttpUnit),
}

impl std::fmt::Debug for Runs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Runs::Stage(stage) => write!(f, "Stage({stage:?})"),
            Runs::RawHttp(_) => f.write_str("RawHttp"),
        }
    }
}

/// Which transports a check applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applies {
    /// Every transport.
    Any,
    /// Only servers run as child processes over stdin/stdout.
    Stdio,
    /// Only Streamable HTTP servers.
    Http,
}

/// One check, as data.
#[derive(Debug)]
pub struct CheckDef {
    /// Stable id, used in reports, baselines and `--json`.
    pub id: &'static str,
    /// Short title.
    pub title: &'static str,
    /// What a finding means; [`Severity::Warning`] checks never fail.
    pub severity: Severity,
    /// The specification section, relative to the 2025-11-25 revision ([`SPEC_BASE`];
    /// the 2026-07-28 checks' sections start `../2026-07-28/`).
    pub spec: &'static str,
    /// Transports it applies to.
    pub applies: Applies,
    /// The seed step (1–7) it implements, if any.
    pub seed_step: Option<u8>,
    /// Eras it applies to.
    pub eras: Eras,
    /// How it runs.
    pub(crate) runs: Runs,
    /// What it verifies, in one or two sentences.
    pub verifies: &'static str,
    /// What to do when it fails.
    pub fix: &'static str,
}

/// The revision the `spec` fields point into.
pub const SPEC_BASE: &str = "https://modelcontextprotocol.io/specification/2025-11-25/";
/// Where the revisions are ([`SPEC_BASE`]'s parent).
const SPEC_ROOT: &str = "https://modelcontextprotocol.io/specification/";

impl CheckDef {
    /// The full URL of the specification section (`spec` resolved against
    /// [`SPEC_BASE`]: a leading `../` leaves the 2025-11-25 revision for another one).
    pub fn spec_url(&self) -> String {
        match self.spec.strip_prefix("../") {
            Some(other_revision) => format!("{SPEC_ROOT}{other_revision}"),
            None => format!("{SPEC_BASE}{}", self.spec),
        }
    }

    /// True if it applies to a server on this transport.
    pub fn applies_to(&self, transport: Transport) -> bool {
        matches!(
            (self.applies, transport),
            (Applies::Any, _)
                | (Applies::Stdio, Transport::Stdio)
                | (Applies::Http, Transport::Http)
        )
    }
}

/// A transport kind, for applicability.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// A child process over stdin/stdout.
    Stdio,
    /// Streamable HTTP.
    Http,
}

impl Transport {
    /// `stdio` or `http`.
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Stdio => "stdio",
            Transport::Http => "http",
        }
    }
}

/// Check ids as constants, so code never misspells one.
pub mod ids {
    /// Seed step 1.
    pub const INITIALIZE: &str = "initialize";
    /// Era and version negotiation.
    pub const PROTOCOL_VERSION: &str = "protocol-version";
    /// Capabilities declared versus used.
    pub const CAPABILITIES: &str = "capabilities";
    /// Nothing but protocol messages on stdout.
    pub const STDOUT_PURITY: &str = "stdout-purity";
    /// Seed step 2.
    pub const TOOLS_LIST: &str = "tools-list";
    /// Cursor handling.
    pub const PAGINATION: &str = "pagination";
    /// Valid, unique names.
    pub const TOOL_NAMES: &str = "tool-names";
    /// Valid input and output schemas.
    pub const INPUT_SCHEMAS: &str = "input-schemas";
    /// No credentials in descriptions.
    pub const NO_CREDENTIALS: &str = "no-credentials";
    /// Seed step 3.
    pub const TOOLS_CALL: &str = "tools-call";
    /// Result size.
    pub const RESULTS_BOUNDED: &str = "results-bounded";
    /// Seed step 4.
    pub const INVALID_INPUT: &str = "invalid-input";
    /// Error messages name the field.
    pub const ERRORS_ACTIONABLE: &str = "errors-actionable";
    /// Unknown tool reported as an error.
    pub const UNKNOWN_TOOL: &str = "unknown-tool";
    /// Responses carry their request's id.
    pub const RESPONSE_IDS: &str = "response-ids";
    /// Notifications never stand in for responses.
    pub const NOTIFICATIONS_NOT_RESPONSES: &str = "notifications-not-responses";
    /// Every server message valid against the negotiated revision's JSON schema.
    pub const WIRE_SCHEMA: &str = "wire-schema";
    /// Progress for tokens the client sent, increasing, none after the answer.
    pub const PROGRESS: &str = "progress";
    /// Seed step 5.
    pub const CANCELLATION: &str = "cancellation";
    /// Seed step 6.
    pub const RECONNECT: &str = "reconnect";
    /// Seed step 7.
    pub const SHUTDOWN: &str = "shutdown";
    /// `ping`, `logging/setLevel`; in 2026-07-28, no log message unasked.
    pub const UTILITIES: &str = "utilities";
    /// The first prompt, resource and completion answer as specified.
    pub const PROMPTS_RESOURCES: &str = "prompts-resources";
    /// HTTP: Origin validation.
    pub const HTTP_ORIGIN: &str = "http-origin";
    /// HTTP: session ids.
    pub const HTTP_SESSION: &str = "http-session";
    /// HTTP: status codes, media types and session ids of the answers.
    pub const HTTP_RESPONSES: &str = "http-responses";
    /// HTTP, legacy era: event streams open with a priming event.
    pub const SSE_PRIMING: &str = "sse-priming";
    /// 2026-07-28 over HTTP: a notification gets 202 with no body.
    pub const HTTP_NOTIFICATIONS: &str = "http-notifications";

    // The 2026-07-28 checks (`checks/modern.rs`).
    /// 2026-07-28: the `server/discover` result.
    pub const DISCOVER: &str = "discover";
    /// 2026-07-28: requests without the required `_meta` are refused.
    pub const REQUEST_META: &str = "request-meta";
    /// 2026-07-28: an unsupported protocol version gets -32022.
    pub const UNSUPPORTED_VERSION: &str = "unsupported-version";
    /// 2026-07-28 over HTTP: standard headers validated against the body.
    pub const HTTP_HEADERS: &str = "http-headers";
    /// 2026-07-28 over HTTP: removed and unknown methods get 404.
    pub const REMOVED_METHODS: &str = "removed-methods";
    /// 2026-07-28: cache hints on cacheable results.
    pub const CACHE_HINTS: &str = "cache-hints";
    /// 2026-07-28: `x-mcp-header` annotations and `Mcp-Param-*` headers.
    pub const PARAM_HEADERS: &str = "param-headers";
    /// 2026-07-28: multi round-trip (`input_required`) requests.
    pub const INPUT_REQUIRED: &str = "input-required";
    /// 2026-07-28: `subscriptions/listen` streams.
    pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions-listen";
    /// 2026-07-28: an unknown resource is an error.
    pub const UNKNOWN_RESOURCE: &str = "unknown-resource";
    /// 2026-07-28: no reserved or retired error codes.
    pub const ERROR_CODES: &str = "error-codes";
}

/// Check ids a release retired, with the check that now reports what they did; baselines
/// naming an old id keep working.
pub static RENAMED: &[(&str, &str)] = &[
    // `DELETE` ending a legacy session is how `shutdown` runs over HTTP.
    ("http-delete", ids::SHUTDOWN),
];

/// Every check, in report order.
pub static CHECKS: &[CheckDef] = &[
    CheckDef {
        id: ids::INITIALIZE,
        title: "Initialization",
        severity: Severity::Error,
        spec: "basic/lifecycle#initialization",
        applies: Applies::Any,
        seed_step: Some(1),
        eras: Eras::Both,
        runs: Runs::Stage(Stage::Handshake),
        verifies: "The server completes the handshake (`initialize`, or `server/discover` in \
                   the 2026-07-28 protocol) within the connect deadline with a well-formed result.",
        fix: "Answer `initialize` promptly with `protocolVersion`, `capabilities` and \
              `serverInfo`; do not wait for anything else first.",
    },
    CheckDef {
        id: ids::PROTOCOL_VERSION,
        title: "Protocol era and version negotiation",
        severity: Severity::Error,
        spec: "basic/lifecycle#version-negotiation",
        applies: Applies::Any,
        seed_step: None,
        eras: Eras::Both,
        runs: Runs::Stage(Stage::Handshake),
        verifies: "The server answers with a protocol version the specification defines: the \
                   requested one when it supports it, otherwise one it supports.",
        fix: "Echo the client's `protocolVersion` when you support it; otherwise answer with \
              the newest version you support (one of the published revisions).",
    },
    CheckDef {
        id: ids::CAPABILITIES,
        title: "Capabilities declared versus used",
        severity: Severity::Error,
        spec: "basic/lifecycle#capability-negotiation",
        applies: Applies::Any,
        seed_step: None,
        eras: Eras::Both,
        runs: Runs::Stage(Stage::Observed),
        verifies: "Every declared capability answers its list request, and the server sends no \
                   notification or request that needs a capability it (or the client) did not \
                   declare.",
        fix: "Declare `logging`, `listChanged` or `subscribe` before sending the matching \
              notifications, and send no `sampling`, `roots` or `elicitation` request to a client \
              that did not declare them.",
    },
    CheckDef {
        id: ids::STDOUT_PURITY,
        title: "Nothing but protocol messages on stdout",
        severity: Severity::Error,
        spec: "basic/transports#stdio",
        applies: Applies::Stdio,
        seed_step: None,
        eras: Eras::Both,
        runs: Runs::Stage(Stage::Observed),
        verifies: "Every line the server writes to stdout is a JSON-RPC message.",
        fix: "Send logs, banners and progress text to stderr; stdout belongs to the protocol.",
    },
    CheckDef {
        id: ids::TOOLS_LIST,
        title: "Tool listing",
        severity: Severity::Error,
        spec: "server/tools#listing-tools",
        applies: Applies::Any,
        seed_step: Some(2),
        eras: Eras::Both,
        runs: Runs::Stage(Stage::Listing),
        verifies: "`tools/list` answers, through every page, with well-formed tool definitions.",
        fix: "Return `{\"tools\": [...]}` where every entry is an object with a string `name` \
              and an `inputSchema`.",
    },
    CheckDef {
        id: ids::PAGINATION,
        title: "Pagination",
        severity: Severity::Error,
        spec: "server/utilities/pagination",
        applies: Applies::Any,
        seed_step: None,
        eras: Eras::Both,
        runs: Runs::Stage(Stage::Listing),
        verifies: "`nextCursor` values are strings that lead to the end of the list without \
                   repeating a cursor or a page; a server that paginates rejects a cursor it \
                   never handed out with -32602 (a SHOULD: warning).",
        fix: "Return a fresh opaque cursor per page and none on the last one; answer an \
              unknown cursor with JSON-RPC error -32602.",
    },
    CheckDef {
        id: ids::TOOL_NAMES,
        title: "Tool names valid and unique",
        severity: Severity::Error,
        spec: "server/tools#tool-names",
        applies: Applies::Any,
        seed_step: None,
        eras: Eras::Both,
        runs: Runs::Stage(Stage::Listing),
        verifies: "No two tools share a name (a client can reach only one of them); names are \
                   1–128 characters of A–Z a–z 0–9 _ - . (a SHOULD: warning).",
        fix: "Give every tool a unique name made of letters, digits, `_`, `-` and `.`.",
    },
    CheckDef {
        id: ids::INPUT_SCHEMAS,
        title: "Input schemas valid",
        severity: Severity::Error,
        spec: "server/tools#tool",
        applies: Applies::Any,
        seed_step: None,
        eras: Eras::Both,
        runs: Runs::Stage(Stage::Listing),
        verifies: "Every `inputSchema` (and `outputSchema`) is a valid JSON Schema whose root \
                   is `type: \"object\"`, resolvable without fetching anything.",
        fix: "Describe arguments with an object schema (`{\"type\": \"object\", \"properties\": \
              {...}}`) that validates against its draft's meta-schema; inline every `$ref`.",
    },
    CheckDef {
        id: ids::NO_CREDENTIALS,
        title: "No credentials in descriptions",
        severity: Severity::Error,
        spec: "server/tools#security-considerations",
        applies: Applies::Any,
        seed_step: None,
        eras: Eras::Both,
        runs: Runs::Stage(Stage::Listing),
        verifies: "Tool names, titles, descriptions, schemas and the server's instructions \
                   contain nothing that looks like a credential (API keys, tokens, private keys, \
                   passwords).",
        fix: "Keep credentials in the server's environment, never in text the model reads; \
              rotate any credential that was published this way.",
    },
    CheckDef {
        id: ids::TOOLS_CALL,
        title: "One successful call",
        severity: Severity::Error,
        spec: "server/tools#calling-tools",
        applies: Applies::Any,
        seed_step: Some(3),
        eras: Eras::Both,
        runs: Runs::Stage(Stage::Call),
        verifies: "A read-only tool (or one named with `--call`) called with arguments derived \
                   from its own schema returns a well-formed result: `content` present, \
                   `structuredContent` matching a declared `outputSchema`.",
        fix: "Return `{\"content\": [...]}` for every call, with `structuredContent` valid \
              against `outputSchema` when you declare one.",
    },
    CheckDef {
        id: ids::RESULTS_BOUNDED,
        title: "Results bounded",
        severity: Severity::Warning,
        spec: "server/tools#tool-result",
        applies: Applies::Any,
        seed_step: None,
        eras: Eras::Both,
        runs: Runs::Stage(Stage::Call),
        verifies: "A normal call's result stays under the size limit (100 KiB by default; \
                   clients cut or drop larger results).",
        fix: "Page, summarise or truncate large results, or return a resource link instead of \
              the content.",
    },
    CheckDef {
        id: ids::INVALID_INPUT,
        title: "Invalid input rejected",
        severity: Severity::Error,
        spec: "server/tools#error-handling",
        applies: Applies::Any,
        seed_step: Some(4),
        eras: Eras::Both,
        runs: Runs::Stage(Stage::InvalidInput),
        verifies: "Schema-violating arguments are answered with an error (a tool result with \
                   `isError: true`, or JSON-RPC -32602), and a call to an unknown tool is \
                   answered, without the server hanging or dying.",
        fix: "Validate arguments against your `inputSchema` before running the tool and report \
              violations as an error.",
    },
    CheckDef {
        id: ids::ERRORS_ACTIONABLE,
        title: "Errors actionable",
        severity: Severity::Warning,
        spec: "server/tools#error-handling",
        applies: Applies::Any,
        seed_step: None,
        eras: Eras::Both,
        runs: Runs::Stage(Stage::InvalidInput),
        verifies: "The error for invalid arguments names the offending field, and the error for \
                   an unknown tool names the tool.",
        fix: "Say which argument is wrong and why (e.g. \"`text` must be a string\").",
    },
    CheckDef {
        id: ids::UNKNOWN_TOOL,
        title: "Unknown tool is an error",
        severity: Severity::Error,
        spec: "server/tools#error-handling",
        applies: Applies::Any,
        seed_step: None,
        eras: Eras::Both,
        runs: Runs::Stage(Stage::InvalidInput),
        verifies: "A `tools/call` naming a tool the server does not list is reported as an error \
                   (JSON-RPC -32602 or `isError`), not as a success.",
        fix: "Answer calls to tools you do not have with JSON-RPC error -32602 naming the tool.",
    },
    CheckDef {
        id: ids::RESPONSE_IDS,
        title: "Responses carry their request's id",
        severity: Severity::Error,
        spec: "basic#responses",
        applies: Applies::Any,
        seed_step: None,
        eras: Eras::Both,
        runs: Runs::Stage(Stage::Observed),
        verifies: "Every response carries the id of a request the client sent (same value, same \
                   type), once.",
        fix: "Copy the request's `id` into its response unchanged (`7` is not `\"7\"`), and \
              answer each request once.",
    },
    CheckDef {
        id: ids::NOTIFICATIONS_NOT_RESPONSES,
        title: "Notifications never stand in for responses",
        severity: Severity::Error,
        spec: "basic#responses",
        applies: Applies::Any,
        seed_step: None,
        eras: Eras::Both,
        runs: Runs::Stage(Stage::Observed),
        verifies: "No request goes unanswered while the server sends notifications instead \
                   (e.g. the result as a log message).",
        fix: "Answer every request with a response carrying its id; notifications never \
              complete a request.",
    },
    CheckDef {
        id: ids::WIRE_SCHEMA,
        title: "Messages match the schema",
        severity: Severity::Error,
        spec: "basic",
        applies: Applies::Any,
        seed_step: None,
        eras: Eras::Both,
        runs: Runs::Stage(Stage::Observed),
        verifies: "Every message the server sent to the checker's sessions (results by the \
                   method of their request, errors, notifications, requests) validates against \
                   the JSON schema of the protocol revision the session negotiated.",
        fix: "Shape every message as the revision's `schema.json` defines it (the TypeScript \
              `schema.ts` is its source): required fields present, with the types and values \
              it allows.",
    },
    CheckDef {
        id: ids::PROGRESS,
        title: "Progress notifications",
        severity: Severity::Error,
        spec: "basic/utilities/progress",
        applies: Applies::Any,
        seed_step: None,
        eras: Eras::Both,
        runs: Runs::Stage(Stage::Observed),
        verifies: "Every `notifications/progress` the server sent names the `progressToken` of \
                   a request of the checker's, reports a `progress` greater than the last one \
                   for that token, and (over stdio, where one pipe keeps the order) none comes \
                   after that request was answered.",
        fix: "Send progress only for a request that asked for it, with its token, a \
              `progress` that increases every time, and nothing after the request's result.",
    },
    CheckDef {
        id: ids::CANCELLATION,
        title: "Cancellation",
        severity: Severity::Error,
        spec: "basic/utilities/cancellation",
        applies: Applies::Any,
        seed_step: Some(5),
        eras: Eras::Both,
        runs: Runs::Stage(Stage::Cancellation),
        verifies: "After `notifications/cancelled` for a long call, no result follows, progress \
                   stops within the grace period, and the server still answers. Over HTTP the \
                   2026-07-28 protocol cancels by closing the response stream; legacy HTTP \
                   sends the notification on a POST of its own and keeps the stream open.",
        fix: "Stop the work when `notifications/cancelled` names the request: send neither its \
              result nor further progress for its token.",
    },
    CheckDef {
        id: ids::RECONNECT,
        title: "Reconnect after a dropped transport",
        severity: Severity::Error,
        spec: "basic/lifecycle#initialization",
        applies: Applies::Any,
        seed_step: Some(6),
        eras: Eras::Both,
        runs: Runs::Stage(Stage::Lifecycle),
        verifies: "With one request outstanding the transport is dropped (stdio: the server is \
                   killed; HTTP: the client closes its connection); the request is rejected, \
                   the transport closes, and a fresh connection initializes and lists the same \
                   tools.",
        fix: "Keep no state that a new process or session cannot rebuild; list the same tools \
              on every start.",
    },
    CheckDef {
        id: ids::SHUTDOWN,
        title: "Shutdown",
        severity: Severity::Error,
        spec: "basic/lifecycle#shutdown",
        applies: Applies::Any,
        seed_step: Some(7),
        eras: Eras::Both,
        runs: Runs::Stage(Stage::Lifecycle),
        verifies: "Closed as the specification says (stdio: stdin closed), the server exits \
                   within the grace period and leaves no process it started running, including \
                   ones that left its process group or daemonised (found by the marker in their \
                   environment, or as orphans the checker adopted). Over HTTP a legacy session \
                   ends with `DELETE`, after which its id gets 404 (405 for `DELETE`: warning); \
                   without a session the client's connection closes cleanly and the server \
                   answers a fresh handshake.",
        fix: "Exit when stdin reaches EOF, and stop every child process you started before \
              exiting; over HTTP, forget a session on `DELETE` and answer its id with 404 \
              afterwards.",
    },
    CheckDef {
        id: ids::UTILITIES,
        title: "Ping and logging",
        severity: Severity::Error,
        spec: "basic/utilities/ping",
        applies: Applies::Any,
        seed_step: None,
        eras: Eras::Both,
        runs: Runs::Stage(Stage::SessionEnd),
        verifies: "Legacy era: `ping` is answered with an empty result (other fields: warning), \
                   and a server that declares `logging` answers `logging/setLevel` to `info`. \
                   2026-07-28 (which has neither): no `notifications/message` comes, since no \
                   request of the checker asks for log messages with `_meta` `logLevel`.",
        fix: "Answer `ping` at once with `{}`; accept `logging/setLevel` when you declare \
              `logging`; in 2026-07-28 send log messages only on the stream of a request \
              whose `_meta` names a `logLevel`, at or above it.",
    },
    CheckDef {
        id: ids::PROMPTS_RESOURCES,
        title: "Prompts, resources and completions",
        severity: Severity::Error,
        spec: "server/prompts#getting-a-prompt",
        applies: Applies::Any,
        seed_step: None,
        eras: Eras::Both,
        runs: Runs::Stage(Stage::SessionEnd),
        verifies: "The first listed prompt (its required arguments given a placeholder) answers \
                   `prompts/get` with `messages`, each with a `role` and a typed `content`; \
                   with `completions` declared, completing its first argument gives a \
                   `completion.values` list; the first listed resource reads as non-empty \
                   `contents`, each with a `uri` and `text` or `blob`; a legacy server that \
                   declares `resources.subscribe` takes `resources/subscribe` and \
                   `resources/unsubscribe` of it.",
        fix: "Answer `prompts/get` for every listed prompt, `resources/read` for every listed \
              resource and `completion/complete` when you declare `completions`, in the \
              result shapes the specification gives; accept subscriptions when you declare \
              `subscribe`.",
    },
    CheckDef {
        id: ids::HTTP_ORIGIN,
        title: "HTTP: Origin validated",
        severity: Severity::Error,
        spec: "basic/transports#security-warning",
        applies: Applies::Http,
        seed_step: None,
        eras: Eras::Both,
        runs: Runs::Stage(Stage::Http),
        verifies: "A handshake request with a foreign `Origin` (`http://evil.example`) is refused \
                   with 403 (DNS rebinding protection); a server that is not on a loopback \
                   address and accepts it gets a warning.",
        fix: "Validate the `Origin` header on every request and answer 403 to foreign origins.",
    },
    CheckDef {
        id: ids::HTTP_SESSION,
        title: "HTTP: session handling",
        severity: Severity::Error,
        spec: "basic/transports#session-management",
        applies: Applies::Http,
        seed_step: None,
        eras: Eras::Both,
        runs: Runs::Stage(Stage::Http),
        verifies: "The session id issued at initialization is accepted, an id the server never \
                   issued is answered with 404, and a request without one with 400 (a SHOULD: \
                   warning). Skipped for servers that issue no session id.",
        fix: "Answer a request whose `Mcp-Session-Id` names no live session with 404, and one \
              without the header (after initialization) with 400.",
    },
    CheckDef {
        id: ids::HTTP_RESPONSES,
        title: "HTTP: answers' status, media type and session id",
        severity: Severity::Error,
        spec: "basic/transports#sending-messages-to-the-server",
        applies: Applies::Http,
        seed_step: None,
        eras: Eras::Both,
        runs: Runs::Stage(Stage::Http),
        verifies: "A request (the handshake and one more) is answered with 200 and \
                   `Content-Type: application/json` (one JSON-RPC response with its id) or \
                   `text/event-stream` (carrying its response); an accepted notification with \
                   202 and no body; a legacy session id is visible ASCII (0x21–0x7E) and issued \
                   on the `initialize` answer only.",
        fix: "Label JSON answers `application/json` and event streams `text/event-stream`, \
              answer accepted notifications with 202 and an empty body, and issue the \
              session id (visible ASCII only) on the answer to `initialize`, nowhere else.",
    },
    CheckDef {
        id: ids::SSE_PRIMING,
        title: "HTTP: event streams primed",
        severity: Severity::Warning,
        spec: "basic/transports#sending-messages-to-the-server",
        applies: Applies::Http,
        seed_step: None,
        eras: Eras::Legacy,
        runs: Runs::RawHttp(http_responses::sse_priming),
        verifies: "On a legacy session of the check's own, the event stream answering a `ping` \
                   that asks for progress opens with a priming event: an event id and empty \
                   `data` (a SHOULD: warning). Skipped when the answer is `application/json`.",
        fix: "Start every request's event stream with an event that has an `id` and an empty \
              `data` field, so a client that loses the stream can resume it with \
              `Last-Event-ID`.",
    },
    CheckDef {
        id: ids::HTTP_NOTIFICATIONS,
        title: "2026-07-28 HTTP: notifications accepted",
        severity: Severity::Error,
        spec: "../2026-07-28/basic/transports/streamable-http#sending-messages",
        applies: Applies::Http,
        seed_step: None,
        eras: Eras::Modern,
        runs: Runs::RawHttp(http_responses::modern_notification),
        verifies: "A POSTed 2026-07-28 notification (`notifications/cancelled` for a request \
                   never sent, with the revision's headers and `_meta`) gets 202 Accepted with \
                   no body.",
        fix: "Answer an accepted notification with HTTP 202 and an empty body, in \
              2026-07-28 as in the legacy era.",
    },
    // The 2026-07-28 checks (`checks/modern.rs`), skipped for servers that do not speak
    // that era. Their sections are in the 2026-07-28 revision (`../2026-07-28/…`).
    CheckDef {
        id: ids::DISCOVER,
        title: "2026-07-28: server/discover",
        severity: Severity::Error,
        spec: "../2026-07-28/server/discover",
        applies: Applies::Any,
        seed_step: None,
        eras: Eras::Modern,
        runs: Runs::Stage(Stage::Modern),
        verifies: "`server/discover` with the full `_meta` answers with `supportedVersions` \
                   (including 2026-07-28), `capabilities`, `ttlMs` ≥ 0, `cacheScope` and \
                   `resultType: \"complete\"`; `_meta` names the server (a SHOULD: warning); \
                   `tools/list`, `prompts/list` and `resources/list` for a capability it does \
                   not declare get -32601 (over HTTP with 404).",
        fix: "Answer `server/discover` with `supportedVersions`, `capabilities`, `ttlMs`, \
              `cacheScope`, `resultType: \"complete\"` and \
              `_meta[\"io.modelcontextprotocol/serverInfo\"]`, and declare every list you \
              serve (answer the others with -32601).",
    },
    CheckDef {
        id: ids::REQUEST_META,
        title: "2026-07-28: required request _meta",
        severity: Severity::Error,
        spec: "../2026-07-28/basic#per-request-protocol-fields",
        applies: Applies::Any,
        seed_step: None,
        eras: Eras::Modern,
        runs: Runs::Stage(Stage::Modern),
        verifies: "A request without `_meta`, without its protocol version or without its \
                   client capabilities is refused with -32602 (over HTTP with 400) carrying \
                   its id; one without `clientInfo` is served.",
        fix: "Reject a request missing `_meta[\"io.modelcontextprotocol/protocolVersion\"]` \
              or `clientCapabilities` with JSON-RPC -32602 (HTTP 400); do not require \
              `clientInfo`.",
    },
    CheckDef {
        id: ids::UNSUPPORTED_VERSION,
        title: "2026-07-28: unsupported protocol version",
        severity: Severity::Error,
        spec: "../2026-07-28/basic/versioning",
        applies: Applies::Any,
        seed_step: None,
        eras: Eras::Modern,
        runs: Runs::Stage(Stage::Modern),
        verifies: "A request in a version the server does not implement (`1900-01-01` in \
                   header and body) gets -32022 (over HTTP with 400) whose `data.requested` \
                   echoes it and whose `data.supported` lists at least one version and \
                   only versions `server/discover` lists.",
        fix: "Answer an unknown protocol version with JSON-RPC -32022 (HTTP 400) and \
              `data: {\"supported\": [...], \"requested\": \"...\"}`.",
    },
    CheckDef {
        id: ids::HTTP_HEADERS,
        title: "2026-07-28 HTTP: standard headers validated",
        severity: Severity::Error,
        spec: "../2026-07-28/basic/transports/streamable-http#server-validation",
        applies: Applies::Http,
        seed_step: None,
        eras: Eras::Modern,
        runs: Runs::Stage(Stage::Modern),
        verifies: "A missing `MCP-Protocol-Version` or one that differs from `_meta`, a missing \
                   or wrong `Mcp-Method` (values are case-sensitive), and a `tools/call` \
                   without or with a wrong `Mcp-Name` get 400 with -32020; an `Mcp-Name` with \
                   spaces around it, and header names sent in title case and in capitals (not \
                   the usual lower case), are accepted.",
        fix: "Compare `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` with the body \
              before processing it, answering a missing or different value with HTTP 400 and \
              JSON-RPC -32020 (HeaderMismatch); match header names case-insensitively.",
    },
    CheckDef {
        id: ids::PARAM_HEADERS,
        title: "2026-07-28: x-mcp-header and Mcp-Param headers",
        severity: Severity::Error,
        spec: "../2026-07-28/basic/transports/streamable-http#custom-headers-from-tool-parameters",
        applies: Applies::Any,
        seed_step: None,
        eras: Eras::Modern,
        runs: Runs::Stage(Stage::Modern),
        verifies: "Every `x-mcp-header` in a tool's `inputSchema` is a non-empty header token, \
                   unique (case-insensitively) in the schema, on a `string`, `integer` or \
                   `boolean` property reached through `properties` alone (else HTTP clients \
                   drop the tool); over HTTP a `tools/call` of a tool the checker may call, \
                   sent without its `Mcp-Param-*` header or with a wrong value, gets 400 with \
                   -32020, and a Base64-sentinel `Mcp-Name` is decoded, not refused.",
        fix: "Put `x-mcp-header` only on top-level or `properties`-nested string, integer or \
              boolean parameters, with a distinct token name each; compare every \
              `Mcp-Param-*` header (Base64 sentinel decoded) with the argument it mirrors and \
              answer a missing or different one with HTTP 400 and JSON-RPC -32020.",
    },
    CheckDef {
        id: ids::REMOVED_METHODS,
        title: "2026-07-28 HTTP: removed methods",
        severity: Severity::Error,
        spec: "../2026-07-28/basic/transports/streamable-http#protocol-version-header",
        applies: Applies::Http,
        seed_step: None,
        eras: Eras::Modern,
        runs: Runs::Stage(Stage::Modern),
        verifies: "With `MCP-Protocol-Version: 2026-07-28`, `initialize`, `ping`, \
                   `logging/setLevel`, `resources/subscribe`, `resources/unsubscribe` and an \
                   unknown method get HTTP 404 with -32601.",
        fix: "Route requests by their `MCP-Protocol-Version`: in 2026-07-28 the legacy \
              methods do not exist, so answer them (and unknown methods) with HTTP 404 and \
              JSON-RPC -32601.",
    },
    CheckDef {
        id: ids::CACHE_HINTS,
        title: "2026-07-28: cache hints",
        severity: Severity::Error,
        spec: "../2026-07-28/server/utilities/caching",
        applies: Applies::Any,
        seed_step: None,
        eras: Eras::Modern,
        runs: Runs::Stage(Stage::Modern),
        verifies: "Every `complete` page of `tools/list`, `prompts/list`, `resources/list` and \
                   `resources/templates/list` (and a `resources/read`) carries `ttlMs` and \
                   `cacheScope`, with one `cacheScope` on all pages of a list; tools come in \
                   the same order twice (a SHOULD: warning).",
        fix: "Add `ttlMs` (milliseconds, ≥ 0) and `cacheScope` (`public` or `private`) to \
              every cacheable `complete` result, keep the scope the same across a list's \
              pages, and list tools in a stable order.",
    },
    CheckDef {
        id: ids::INPUT_REQUIRED,
        title: "2026-07-28: input_required requests",
        severity: Severity::Error,
        spec: "../2026-07-28/basic/patterns/mrtr",
        applies: Applies::Any,
        seed_step: None,
        eras: Eras::Modern,
        runs: Runs::Stage(Stage::Modern),
        verifies: "A `tools/call` the checker may make that answers `input_required` carries \
                   `inputRequests` (elicitation, sampling or roots requests under unique keys) \
                   or a string `requestState`, and no cache hints (warning); asked by a client \
                   that declares no capabilities it asks for nothing; a retry without the \
                   answers is asked again (warning); the retry with the answers and the state \
                   is served, an extra answer ignored (warning); a tampered `requestState` is \
                   not served as if it were genuine (warning).",
        fix: "Answer `input_required` with `inputRequests` only of the kinds the request's \
              `clientCapabilities` declare (else refuse with -32021 or do without), keep \
              cache hints off it, ask again when a retry lacks an answer, ignore answers you \
              did not ask for, and integrity-protect `requestState` (an HMAC) if it steers \
              what the request does.",
    },
    CheckDef {
        id: ids::SUBSCRIPTIONS_LISTEN,
        title: "2026-07-28: subscriptions/listen",
        severity: Severity::Error,
        spec: "../2026-07-28/basic/patterns/subscriptions",
        applies: Applies::Any,
        seed_step: None,
        eras: Eras::Modern,
        runs: Runs::Stage(Stage::Modern),
        verifies: "For a server that declares `listChanged` on a list, `subscriptions/listen` \
                   for that list's changes is acknowledged first with \
                   `notifications/subscriptions/acknowledged`, tagged with \
                   `_meta[\"io.modelcontextprotocol/subscriptionId\"]` = the request's id and \
                   honouring a subset of the request; nothing unrequested, no progress and no \
                   log message comes on the subscription; the stream ends when the client \
                   cancels it (HTTP: closes it).",
        fix: "Acknowledge a listen request before anything else on it, tag every message of \
              the subscription with its id, send only the notifications the filter asked for, \
              and keep progress and log messages on their own requests' streams.",
    },
    CheckDef {
        id: ids::UNKNOWN_RESOURCE,
        title: "2026-07-28: unknown resource",
        severity: Severity::Error,
        spec: "../2026-07-28/server/resources#error-handling",
        applies: Applies::Any,
        seed_step: None,
        eras: Eras::Modern,
        runs: Runs::Stage(Stage::Modern),
        verifies: "For a server that declares `resources`, `resources/read` of a URI it does \
                   not have is answered with an error, never a result with empty \
                   `contents`; the error is -32602 and names the URI in `data.uri` (SHOULDs: \
                   warnings).",
        fix: "Answer a read of a resource you do not have with JSON-RPC -32602 and \
              `data: {\"uri\": \"...\"}`, not with an empty `contents` list.",
    },
    CheckDef {
        id: ids::ERROR_CODES,
        title: "2026-07-28: error codes",
        severity: Severity::Warning,
        spec: "../2026-07-28/basic#error-codes",
        applies: Applies::Any,
        seed_step: None,
        eras: Eras::Modern,
        runs: Runs::Stage(Stage::Modern),
        verifies: "No answer to the 2026-07-28 checks' requests (nor to an unknown tool, \
                   prompt or resource) carries a code the revision reserves (-32023…-32099) \
                   or retired (-32002, -32042, the pre-release -32001/-32003/-32004).",
        fix: "Use -32602 for unknown resources, -32020/-32021/-32022 for header, capability \
              and version errors, and codes outside -32768…-32000 for your own errors.",
    },
];

/// The ids of the checks that apply to this era only, in report order.
pub fn only_in(eras: Eras) -> Vec<&'static str> {
    CHECKS
        .iter()
        .filter(|c| c.eras == eras)
        .map(|c| c.id)
        .collect()
}

/// The checks a stage decides, in report order.
pub(crate) fn decided_by(stage: Stage) -> impl Iterator<Item = &'static CheckDef> {
    CHECKS
        .iter()
        .filter(move |c| matches!(c.runs, Runs::Stage(s) if s == stage))
}

/// The check with this id.
pub fn find(id: &str) -> Option<&'static CheckDef> {
    CHECKS.iter().find(|c| c.id == id)
}

/// The check with this id, or the one that took over a retired id ([`RENAMED`]).
pub fn find_current(id: &str) -> Option<&'static CheckDef> {
    find(id).or_else(|| {
        RENAMED
            .iter()
            .find(|(old, _)| *old == id)
            .and_then(|(_, new)| find(new))
    })
}
