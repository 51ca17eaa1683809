//! `http-origin` and `http-session`: raw requests a well-behaved client never sends (a
//! foreign `Origin`, a made-up or missing `Mcp-Session-Id`), judged against the Streamable HTTP transport section of the specification:
//!
//! - "Servers MUST validate the `Origin` header on all incoming connections to prevent DNS
//!   rebinding attacks. If the `Origin` header is present and invalid, servers MUST respond
//!   with HTTP 403 Forbidden."
//! - "Servers that require a session ID SHOULD respond to requests without an
//!   `MCP-Session-Id` header (other than initialization) with HTTP 400 Bad Request."
//! - "The server MAY terminate the session at any time, after which it MUST respond to
//!   requests containing that session ID with HTTP 404 Not Found." A session id the
//!   server never issued names no live session either: 404, which is what tells a client
//!   to start a new session.
//!
//! The session `http-session` opened is then ended by `shutdown` (`http_shutdown.rs`).

use serde_json::Value;
use switchboard_protocol::Era;
use switchboard_session::EraChoice;

use crate::catalog::ids;
use crate::raw::{
    FOREIGN_ORIGIN, MADE_UP_SESSION, RawHttp, RawRequest, discover_body, exchange, initialize_body,
    notification_body, request_body,
};
use crate::report::{CheckResult, Evidence, Finding};

/// What the HTTP checks need to know about the server.
pub(crate) struct HttpTarget<'a> {
    pub(crate) raw: &'a RawHttp,
    /// The era the main session negotiated.
    pub(crate) era: Era,
    /// The era the entry asks for.
    pub(crate) pinned: EraChoice,
    /// A pinned protocol version, if any.
    pub(crate) protocol_version: Option<&'a str>,
}

impl HttpTarget<'_> {
    pub(crate) fn legacy_version(&self) -> Option<&str> {
        self.protocol_version
            .filter(|v| switchboard_protocol::LEGACY_VERSIONS.contains(v))
    }
}

/// Ends a session the checker opened (best effort), noting what happened.
pub(crate) async fn end_session(
    raw: &RawHttp,
    session: &str,
    version: Option<String>,
    evidence: &mut Evidence,
) {
    let request = RawRequest {
        delete: true,
        session: Some(session.to_owned()),
        protocol_version: version,
        ..RawRequest::default()
    };
    let answer = raw.send(&request).await;
    evidence.notes.push(format!(
        "the checker ended the session it opened: DELETE got {}",
        answer.describe()
    ));
}

/// `http-origin`: a handshake request with a foreign `Origin` must get 403.
pub(crate) async fn origin(target: &HttpTarget<'_>) -> CheckResult {
    let raw = target.raw;
    let modern = target.era == Era::Modern;
    let (body, what) = if modern {
        (discover_body(1), "`server/discover`")
    } else {
        (initialize_body(1, target.legacy_version()), "`initialize`")
    };
    let request = RawRequest {
        body: Some(body),
        origin: Some(FOREIGN_ORIGIN.to_owned()),
        modern,
        ..RawRequest::default()
    };
    let answer = raw.send(&request).await;
    let mut evidence = Evidence::default();
    evidence.exchanges.push(exchange(
        format!("POST {what} with a foreign Origin"),
        &request,
        &answer,
    ));
    if let Some(session) = &answer.session_id {
        end_session(raw, session, None, &mut evidence).await;
    }
    let loopback = raw.is_loopback();
    let mut findings = Vec::new();
    match answer.status {
        None => {
            return CheckResult::skip(
                ids::HTTP_ORIGIN,
                format!(
                    "a POST {what} with `Origin: {FOREIGN_ORIGIN}` got {}",
                    answer.describe()
                ),
            );
        }
        Some(403) => {}
        Some(401) => {
            return CheckResult::skip(
                ids::HTTP_ORIGIN,
                "the server asks for authorization (HTTP 401) before it judges the Origin; configure credentials for the entry",
            );
        }
        Some(_) if answer.success() => {
            let text = format!(
                "the server accepted a request from a foreign origin: POST {what} with `Origin: {FOREIGN_ORIGIN}` got {}",
                answer.describe()
            );
            if loopback {
                findings.push(Finding::error(format!(
                    "{text}; any web page the user visits can reach this local server through DNS rebinding"
                )));
            } else {
                findings.push(Finding::warning(format!(
                    "{text}; a remote server may trust origins of its choosing, but hardly this one"
                )));
            }
        }
        Some(status) => {
            // Refused, but not with 403: make sure the Origin is the reason.
            let control = RawRequest {
                origin: None,
                ..request.clone()
            };
            let control_answer = raw.send(&control).await;
            evidence.exchanges.push(exchange(
                "the same POST without an Origin",
                &control,
                &control_answer,
            ));
            if let Some(session) = &control_answer.session_id {
                end_session(raw, session, None, &mut evidence).await;
            }
            if !control_answer.success() {
                return CheckResult::skip(
                    ids::HTTP_ORIGIN,
                    format!(
                        "a POST {what} was refused with and without a foreign Origin (HTTP {status}, then {}), so the Origin check could not be isolated",
                        control_answer.describe()
                    ),
                );
            }
            findings.push(Finding::error(format!(
                "a request with a foreign Origin was refused with HTTP {status}, not 403 as the specification requires for an invalid Origin"
            )));
        }
    }
    // The server's own origin is a valid one: refusing it shuts out the pages it serves.
    let own = raw.own_origin();
    let request = RawRequest {
        origin: Some(own.clone()),
        ..request
    };
    let answer = raw.send(&request).await;
    evidence.exchanges.push(exchange(
        format!("POST {what} with the server's own Origin"),
        &request,
        &answer,
    ));
    if let Some(session) = &answer.session_id {
        end_session(raw, session, None, &mut evidence).await;
    }
    if !answer.success() {
        findings.push(Finding::error(format!(
            "a POST {what} with the server's own `Origin: {own}` got {}: a valid Origin must be served (only an invalid one gets 403)",
            answer.describe()
        )));
    }
    CheckResult::from_findings(
        ids::HTTP_ORIGIN,
        &findings,
        format!(
            "a POST {what} with `Origin: {FOREIGN_ORIGIN}` was refused with 403, and with the server's own Origin served"
        ),
        evidence,
    )
}

