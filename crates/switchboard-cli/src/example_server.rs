//! The bundled example server (`switchboard example-server`, hidden): a small, well-behaved
//! MCP server on stdin/stdout that the command runs when no `--config` is given. Legacy era
//! only (`initialize`), tools only: `echo`, `add`, `slow` (progress, cancellation) and
//! `fail`. It exits when stdin closes, abandoning calls still running; every request in
//! flight is answered or cancelled, and at most [`MAX_CALLS_IN_FLIGHT`] run at once.

use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Map, Value, json};
use switchboard_protocol::{LATEST_LEGACY_VERSION, LEGACY_VERSIONS, methods};
use switchboard_wire::codes::{INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR};
use switchboard_wire::{
    Connection, ConnectionOptions, ErrorObject, Inbound, Malformed, MalformedKind, Request,
    RequestId,
};
use tokio::task::{AbortHandle, JoinSet};

/// `serverInfo.name` unless `--name` sets it.
const DEFAULT_NAME: &str = "switchboard-example";
/// `serverInfo.version`.
const VERSION: &str = "0.1.0";
/// Calls running at once; a request beyond it is refused at once.
pub(crate) const MAX_CALLS_IN_FLIGHT: usize = 64;
/// The longest `slow` sleeps, in milliseconds.
const MAX_SLOW_MS: u64 = 60_000;
/// The most progress steps `slow` takes.
const MAX_SLOW_STEPS: u64 = 100;

/// Serves until stdin closes. `args` are what followed `example-server`.
pub(crate) fn run(args: Vec<String>) -> ExitCode {
    let name = match parse_name(&args) {
        Ok(name) => name,
        Err(problem) => {
            crate::terminal::say(format_args!("switchboard example-server: {problem}"));
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            crate::terminal::say(format_args!(
                "switchboard example-server: could not start the async runtime: {error}"
            ));
            return ExitCode::from(1);
        }
    };
    runtime.block_on(serve(name));
    ExitCode::SUCCESS
}

/// `--name NAME` (optional), nothing else.
fn parse_name(args: &[String]) -> Result<String, String> {
    match args {
        [] => Ok(DEFAULT_NAME.to_owned()),
        [flag, name] if flag == "--name" => Ok(name.clone()),
        _ => Err(format!(
            "unexpected arguments {args:?}; usage: example-server [--name NAME]"
        )),
    }
}

/// The calls running, by request id, so `notifications/cancelled` can stop one.
#[derive(Default)]
struct Running {
    calls: Mutex<HashMap<RequestId, AbortHandle>>,
}

