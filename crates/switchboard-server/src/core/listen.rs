//! `subscriptions/listen` (2026-07-28): one stream of notifications per listen request.
//!
//! The first message is `notifications/subscriptions/acknowledged` with the part of the
//! filter this server honours (a list it does not offer is left out); after it, only the
//! notifications the client asked for, each carrying
//! `_meta["io.modelcontextprotocol/subscriptionId"]` = the listen request's id. When the
//! server ends the stream (shutdown), the request is answered with a complete result tagged
//! the same way. When the event feed lagged, every list the client follows is announced as
//! changed and every resource it follows as updated, so nothing is missed, only repeated.

use serde_json::{Map, Value};
use switchboard_protocol::{
    ShapeError, SubscriptionFilter, SubscriptionsAcknowledgedParams, meta, methods, to_json,
};
use switchboard_wire::RequestId;
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

use super::{
    Capabilities, ClientFacts, RequestContext, ServerNotification, Service, ServiceEvent,
    ServiceRequest, no_params, resource_updated,
};

/// Resources one listen stream follows at most.
pub const MAX_RESOURCE_SUBSCRIPTIONS: usize = 1024;

/// What a listen request asked to hear about (`params.notifications`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListenFilter {
    /// `toolsListChanged`.
    pub tools: bool,
    /// `promptsListChanged`.
    pub prompts: bool,
    /// `resourcesListChanged`.
    pub resources: bool,
    /// `resourceSubscriptions`: the URIs whose updates are wanted.
    pub resource_uris: Vec<String>,
}

impl ListenFilter {
    /// Reads `params.notifications`.
    pub fn from_params(params: &Map<String, Value>) -> Result<ListenFilter, ShapeError> {
        ListenFilter::read(params).map_err(ShapeError::new)
    }

    fn read(params: &Map<String, Value>) -> Result<ListenFilter, String> {
        let filter = match params.get("notifications") {
            None | Some(Value::Null) => return Ok(ListenFilter::default()),
            Some(Value::Object(filter)) => filter,
            Some(_) => return Err("subscriptions/listen `notifications` must be an object".into()),
        };
        let flag = |key: &str| -> Result<bool, String> {
            match filter.get(key) {
                None | Some(Value::Null) => Ok(false),
                Some(Value::Bool(on)) => Ok(*on),
                Some(_) => Err(format!("`notifications.{key}` must be a boolean")),
            }
        };
        let resource_uris = match filter.get("resourceSubscriptions") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(uris)) => {
                if uris.len() > MAX_RESOURCE_SUBSCRIPTIONS {
                    return Err(format!(
                        "`notifications.resourceSubscriptions` lists {} resources; at most \
                         {MAX_RESOURCE_SUBSCRIPTIONS} per stream",
                        uris.len()
                    ));
                }
                uris.iter()
                    .map(|uri| uri.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
                    .ok_or("`notifications.resourceSubscriptions` must list strings")?
            }
            Some(_) => return Err("`notifications.resourceSubscriptions` must be an array".into()),
        };
        Ok(ListenFilter {
            tools: flag("toolsListChanged")?,
            prompts: flag("promptsListChanged")?,
            resources: flag("resourcesListChanged")?,
            resource_uris,
        })
    }

    /// The part of the filter a server with these capabilities honours.
    pub fn honoured(&self, capabilities: Capabilities) -> ListenFilter {
        ListenFilter {
            tools: self.tools && capabilities.tools,
            prompts: self.prompts && capabilities.prompts,
            resources: self.resources && capabilities.resources,
            resource_uris: if capabilities.resource_subscriptions {
                self.resource_uris.clone()
            } else {
                Vec::new()
            },
        }
    }

    /// The filter as the acknowledgement names it.
    pub fn acknowledged(&self) -> SubscriptionFilter {
        SubscriptionFilter {
            tools_list_changed: self.tools,
            prompts_list_changed: self.prompts,
            resources_list_changed: self.resources,
            resource_subscriptions: self.resource_uris.clone(),
        }
    }

    /// The notification an event becomes on this stream, if the client asked for it.
    fn notification(&self, event: &ServiceEvent) -> Option<(&'static str, Value)> {
        match event {
            ServiceEvent::ToolsChanged if self.tools => {
                Some((methods::TOOLS_LIST_CHANGED, no_params()))
            }
            ServiceEvent::PromptsChanged if self.prompts => {
                Some((methods::PROMPTS_LIST_CHANGED, no_params()))
            }
            ServiceEvent::ResourcesChanged if self.resources => {
                Some((methods::RESOURCES_LIST_CHANGED, no_params()))
            }
            ServiceEvent::ResourceUpdated { uri } if self.follows(uri) => {
                Some((methods::RESOURCES_UPDATED, resource_updated(uri)))
            }
            _ => None,
        }
    }

    /// Whether an update of `uri` concerns this stream (the URI itself, or a resource
    /// under one it follows).
    pub fn follows(&self, uri: &str) -> bool {
        self.resource_uris.iter().any(|followed| {
            uri == followed
                || uri
                    .strip_prefix(followed.as_str())
                    .is_some_and(|rest| followed.ends_with('/') || rest.starts_with('/'))
        })
    }

    /// What a lagging stream re-announces: every list and resource it follows.
    fn everything(&self) -> Vec<ServiceEvent> {
        let mut events = Vec::new();
        if self.tools {
            events.push(ServiceEvent::ToolsChanged);
        }
        if self.prompts {
            events.push(ServiceEvent::PromptsChanged);
        }
        if self.resources {
            events.push(ServiceEvent::ResourcesChanged);
        }
        for uri in &self.resource_uris {
            events.push(ServiceEvent::ResourceUpdated { uri: uri.clone() });
        }
        events
    }
}

