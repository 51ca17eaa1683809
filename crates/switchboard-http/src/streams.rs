//! The messages no request waits for: notifications and responses we POST (answered with
//! 202, or an event stream read for a bounded time), the legacy GET stream for server
//! messages, and the 2024-11-05 HTTP+SSE transport's event stream.
//!
//! The GET stream is opened again when it ends (a few times, after the server's `retry`
//! delay); a re-opening that finds nothing listening closes the connection as unreachable,
//! so a server that died is noticed without waiting for the next request.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::answer::{
    StreamCursor, content_type_of, deliver_event, deliver_value, read_event_stream,
};
use crate::driver::{Driver, lock, read_capped};
use switchboard_protocol::sse::{SseItem, SseParser};

/// How long a notification or response POST may take, its answer (a body, or an event
/// stream the protocol does not ask for) included.
const UNASKED_DEADLINE: Duration = Duration::from_secs(10);
/// How many times the legacy GET stream is opened again after it ended.
const GET_STREAM_RECONNECTS: u32 = 5;
/// How long a 2024-11-05 server has to announce its message endpoint.
const ENDPOINT_DEADLINE: Duration = Duration::from_secs(10);

/// POSTs a notification or response; answers are expected to be 202 with no body. No
/// request waits for it, so the whole exchange is bounded by [`UNASKED_DEADLINE`].
pub(crate) async fn post_unanswered(driver: Arc<Driver>, body: Vec<u8>) {
    let exchange = post_and_read(&driver, body);
    if tokio::time::timeout(UNASKED_DEADLINE, exchange)
        .await
        .is_err()
    {
        tracing::debug!(peer = %driver.peer, "gave up on the answer to a notification after {UNASKED_DEADLINE:?}");
    }
}

async fn post_and_read(driver: &Driver, body: Vec<u8>) {
    let builder = driver.with_session(driver.post(body));
    match builder.send().await {
        Ok(response) if response.status().is_success() => {
            if content_type_of(&response).starts_with("text/event-stream") {
                // The protocol asks for 202 here; a stream answers no request of ours, so
                // nothing would ever close it: what it carries in time is delivered.
                let mut cursor = StreamCursor::default();
                read_event_stream(driver, None, response, &mut cursor).await;
            } else if let Ok(body) = read_capped(response, driver.max_body_bytes).await
                && let Ok(value) = serde_json::from_slice::<Value>(&body)
            {
                deliver_value(driver, &value).await;
            }
        }
        Ok(response) => {
            tracing::debug!(peer = %driver.peer, status = %response.status(), "a notification was not accepted")
        }
        Err(error) => driver.fail(format!(
            "could not reach {}: {}",
            driver.shown_url,
            crate::error_chain(&error)
        )),
    }
}

/// The legacy GET stream for server-initiated messages; 405 means the server has none.
pub(crate) async fn get_stream(driver: Arc<Driver>) {
    let mut cursor = StreamCursor::default();
    for attempt in 0..GET_STREAM_RECONNECTS {
        let mut builder = driver.authorized(driver.with_session(driver.get_events()));
        if let Some(id) = &cursor.last_event_id {
            builder = builder.header("last-event-id", id.as_str());
        }
        let sent = builder.send().await;
        driver.get_stream_opening.send_replace(false);
        let mut response = match sent {
            Ok(response) => response,
            // The stream ended and nothing listens where it was: the server is gone, and
            // the connection says so now rather than at the next request.
            Err(error) if attempt > 0 && error.is_connect() => {
                return driver.fail_unreachable(format!(
                    "could not reach {} (its event stream ended and nothing answers there): {}",
                    driver.shown_url,
                    crate::error_chain(&error)
                ));
            }
            Err(_) => return,
        };
        if !response.status().is_success() {
            return;
        }
        let mut parser = SseParser::new(driver.max_body_bytes);
        while let Ok(Some(chunk)) = response.chunk().await {
            for item in parser.push(&chunk) {
                cursor.note(&item);
                deliver_event(&driver, item, None).await;
            }
        }
        tokio::time::sleep(cursor.retry).await;
    }
}

/// Switches to the 2024-11-05 HTTP+SSE transport: GET the URL as an event stream, wait for
/// the `endpoint` event (refused on another origin: our messages, and credentials, would go
/// there), then keep reading the stream for answers in a task the driver owns.
pub(crate) async fn open_legacy_stream(driver: &Arc<Driver>) -> Result<(), String> {
    let mut response = driver
        .authorized(driver.get_events())
        .send()
        .await
        .map_err(|e| format!("GET {}: {}", driver.shown_url, crate::error_chain(&e)))?;
    let content_type = content_type_of(&response);
    if !response.status().is_success() || !content_type.starts_with("text/event-stream") {
        return Err(format!(
            "GET {} answered {} ({content_type})",
            driver.shown_url,
            response.status()
        ));
    }
    let mut parser = SseParser::new(driver.max_body_bytes);
    let mut pending: Vec<SseItem> = Vec::new();
    let endpoint = tokio::time::timeout(ENDPOINT_DEADLINE, async {
        loop {
            let chunk = match response.chunk().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => {
                    return Err("the event stream ended before an `endpoint` event".to_owned());
                }
                Err(e) => {
                    return Err(format!(
                        "the event stream broke: {}",
                        crate::error_chain(&e)
                    ));
                }
            };
            let mut items = parser.push(&chunk).into_iter();
            while let Some(item) = items.next() {
                if let SseItem::Event(event) = &item
                    && event.event == "endpoint"
                {
                    pending.extend(items);
                    return Ok(event.data.trim().to_owned());
                }
            }
        }
    })
    .await
    .map_err(|_| format!("no `endpoint` event within {ENDPOINT_DEADLINE:?}"))??;
    let endpoint = driver
        .url
        .join(&endpoint)
        .map_err(|e| format!("the `endpoint` event is not a URL: {e}"))?;
    let shown_endpoint = switchboard_text::redact::url_for_display(endpoint.as_str());
    if endpoint.origin() != driver.url.origin() {
        return Err(format!(
            "refusing the message endpoint {shown_endpoint}: it is on another origin than {}",
            driver.shown_url
        ));
    }
    tracing::debug!(peer = %driver.peer, endpoint = %shown_endpoint, "2024-11-05 HTTP+SSE server");
    let reader_driver = driver.clone();
    let reader = driver.spawn(async move {
        let driver = reader_driver;
        for item in pending {
            deliver_stream_item(&driver, item).await;
        }
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    for item in parser.push(&chunk) {
                        deliver_stream_item(&driver, item).await;
                    }
                }
                Ok(None) => break driver.fail("the server closed its event stream".to_owned()),
                Err(e) => {
                    break driver.fail(format!(
                        "the event stream broke: {}",
                        crate::error_chain(&e)
                    ));
                }
            }
        }
    });
    let mut state = lock(&driver.state);
    state.sse_endpoint = Some(endpoint);
    if let Some(old) = state.sse_stream.replace(reader) {
        old.abort();
    }
    Ok(())
}

/// Delivers one event of a 2024-11-05 stream (its `message` events carry JSON-RPC).
async fn deliver_stream_item(driver: &Driver, item: SseItem) {
    match item {
        SseItem::Event(event) if event.event == "endpoint" => {}
        item => {
            deliver_event(driver, item, None).await;
        }
    }
}
