//! The dispatch task: everything the server sends that is not an awaited response
//! (progress to its call, server requests to the handler, events to subscribers).

use super::progress::MAX_PROGRESS_STAMPS;
use super::*;

/// The server's requests waiting for the host's answer (elicitation, sampling) at most;
/// one beyond them is refused at once, so a server that floods them grows nothing.
pub(crate) const MAX_PENDING_HOST_ANSWERS: usize = 16;

/// The longest the host gets to answer one of the server's requests (an elicitation waits on
/// a person, so it is generous); after it the server gets an error saying so.
pub(crate) const HOST_ANSWER_DEADLINE: Duration = Duration::from_secs(600);

// ---------------------------------------------------------------------------------------
// Inbound dispatch

pub(super) struct DispatchState {
    pub(super) server: Arc<str>,
    pub(super) connection: Connection,
    pub(super) inbound: mpsc::Receiver<Inbound>,
    pub(super) handler: Arc<dyn ClientHandler>,
    pub(super) routes: Arc<ProgressRoutes>,
    pub(super) events: broadcast::Sender<SessionEvent>,
    pub(super) counters: Arc<Counters>,
    pub(super) era: Arc<Mutex<Option<Era>>>,
}

/// Drains the inbound stream for the session's whole life: routes progress, answers server
/// requests, and publishes everything as events. Ends when the connection closes.
pub(super) async fn dispatch_loop(mut state: DispatchState) {
    let mut handler_tasks = tokio::task::JoinSet::new();
    loop {
        let inbound = tokio::select! {
            inbound = state.inbound.recv() => inbound,
            Some(_) = handler_tasks.join_next(), if !handler_tasks.is_empty() => continue,
        };
        let Some(inbound) = inbound else { break };
        handle_inbound(&state, &mut handler_tasks, inbound).await;
        state.routes.handled.send_modify(|handled| *handled += 1);
    }
    handler_tasks.abort_all();
}

/// Routes progress, answers a server request (in a task when the handler takes time), and
/// publishes the event.
pub(super) async fn handle_inbound(
    state: &DispatchState,
    handler_tasks: &mut tokio::task::JoinSet<()>,
    inbound: Inbound,
) {
    match inbound {
        Inbound::Notification(notification) => {
            state.counters.notifications.fetch_add(1, Ordering::Relaxed);
            // A call's progress goes to the call; only progress for no call is an event.
            if notification.method == methods::PROGRESS && route_progress(state, &notification) {
                return;
            }
            if notification.method == methods::LOG_MESSAGE
                && route_log_message(state, &notification)
            {
                return;
            }
            let _ = state.events.send(SessionEvent::Notification(notification));
        }
        Inbound::Request(request) => {
            let era = *state.era.lock().unwrap_or_else(|p| p.into_inner());
            let answer = if handler_tasks.len() >= MAX_PENDING_HOST_ANSWERS {
                ServerAnswer::Now(Err(ErrorObject::new(
                    codes::INTERNAL_ERROR,
                    format!(
                        "{MAX_PENDING_HOST_ANSWERS} of this server's requests are waiting for \
                         the client's answer already, the most it may have; ask again after one \
                         is answered"
                    ),
                )))
            } else {
                answer_server_request(state, era, &request.method, request.params.clone())
            };
            match answer {
                ServerAnswer::Now(outcome) => {
                    let refused = outcome.is_err();
                    if refused {
                        state
                            .counters
                            .refused_server_requests
                            .fetch_add(1, Ordering::Relaxed);
                    }
                    let _ = state
                        .connection
                        .respond(&request.id, outcome.as_ref())
                        .await;
                    let _ = state.events.send(SessionEvent::ServerRequest {
                        method: request.method,
                        refused,
                    });
                }
                ServerAnswer::Later(future) => {
                    let connection = state.connection.clone();
                    let events = state.events.clone();
                    handler_tasks.spawn(async move {
                        let outcome = tokio::time::timeout(HOST_ANSWER_DEADLINE, future)
                            .await
                            .unwrap_or_else(|_| {
                                Err(ErrorObject::new(
                                    codes::INTERNAL_ERROR,
                                    format!(
                                        "the client did not answer within {HOST_ANSWER_DEADLINE:?}"
                                    ),
                                ))
                            });
                        let refused = outcome.is_err();
                        let _ = connection.respond(&request.id, outcome.as_ref()).await;
                        let _ = events.send(SessionEvent::ServerRequest {
                            method: request.method,
                            refused,
                        });
                    });
                }
            }
        }
        Inbound::Malformed(malformed) => {
            tracing::debug!(server = %state.server, %malformed, "malformed frame from server");
            let _ = state.events.send(SessionEvent::Malformed(malformed));
        }
        Inbound::UnexpectedResponse { response, reason } => {
            let _ = state
                .events
                .send(SessionEvent::UnexpectedResponse { response, reason });
        }
    }
}