impl Running {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, AbortHandle>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

async fn serve(name: String) {
    let (stdin, stdout) = switchboard_wire::stdio::own_stdio();
    let (connection, mut inbound) =
        Connection::start(stdin, stdout, ConnectionOptions::new("client"), None);
    let running = Arc::new(Running::default());
    let mut tasks = JoinSet::new();
    while let Some(message) = inbound.recv().await {
        // Reap finished calls so the set stays as small as the calls in flight.
        while tasks.try_join_next().is_some() {}
        match message {
            Inbound::Request(request) => {
                dispatch(&connection, &running, &mut tasks, &name, request).await
            }
            Inbound::Notification(notification) => {
                if notification.method == methods::CANCELLED {
                    cancel(&running, notification.params.as_ref());
                }
            }
            Inbound::Malformed(malformed) => answer_malformed(&connection, &malformed).await,
            // We send no requests: any response is one we never asked for.
            Inbound::UnexpectedResponse { .. } => {}
        }
    }
    // stdin closed: calls still running are abandoned, as the client went away.
    tasks.abort_all();
}

async fn dispatch(
    connection: &Connection,
    running: &Arc<Running>,
    tasks: &mut JoinSet<()>,
    name: &str,
    request: Request,
) {
    let answer = match request.method.as_str() {
        methods::INITIALIZE => Ok(initialize_result(name, request.params.as_ref())),
        methods::PING => Ok(json!({})),
        methods::TOOLS_LIST => Ok(json!({ "tools": tools() })),
        methods::TOOLS_CALL => {
            if running.lock().len() >= MAX_CALLS_IN_FLIGHT {
                Err(ErrorObject::new(
                    INVALID_REQUEST,
                    format!(
                        "too many calls in flight (at most {MAX_CALLS_IN_FLIGHT}); retry when one is done"
                    ),
                ))
            } else {
                start_call(connection, running, tasks, request);
                return;
            }
        }
        _ => Err(ErrorObject::new(METHOD_NOT_FOUND, "Method not found")),
    };
    respond(connection, &request.id, answer).await;
}

async fn respond(connection: &Connection, id: &RequestId, answer: Result<Value, ErrorObject>) {
    // A write fails only when the client is gone; the loop then sees the end of input.
    let _ = match &answer {
        Ok(result) => connection.respond(id, Ok(result)).await,
        Err(error) => connection.respond(id, Err(error)).await,
    };
}

/// A frame that is not JSON-RPC: answered with an error when its id can be read (the
/// client is then not left waiting), else with `id: null`.
async fn answer_malformed(connection: &Connection, malformed: &Malformed) {
    let code = match malformed.kind {
        MalformedKind::InvalidUtf8 | MalformedKind::NotJson | MalformedKind::InvalidJson(_) => {
            PARSE_ERROR
        }
        _ => INVALID_REQUEST,
    };
    let error = ErrorObject::new(code, format!("not a JSON-RPC request: {malformed}"));
    match malformed.request_id() {
        Some(id) => respond(connection, id, Err(error)).await,
        None => {
            let line = json!({"jsonrpc": "2.0", "id": null, "error": error}).to_string() + "\n";
            let _ = connection.send_raw(line.as_bytes()).await;
        }
    }
}

fn initialize_result(name: &str, params: Option<&Value>) -> Value {
    let asked = params
        .and_then(|p| p.get("protocolVersion"))
        .and_then(Value::as_str);
    let version = match asked {
        Some(version) if LEGACY_VERSIONS.contains(&version) => version,
        _ => LATEST_LEGACY_VERSION,
    };
    json!({
        "protocolVersion": version,
        "capabilities": {"tools": {}},
        "serverInfo": {"name": name, "version": VERSION},
        "instructions": "The example server bundled with switchboard: echo, add, slow and fail.",
    })
}

/// A tool taking an object of `properties`, `required` of them, and nothing else.
fn tool(name: &str, description: &str, properties: Value, required: &[&str]) -> Value {
    json!({
        "name": name,
        "description": description,
        "inputSchema": {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        },
    })
}

/// Marks a tool as only reading (the checker calls only such tools unprompted).
fn read_only(mut tool: Value) -> Value {
    tool["annotations"] = json!({"readOnlyHint": true});
    tool
}

fn tools() -> Value {
    let echo = tool(
        "echo",
        "Returns the given text.",
        json!({"text": {"type": "string", "description": "The text to return."}}),
        &["text"],
    );
    let integer = |what: &str| json!({"type": "integer", "description": what});
    let mut add = tool(
        "add",
        "Adds two integers.",
        json!({"a": integer("The first number."), "b": integer("The second number.")}),
        &["a", "b"],
    );
    add["outputSchema"] = json!({
        "type": "object",
        "properties": {"sum": {"type": "integer"}},
        "required": ["sum"],
    });
    let slow = tool(
        "slow",
        "Sleeps in steps, reporting progress after each; stops when cancelled.",
        json!({
            "duration_ms": {
                "type": "integer", "minimum": 0, "maximum": MAX_SLOW_MS, "default": 5000,
                "description": "How long to sleep, in milliseconds.",
            },
            "steps": {
                "type": "integer", "minimum": 1, "maximum": MAX_SLOW_STEPS, "default": 5,
                "description": "How many progress steps to report.",
            },
        }),
        &[],
    );
    let fail = tool("fail", "Always returns a tool error.", json!({}), &[]);
    json!([read_only(echo), read_only(add), read_only(slow), fail])
}

/// Runs one `tools/call` in a task of its own (the reading loop never waits on a tool).
fn start_call(
    connection: &Connection,
    running: &Arc<Running>,
    tasks: &mut JoinSet<()>,
    request: Request,
) {
    let connection = connection.clone();
    let tracked = running.clone();
    let id = request.id.clone();
    // Holding the lock while spawning: the task cannot finish (and untrack itself) before
    // it is tracked.
    let mut calls = running.lock();
    let handle = tasks.spawn(async move {
        let answer = call(&connection, &request).await;
        tracked.lock().remove(&request.id);
        respond(&connection, &request.id, answer).await;
    });
    calls.insert(id, handle);
}

/// `notifications/cancelled`: the call stops and is not answered (the protocol asks for
/// silence). A cancellation of a request not running is ignored.
fn cancel(running: &Running, params: Option<&Value>) {
    let Some(id) = params
        .and_then(|p| p.get("requestId"))
        .and_then(RequestId::from_json)
    else {
        return;
    };
    if let Some(handle) = running.lock().remove(&id) {
        handle.abort();
    }
}

/// A tool's complaint about its arguments (an `isError` result naming the field).
type ArgumentProblem = String;

async fn call(connection: &Connection, request: &Request) -> Result<Value, ErrorObject> {
    let params = request.params.as_ref();
    let Some(name) = params.and_then(|p| p.get("name")).and_then(Value::as_str) else {
        return Err(ErrorObject::new(
            INVALID_PARAMS,
            "tools/call needs a string `name`",
        ));
    };
    let empty = Map::new();
    let arguments = match params.and_then(|p| p.get("arguments")) {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(arguments)) => arguments,
        Some(_) => return Ok(invalid("`arguments` must be an object".to_owned())),
    };
    let outcome = match name {
        "echo" => echo(arguments),
        "add" => add(arguments),
        "slow" => slow(connection, params, arguments).await,
        "fail" => only(arguments, &[])
            .map(|()| json!({"content": [text("this tool always fails")], "isError": true})),
        _ => {
            return Err(ErrorObject::new(
                INVALID_PARAMS,
                format!("unknown tool: {name}; the tools are echo, add, slow and fail"),
            ));
        }
    };
    Ok(outcome.unwrap_or_else(invalid))
}

