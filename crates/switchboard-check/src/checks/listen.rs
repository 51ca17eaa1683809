//! `subscriptions-listen` (2026-07-28): a client hears list changes and resource updates
//! on a `subscriptions/listen` stream. For a server that declares `listChanged` on a list,
//! the check opens one for that list's changes only and watches it: the first message of
//! the subscription is `notifications/subscriptions/acknowledged`, every message carries
//! `_meta["io.modelcontextprotocol/subscriptionId"]` = the listen request's id, the
//! acknowledgment honours a subset of what was asked, and nothing unrequested — another
//! list's changes, progress, log messages — comes on it. Then the client ends it: over
//! stdio with `notifications/cancelled`, over HTTP by closing the stream (an answer is not
//! expected: the server ends a subscription with a result only when it ends it itself).

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard_protocol::{meta, methods};
use switchboard_wire::{Connection, RequestId};

use super::modern::{Channel, Discovered, Prober, standard_headers};
use super::ms;
use crate::catalog::ids;
use crate::raw::{EventStream, RawHttp, RawRequest, exchange, finish, modern_meta};
use crate::recorder::{Recorder, capped_method};
use crate::report::{CheckResult, Evidence, Exchange, Finding};

/// How long the stream is watched after the acknowledgment for what should not come.
const SETTLE: Duration = Duration::from_millis(300);
/// How often the recorder is looked at while waiting over stdio.
const POLL: Duration = Duration::from_millis(20);
/// Most messages of the stream kept.
const MAX_SEEN: usize = 64;

/// The lists a server can announce changes of: capability, filter field, notification.
const LISTS: &[(&str, &str, &str)] = &[
    ("tools", "toolsListChanged", methods::TOOLS_LIST_CHANGED),
    (
        "prompts",
        "promptsListChanged",
        methods::PROMPTS_LIST_CHANGED,
    ),
    (
        "resources",
        "resourcesListChanged",
        methods::RESOURCES_LIST_CHANGED,
    ),
];

/// A message of the subscription, as seen.
#[derive(Debug)]
struct Seen {
    method: String,
    /// It names the listen request as its subscription.
    tagged: bool,
    /// An acknowledgment's `notifications`.
    honoured: Option<Value>,
}

/// The listen request's own answer, if one came.
#[derive(Debug)]
enum Ended {
    Result,
    Error(i64, String),
    /// The transport failed or answered something else: what.
    Other(String),
}

impl std::fmt::Display for Ended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ended::Result => f.write_str("a result"),
            Ended::Error(code, message) => write!(f, "JSON-RPC error {code}: {message}"),
            Ended::Other(what) => f.write_str(what),
        }
    }
}

/// What the stream showed.
struct Watched {
    seen: Vec<Seen>,
    /// The answer, and how many messages of the subscription came before it.
    ended: Option<(Ended, usize)>,
    exchange: Exchange,
}

pub(crate) async fn run(prober: &mut Prober<'_>, discovered: Option<&Discovered>) -> CheckResult {
    let Some(discovered) = discovered else {
        return CheckResult::skip(
            ids::SUBSCRIPTIONS_LISTEN,
            "`server/discover` failed (see `discover`), so the server's capabilities are not known",
        );
    };
    let chosen = LISTS.iter().find(|(capability, _, _)| {
        discovered
            .capabilities
            .get(*capability)
            .and_then(|c| c.get("listChanged"))
            == Some(&Value::Bool(true))
    });
    let Some((capability, field, notification)) = chosen else {
        return CheckResult::skip(
            ids::SUBSCRIPTIONS_LISTEN,
            "the server declares `listChanged` on no list, so there is no change to listen for (resource subscriptions need a resource to follow and are not probed)",
        );
    };
    let params = json!({"notifications": {*field: true}, "_meta": modern_meta()});
    let timeout = prober.target.timeout;
    let watched = match prober.target.channel {
        Channel::Stdio(connection, recorder) => {
            let outcome = watch_stdio(connection, recorder, &params, timeout).await;
            if let Some(id) = &outcome.1 {
                prober.cancelled.push(id.clone());
            }
            outcome.0
        }
        Channel::Http(raw) => {
            let id = prober.allocate_http_id();
            watch_http(raw, id, &params, timeout).await
        }
    };
    if let Some((Ended::Error(code, _), _)) = &watched.ended {
        prober.saw_code(*code, "`subscriptions/listen`");
    }
    let mut evidence = Evidence::default();
    evidence.exchanges.push(watched.exchange.clone());
    let shown: Vec<String> = watched
        .seen
        .iter()
        .map(|s| format!("{}{}", s.method, if s.tagged { "" } else { " (untagged)" }))
        .collect();
    evidence.notes.push(format!(
        "asked for `{field}` (the server declares `{capability}.listChanged`); the subscription's messages within {} ms after the acknowledgment: {}",
        ms(SETTLE),
        if shown.is_empty() {
            "none".to_owned()
        } else {
            shown.join(", ")
        }
    ));
    if let Some((ended, _)) = &watched.ended {
        evidence
            .notes
            .push(format!("the listen request was answered: {ended}"));
    }
    let mut findings = Vec::new();
    judge(&watched, field, notification, timeout, &mut findings);
    CheckResult::from_findings(
        ids::SUBSCRIPTIONS_LISTEN,
        &findings,
        format!(
            "`subscriptions/listen` for `{field}` is acknowledged first, tagged with its id, and carries nothing unrequested"
        ),
        evidence,
    )
}

