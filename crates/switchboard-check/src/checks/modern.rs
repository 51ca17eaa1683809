//! The 2026-07-28 server rules a client can observe, each probed with requests the session
//! never sends (over stdio on the main connection, over HTTP as raw requests with headers
//! of the check's choosing):
//!
//! - `discover`: `server/discover` answers with `supportedVersions`, `capabilities`, the
//!   cache hints and `resultType: "complete"`, and names the server in `_meta` (SHOULD).
//! - `request-meta`: a request without `_meta`, without its protocol version or without
//!   its client capabilities is malformed: -32602, over HTTP with 400; `clientInfo` is
//!   optional.
//! - `unsupported-version`: a version the server does not implement gets -32022 (400) with
//!   `data.supported` (a subset of what `server/discover` lists) and `data.requested`.
//! - `http-headers`: `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` that are missing
//!   or disagree with the body get 400 and -32020; header names are case-insensitive.
//! - `removed-methods`: the methods 2026-07-28 removed, and unknown ones, get 404 and -32601
//!   with a modern `MCP-Protocol-Version`.
//! - `cache-hints`: every `complete` list (and read) result carries `ttlMs` and
//!   `cacheScope`, the same scope on every page; tools come in the same order twice
//!   (SHOULD).
//! - `unknown-resource`: an unknown resource is an error (never empty `contents`),
//!   -32602 with `data.uri` (SHOULD).
//! - `error-codes`: no error code the revision reserves or retired (-32023…-32099, -32002,
//!   -32042, the pre-release -32001/-32003/-32004) in any answer these checks got.
//!
//! - `param-headers`, `input-required` and `subscriptions-listen`: in their own modules
//!   (`params.rs`, `input.rs`, `listen.rs`), sent through this module's [`Prober`].
//!
//! All are skipped, with the reason, for a server whose session negotiated the legacy era.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use switchboard_protocol::headers::{ParamHeaders, header_params, header_value};
use switchboard_protocol::{Era, MODERN_VERSION, error_codes, meta, methods};
use switchboard_wire::codes::{INVALID_PARAMS, METHOD_NOT_FOUND};
use switchboard_wire::{Connection, RequestId};

use crate::catalog::{Transport, ids};
use crate::checks::{EVIDENCE_VALUE_BYTES, ToolSet, input, listen, params};
use crate::options::Options;
use crate::raw::{RawHttp, RawRequest, exchange, modern_meta};
use crate::recorder::Recorder;
use crate::report::{CheckResult, Evidence, Exchange, Finding, capped};

/// A protocol version no revision defines.
const BOGUS_VERSION: &str = "1900-01-01";
/// A tool no server has.
pub(crate) const NO_SUCH_TOOL: &str = "switchboard-check-no-such-tool";
/// Most pages of one list read by `cache-hints` and `param-headers`.
pub(crate) const MAX_PAGES: usize = 100;
/// The 2026-07-28 methods whose `Mcp-Name` header mirrors a parameter.
const NAMED: &[(&str, &str)] = &[
    (methods::TOOLS_CALL, "name"),
    (methods::PROMPTS_GET, "name"),
    (methods::RESOURCES_READ, "uri"),
];

/// Where the probes go.
pub(crate) enum Channel<'a> {
    /// The main stdio connection (no headers), with the recorder that sees its frames.
    Stdio(&'a Connection, &'a Recorder),
    /// Raw HTTP requests.
    Http(&'a RawHttp),
}

/// What the 2026-07-28 checks need to know about the server.
pub(crate) struct ModernTarget<'a> {
    pub(crate) channel: Channel<'a>,
    /// The era the main session negotiated.
    pub(crate) era: Era,
    pub(crate) timeout: Duration,
    /// The tools the main session listed, when it could.
    pub(crate) tools: Option<&'a ToolSet>,
    pub(crate) options: &'a Options,
}

impl ModernTarget<'_> {
    pub(crate) fn transport(&self) -> Transport {
        match self.channel {
            Channel::Stdio(..) => Transport::Stdio,
            Channel::Http(_) => Transport::Http,
        }
    }
}

/// What the 2026-07-28 checks found, and the requests they left open on purpose (a listen
/// stream ended with `notifications/cancelled`), which no later check holds against the
/// server.
pub(crate) struct ModernOutcome {
    pub(crate) results: Vec<CheckResult>,
    pub(crate) cancelled: Vec<RequestId>,
}

/// Why a 2026-07-28 check is skipped for a legacy server.
pub(crate) const NOT_MODERN: &str = "the server does not speak the 2026-07-28 protocol: its session negotiated the legacy era (a server that speaks both is checked in 2026-07-28 unless its entry pins `legacy`)";

/// The ids of the 2026-07-28 checks that apply on this transport.
fn applicable(transport: Transport) -> Vec<&'static str> {
    crate::catalog::decided_by(crate::catalog::Stage::Modern)
        .filter(|d| d.applies_to(transport))
        .map(|d| d.id)
        .collect()
}

/// Which headers an HTTP probe carries.
#[derive(Debug, Clone)]
pub(crate) enum Headers {
    /// The standard ones derived from the body: `MCP-Protocol-Version` (the body's
    /// version, else 2026-07-28), `Mcp-Method`, `Mcp-Name` where the method has one.
    Standard,
    /// Exactly these.
    Exact(Vec<(String, String)>),
    /// The standard ones, their names in title case (`Mcp-Method`) on the wire.
    TitleCase,
}

