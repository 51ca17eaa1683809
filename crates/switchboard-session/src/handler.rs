//! What the host provides to servers: roots and answers to input requests.

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;
use switchboard_protocol::Root;
use switchboard_wire::ErrorObject;

/// A boxed future returned by handler methods.
pub type HandlerFuture = Pin<Box<dyn Future<Output = Result<Value, ErrorObject>> + Send>>;

/// The host side of server-to-client traffic. Every method has a conservative default:
/// nothing exposed, nothing declared.
pub trait ClientHandler: Send + Sync + 'static {
    /// Roots to expose; `None` means the roots capability is not declared.
    fn roots(&self) -> Option<Vec<Root>> {
        None
    }

    /// Whether to declare the elicitation capability (form mode).
    fn supports_elicitation(&self) -> bool {
        false
    }

    /// Answers an elicitation request (legacy `elicitation/create`, or a modern input
    /// request). Called only if [`ClientHandler::supports_elicitation`] is true.
    fn elicit(&self, server: &str, params: Value) -> HandlerFuture {
        let _ = (server, params);
        Box::pin(async { Ok(serde_json::json!({ "action": "decline" })) })
    }

    /// Whether to declare the sampling capability.
    fn supports_sampling(&self) -> bool {
        false
    }

    /// Answers a sampling request (legacy `sampling/createMessage`, or a modern input
    /// request). Called only if [`ClientHandler::supports_sampling`] is true.
    fn sample(&self, server: &str, params: Value) -> HandlerFuture {
        let _ = (server, params);
        Box::pin(async {
            Err(ErrorObject::new(
                switchboard_wire::codes::METHOD_NOT_FOUND,
                "this client offers no sampling",
            ))
        })
    }
}

/// A handler that exposes nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHandler;

impl ClientHandler for NoHandler {}
