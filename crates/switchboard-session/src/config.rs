//! How a session is set up: the era to speak, its deadlines and caps, per-call options.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use switchboard_protocol::{Implementation, ProgressParams};
use switchboard_wire::DEFAULT_MAX_FRAME_BYTES;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::handler::{ClientHandler, NoHandler};
use crate::skills::SkillLimits;

/// Which protocol era to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EraChoice {
    /// Probe with `server/discover`, fall back to `initialize`.
    Auto,
    /// Only `initialize`.
    Legacy,
    /// Only the stateless 2026-07-28 protocol.
    Modern,
    /// [`EraChoice::Auto`] for a server thought to be legacy (a host's memo of an earlier
    /// connection): `initialize` first, and only when it fails with an error answer or a
    /// version the client does not speak, the `Auto` probe. A legacy server never sees
    /// `server/discover`. Never read from a configuration.
    AutoLegacyFirst,
}

/// Session settings. [`SessionConfig::new`] gives the defaults.
#[derive(Clone)]
pub struct SessionConfig {
    /// The server's name (from configuration), used in every error and log line.
    pub server_name: Arc<str>,
    /// Who we say we are.
    pub client_info: Implementation,
    /// Era selection.
    pub era: EraChoice,
    /// A pinned protocol version; `None` negotiates the newest both sides speak.
    pub protocol_version: Option<String>,
    /// Deadline for the whole connection setup (probe and handshake).
    pub connect_timeout: Duration,
    /// How long the `server/discover` probe may stay unanswered before `initialize` is sent too.
    pub probe_timeout: Duration,
    /// Default per-request deadline; progress notifications reset it for tool calls.
    pub request_timeout: Duration,
    /// Hard ceiling on a tool call, however much progress it reports.
    pub max_call_duration: Duration,
    /// Maximum pages followed in one listing.
    pub max_list_pages: usize,
    /// Maximum entries, valid or not, across one listing's pages; more fails the listing
    /// with [`SessionError::ListingTooLarge`] before they are read. Default 10 000: hosts
    /// hand tools to a model by the tens or hundreds (OpenAI's API takes at most 128 per
    /// request), so this is far past any usable listing while bounding what a read listing
    /// costs (a typed tool is a few KiB).
    pub max_list_items: usize,
    /// Maximum result bytes across one listing's pages. Default 32 MiB, twice the frame
    /// cap: a single page may fill a frame, and a listing spread over pages gets that room
    /// again. Without it a server paging fresh cursors could send 100 pages of 16 MiB.
    pub max_list_bytes: usize,
    /// Maximum `input_required` rounds for one request.
    pub max_input_rounds: usize,
    /// What loading a skill may read, and whether unverifiable skills load.
    pub skill_limits: SkillLimits,
    /// Capacity of the event channel; slow subscribers miss events (counted).
    pub event_capacity: usize,
    /// The host's handler for roots and input requests.
    pub handler: Arc<dyn ClientHandler>,
}

impl SessionConfig {
    /// Defaults: auto era, 30 s connect, 2 s probe, 60 s requests, 10 min ceiling.
    pub fn new(server_name: &str) -> SessionConfig {
        SessionConfig {
            server_name: Arc::from(server_name),
            client_info: Implementation {
                name: "switchboard".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                title: Some("Switchboard".into()),
                description: None,
                website_url: None,
            },
            era: EraChoice::Auto,
            protocol_version: None,
            connect_timeout: Duration::from_secs(30),
            probe_timeout: Duration::from_secs(2),
            request_timeout: Duration::from_secs(60),
            max_call_duration: Duration::from_secs(600),
            max_list_pages: 100,
            max_list_items: 10_000,
            max_list_bytes: 2 * DEFAULT_MAX_FRAME_BYTES,
            max_input_rounds: 8,
            skill_limits: SkillLimits::default(),
            event_capacity: 1024,
            handler: Arc::new(NoHandler),
        }
    }
}

impl fmt::Debug for SessionConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionConfig")
            .field("server_name", &self.server_name)
            .field("era", &self.era)
            .field("protocol_version", &self.protocol_version)
            .field("connect_timeout", &self.connect_timeout)
            .field("request_timeout", &self.request_timeout)
            .finish_non_exhaustive()
    }
}

/// Per-call options; unset fields take the session's defaults.
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    /// Deadline for this call (idle deadline for tool calls: progress resets it).
    pub timeout: Option<Duration>,
    /// Hard ceiling for this call.
    pub max_duration: Option<Duration>,
    /// Cancelling this token sends `notifications/cancelled` and ends the call.
    pub cancel: Option<CancellationToken>,
    /// Receives the call's progress notifications.
    pub progress: Option<mpsc::Sender<ProgressParams>>,
    /// The call is made for a client of the caller's own (a gateway's): see [`ForClient`].
    pub for_client: Option<ForClient>,
    /// Receives the `notifications/message` params that can only be this call's: those
    /// that arrive while it is the session's one request in flight (a log message names no
    /// request), before its result. They are then not session events; when the receiver
    /// is behind, a message stays a session event.
    pub log_messages: Option<mpsc::Sender<Value>>,
    /// The W3C trace context of the span this call belongs to, sent with the request: as
    /// `_meta.traceparent` (and `tracestate`) in every era and transport, and over HTTP also
    /// as the `traceparent` (and `tracestate`) headers.
    pub trace: Option<TraceContext>,
    /// Whether the request may be sent again when a server restart interrupts it (see
    /// [`Repeatable`]); a `tools/call` is not, unless its caller says so.
    pub repeatable: Repeatable,
}