/// What came back for a probe.
pub(crate) struct Answer {
    /// HTTP status (HTTP only).
    pub(crate) status: Option<u16>,
    /// The JSON-RPC response.
    message: Option<Value>,
    /// Why nothing usable came back.
    failure: Option<String>,
    /// The id the probe was sent with.
    sent_id: Value,
    pub(crate) exchange: Exchange,
}

impl Answer {
    pub(crate) fn result(&self) -> Option<&Value> {
        self.message.as_ref()?.get("result")
    }

    pub(crate) fn error(&self) -> Option<&Value> {
        self.message.as_ref()?.get("error")
    }

    pub(crate) fn code(&self) -> Option<i64> {
        self.error()?.get("code")?.as_i64()
    }

    /// True when a JSON-RPC response came back.
    pub(crate) fn answered(&self) -> bool {
        self.message.is_some()
    }

    /// "HTTP 400, JSON-RPC error -32602: …", "a result", "no answer: …".
    pub(crate) fn describe(&self) -> String {
        let rpc = match (self.result(), self.error()) {
            (Some(_), _) => "a result".to_owned(),
            (None, Some(error)) => format!(
                "JSON-RPC error {}: {}",
                error.get("code").unwrap_or(&Value::Null),
                error.get("message").and_then(Value::as_str).unwrap_or("")
            ),
            (None, None) => match &self.failure {
                Some(failure) => format!("no answer: {failure}"),
                None => "no JSON-RPC response".to_owned(),
            },
        };
        match self.status {
            Some(status) => format!("HTTP {status} with {rpc}"),
            None => rpc,
        }
    }

    /// The echoed id differs from the one sent (HTTP; over stdio the connection matches
    /// answers by id).
    fn id_mismatch(&self) -> Option<String> {
        let message = self.message.as_ref()?;
        let id = message.get("id").unwrap_or(&Value::Null);
        (*id != self.sent_id).then(|| {
            format!(
                "the answer carries id {id}, not the request's id {}",
                self.sent_id
            )
        })
    }
}

/// Sends probes and keeps every error code seen for `error-codes`.
pub(crate) struct Prober<'a> {
    pub(crate) target: &'a ModernTarget<'a>,
    next_id: u64,
    codes: Vec<(i64, String)>,
    /// The `Mcp-Param-*` headers of each tool whose annotations the HTTP client accepts,
    /// once `param-headers` read the raw listing: a `tools/call` probe carries them.
    pub(crate) param_headers: HashMap<String, ParamHeaders>,
    /// Requests left open and then cancelled on purpose.
    pub(crate) cancelled: Vec<RequestId>,
}

impl Prober<'_> {
    /// The tool's `Mcp-Param-*` headers for these arguments (`tools/call` over HTTP).
    fn param_header_pairs(&self, method: &str, params: Option<&Value>) -> Vec<(String, String)> {
        if method != methods::TOOLS_CALL {
            return Vec::new();
        }
        let Some(params) = params else {
            return Vec::new();
        };
        let tool = params.get("name").and_then(Value::as_str).unwrap_or("");
        let arguments = params.get("arguments");
        self.param_headers
            .get(tool)
            .into_iter()
            .flatten()
            .filter_map(|(header, property)| {
                let value = header_value(arguments.and_then(|a| a.get(property)))?.ok()?;
                Some((format!("Mcp-Param-{header}"), value))
            })
            .collect()
    }

    pub(crate) async fn send(
        &mut self,
        label: &str,
        method: &str,
        params: Option<Value>,
        headers: Headers,
    ) -> Answer {
        let answer = match &self.target.channel {
            Channel::Stdio(connection, _) => {
                stdio_send(connection, label, method, params, self.target.timeout).await
            }
            Channel::Http(raw) => {
                self.next_id += 1;
                let headers = match headers {
                    Headers::Standard => {
                        let mut exact = standard_headers(method, params.as_ref());
                        exact.extend(self.param_header_pairs(method, params.as_ref()));
                        Headers::Exact(exact)
                    }
                    other => other,
                };
                http_send(raw, label, self.next_id, method, params, headers).await
            }
        };
        if let Some(code) = answer.code() {
            self.codes.push((code, label.to_owned()));
        }
        answer
    }

    /// The next id of an HTTP probe (for a request sent outside [`Prober::send`]).
    pub(crate) fn allocate_http_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Notes an error code an answer carried, for `error-codes`.
    pub(crate) fn saw_code(&mut self, code: i64, label: &str) {
        self.codes.push((code, label.to_owned()));
    }

    /// A request with the full `_meta` and standard headers.
    pub(crate) async fn standard(
        &mut self,
        label: &str,
        method: &str,
        params: Map<String, Value>,
    ) -> Answer {
        let mut params = params;
        params.insert("_meta".into(), Value::Object(modern_meta()));
        self.send(
            label,
            method,
            Some(Value::Object(params)),
            Headers::Standard,
        )
        .await
    }
}