fn judge(
    watched: &Watched,
    field: &str,
    notification: &str,
    timeout: Duration,
    findings: &mut Vec<Finding>,
) {
    let ack_at = watched
        .seen
        .iter()
        .position(|s| s.tagged && s.method == methods::SUBSCRIPTIONS_ACKNOWLEDGED);
    if let Some((ended, before)) = &watched.ended
        && ack_at.is_none_or(|at| at >= *before)
    {
        let finding = match ended {
            Ended::Error(code, message) if *code == switchboard_wire::codes::METHOD_NOT_FOUND => {
                format!(
                    "`subscriptions/listen` was refused as an unknown method ({code}: {message}): a server that declares `listChanged` must let clients listen for the changes"
                )
            }
            Ended::Error(code, message) => {
                format!("`subscriptions/listen` was refused ({code}: {message})")
            }
            Ended::Result => {
                "`subscriptions/listen` was answered with a result before it was acknowledged: the acknowledgment MUST come first".to_owned()
            }
            Ended::Other(what) => format!("`subscriptions/listen` got {what}"),
        };
        findings.push(Finding::error(finding));
        return;
    }
    let Some(ack_at) = ack_at else {
        let untagged = watched
            .seen
            .iter()
            .any(|s| s.method == methods::SUBSCRIPTIONS_ACKNOWLEDGED);
        findings.push(Finding::error(if untagged {
            format!(
                "the acknowledgment does not carry `_meta[\"{}\"]` with the listen request's id",
                meta::SUBSCRIPTION_ID
            )
        } else {
            format!(
                "no `{}` for the listen request within {} ms",
                methods::SUBSCRIPTIONS_ACKNOWLEDGED,
                ms(timeout)
            )
        }));
        for early in watched.seen.iter().filter(|s| s.tagged) {
            findings.push(Finding::error(format!(
                "`{}` came on the subscription, which was never acknowledged",
                early.method
            )));
        }
        return;
    };
    for early in watched.seen[..ack_at].iter().filter(|s| s.tagged) {
        findings.push(Finding::error(format!(
            "`{}` came before the acknowledgment, which MUST be the subscription's first message",
            early.method
        )));
    }
    match &watched.seen[ack_at].honoured {
        Some(Value::Object(honoured)) => {
            for (key, value) in honoured {
                let asked = key == field;
                if !asked && value != &Value::Bool(false) && value != &json!([]) {
                    findings.push(Finding::error(format!(
                        "the acknowledgment honours `{key}`, which was not asked for (it names the subset of the request the server will send)"
                    )));
                }
            }
        }
        Some(other) => findings.push(Finding::error(format!(
            "the acknowledgment's `notifications` is {other}, not the filter object"
        ))),
        None => findings.push(Finding::error(
            "the acknowledgment has no `notifications` (the filter the server honours)",
        )),
    }
    for later in &watched.seen[ack_at + 1..] {
        let method = later.method.as_str();
        if !later.tagged {
            findings.push(Finding::error(format!(
                "`{method}` on the listen stream does not carry the subscription's id"
            )));
        } else if method == methods::PROGRESS || method == methods::LOG_MESSAGE {
            findings.push(Finding::error(format!(
                "`{method}` came on the subscription: progress and log messages belong on their own request's stream, never on a listen stream"
            )));
        } else if method != notification {
            findings.push(Finding::error(format!(
                "`{method}` came on the subscription, which asked only for `{field}`"
            )));
        }
    }
}

