//! `switchboard request SERVER METHOD [JSON | key=value…]`: any request, sent as it is
//! with the session's own metadata (the 2026-07-28 `_meta`, deadlines), its raw result
//! printed as JSON; `--notify` sends a notification instead. For what the other verbs do
//! not cover: a method an extension adds, a request a server should refuse, a listing
//! page by cursor.
//!
//! Parameters are one JSON object, or `key=value` words read as JSON literals where they
//! are one (`limit=3`, `flag=true`, `tags=["a"]`) and as text otherwise; dotted keys make
//! nested objects. A JSON-RPC error from the server is printed as the error object the
//! server sent (exit 1): it is the server's answer, not a failure to get one.

use serde_json::{Value, json};
use switchboard_config::ServerEntry;
use switchboard_session::{CallOptions, SessionError};

use crate::arguments::{self, ArgumentSource, Checked};
use crate::connect::ConnectedServer;
use crate::terminal::{self, JsonLayout, say};
use crate::{EXIT_TOOL_ERROR, Failure, Output};

/// What `request` sends.
pub(crate) struct RawRequest<'a> {
    /// The method, as the server knows it.
    pub(crate) method: &'a str,
    /// Its parameters (none: `{}` for a request, none for a notification).
    pub(crate) params: ArgumentSource,
    /// A request, or a notification (`--notify`).
    pub(crate) kind: RequestKind,
    pub(crate) timeout: Option<std::time::Duration>,
    pub(crate) output: Output,
}

/// Whether an answer is waited for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RequestKind {
    /// A request: its result (or error) is printed.
    Request,
    /// A notification: nothing comes back.
    Notification,
}

/// Connects to `entry`, sends the request and prints what came back.
pub(crate) async fn run(entry: &ServerEntry, request: &RawRequest<'_>) -> Result<u8, Failure> {
    let params = match &request.params {
        ArgumentSource::Nothing => None,
        ArgumentSource::Json(value) => Some(value.clone()),
        ArgumentSource::Pairs(pairs) => Some(
            arguments::from_pairs(pairs, &Value::Bool(true), Checked::AsGiven)
                .map_err(Failure::Usage)?,
        ),
    };
    let server = ConnectedServer::connect(entry, request.timeout)
        .await
        .map_err(|e| Failure::Server(e.to_string()))?;
    let outcome = send(&server, request, params).await;
    server.close().await;
    outcome
}

async fn send(
    server: &ConnectedServer,
    request: &RawRequest<'_>,
    params: Option<Value>,
) -> Result<u8, Failure> {
    let layout = match request.output {
        Output::Json => JsonLayout::Compact,
        Output::Text => JsonLayout::Pretty,
    };
    if request.kind == RequestKind::Notification {
        server
            .session
            .connection()
            .notify(request.method, params.as_ref())
            .await
            .map_err(|e| Failure::Server(format!("the notification was not sent: {e}")))?;
        say(format_args!(
            "switchboard: sent `{}` to `{}` (a notification: no answer comes back)",
            request.method,
            server.session.server_name()
        ));
        return Ok(0);
    }
    let options = CallOptions {
        timeout: request.timeout,
        ..CallOptions::default()
    };
    match server
        .session
        .request_unanswered(request.method, params, &options)
        .await
    {
        Ok(result) => {
            terminal::print_json(&result, layout);
            Ok(0)
        }
        Err(SessionError::Rpc { error, .. }) => {
            let mut object = json!({"code": error.code, "message": error.message});
            if let Some(data) = error.data {
                object["data"] = data;
            }
            terminal::print_json(&json!({ "error": object }), layout);
            say(format_args!(
                "switchboard: server `{}` answered `{}` with an error (code {})",
                server.session.server_name(),
                request.method,
                error.code
            ));
            Ok(EXIT_TOOL_ERROR)
        }
        Err(other) => Err(Failure::Server(other.to_string())),
    }
}