async fn stdio_send(
    connection: &Connection,
    label: &str,
    method: &str,
    params: Option<Value>,
    timeout: Duration,
) -> Answer {
    let started = Instant::now();
    let id = connection.allocate_id();
    let sent_id = id.to_json();
    let outcome = match connection.send_request(id, method, params.as_ref()).await {
        Err(error) => Err(error.to_string()),
        Ok(mut call) => match tokio::time::timeout(timeout, call.response()).await {
            Ok(Ok(outcome)) => Ok(outcome),
            Ok(Err(error)) => Err(error.to_string()),
            Err(_) => Err(format!("no response within {} ms", timeout.as_millis())),
        },
    };
    let (message, failure, received) = match outcome {
        Ok(Ok(result)) => (
            Some(json!({"jsonrpc": "2.0", "id": sent_id, "result": result})),
            None,
            json!({"result": capped(&result, EVIDENCE_VALUE_BYTES)}),
        ),
        Ok(Err(error)) => {
            let error = json!(error);
            (
                Some(json!({"jsonrpc": "2.0", "id": sent_id, "error": error})),
                None,
                json!({"error": capped(&error, EVIDENCE_VALUE_BYTES)}),
            )
        }
        Err(failure) => (None, Some(failure.clone()), json!({"no_response": failure})),
    };
    let mut sent = json!({"method": method});
    if let Some(params) = &params {
        sent["params"] = capped(params, EVIDENCE_VALUE_BYTES);
    }
    Answer {
        status: None,
        message,
        failure,
        sent_id,
        exchange: Exchange {
            label: label.to_owned(),
            sent: Some(sent),
            received: Some(received),
            elapsed: Some(started.elapsed()),
        },
    }
}

/// The standard headers of a body.
pub(crate) fn standard_headers(method: &str, params: Option<&Value>) -> Vec<(String, String)> {
    let version = params
        .and_then(|p| p.pointer("/_meta"))
        .and_then(|m| m.get(meta::PROTOCOL_VERSION))
        .and_then(Value::as_str)
        .unwrap_or(MODERN_VERSION);
    let mut headers = vec![
        ("MCP-Protocol-Version".to_owned(), version.to_owned()),
        ("Mcp-Method".to_owned(), method.to_owned()),
    ];
    if let Some((_, field)) = NAMED.iter().find(|(m, _)| *m == method)
        && let Some(name) = params.and_then(|p| p.get(*field)).and_then(Value::as_str)
    {
        headers.push((
            "Mcp-Name".to_owned(),
            switchboard_protocol::headers::header_text(name),
        ));
    }
    headers
}

async fn http_send(
    raw: &RawHttp,
    label: &str,
    id: u64,
    method: &str,
    params: Option<Value>,
    headers: Headers,
) -> Answer {
    let (exact_headers, title_case) = match headers {
        Headers::Standard => (standard_headers(method, params.as_ref()), None),
        Headers::Exact(headers) => (headers, None),
        Headers::TitleCase => (
            standard_headers(method, params.as_ref()),
            Some(raw.title_case_headers()),
        ),
    };
    let mut body = json!({"jsonrpc": "2.0", "id": id, "method": method});
    if let Some(params) = params {
        body["params"] = params;
    }
    let request = RawRequest {
        body: Some(body),
        exact_headers,
        ..RawRequest::default()
    };
    let answer = match &title_case {
        None => raw.send(&request).await,
        Some(Ok(title_case)) => title_case.send(&request).await,
        Some(Err(problem)) => {
            return Answer {
                status: None,
                message: None,
                failure: Some(problem.clone()),
                sent_id: json!(id),
                exchange: Exchange {
                    label: label.to_owned(),
                    ..Exchange::default()
                },
            };
        }
    };
    let message = answer
        .message
        .clone()
        .filter(|m| m.get("result").is_some() || m.get("error").is_some());
    Answer {
        status: answer.status,
        failure: answer
            .failure
            .clone()
            .or_else(|| (!answer.excerpt.is_empty()).then(|| answer.excerpt.clone())),
        message,
        sent_id: json!(id),
        exchange: exchange(label, &request, &answer),
    }
}

/// Runs every 2026-07-28 check that applies on this transport.
pub(crate) async fn run(target: &ModernTarget<'_>) -> ModernOutcome {
    let transport = target.transport();
    if target.era != Era::Modern {
        let reason = NOT_MODERN;
        return ModernOutcome {
            results: applicable(transport)
                .into_iter()
                .map(|id| CheckResult::skip(id, reason))
                .collect(),
            cancelled: Vec::new(),
        };
    }
    let mut prober = Prober {
        target,
        next_id: 0,
        codes: Vec::new(),
        param_headers: HashMap::new(),
        cancelled: Vec::new(),
    };
    let mut results = Vec::new();
    let (result, discovered) = discover(&mut prober).await;
    results.push(result);
    results.push(request_meta(&mut prober).await);
    results.push(unsupported_version(&mut prober, discovered.as_ref()).await);
    // Reads the raw listing, which the probes that call tools need for their headers.
    results.push(params::run(&mut prober, discovered.as_ref()).await);
    if transport == Transport::Http {
        results.push(http_headers(&mut prober, discovered.as_ref()).await);
        results.push(removed_methods(&mut prober).await);
    }
    results.push(cache_hints(&mut prober, discovered.as_ref()).await);
    results.push(input::run(&mut prober, discovered.as_ref()).await);
    results.push(listen::run(&mut prober, discovered.as_ref()).await);
    results.push(unknown_resource(&mut prober, discovered.as_ref()).await);
    results.push(error_codes(&mut prober, discovered.as_ref()).await);
    ModernOutcome {
        results,
        cancelled: prober.cancelled,
    }
}

/// The accepted annotations of a raw `tools/list` entry, for the probes' headers.
pub(crate) fn accepted_param_headers(tool: &Value) -> Option<ParamHeaders> {
    header_params(tool.get("inputSchema")?).ok()
}

/// What `server/discover` told: the versions and capabilities.
pub(crate) struct Discovered {
    versions: Vec<String>,
    pub(crate) capabilities: Map<String, Value>,
}