fn echo(arguments: &Map<String, Value>) -> Result<Value, ArgumentProblem> {
    only(arguments, &["text"])?;
    match arguments.get("text") {
        Some(Value::String(value)) => Ok(json!({"content": [text(value)]})),
        None | Some(Value::Null) => Err("`text` is required (string)".to_owned()),
        Some(_) => Err("`text` must be a string".to_owned()),
    }
}

fn add(arguments: &Map<String, Value>) -> Result<Value, ArgumentProblem> {
    only(arguments, &["a", "b"])?;
    let integer = |field: &str| match arguments.get(field) {
        None | Some(Value::Null) => Err(format!("`{field}` is required (integer)")),
        Some(value) => value
            .as_i64()
            .ok_or_else(|| format!("`{field}` must be an integer")),
    };
    let (a, b) = (integer("a")?, integer("b")?);
    let sum = a
        .checked_add(b)
        .ok_or_else(|| "the sum does not fit in 64 bits".to_owned())?;
    Ok(json!({
        "content": [text(&sum.to_string())],
        "structuredContent": {"sum": sum},
    }))
}

/// Sleeps `duration_ms` in `steps`, sending progress after each step when the call asked
/// for it (`_meta.progressToken`).
async fn slow(
    connection: &Connection,
    params: Option<&Value>,
    arguments: &Map<String, Value>,
) -> Result<Value, ArgumentProblem> {
    only(arguments, &["duration_ms", "steps"])?;
    let duration_ms = bounded(arguments, "duration_ms", 5000, 0..=MAX_SLOW_MS)?;
    let steps = bounded(arguments, "steps", 5, 1..=MAX_SLOW_STEPS)?;
    let token = params
        .and_then(|p| p.pointer("/_meta/progressToken"))
        .cloned();
    let step = Duration::from_millis(duration_ms / steps);
    for done in 1..=steps {
        tokio::time::sleep(step).await;
        if let Some(token) = &token {
            let progress = json!({"progressToken": token, "progress": done, "total": steps});
            let _ = connection.notify(methods::PROGRESS, Some(&progress)).await;
        }
    }
    Ok(json!({"content": [text(&format!("slept {duration_ms} ms in {steps} steps"))]}))
}

/// Rejects fields the schema does not list.
fn only(arguments: &Map<String, Value>, allowed: &[&str]) -> Result<(), ArgumentProblem> {
    match arguments
        .keys()
        .find(|key| !allowed.contains(&key.as_str()))
    {
        Some(unknown) => Err(format!("unknown field `{unknown}`")),
        None => Ok(()),
    }
}

/// An optional integer within `allowed`, `default` when absent.
fn bounded(
    arguments: &Map<String, Value>,
    field: &str,
    default: u64,
    allowed: std::ops::RangeInclusive<u64>,
) -> Result<u64, ArgumentProblem> {
    match arguments.get(field) {
        None | Some(Value::Null) => Ok(default),
        Some(value) => value
            .as_u64()
            .filter(|n| allowed.contains(n))
            .ok_or_else(|| {
                format!(
                    "`{field}` must be an integer from {} to {}",
                    allowed.start(),
                    allowed.end()
                )
            }),
    }
}

fn text(value: &str) -> Value {
    json!({"type": "text", "text": value})
}

fn invalid(problem: ArgumentProblem) -> Value {
    json!({"content": [text(&format!("invalid arguments: {problem}"))], "isError": true})
}
