//! A small [`Service`] for transport tests: `echo` answers at once, `progress` reports
//! progress (and a log message) before it answers, `slow` runs until it is cancelled (and
//! records that it was), `panic` panics, `ask` (unlisted) asks the client for a name, `wait` (unlisted) answers after 300 ms, `whoami` (unlisted) names the client's identity, plus one resource and the events a test sends. `echo` mirrors its
//! `region` and `count` arguments into `Mcp-Param-Region` and `Mcp-Param-Count`.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_protocol::Implementation;
use switchboard_server::core::{
    Answer, CacheHints, Capabilities, ClientMethod, LogLevel, LogMessage, RequestContext,
    ServerInfo, Service, ServiceEvent, ServiceFuture, ServiceRequest,
};
use switchboard_wire::ErrorObject;
use tokio::sync::{Notify, broadcast};

/// How long `slow` runs when nobody cancels it.
const SLOW_FOR: Duration = Duration::from_secs(120);

/// What the service saw.
#[derive(Debug, Default)]
pub(crate) struct Seen {
    /// `slow` calls that started.
    pub(crate) slow_started: usize,
    /// `slow` calls that saw their cancellation.
    pub(crate) slow_cancelled: usize,
    /// `resources/subscribe` requests that reached the service.
    pub(crate) subscribed: usize,
    /// `resources/unsubscribe` requests that reached the service.
    pub(crate) unsubscribed: usize,
}

/// The service.
#[derive(Debug)]
pub(crate) struct ProbeService {
    info: ServerInfo,
    events: broadcast::Sender<ServiceEvent>,
    pub(crate) seen: Arc<Mutex<Seen>>,
    /// Notified whenever `seen` changes.
    pub(crate) changed: Arc<Notify>,
}

impl ProbeService {
    pub(crate) fn new() -> Arc<ProbeService> {
        Arc::new(ProbeService {
            info: ServerInfo {
                implementation: Implementation {
                    name: "probe".into(),
                    version: "1.0.0".into(),
                    title: None,
                    description: None,
                    website_url: None,
                },
                capabilities: Capabilities {
                    tools: true,
                    prompts: false,
                    resources: true,
                    resource_subscriptions: true,
                    completions: false,
                    logging: true,
                    list_changes: true,
                },
                cache: CacheHints::default(),
            },
            events: broadcast::channel(64).0,
            seen: Arc::default(),
            changed: Arc::new(Notify::new()),
        })
    }

    /// Announces an event to every stream.
    pub(crate) fn announce(&self, event: ServiceEvent) {
        let _ = self.events.send(event);
    }

    /// Waits (bounded) until `check` holds for what the service saw.
    pub(crate) async fn until(&self, what: &str, check: impl Fn(&Seen) -> bool) {
        let waited = tokio::time::timeout(Duration::from_secs(20), async {
            loop {
                let notified = self.changed.notified();
                if check(&self.seen.lock().unwrap_or_else(PoisonError::into_inner)) {
                    return;
                }
                notified.await;
            }
        })
        .await;
        assert!(waited.is_ok(), "the service never saw: {what}");
    }
}

fn text(text: &str) -> Value {
    json!({ "content": [{ "type": "text", "text": text }] })
}

impl Service for ProbeService {
    fn info(&self) -> &ServerInfo {
        &self.info
    }

    fn instructions(&self) -> ServiceFuture<Option<String>> {
        Box::pin(async { Some("probe the transport".to_owned()) })
    }

    fn handle(&self, request: ServiceRequest, context: RequestContext) -> ServiceFuture<Answer> {
        let seen = self.seen.clone();
        let changed = self.changed.clone();
        let record = move |change: fn(&mut Seen)| {
            change(&mut seen.lock().unwrap_or_else(PoisonError::into_inner));
            changed.notify_waiters();
        };
        match request {
            ServiceRequest::ListTools(_) => Box::pin(async {
                Ok(json!({ "tools": [
                    { "name": "echo", "inputSchema": { "type": "object" } },
                    { "name": "progress", "inputSchema": { "type": "object" } },
                    { "name": "slow", "inputSchema": { "type": "object" } },
                ]}))
            }),
            ServiceRequest::CallTool(call) => match call.name.as_str() {
                "echo" => {
                    Box::pin(async move { Ok(text(&Value::Object(call.arguments).to_string())) })
                }
                "progress" => Box::pin(async move {
                    context.progress(1.0, Some(2.0), Some("half")).await;
                    context
                        .log(LogMessage {
                            level: LogLevel::Info,
                            logger: Some("probe".into()),
                            data: json!("working"),
                        })
                        .await;
                    context.progress(2.0, Some(2.0), None).await;
                    Ok(text("done"))
                }),
                "panic" => Box::pin(async { panic!("the probe's `panic` tool panics") }),
                // Not listed: says who asks.
                "whoami" => {
                    let identity = context.client.identity.to_string();
                    Box::pin(async move { Ok(text(&identity)) })
                }
                // Not listed: answers after 300 ms.
                "wait" => Box::pin(async move {
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_millis(300)) => Ok(text("waited")),
                        () = context.cancel.cancelled() => Err(ErrorObject::new(-32800, "cancelled")),
                    }
                }),
                // Not listed: asks the client for a name and answers with what it said.
                "ask" => Box::pin(async move {
                    let question = json!({ "message": "Name?", "requestedSchema": {
                        "type": "object", "properties": { "name": { "type": "string" } },
                    }});
                    match context
                        .ask_client(ClientMethod::Elicitation, question)
                        .await
                    {
                        Ok(answer) => Ok(text(&answer.to_string())),
                        Err(error) => Ok(json!({
                            "content": [{ "type": "text", "text": error.to_string() }],
                            "isError": true,
                        })),
                    }
                }),
                "slow" => Box::pin(async move {
                    record(|seen| seen.slow_started += 1);
                    tokio::select! {
                        () = context.cancel.cancelled() => {
                            record(|seen| seen.slow_cancelled += 1);
                            Err(ErrorObject::new(-32800, "cancelled"))
                        }
                        () = tokio::time::sleep(SLOW_FOR) => Ok(text("slept")),
                    }
                }),
                other => {
                    let message = format!("no tool `{other}`");
                    Box::pin(async move { Err(ErrorObject::new(-32602, message)) })
                }
            },
            ServiceRequest::ListResources(_) => Box::pin(async {
                Ok(json!({ "resources": [{ "uri": "probe://a", "name": "a" }] }))
            }),
            ServiceRequest::ReadResource(read) => {
                Box::pin(
                    async move { Ok(json!({ "contents": [{ "uri": read.uri, "text": "a" }] })) },
                )
            }
            ServiceRequest::Subscribe { .. } => Box::pin(async move {
                record(|seen| seen.subscribed += 1);
                Ok(json!({}))
            }),
            ServiceRequest::Unsubscribe { .. } => Box::pin(async move {
                record(|seen| seen.unsubscribed += 1);
                Ok(json!({}))
            }),
            other => {
                let message = format!("{} is not offered", other.method());
                Box::pin(async move { Err(ErrorObject::new(-32601, message)) })
            }
        }
    }

    fn events(&self) -> broadcast::Receiver<ServiceEvent> {
        self.events.subscribe()
    }

    fn header_params(&self, tool: &str, _endpoint: Option<&str>) -> Vec<(String, String)> {
        match tool {
            "echo" => vec![
                ("Region".into(), "region".into()),
                ("Count".into(), "count".into()),
            ],
            _ => Vec::new(),
        }
    }
}