/// Hands a log message to the call it can only belong to: the session's one request in
/// flight, when that call asked for its log messages. `false`: it stays a session event.
fn route_log_message(state: &DispatchState, notification: &Notification) -> bool {
    if state.routes.calls.load(Ordering::Relaxed) != 1 {
        return false;
    }
    let logs = state.routes.logs();
    let Some((id, sink)) = logs.iter().next().filter(|_| logs.len() == 1) else {
        return false;
    };
    if !state.connection.is_pending(id) {
        return false;
    }
    let params = notification.params.clone().unwrap_or(Value::Null);
    sink.try_send(params).is_ok()
}

/// Routes progress to the request it names; `false` when it names none in flight (or is
/// not progress anyone can read).
pub(super) fn route_progress(state: &DispatchState, notification: &Notification) -> bool {
    let parsed: Option<ProgressParams> = notification
        .params
        .as_ref()
        .and_then(|p| serde_json::from_value(p.clone()).ok());
    let Some(progress) = parsed else {
        state
            .counters
            .stray_progress
            .fetch_add(1, Ordering::Relaxed);
        return false;
    };
    let token = RequestId::from_json(&progress.progress_token);
    let pending = token
        .as_ref()
        .is_some_and(|id| state.connection.is_pending(id));
    // A call that asked for its progress keeps its sink until the progress sent before its
    // result was routed, so the sink also counts for a request just answered.
    let sink = token
        .as_ref()
        .and_then(|id| state.routes.sinks().get(id).cloned());
    let Some(token) = token.filter(|_| pending || sink.is_some()) else {
        state
            .counters
            .stray_progress
            .fetch_add(1, Ordering::Relaxed);
        return false;
    };
    if pending {
        let mut stamps = state.routes.stamps();
        if stamps.len() >= MAX_PROGRESS_STAMPS {
            stamps.retain(|id, _| state.connection.is_pending(id));
        }
        stamps.insert(token, Instant::now());
    }
    // Progress is lossy by nature: if the host is behind, this update is skipped.
    if let Some(sink) = sink {
        let _ = sink.try_send(progress);
    }
    true
}

pub(super) enum ServerAnswer {
    Now(Result<Value, ErrorObject>),
    Later(crate::handler::HandlerFuture),
}

pub(super) fn answer_server_request(
    state: &DispatchState,
    era: Option<Era>,
    method: &str,
    params: Option<Value>,
) -> ServerAnswer {
    let not_found =
        |why: &str| ServerAnswer::Now(Err(ErrorObject::new(codes::METHOD_NOT_FOUND, why)));
    if era == Some(Era::Modern) {
        return not_found("servers must not send requests in protocol 2026-07-28");
    }
    match method {
        methods::PING => ServerAnswer::Now(Ok(json!({}))),
        methods::ROOTS_LIST => match state.handler.roots() {
            Some(roots) => ServerAnswer::Now(Ok(json!({ "roots": roots }))),
            None => not_found("this client did not declare the roots capability"),
        },
        methods::ELICITATION_CREATE if state.handler.supports_elicitation() => ServerAnswer::Later(
            state
                .handler
                .elicit(&state.server, params.unwrap_or(Value::Null)),
        ),
        methods::SAMPLING_CREATE_MESSAGE if state.handler.supports_sampling() => {
            ServerAnswer::Later(
                state
                    .handler
                    .sample(&state.server, params.unwrap_or(Value::Null)),
            )
        }
        _ => not_found(&format!("this client does not offer `{method}`")),
    }
}