impl Discovered {
    pub(crate) fn declares(&self, capability: &str) -> bool {
        self.capabilities
            .get(capability)
            .is_some_and(Value::is_object)
    }
}

/// Findings about a cacheable `complete` result's `ttlMs` and `cacheScope`.
pub(crate) fn hint_findings(what: &str, result: &Value, findings: &mut Vec<Finding>) {
    match result.get("ttlMs") {
        Some(ttl) if ttl.as_u64().is_some() => {}
        Some(ttl) => findings.push(Finding::error(format!(
            "{what}: `ttlMs` is {ttl}, not a whole number of milliseconds ≥ 0"
        ))),
        None => findings.push(Finding::error(format!(
            "{what}: no `ttlMs` (a `complete` cacheable result MUST carry the cache hints)"
        ))),
    }
    match result.get("cacheScope").and_then(Value::as_str) {
        Some("public" | "private") => {}
        Some(other) => findings.push(Finding::error(format!(
            "{what}: `cacheScope` is \"{other}\", not \"public\" or \"private\""
        ))),
        None => findings.push(Finding::error(format!(
            "{what}: no `cacheScope` (a `complete` cacheable result MUST carry the cache hints)"
        ))),
    }
}

async fn discover(prober: &mut Prober<'_>) -> (CheckResult, Option<Discovered>) {
    let answer = prober
        .standard(
            "`server/discover` with the full `_meta`",
            methods::SERVER_DISCOVER,
            Map::new(),
        )
        .await;
    let mut evidence = Evidence::default();
    evidence.exchanges.push(answer.exchange.clone());
    let Some(result) = answer.result() else {
        let summary = format!("`server/discover` got {}", answer.describe());
        return (CheckResult::finding(ids::DISCOVER, summary, evidence), None);
    };
    let mut findings = Vec::new();
    match result.get("resultType").and_then(Value::as_str) {
        Some("complete") => {}
        other => findings.push(Finding::error(format!(
            "`resultType` is {}, not \"complete\"",
            other.map_or("missing".to_owned(), |t| format!("\"{t}\""))
        ))),
    }
    let versions: Option<Vec<String>> = result
        .get("supportedVersions")
        .and_then(Value::as_array)
        .and_then(|list| list.iter().map(|v| v.as_str().map(str::to_owned)).collect());
    match &versions {
        None => findings.push(Finding::error(
            "`supportedVersions` is missing or not a list of strings",
        )),
        Some(list) if !list.iter().any(|v| v == MODERN_VERSION) => {
            findings.push(Finding::error(format!(
                "`supportedVersions` ({}) leaves out {MODERN_VERSION}, the version this request was served in",
                list.join(", ")
            )));
        }
        Some(_) => {}
    }
    let capabilities = result.get("capabilities").and_then(Value::as_object);
    if capabilities.is_none() {
        findings.push(Finding::error("`capabilities` is missing or not an object"));
    }
    if let Some(instructions) = result.get("instructions")
        && !instructions.is_string()
    {
        findings.push(Finding::error("`instructions` is not a string"));
    }
    hint_findings("the discover result", result, &mut findings);
    let info = result
        .pointer("/_meta")
        .and_then(|m| m.get(meta::SERVER_INFO));
    let named = info.is_some_and(|i| {
        i.get("name").is_some_and(Value::is_string)
            && i.get("version").is_some_and(Value::is_string)
    });
    if !named {
        findings.push(Finding::warning(format!(
            "`_meta[\"{}\"]` with `name` and `version` is missing: results SHOULD name the server",
            meta::SERVER_INFO
        )));
    }
    let discovered = Discovered {
        versions: versions.unwrap_or_default(),
        capabilities: capabilities.cloned().unwrap_or_default(),
    };
    // A method behind a capability the server does not declare does not exist for clients.
    if capabilities.is_some() {
        for (capability, method) in [
            ("tools", methods::TOOLS_LIST),
            ("prompts", methods::PROMPTS_LIST),
            ("resources", methods::RESOURCES_LIST),
        ] {
            if discovered.declares(capability) {
                continue;
            }
            let what = format!("`{method}` to a server that does not declare `{capability}`");
            let answer = prober.standard(&what, method, Map::new()).await;
            refusal_findings(&what, &answer, METHOD_NOT_FOUND, 404, &mut findings);
            evidence.exchanges.push(answer.exchange);
        }
    }
    let result = CheckResult::from_findings(
        ids::DISCOVER,
        &findings,
        format!(
            "`server/discover` lists {} with capabilities, cache hints and the server's name; no undeclared list is served",
            discovered.versions.join(", ")
        ),
        evidence,
    );
    (result, Some(discovered))
}

/// Findings for a probe that must be refused with `code` (and, over HTTP, `status`).
pub(crate) fn refusal_findings(
    what: &str,
    answer: &Answer,
    code: i64,
    status: u16,
    findings: &mut Vec<Finding>,
) {
    if answer.result().is_some() {
        findings.push(Finding::error(format!(
            "{what} was served ({}), not refused with {code}",
            answer.describe()
        )));
        return;
    }
    let code_ok = answer.code() == Some(code);
    let status_ok = answer.status.is_none_or(|s| s == status);
    if !code_ok || !status_ok {
        let expected = match answer.status {
            Some(_) => format!("HTTP {status} with JSON-RPC error {code}"),
            None => format!("JSON-RPC error {code}"),
        };
        findings.push(Finding::error(format!(
            "{what} got {}, not {expected}",
            answer.describe()
        )));
    }
    if let Some(mismatch) = answer.id_mismatch() {
        findings.push(Finding::error(format!("{what}: {mismatch}")));
    }
}