/// Over stdio: the request on the main connection, the subscription's notifications as
/// the recorder saw them, then `notifications/cancelled`. Returns the id it cancelled.
async fn watch_stdio(
    connection: &Connection,
    recorder: &Recorder,
    params: &Value,
    timeout: Duration,
) -> (Watched, Option<RequestId>) {
    let started = Instant::now();
    let id = connection.allocate_id();
    let sent = json!({"method": methods::SUBSCRIPTIONS_LISTEN, "params": params});
    let mut exchange = Exchange {
        label: "`subscriptions/listen`, watched, then cancelled".to_owned(),
        sent: Some(sent),
        received: None,
        elapsed: None,
    };
    let mut pending = match connection
        .send_request(id.clone(), methods::SUBSCRIPTIONS_LISTEN, Some(params))
        .await
    {
        Ok(pending) => pending,
        Err(error) => {
            exchange.received = Some(json!({"no_response": error.to_string()}));
            let watched = Watched {
                seen: Vec::new(),
                ended: Some((Ended::Other(error.to_string()), 0)),
                exchange,
            };
            return (watched, None);
        }
    };
    let subscription = |recorder: &Recorder| -> Vec<Seen> {
        recorder
            .notifications_where(|n| {
                n.at >= started
                    && (n.subscription.as_ref() == Some(&id)
                        || (n.subscription.is_none()
                            && n.method == methods::SUBSCRIPTIONS_ACKNOWLEDGED))
            })
            .into_iter()
            .take(MAX_SEEN)
            .map(|n| Seen {
                tagged: n.subscription.is_some(),
                method: n.method,
                honoured: n.honoured,
            })
            .collect()
    };
    let mut deadline = started + timeout;
    let mut settling = false;
    let mut ended = None;
    loop {
        let now = Instant::now();
        if !settling
            && subscription(recorder)
                .iter()
                .any(|s| s.method == methods::SUBSCRIPTIONS_ACKNOWLEDGED)
        {
            settling = true;
            deadline = now + SETTLE;
        }
        if now >= deadline {
            break;
        }
        tokio::select! {
            outcome = pending.response() => {
                let before = subscription(recorder).len();
                ended = Some((match outcome {
                    Ok(Ok(_)) => Ended::Result,
                    Ok(Err(error)) => Ended::Error(error.code, error.message),
                    Err(error) => Ended::Other(error.to_string()),
                }, before));
                break;
            }
            () = tokio::time::sleep(POLL.min(deadline - now)) => {}
        }
    }
    let seen = subscription(recorder);
    let cancelled = if ended.is_none() {
        let _ = pending
            .cancel("switchboard check: the listen probe is done")
            .await;
        Some(id)
    } else {
        None
    };
    exchange.received =
        Some(json!({"messages": seen.iter().map(|s| &s.method).collect::<Vec<_>>()}));
    exchange.elapsed = Some(started.elapsed());
    (
        Watched {
            seen,
            ended,
            exchange,
        },
        cancelled,
    )
}

/// Over HTTP: the request on a POST of its own, its event stream read until the
/// acknowledgment and for the settle window after it, then closed.
async fn watch_http(raw: &RawHttp, id: u64, params: &Value, timeout: Duration) -> Watched {
    let method = methods::SUBSCRIPTIONS_LISTEN;
    let request = RawRequest {
        body: Some(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})),
        exact_headers: standard_headers(method, Some(params)),
        ..RawRequest::default()
    };
    let label = "`subscriptions/listen` on a POST of its own, its stream watched, then closed";
    let (head, response) = match raw.open(&request, timeout).await {
        Ok(opened) => opened,
        Err(answer) => {
            let what = answer.describe();
            return Watched {
                seen: Vec::new(),
                ended: Some((Ended::Other(what), 0)),
                exchange: exchange(label, &request, &answer),
            };
        }
    };
    if !head.content_type.starts_with("text/event-stream") {
        let answer = finish(head, response).await;
        let ended = match answer.message.as_ref() {
            Some(message) if message.get("error").is_some() => Ended::Error(
                message
                    .pointer("/error/code")
                    .and_then(Value::as_i64)
                    .unwrap_or(0),
                message
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
            ),
            Some(message) if message.get("result").is_some() => Ended::Result,
            _ => Ended::Other(format!("{} instead of an event stream", answer.describe())),
        };
        return Watched {
            seen: Vec::new(),
            ended: Some((ended, 0)),
            exchange: exchange(label, &request, &answer),
        };
    }
    let started = Instant::now();
    let mut events = EventStream::new(response);
    let mut seen = Vec::new();
    let mut ended = None;
    let mut deadline = started + timeout;
    while seen.len() < MAX_SEEN {
        let Ok(next) = tokio::time::timeout_at(deadline.into(), events.next()).await else {
            break;
        };
        let Some(message) = next else {
            ended = Some((
                Ended::Other("the stream ended without an answer".to_owned()),
                seen.len(),
            ));
            break;
        };
        let Some(method) = message.get("method").and_then(Value::as_str) else {
            let outcome = match message.get("error") {
                Some(error) => Ended::Error(
                    error.get("code").and_then(Value::as_i64).unwrap_or(0),
                    error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                ),
                None => Ended::Result,
            };
            ended = Some((outcome, seen.len()));
            break;
        };
        let params = message.get("params");
        let tagged = params
            .and_then(|p| p.pointer("/_meta"))
            .and_then(|m| m.get(meta::SUBSCRIPTION_ID))
            == Some(&json!(id));
        if method == methods::SUBSCRIPTIONS_ACKNOWLEDGED && tagged {
            deadline = Instant::now() + SETTLE;
        }
        seen.push(Seen {
            method: capped_method(method.to_owned()),
            tagged,
            honoured: (method == methods::SUBSCRIPTIONS_ACKNOWLEDGED)
                .then(|| params.and_then(|p| p.get("notifications")).cloned())
                .flatten(),
        });
    }
    drop(events);
    let mut answer = head;
    answer.elapsed = started.elapsed();
    let mut evidence = exchange(label, &request, &answer);
    if let Some(Value::Object(received)) = evidence.received.as_mut() {
        received.insert(
            "events".into(),
            json!(seen.iter().map(|s| &s.method).collect::<Vec<_>>()),
        );
    }
    Watched {
        seen,
        ended,
        exchange: evidence,
    }
}
