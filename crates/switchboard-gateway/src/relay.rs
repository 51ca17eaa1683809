//! Passes what an upstream server asks during a call (`elicitation/create`,
//! `sampling/createMessage`) to the gateway's client whose call it is.
//!
//! A legacy server's question carries nothing that names the call it belongs to, so the
//! relay goes by what is waiting on that server: the gateway registers each request it
//! sends a server for a client ([`ClientRelay::waiting_on`]) for as long as it waits. A
//! question goes to the client of those requests when they all belong to one client session
//! (the latest of them asks); when requests of several clients wait on the server, whose
//! question it is cannot be told, and it is refused rather than shown to the wrong person.
//! A question while no request waits on the server is refused too. Refusals and the
//! client's own errors go back to the server as JSON-RPC errors.
//!
//! The relay is the runtime's [`ClientHandler`] (through
//! [`HostHandler`](switchboard_runtime::HostHandler)): every server is told the gateway
//! offers elicitation and sampling; whether a client does is checked per question.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use switchboard_session::{ClientHandler, HandlerFuture};
use switchboard_wire::ErrorObject;
use switchboard_wire::codes::{INVALID_REQUEST, METHOD_NOT_FOUND};

use switchboard_server::core::{ClientAsker, ClientMethod, RequestContext};

/// Requests waiting on one server at most that the relay keeps; beyond them a request is
/// not registered (its server's questions are then refused as having no caller).
pub const MAX_WAITING_PER_SERVER: usize = 4096;

/// The gateway's clients, as the servers' host; cheap to clone (one shared table).
#[derive(Clone, Default)]
pub struct ClientRelay {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    /// By server, the requests waiting on it by serial (the latest last): one taken out
    /// costs a lookup, not a scan of everyone waiting.
    waiting: Mutex<HashMap<String, BTreeMap<u64, ClientAsker>>>,
    next: AtomicU64,
}

impl std::fmt::Debug for ClientRelay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClientRelay(..)")
    }
}

/// A request registered as waiting on a server; dropping it takes it out.
#[derive(Debug)]
#[must_use = "the request counts as waiting only while this lives"]
pub(crate) struct WaitingRequest {
    relay: ClientRelay,
    server: String,
    serial: Option<u64>,
}