async fn request_meta(prober: &mut Prober<'_>) -> CheckResult {
    let mut evidence = Evidence::default();
    let mut findings = Vec::new();
    let without = |key: &str| {
        let mut fields = modern_meta();
        fields.remove(key);
        json!({"_meta": fields})
    };
    let cases = [
        ("`server/discover` without `_meta`", json!({})),
        (
            "`server/discover` without the protocol version in `_meta`",
            without(meta::PROTOCOL_VERSION),
        ),
        (
            "`server/discover` without the client capabilities in `_meta`",
            without(meta::CLIENT_CAPABILITIES),
        ),
    ];
    for (what, params) in cases {
        let answer = prober
            .send(
                what,
                methods::SERVER_DISCOVER,
                Some(params),
                Headers::Standard,
            )
            .await;
        refusal_findings(what, &answer, INVALID_PARAMS, 400, &mut findings);
        evidence.exchanges.push(answer.exchange);
    }
    let what = "`server/discover` without `clientInfo` (optional)";
    let answer = prober
        .send(
            what,
            methods::SERVER_DISCOVER,
            Some(without(meta::CLIENT_INFO)),
            Headers::Standard,
        )
        .await;
    if answer.result().is_none() {
        findings.push(Finding::error(format!(
            "{what} got {}: `clientInfo` is optional and a request without it must be served",
            answer.describe()
        )));
    }
    evidence.exchanges.push(answer.exchange);
    CheckResult::from_findings(
        ids::REQUEST_META,
        &findings,
        "requests without `_meta`, its protocol version or its client capabilities get -32602 with their id; one without `clientInfo` is served",
        evidence,
    )
}

async fn unsupported_version(
    prober: &mut Prober<'_>,
    discovered: Option<&Discovered>,
) -> CheckResult {
    let mut fields = modern_meta();
    fields.insert(meta::PROTOCOL_VERSION.into(), json!(BOGUS_VERSION));
    let what = format!("`server/discover` in version {BOGUS_VERSION}");
    let answer = prober
        .send(
            &what,
            methods::SERVER_DISCOVER,
            Some(json!({"_meta": fields})),
            Headers::Standard,
        )
        .await;
    let mut evidence = Evidence::default();
    evidence.exchanges.push(answer.exchange.clone());
    let mut findings = Vec::new();
    let code = error_codes::UNSUPPORTED_PROTOCOL_VERSION;
    refusal_findings(&what, &answer, code, 400, &mut findings);
    if answer.code() == Some(code) {
        let data = answer.error().and_then(|e| e.get("data"));
        let requested = data.and_then(|d| d.get("requested"));
        if requested != Some(&json!(BOGUS_VERSION)) {
            findings.push(Finding::error(format!(
                "`data.requested` is {}, not the requested \"{BOGUS_VERSION}\"",
                requested.map_or("missing".to_owned(), Value::to_string)
            )));
        }
        let supported: Option<Vec<&str>> = data
            .and_then(|d| d.get("supported"))
            .and_then(Value::as_array)
            .and_then(|list| list.iter().map(Value::as_str).collect());
        match (supported, discovered) {
            (None, _) => findings.push(Finding::error(
                "`data.supported` is missing or not a list of strings",
            )),
            (Some(list), _) if list.is_empty() => findings.push(Finding::error(
                "`data.supported` is empty: it must name the versions the client can retry with",
            )),
            (Some(list), Some(discovered)) => {
                let extra: Vec<&str> = list
                    .into_iter()
                    .filter(|v| !discovered.versions.iter().any(|d| d == v))
                    .collect();
                if !extra.is_empty() {
                    findings.push(Finding::error(format!(
                        "`data.supported` names {} that `server/discover` does not list",
                        extra.join(", ")
                    )));
                }
            }
            (Some(_), None) => evidence.notes.push(
                "`server/discover` failed, so `data.supported` was not compared with its list"
                    .to_owned(),
            ),
        }
    }
    CheckResult::from_findings(
        ids::UNSUPPORTED_VERSION,
        &findings,
        format!(
            "version {BOGUS_VERSION} gets -32022 naming it and versions `server/discover` lists"
        ),
        evidence,
    )
}

/// `server/discover` with its standard headers' names in capitals, written as they are
/// (no HTTP client library keeps that case); `Err` when the endpoint cannot be reached that
/// way.
async fn capitals(prober: &mut Prober<'_>, what: &str, params: Value) -> Result<Answer, String> {
    let Channel::Http(raw) = prober.target.channel else {
        return Err("not an HTTP server".to_owned());
    };
    let id = prober.allocate_http_id();
    let method = methods::SERVER_DISCOVER;
    let headers: Vec<(String, String)> = standard_headers(method, Some(&params))
        .into_iter()
        .map(|(name, value)| (name.to_ascii_uppercase(), value))
        .collect();
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let answer = raw.send_verbatim(&body, &headers).await?;
    if let Some(code) = answer
        .message
        .as_ref()
        .and_then(|m| m.pointer("/error/code"))
        .and_then(Value::as_i64)
    {
        prober.saw_code(code, what);
    }
    let request = RawRequest {
        body: Some(body),
        exact_headers: headers,
        ..RawRequest::default()
    };
    Ok(Answer {
        status: answer.status,
        message: answer.message.clone(),
        failure: answer.failure.clone(),
        sent_id: json!(id),
        exchange: exchange(what, &request, &answer),
    })
}