/// A legacy session the checker opened, for `shutdown` to end.
pub(crate) struct OpenSession {
    pub(crate) id: String,
    pub(crate) version: String,
}

/// What `http-session` found: its result, and the session it checked (still open) or why
/// there was none.
pub(crate) struct SessionOutcome {
    pub(crate) result: CheckResult,
    pub(crate) session: Result<OpenSession, String>,
}

/// `http-session`, on a legacy session of its own, left open for `shutdown`.
pub(crate) async fn sessions(target: &HttpTarget<'_>) -> SessionOutcome {
    let skip_both = |reason: String| SessionOutcome {
        result: CheckResult::skip(ids::HTTP_SESSION, reason.clone()),
        session: Err(reason),
    };
    if target.pinned == EraChoice::Modern {
        return skip_both(
            "the entry pins the 2026-07-28 protocol, which has no sessions".to_owned(),
        );
    }
    let raw = target.raw;
    let mut evidence = Evidence::default();
    let initialize = RawRequest {
        body: Some(initialize_body(1, target.legacy_version())),
        ..RawRequest::default()
    };
    let answer = raw.send(&initialize).await;
    if !(answer.success() && answer.result().is_some()) {
        return skip_both(match target.era {
            Era::Modern => format!(
                "the server speaks the 2026-07-28 protocol, which has no sessions, and a legacy `initialize` got {}",
                answer.describe()
            ),
            Era::Legacy => format!(
                "a legacy `initialize` of the checker's own got {}",
                answer.describe()
            ),
        });
    }
    let Some(id) = answer.session_id.clone() else {
        return skip_both(
            "the server issued no `Mcp-Session-Id` at initialization: it keeps no sessions, so there is nothing to check"
                .to_owned(),
        );
    };
    let version = answer.negotiated_version();
    evidence.exchanges.push(exchange(
        "legacy `initialize`: the server issues a session id",
        &initialize,
        &answer,
    ));
    let session = OpenSession { id, version };
    let result = session_rules(raw, &session, evidence).await;
    SessionOutcome {
        result,
        session: Ok(session),
    }
}

async fn session_rules(
    raw: &RawHttp,
    session: &OpenSession,
    mut evidence: Evidence,
) -> CheckResult {
    let with = |id: Option<&str>, body: Value| RawRequest {
        body: Some(body),
        session: id.map(str::to_owned),
        protocol_version: Some(session.version.clone()),
        ..RawRequest::default()
    };
    let initialized = with(
        Some(&session.id),
        notification_body("notifications/initialized", None),
    );
    let answer = raw.send(&initialized).await;
    if !answer.success() {
        evidence.exchanges.push(exchange(
            "`notifications/initialized` with the session id",
            &initialized,
            &answer,
        ));
    }
    let mut findings = Vec::new();
    let control = with(Some(&session.id), request_body(2, "ping"));
    let answer = raw.send(&control).await;
    evidence.exchanges.push(exchange(
        "`ping` with the issued session id",
        &control,
        &answer,
    ));
    if !answer.success() {
        findings.push(Finding::error(format!(
            "a request with the session id the server issued was refused: {}",
            answer.describe()
        )));
    }
    let made_up = with(Some(MADE_UP_SESSION), request_body(3, "ping"));
    let answer = raw.send(&made_up).await;
    evidence.exchanges.push(exchange(
        "`ping` with a session id the server never issued",
        &made_up,
        &answer,
    ));
    match answer.status {
        Some(404) => {}
        _ if answer.success() => findings.push(Finding::error(format!(
            "a request with a session id the server never issued was served ({}): the server does not check session ids",
            answer.describe()
        ))),
        _ => findings.push(Finding::error(format!(
            "a request with a session id the server never issued got {}, not 404: the specification answers a session id that names no live session with 404, which is what tells a client to start a new session",
            answer.describe()
        ))),
    }
    let missing = with(None, request_body(4, "ping"));
    let answer = raw.send(&missing).await;
    evidence.exchanges.push(exchange(
        "`ping` without a session id after initialization",
        &missing,
        &answer,
    ));
    match answer.status {
        Some(400) => {}
        _ if answer.success() => findings.push(Finding::warning(format!(
            "a request without `Mcp-Session-Id` after initialization was served ({}); a server that issues session ids SHOULD answer it with 400",
            answer.describe()
        ))),
        _ => findings.push(Finding::warning(format!(
            "a request without `Mcp-Session-Id` after initialization got {}, not the 400 the specification recommends",
            answer.describe()
        ))),
    }
    CheckResult::from_findings(
        ids::HTTP_SESSION,
        &findings,
        "the issued session id is accepted; a made-up one gets 404, none at all 400",
        evidence,
    )
}
