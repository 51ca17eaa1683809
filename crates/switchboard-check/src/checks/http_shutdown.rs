//! `shutdown` over Streamable HTTP, where the checker runs no process to watch exit. What a
//! client can observe at close depends on the era:
//!
//! - A legacy session: "Clients that no longer need a particular session … SHOULD send an
//!   HTTP DELETE to the MCP endpoint with the `MCP-Session-Id` header, to explicitly
//!   terminate the session." Once the session ended the server "MUST respond to requests
//!   containing that session ID with HTTP 404 Not Found." So the check sends `DELETE` with
//!   the id `http-session` checked, then a `ping` with it: 404 passes. "The server MAY
//!   respond to this request with HTTP 405 Method Not Allowed, indicating that the server
//!   does not allow clients to terminate sessions": that warns, since the session then
//!   lives on until the server drops it.
//! - A legacy server without sessions, and the 2026-07-28 protocol (which has no sessions,
//!   so closing the connection is all a client does): a fresh client connection closes
//!   cleanly (its transport reports closed within the grace period) and the server still
//!   answers a fresh handshake afterwards.

use std::time::Instant;

use switchboard_protocol::Era;

use super::http::{HttpTarget, OpenSession};
use super::ms;
use crate::catalog::ids;
use crate::options::Options;
use crate::probe::Probe;
use crate::raw::{RawRequest, discover_body, exchange, initialize_body, request_body};
use crate::report::{CheckResult, Evidence, Finding};
use crate::spec::ServerSpec;

/// Ends the legacy session with `DELETE` and makes sure its id is then refused with 404.
pub(crate) async fn end_session(target: &HttpTarget<'_>, session: &OpenSession) -> CheckResult {
    let raw = target.raw;
    let mut evidence = Evidence::default();
    let request = RawRequest {
        delete: true,
        session: Some(session.id.clone()),
        protocol_version: Some(session.version.clone()),
        ..RawRequest::default()
    };
    let answer = raw.send(&request).await;
    evidence
        .exchanges
        .push(exchange("DELETE with the session id", &request, &answer));
    let status = match answer.status {
        Some(405) => {
            return CheckResult::from_findings(
                ids::SHUTDOWN,
                &[Finding::warning(
                    "DELETE with the session id was refused with 405: the specification allows it, but then a client cannot end its session; it lives on until the server drops it",
                )],
                "",
                evidence,
            );
        }
        Some(status) if answer.success() => status,
        _ => {
            return CheckResult::finding(
                ids::SHUTDOWN,
                format!(
                    "DELETE with the session id got {}; expected 2xx (the session ends) or 405 (the server does not let clients end sessions)",
                    answer.describe()
                ),
                evidence,
            );
        }
    };
    let after = RawRequest {
        body: Some(request_body(5, "ping")),
        session: Some(session.id.clone()),
        protocol_version: Some(session.version.clone()),
        ..RawRequest::default()
    };
    let after_answer = raw.send(&after).await;
    evidence.exchanges.push(exchange(
        "`ping` with the deleted session's id",
        &after,
        &after_answer,
    ));
    match after_answer.status {
        Some(404) => CheckResult::pass(
            ids::SHUTDOWN,
            format!("DELETE ended the session (HTTP {status}); afterwards its id gets 404"),
            evidence,
        ),
        _ if after_answer.success() => CheckResult::finding(
            ids::SHUTDOWN,
            format!(
                "DELETE answered {status}, but the session still answers requests ({})",
                after_answer.describe()
            ),
            evidence,
        ),
        _ => CheckResult::finding(
            ids::SHUTDOWN,
            format!(
                "DELETE answered {status}, but a request with the ended session's id then got {}, not 404: the specification requires 404 for a session that ended (clients start a new session only on 404)",
                after_answer.describe()
            ),
            evidence,
        ),
    }
}

/// No session to end: a fresh connection closes cleanly and the server answers a fresh
/// handshake. `why` says why there is no session.
pub(crate) async fn close_connection(
    spec: &ServerSpec,
    options: &Options,
    target: &HttpTarget<'_>,
    why: &str,
) -> CheckResult {
    let grace = options.shutdown_grace;
    let mut evidence = Evidence::note(format!(
        "no session to end ({why}): closing the client's connection is the whole of shutdown a client can perform, so the check closes one and then makes sure the server answers a fresh handshake"
    ));
    let probe = match Probe::start(spec, options).await {
        Ok(probe) => probe,
        Err(failure) => {
            return CheckResult::finding(
                ids::SHUTDOWN,
                format!(
                    "a fresh connection for the shutdown did not initialize: {}",
                    failure.error.to_string().lines().next().unwrap_or("")
                ),
                evidence,
            );
        }
    };
    let started = Instant::now();
    probe.connection.close_write().await;
    let mut findings = Vec::new();
    match tokio::time::timeout(grace, probe.connection.closed()).await {
        Ok(reason) => evidence.notes.push(format!(
            "the connection closed {} ms after the client closed its side: {}",
            ms(started.elapsed()),
            reason.to_string().lines().next().unwrap_or("")
        )),
        Err(_) => findings.push(Finding::error(format!(
            "the connection did not close within {} ms after the client closed its side",
            ms(grace)
        ))),
    }
    let (request, what) = match target.era {
        Era::Modern => (
            RawRequest {
                body: Some(discover_body(1)),
                modern: true,
                ..RawRequest::default()
            },
            "`server/discover`",
        ),
        Era::Legacy => (
            RawRequest {
                body: Some(initialize_body(1, target.legacy_version())),
                ..RawRequest::default()
            },
            "`initialize`",
        ),
    };
    let answer = target.raw.send(&request).await;
    evidence.exchanges.push(exchange(
        format!("a fresh {what} after the close"),
        &request,
        &answer,
    ));
    if let Some(session) = &answer.session_id {
        super::http::end_session(target.raw, session, None, &mut evidence).await;
    }
    if !(answer.success() && answer.result().is_some()) {
        findings.push(Finding::error(format!(
            "after a client closed its connection, a fresh {what} got {}",
            answer.describe()
        )));
    }
    CheckResult::from_findings(
        ids::SHUTDOWN,
        &findings,
        format!(
            "no session to end ({why}): the client's connection closed cleanly and the server then answered a fresh {what}"
        ),
        evidence,
    )
}