pub(crate) fn exact(pairs: &[(&str, &str)]) -> Headers {
    Headers::Exact(
        pairs
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect(),
    )
}

async fn http_headers(prober: &mut Prober<'_>, discovered: Option<&Discovered>) -> CheckResult {
    let mut evidence = Evidence::default();
    let mut findings = Vec::new();
    let discover = methods::SERVER_DISCOVER;
    let full = json!({"_meta": modern_meta()});
    let mut bogus_body = modern_meta();
    bogus_body.insert(meta::PROTOCOL_VERSION.into(), json!(BOGUS_VERSION));
    let version = ("MCP-Protocol-Version", MODERN_VERSION);
    let method = ("Mcp-Method", discover);
    let mut cases: Vec<(String, &str, Value, Headers)> = vec![
        (
            format!("`MCP-Protocol-Version: {MODERN_VERSION}` with {BOGUS_VERSION} in `_meta`"),
            discover,
            json!({"_meta": bogus_body}),
            exact(&[version, method]),
        ),
        (
            "no `MCP-Protocol-Version`".to_owned(),
            discover,
            full.clone(),
            exact(&[method]),
        ),
        (
            "no `Mcp-Method`".to_owned(),
            discover,
            full.clone(),
            exact(&[version]),
        ),
        (
            "`Mcp-Method: tools/list` on a `server/discover`".to_owned(),
            discover,
            full.clone(),
            exact(&[version, ("Mcp-Method", methods::TOOLS_LIST)]),
        ),
        (
            "`Mcp-Method: SERVER/DISCOVER` (method names are case-sensitive)".to_owned(),
            discover,
            full.clone(),
            exact(&[version, ("Mcp-Method", "SERVER/DISCOVER")]),
        ),
    ];
    let has_tools = discovered.is_some_and(|d| d.declares("tools"));
    if has_tools {
        let call = json!({"name": NO_SUCH_TOOL, "arguments": {}, "_meta": modern_meta()});
        let call_method = ("Mcp-Method", methods::TOOLS_CALL);
        cases.push((
            "`tools/call` without `Mcp-Name`".to_owned(),
            methods::TOOLS_CALL,
            call.clone(),
            exact(&[version, call_method]),
        ));
        cases.push((
            "`tools/call` whose `Mcp-Name` is not the body's tool".to_owned(),
            methods::TOOLS_CALL,
            call,
            exact(&[version, call_method, ("Mcp-Name", "another-tool")]),
        ));
    } else {
        evidence.notes.push(
            "the server declares no `tools`, so `Mcp-Name` was not probed with `tools/call`"
                .to_owned(),
        );
    }
    for (what, method, params, headers) in cases {
        let answer = prober.send(&what, method, Some(params), headers).await;
        refusal_findings(
            &what,
            &answer,
            error_codes::HEADER_MISMATCH,
            400,
            &mut findings,
        );
        evidence.exchanges.push(answer.exchange);
    }
    if has_tools {
        // RFC 9110 strips the whitespace around a field value; a server must too.
        let what = "`tools/call` whose `Mcp-Name` has spaces around the tool's name";
        let call = json!({"name": NO_SUCH_TOOL, "arguments": {}, "_meta": modern_meta()});
        let padded = format!("  {NO_SUCH_TOOL}  ");
        let headers = exact(&[
            version,
            ("Mcp-Method", methods::TOOLS_CALL),
            ("Mcp-Name", &padded),
        ]);
        let answer = prober
            .send(what, methods::TOOLS_CALL, Some(call), headers)
            .await;
        if answer.code() == Some(error_codes::HEADER_MISMATCH) || !answer.answered() {
            findings.push(Finding::error(format!(
                "{what} got {}: whitespace around a header value is not part of it",
                answer.describe()
            )));
        }
        evidence.exchanges.push(answer.exchange);
    }
    let what = "header names in title case (`Mcp-Protocol-Version`, `Mcp-Method`) on the wire";
    let answer = prober
        .send(what, discover, Some(full.clone()), Headers::TitleCase)
        .await;
    if answer.result().is_none() {
        findings.push(Finding::error(format!(
            "{what} got {}: header names are case-insensitive",
            answer.describe()
        )));
    }
    evidence.exchanges.push(answer.exchange);
    let what = "header names in capitals (`MCP-PROTOCOL-VERSION`, `MCP-METHOD`) on the wire";
    match capitals(prober, what, full).await {
        Ok(answer) => {
            if answer.status.is_none_or(|s| !(200..300).contains(&s)) {
                findings.push(Finding::error(format!(
                    "{what} got {}: header names are case-insensitive",
                    answer.describe()
                )));
            }
            evidence.exchanges.push(answer.exchange);
        }
        Err(why) => evidence.notes.push(format!("{what} were not sent: {why}")),
    }
    CheckResult::from_findings(
        ids::HTTP_HEADERS,
        &findings,
        "missing or mismatched `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` get 400 with -32020; header names in title case are accepted",
        evidence,
    )
}