/// Whether a request may be sent again after a server restart interrupted it: it was sent,
/// and its answer was lost (the process exited, the connection or response stream broke),
/// so it may or may not have run. A request that may is sent once more; one that may not
/// fails with [`SessionError::Restarted`](crate::SessionError::Restarted).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Repeatable {
    /// As its method says ([`repeatable_method`]): listings, `resources/read`,
    /// `prompts/get`, `completion/complete`, `ping` may; a `tools/call` may not.
    #[default]
    ByMethod,
    /// The caller knows that running it twice does no harm: a tool whose annotations say
    /// `readOnlyHint: true` or `idempotentHint: true`. Annotations are the server's word: a
    /// server that lies about its tool gets that tool called again.
    Idempotent,
}

impl Repeatable {
    /// Whether `method`, with this choice, may be sent again after an interruption.
    pub fn allows(self, method: &str) -> bool {
        self == Repeatable::Idempotent || repeatable_method(method)
    }

    /// [`Repeatable::Idempotent`] when a tool definition's `annotations` say
    /// `readOnlyHint: true` or `idempotentHint: true`, else [`Repeatable::ByMethod`].
    pub fn of_tool(definition: &Value) -> Repeatable {
        let annotations = definition.get("annotations");
        let hint = |name: &str| {
            annotations
                .and_then(|a| a.get(name))
                .and_then(Value::as_bool)
                .unwrap_or(false)
        };
        if hint("readOnlyHint") || hint("idempotentHint") {
            Repeatable::Idempotent
        } else {
            Repeatable::ByMethod
        }
    }
}

/// Whether a request with this method can run twice without harm: it only reads (the
/// listings, `resources/read`, `prompts/get`, `completion/complete`, the skills
/// extension's reads, `ping`, `server/discover`). A `tools/call` is not, whatever the tool: its annotations decide
/// ([`Repeatable::of_tool`]).
pub fn repeatable_method(method: &str) -> bool {
    use switchboard_protocol::methods;
    [
        methods::TOOLS_LIST,
        methods::PROMPTS_LIST,
        methods::RESOURCES_LIST,
        methods::RESOURCES_TEMPLATES_LIST,
        methods::RESOURCES_READ,
        methods::PROMPTS_GET,
        methods::COMPLETION_COMPLETE,
        methods::SKILLS_LIST,
        methods::SKILLS_GET,
        methods::PING,
        methods::SERVER_DISCOVER,
    ]
    .contains(&method)
}

/// A W3C trace context (`traceparent`, optional `tracestate`), as the caller made it; the
/// session sends it as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    /// `00-<trace id>-<span id>-<flags>`.
    pub traceparent: String,
    /// Vendor entries, passed on from the caller's own parent.
    pub tracestate: Option<String>,
}

impl TraceContext {
    /// The entries as `(name, value)`: `traceparent`, then `tracestate` when there is one
    /// (the names are the headers' and the `_meta` keys alike).
    pub fn entries(&self) -> impl Iterator<Item = (&'static str, &str)> {
        std::iter::once((TRACEPARENT, self.traceparent.as_str()))
            .chain(self.tracestate.as_deref().map(|state| (TRACESTATE, state)))
    }
}

/// The W3C trace context's parent entry (a header, and a `_meta` key in MCP).
pub const TRACEPARENT: &str = "traceparent";
/// The W3C trace context's vendor entry.
pub const TRACESTATE: &str = "tracestate";

/// A tool call a host makes for a client of its own, as a 2026-07-28 gateway does: the
/// client's declared capabilities go to the server in place of the session's (so the server
/// asks only for input that client can give), and an `input_required` answer is returned
/// to the caller as it came instead of being fulfilled here; the client's retry carries
/// its `inputResponses` and `requestState` back ([`Session::call_tool_for_client`](crate::Session::call_tool_for_client)).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ForClient {
    /// The client's capabilities for this request (2026-07-28 servers only).
    pub capabilities: Option<Value>,
    /// `inputResponses` of the client's retry.
    pub input_responses: Option<Value>,
    /// `requestState` of the client's retry, byte for byte.
    pub request_state: Option<String>,
    /// The log level the client wants for the request, as MCP names it (`"debug"` …;
    /// 2026-07-28 servers only, as `_meta`).
    pub log_level: Option<String>,
}