impl Drop for WaitingRequest {
    fn drop(&mut self) {
        let Some(serial) = self.serial else {
            return;
        };
        let mut waiting = lock(&self.relay.inner.waiting);
        if let Some(list) = waiting.get_mut(&self.server) {
            list.remove(&serial);
            if list.is_empty() {
                waiting.remove(&self.server);
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl ClientRelay {
    /// An empty relay.
    pub fn new() -> ClientRelay {
        ClientRelay::default()
    }

    /// Registers `context`'s request as waiting on `server` until the returned value is
    /// dropped: the server's questions meanwhile may go to its client.
    pub(crate) fn waiting_on(&self, server: &str, context: &RequestContext) -> WaitingRequest {
        let serial = self.inner.next.fetch_add(1, Ordering::Relaxed);
        let mut waiting = lock(&self.inner.waiting);
        let list = match waiting.get_mut(server) {
            Some(list) => list,
            None => waiting.entry(server.to_owned()).or_default(),
        };
        let registered = list.len() < MAX_WAITING_PER_SERVER;
        if registered {
            list.insert(serial, context.asker());
        }
        WaitingRequest {
            relay: self.clone(),
            server: server.to_owned(),
            serial: registered.then_some(serial),
        }
    }

    /// The request whose client a question of `server` goes to.
    fn asker(&self, server: &str, method: ClientMethod) -> Result<ClientAsker, ErrorObject> {
        let waiting = lock(&self.inner.waiting);
        let all = waiting.get(server);
        let Some((all, latest)) = all.and_then(|all| Some((all, all.last_key_value()?.1))) else {
            return Err(ErrorObject::new(
                METHOD_NOT_FOUND,
                format!(
                    "`{method}` reached the gateway while none of its clients was waiting on \
                     this server, so there is nobody to ask"
                ),
            ));
        };
        let session = latest.session();
        // A lone request is asked whatever it is (a 2026-07-28 one then says it cannot be).
        let one_client = all.len() == 1
            || latest.era() == switchboard_protocol::Era::Modern
            || (session.is_some() && all.values().all(|asker| asker.session() == session));
        if !one_client {
            return Err(ErrorObject::new(
                INVALID_REQUEST,
                format!(
                    "`{method}` reached the gateway while requests of several of its clients \
                     were waiting on this server; whose question it is cannot be told, so it \
                     is refused (one client at a time can be asked)"
                ),
            ));
        }
        Ok(latest.clone())
    }

    fn relay(&self, server: &str, method: ClientMethod, params: Value) -> HandlerFuture {
        let asker = self.asker(server, method);
        Box::pin(async move {
            asker?
                .ask(method, params)
                .await
                .map_err(|error| error.to_error_object())
        })
    }
}

impl ClientHandler for ClientRelay {
    fn supports_elicitation(&self) -> bool {
        true
    }

    fn elicit(&self, server: &str, params: Value) -> HandlerFuture {
        self.relay(server, ClientMethod::Elicitation, params)
    }

    fn supports_sampling(&self) -> bool {
        true
    }

    fn sample(&self, server: &str, params: Value) -> HandlerFuture {
        self.relay(server, ClientMethod::Sampling, params)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use serde_json::json;
    use tokio::sync::mpsc;
    use tokio_util::sync::CancellationToken;

    use super::*;
    use switchboard_server::core::{ClientFacts, ClientQuestion, SessionKey};

    /// A bound on each wait, to detect a hang (never a speed assertion).
    const HANG: Duration = Duration::from_secs(20);

    /// A legacy request of `session` whose client declared elicitation, and where its
    /// questions arrive.
    fn request(session: SessionKey) -> (RequestContext, mpsc::Receiver<ClientQuestion>) {
        let facts = ClientFacts {
            capabilities: Arc::new(json!({ "elicitation": {} })),
            ..ClientFacts::legacy_default()
        };
        let (asks, asked) = mpsc::channel(4);
        let context = RequestContext::new(facts, CancellationToken::new(), None, None)
            .with_questions(asks, session);
        (context, asked)
    }

    async fn elicit(relay: &ClientRelay, server: &str) -> Result<Value, ErrorObject> {
        tokio::time::timeout(HANG, relay.elicit(server, json!({ "message": "Name?" })))
            .await
            .expect("the relay answered")
    }

    #[tokio::test]
    async fn a_question_goes_to_the_one_client_waiting_on_its_server() {
        let relay = ClientRelay::new();
        let session = SessionKey::fresh();
        let (first, mut first_asked) = request(session);
        let (second, mut second_asked) = request(session);
        let _a = relay.waiting_on("s", &first);
        let _b = relay.waiting_on("s", &second);
        let asking = tokio::spawn({
            let relay = relay.clone();
            async move { elicit(&relay, "s").await }
        });
        // Two requests of one session: the latest asks.
        let question = tokio::time::timeout(HANG, second_asked.recv())
            .await
            .expect("asked in time")
            .expect("a question");
        assert!(first_asked.try_recv().is_err());
        assert_eq!(question.params, json!({ "message": "Name?" }));
        let _ = question.reply.send(Ok(json!({ "action": "decline" })));
        let answer = asking.await.expect("the asker ran");
        assert_eq!(answer, Ok(json!({ "action": "decline" })));
    }

    #[tokio::test]
    async fn a_question_nobody_or_several_clients_could_own_is_refused() {
        let relay = ClientRelay::new();
        let refused = elicit(&relay, "s").await.expect_err("nobody waits");
        expect_test::expect!["-32601: `elicitation/create` reached the gateway while none of its clients was waiting on this server, so there is nobody to ask"]
            .assert_eq(&format!("{}: {}", refused.code, refused.message));

        let (one, _one_asked) = request(SessionKey::fresh());
        let (other, _other_asked) = request(SessionKey::fresh());
        let waiting = relay.waiting_on("s", &one);
        let _other_waiting = relay.waiting_on("s", &other);
        let refused = elicit(&relay, "s").await.expect_err("whose is it?");
        expect_test::expect!["-32600: `elicitation/create` reached the gateway while requests of several of its clients were waiting on this server; whose question it is cannot be told, so it is refused (one client at a time can be asked)"]
            .assert_eq(&format!("{}: {}", refused.code, refused.message));

        // Another server's waiting requests do not count; a finished one is forgotten.
        drop(waiting);
        let (elsewhere, _elsewhere_asked) = request(SessionKey::fresh());
        let _elsewhere_waiting = relay.waiting_on("t", &elsewhere);
        assert_eq!(lock(&relay.inner.waiting)["s"].len(), 1);
    }

    #[tokio::test]
    async fn a_client_that_did_not_declare_the_capability_is_not_asked() {
        let relay = ClientRelay::new();
        let (context, mut asked) = request(SessionKey::fresh());
        let _waiting = relay.waiting_on("s", &context);
        let refused = tokio::time::timeout(HANG, relay.sample("s", json!({})))
            .await
            .expect("answered")
            .expect_err("not declared");
        expect_test::expect!["-32601: the client did not declare the `sampling` capability, which `sampling/createMessage` needs"]
            .assert_eq(&format!("{}: {}", refused.code, refused.message));
        assert!(asked.try_recv().is_err(), "nothing was sent to the client");
    }
}