async fn removed_methods(prober: &mut Prober<'_>) -> CheckResult {
    let mut evidence = Evidence::default();
    let mut findings = Vec::new();
    // Each removed method carries the 2026-07-28 `_meta` only, as the official suite sends
    // them: params of the legacy shape (an `initialize`'s `protocolVersion`, a subscribe's
    // `uri`) would let a server refuse the request for contradicting its headers instead.
    let cases = [
        methods::INITIALIZE,
        methods::PING,
        methods::LOGGING_SET_LEVEL,
        methods::RESOURCES_SUBSCRIBE,
        methods::RESOURCES_UNSUBSCRIBE,
        "switchboard-check/no-such-method",
    ];
    for method in cases {
        let what = format!("`{method}` with `MCP-Protocol-Version: {MODERN_VERSION}`");
        let answer = prober.standard(&what, method, Map::new()).await;
        refusal_findings(&what, &answer, METHOD_NOT_FOUND, 404, &mut findings);
        evidence.exchanges.push(answer.exchange);
    }
    CheckResult::from_findings(
        ids::REMOVED_METHODS,
        &findings,
        "`initialize`, `ping`, `logging/setLevel`, `resources/subscribe`, `resources/unsubscribe` and an unknown method get 404 with -32601",
        evidence,
    )
}

/// One list read through its pages: the entries' names (or URIs) in order.
async fn read_list(
    prober: &mut Prober<'_>,
    method: &str,
    field: &str,
    evidence: &mut Evidence,
    findings: &mut Vec<Finding>,
) -> Option<Vec<String>> {
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    let mut scope: Option<String> = None;
    for page in 1..=MAX_PAGES {
        let mut params = Map::new();
        if let Some(cursor) = &cursor {
            params.insert("cursor".into(), json!(cursor));
        }
        let what = format!("`{method}` page {page}");
        let answer = prober.standard(&what, method, params).await;
        if page == 1 || answer.result().is_none() {
            evidence.exchanges.push(answer.exchange.clone());
        }
        let Some(result) = answer.result() else {
            findings.push(Finding::error(format!("{what} got {}", answer.describe())));
            return None;
        };
        match result.get("resultType").and_then(Value::as_str) {
            Some("complete") => hint_findings(&what, result, findings),
            other => findings.push(Finding::error(format!(
                "{what}: `resultType` is {}, not \"complete\" (lists are never `input_required`)",
                other.map_or("missing".to_owned(), |t| format!("\"{t}\""))
            ))),
        }
        if let Some(this) = result.get("cacheScope").and_then(Value::as_str) {
            match &scope {
                Some(first) if first != this => findings.push(Finding::error(format!(
                    "{what}: `cacheScope` is \"{this}\" after \"{first}\" on page 1; all pages of a list MUST share one"
                ))),
                Some(_) => {}
                None => scope = Some(this.to_owned()),
            }
        }
        names.extend(
            result
                .get(field)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|e| e.get("name").or_else(|| e.get("uri")))
                .filter_map(Value::as_str)
                .map(str::to_owned),
        );
        match result.get("nextCursor").and_then(Value::as_str) {
            Some(next) if cursor.as_deref() != Some(next) => cursor = Some(next.to_owned()),
            _ => return Some(names),
        }
    }
    evidence
        .notes
        .push(format!("`{method}` was read up to {MAX_PAGES} pages"));
    Some(names)
}

async fn cache_hints(prober: &mut Prober<'_>, discovered: Option<&Discovered>) -> CheckResult {
    let Some(discovered) = discovered else {
        return CheckResult::skip(
            ids::CACHE_HINTS,
            "`server/discover` failed (see `discover`), so the server's lists are not known",
        );
    };
    let mut evidence = Evidence::default();
    let mut findings = Vec::new();
    let lists = [
        ("tools", methods::TOOLS_LIST, "tools"),
        ("prompts", methods::PROMPTS_LIST, "prompts"),
        ("resources", methods::RESOURCES_LIST, "resources"),
        (
            "resources",
            methods::RESOURCES_TEMPLATES_LIST,
            "resourceTemplates",
        ),
    ];
    let mut read = Vec::new();
    let mut first_resource = None;
    for (capability, method, field) in lists {
        if !discovered.declares(capability) {
            continue;
        }
        read.push(format!("`{method}`"));
        let names = read_list(prober, method, field, &mut evidence, &mut findings).await;
        if method == methods::RESOURCES_LIST {
            first_resource = names.as_ref().and_then(|n| n.first().cloned());
        }
        if method == methods::TOOLS_LIST
            && let Some(first) = names
        {
            let mut scratch = Evidence::default();
            let mut ignored = Vec::new();
            let again = read_list(prober, method, field, &mut scratch, &mut ignored).await;
            if let Some(again) = again
                && again != first
            {
                findings.push(Finding::warning(format!(
                    "`tools/list` gave the tools in another order the second time ({} then {}): tools SHOULD come in a deterministic order",
                    shown(&first),
                    shown(&again)
                )));
            }
        }
    }
    if let Some(uri) = first_resource {
        let what = format!("`resources/read` of `{uri}`");
        let mut params = Map::new();
        params.insert("uri".into(), json!(uri));
        let answer = prober
            .standard(&what, methods::RESOURCES_READ, params)
            .await;
        if let Some(result) = answer.result()
            && result.get("resultType").and_then(Value::as_str) == Some("complete")
        {
            hint_findings(&what, result, &mut findings);
        }
        evidence.exchanges.push(answer.exchange);
        read.push("`resources/read`".to_owned());
    }
    if read.is_empty() {
        return CheckResult::skip(
            ids::CACHE_HINTS,
            "the server declares no `tools`, `prompts` or `resources`",
        );
    }
    CheckResult::from_findings(
        ids::CACHE_HINTS,
        &findings,
        format!(
            "{} carry `ttlMs` and one `cacheScope` on every page; tools come in the same order twice",
            read.join(", ")
        ),
        evidence,
    )
}