fn tagged(mut params: Value, subscription: &Value) -> Value {
    if let Value::Object(params) = &mut params {
        let meta_object = params
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta_object) = meta_object {
            meta_object.insert(meta::SUBSCRIPTION_ID.into(), subscription.clone());
        }
    }
    params
}

/// Runs one listen stream: the acknowledgement, then the events the filter wants, until
/// `stop` is cancelled or the feed ends (or the client stops taking notifications). Returns
/// the final result, which the transport sends when the server ended the stream (not when
/// the client did).
pub async fn listen(
    id: &RequestId,
    filter: &ListenFilter,
    mut events: broadcast::Receiver<ServiceEvent>,
    out: mpsc::Sender<ServerNotification>,
    stop: CancellationToken,
) -> Value {
    let subscription = id.to_json();
    let send = |method: &'static str, params: Value| {
        let out = out.clone();
        let params = tagged(params, &subscription);
        async move {
            out.send(ServerNotification { method, params })
                .await
                .is_ok()
        }
    };
    let acknowledgement = SubscriptionsAcknowledgedParams {
        notifications: filter.acknowledged(),
    };
    let acknowledged = send(
        methods::SUBSCRIPTIONS_ACKNOWLEDGED,
        to_json(&acknowledgement),
    );
    if acknowledged.await {
        loop {
            let pending: Vec<ServiceEvent> = tokio::select! {
                () = stop.cancelled() => break,
                received = events.recv() => match received {
                    Ok(event) => vec![event],
                    Err(broadcast::error::RecvError::Lagged(missed)) => {
                        tracing::debug!(missed, "a listen stream lagged; re-announcing what it follows");
                        filter.everything()
                    }
                    Err(broadcast::error::RecvError::Closed) => break,
                },
            };
            let mut delivered = true;
            for event in &pending {
                if let Some((method, params)) = filter.notification(event) {
                    delivered &= tokio::select! {
                        sent = send(method, params) => sent,
                        () = stop.cancelled() => false,
                    };
                }
            }
            if !delivered {
                break;
            }
        }
    }
    let mut result = Map::new();
    result.insert("resultType".into(), super::finish::COMPLETE.into());
    tagged(Value::Object(result), &subscription)
}

/// [`listen`] for a service: the resources the stream follows are subscribed to first (a
/// gateway subscribes upstream) and unsubscribed from when it ends; a resource the service
/// refuses is left out of the acknowledgement.
pub async fn listen_with_subscriptions(
    service: &dyn Service,
    id: &RequestId,
    filter: &ListenFilter,
    facts: &ClientFacts,
    out: mpsc::Sender<ServerNotification>,
    stop: CancellationToken,
) -> Value {
    let context = || RequestContext::new(facts.clone(), stop.clone(), None, None);
    // Subscribed first, so an update that comes while the resources are being subscribed
    // to is not missed.
    let events = service.events();
    let mut followed = ListenFilter {
        resource_uris: Vec::new(),
        ..filter.clone()
    };
    for uri in &filter.resource_uris {
        let subscribed = service
            .handle(ServiceRequest::Subscribe { uri: uri.clone() }, context())
            .await;
        match subscribed {
            Ok(_) => followed.resource_uris.push(uri.clone()),
            Err(error) => {
                tracing::debug!(%uri, %error, "a listen stream's resource subscription was refused")
            }
        }
    }
    let result = listen(id, &followed, events, out, stop.clone()).await;
    for uri in followed.resource_uris {
        // Ends even when the stream was cancelled: a fresh token.
        let context = RequestContext::new(facts.clone(), CancellationToken::new(), None, None);
        let _ = service
            .handle(ServiceRequest::Unsubscribe { uri }, context)
            .await;
    }
    result
}