/// The first names of a list, for a finding.
fn shown(names: &[String]) -> String {
    let mut text: Vec<&str> = names.iter().take(5).map(String::as_str).collect();
    if names.len() > 5 {
        text.push("…");
    }
    text.join(", ")
}

/// A resource no server has.
const NO_SUCH_RESOURCE: &str = "switchboard-check://no-such-resource";

/// `unknown-resource`: reading a resource that does not exist is an error (never a result
/// with empty `contents`), -32602 with the URI in `data.uri` (both SHOULD).
async fn unknown_resource(prober: &mut Prober<'_>, discovered: Option<&Discovered>) -> CheckResult {
    if !discovered.is_some_and(|d| d.declares("resources")) {
        return CheckResult::skip(
            ids::UNKNOWN_RESOURCE,
            "the server declares no `resources` (or `server/discover` failed)",
        );
    }
    let what = "`resources/read` of a resource the server does not have";
    let mut params = Map::new();
    params.insert("uri".into(), json!(NO_SUCH_RESOURCE));
    let answer = prober.standard(what, methods::RESOURCES_READ, params).await;
    let mut evidence = Evidence::default();
    let mut findings = Vec::new();
    if let Some(result) = answer.result() {
        let contents = result.get("contents").and_then(Value::as_array);
        if contents.is_none_or(Vec::is_empty) {
            findings.push(Finding::error(format!(
                "{what} got a result with no `contents`: a resource that does not exist MUST be reported as an error"
            )));
        } else {
            evidence.notes.push(format!(
                "the server answered `{NO_SUCH_RESOURCE}` with contents: it serves every URI (a template may match anything), so there is no unknown resource to judge"
            ));
        }
    } else if let Some(code) = answer.code() {
        if code != INVALID_PARAMS {
            findings.push(Finding::warning(format!(
                "{what} got error code {code}: 2026-07-28 reports an unknown resource with -32602"
            )));
        }
        let uri = answer.error().and_then(|e| e.pointer("/data/uri"));
        if uri != Some(&json!(NO_SUCH_RESOURCE)) {
            findings.push(Finding::warning(format!(
                "{what}: the error's `data.uri` is {}, not the URI asked for",
                uri.map_or("missing".to_owned(), Value::to_string)
            )));
        }
    } else {
        findings.push(Finding::error(format!("{what} got {}", answer.describe())));
    }
    evidence.exchanges.push(answer.exchange);
    CheckResult::from_findings(
        ids::UNKNOWN_RESOURCE,
        &findings,
        "an unknown resource is an error, -32602 naming its URI in `data.uri`",
        evidence,
    )
}

/// Why an error code is one a 2026-07-28 server must not send, if it is.
fn forbidden_code(code: i64) -> Option<&'static str> {
    match code {
        -32001 => Some("the pre-release number of -32020 (HeaderMismatch)"),
        -32003 => Some("the pre-release number of -32021 (MissingRequiredClientCapability)"),
        -32004 => Some("the pre-release number of -32022 (UnsupportedProtocolVersion)"),
        error_codes::RESOURCE_NOT_FOUND_LEGACY => {
            Some("the legacy resource-not-found code (2026-07-28 uses -32602)")
        }
        error_codes::URL_ELICITATION_REQUIRED => Some("a 2025-11-25 code the revision removed"),
        -32099..=-32023 => Some("reserved for the specification, which defines no such code"),
        _ => None,
    }
}

async fn error_codes(prober: &mut Prober<'_>, discovered: Option<&Discovered>) -> CheckResult {
    let mut evidence = Evidence::default();
    let declares = |capability: &str| discovered.is_some_and(|d| d.declares(capability));
    let mut probes: Vec<(&str, &str, Value)> = Vec::new();
    if declares("tools") {
        probes.push((
            "`tools/call` of a tool the server does not have",
            methods::TOOLS_CALL,
            json!({"name": NO_SUCH_TOOL, "arguments": {}}),
        ));
    }
    if declares("prompts") {
        probes.push((
            "`prompts/get` of a prompt the server does not have",
            methods::PROMPTS_GET,
            json!({"name": "switchboard-check-no-such-prompt"}),
        ));
    }
    // (`unknown-resource` read a resource the server does not have: its code is counted.)
    for (what, method, params) in probes {
        let Value::Object(params) = params else {
            continue;
        };
        let answer = prober.standard(what, method, params).await;
        evidence.exchanges.push(answer.exchange);
    }
    let mut findings = Vec::new();
    for (code, label) in &prober.codes {
        if let Some(why) = forbidden_code(*code) {
            findings.push(Finding::warning(format!(
                "{label} got error code {code}: {why}"
            )));
        }
    }
    let mut seen: Vec<i64> = prober.codes.iter().map(|(c, _)| *c).collect();
    seen.sort_unstable();
    seen.dedup();
    let seen: Vec<String> = seen.iter().map(i64::to_string).collect();
    evidence.notes.push(format!(
        "error codes in the answers of the 2026-07-28 checks: {}",
        if seen.is_empty() {
            "none".to_owned()
        } else {
            seen.join(", ")
        }
    ));
    CheckResult::from_findings(
        ids::ERROR_CODES,
        &findings,
        format!(
            "no reserved, retired or pre-release error code in {} answers",
            prober.codes.len()
        ),
        evidence,
    )
}
