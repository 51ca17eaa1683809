//! Requests the server sends its client while it works on one of the client's requests
//! (legacy era): `elicitation/create`, `sampling/createMessage`, `roots/list`.
//!
//! A handler asks through [`RequestContext::ask_client`](super::RequestContext::ask_client);
//! the transport carries the question on the request's own channel (stdio: the process's
//! output; Streamable HTTP: the request's event stream, whose answer the client POSTs in
//! its session) and hands the answer back. A 2026-07-28 request cannot carry questions: its
//! handler answers `input_required` instead, and the client retries with the answers.

use std::fmt;
use std::time::Duration;

use serde_json::Value;
use switchboard_protocol::{Era, methods};
use switchboard_wire::ErrorObject;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::ClientFacts;

/// The longest a question waits for the client's answer. Elicitation waits on a person,
/// so it is generous; the request's own cancellation ends the wait earlier.
pub const CLIENT_ANSWER_DEADLINE: Duration = Duration::from_secs(600);

/// Questions of one request waiting to be carried at most; a handler that asks more waits
/// for room (its cancellation stops the wait).
pub const QUESTION_BUFFER: usize = 8;

/// What a server may ask its client, each under the capability the client must declare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientMethod {
    /// `elicitation/create`: input from the user (capability `elicitation`).
    Elicitation,
    /// `sampling/createMessage`: a completion from the client's model (capability
    /// `sampling`).
    Sampling,
    /// `roots/list`: the client's roots (capability `roots`).
    Roots,
}

impl ClientMethod {
    /// The JSON-RPC method.
    pub fn method(self) -> &'static str {
        match self {
            ClientMethod::Elicitation => methods::ELICITATION_CREATE,
            ClientMethod::Sampling => methods::SAMPLING_CREATE_MESSAGE,
            ClientMethod::Roots => methods::ROOTS_LIST,
        }
    }

    /// The client capability it needs.
    pub fn capability(self) -> &'static str {
        match self {
            ClientMethod::Elicitation => "elicitation",
            ClientMethod::Sampling => "sampling",
            ClientMethod::Roots => "roots",
        }
    }

    /// The method named `method`, if a server may send it.
    pub fn from_method(method: &str) -> Option<ClientMethod> {
        [
            ClientMethod::Elicitation,
            ClientMethod::Sampling,
            ClientMethod::Roots,
        ]
        .into_iter()
        .find(|candidate| candidate.method() == method)
    }
}

impl fmt::Display for ClientMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.method())
    }
}

/// Why a question got no answer from the client.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AskError {
    /// The request is a 2026-07-28 one: it asks with an `input_required` result instead.
    #[error(
        "a 2026-07-28 request cannot carry a `{0}` request to its client; answer with an \
         `input_required` result instead"
    )]
    ModernEra(ClientMethod),
    /// The client did not declare the capability the question needs.
    #[error("the client did not declare the `{}` capability, which `{method}` needs", method.capability())]
    NotDeclared {
        /// What was to be asked.
        method: ClientMethod,
    },
    /// The transport of this request carries no questions (a context made without one).
    #[error("this request has no channel to its client for `{0}`")]
    NoChannel(ClientMethod),
    /// The client answered with an error.
    #[error("the client refused `{method}`: {error}")]
    Refused {
        /// What was asked.
        method: ClientMethod,
        /// The client's error, as sent.
        error: ErrorObject,
    },
    /// The request was cancelled, or the client went away, before the answer came.
    #[error("the request ended before the client answered `{0}`")]
    Ended(ClientMethod),
    /// No answer within the deadline.
    #[error("the client did not answer `{method}` within {deadline:?}")]
    TimedOut {
        /// What was asked.
        method: ClientMethod,
        /// How long it waited.
        deadline: Duration,
    },
}

impl AskError {
    /// The error to pass on when the question was a server's (a gateway answers its
    /// upstream server with it): the client's own error as sent, else -32603 (-32601 when
    /// the client cannot be asked at all) with this error's text.
    pub fn to_error_object(&self) -> ErrorObject {
        match self {
            AskError::Refused { error, .. } => error.clone(),
            AskError::ModernEra(_) | AskError::NotDeclared { .. } | AskError::NoChannel(_) => {
                ErrorObject::new(switchboard_wire::codes::METHOD_NOT_FOUND, self.to_string())
            }
            AskError::Ended(_) | AskError::TimedOut { .. } => {
                ErrorObject::new(switchboard_wire::codes::INTERNAL_ERROR, self.to_string())
            }
        }
    }
}

/// A question on its way to the client: the transport sends it and answers `reply`
/// (dropping `reply` unanswered means the request ended).
#[derive(Debug)]
pub struct ClientQuestion {
    /// What is asked.
    pub method: ClientMethod,
    /// Its parameters, as they go to the client.
    pub params: Value,
    /// Where the client's answer goes.
    pub reply: oneshot::Sender<Result<Value, ErrorObject>>,
}

/// Tells one legacy session (a stdio process, an HTTP `Mcp-Session-Id`) from another in
/// this process: requests of one session share it. A gateway uses it to send a server's
/// question only to the client whose call it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SessionKey(u64);

impl SessionKey {
    /// A key no other session of this process has.
    pub fn fresh() -> SessionKey {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        SessionKey(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }
}

/// What asks one request's client: its facts, its cancellation and the channel its
/// transport carries questions on ([`RequestContext::asker`](super::RequestContext::asker)).
#[derive(Debug, Clone)]
pub struct ClientAsker {
    pub(super) client: ClientFacts,
    pub(super) cancel: CancellationToken,
    pub(super) questions: Option<(mpsc::Sender<ClientQuestion>, SessionKey)>,
    pub(super) hidden: std::sync::Arc<switchboard_text::redact::Secrets>,
}

impl ClientAsker {
    /// The request's era.
    pub fn era(&self) -> Era {
        self.client.era
    }

    /// The legacy session of the request, when its transport carries questions.
    pub fn session(&self) -> Option<SessionKey> {
        self.questions.as_ref().map(|(_, session)| *session)
    }

    /// Asks the client and waits for its answer: see
    /// [`RequestContext::ask_client`](super::RequestContext::ask_client).
    pub async fn ask(&self, method: ClientMethod, mut params: Value) -> Result<Value, AskError> {
        if self.client.era == Era::Modern {
            return Err(AskError::ModernEra(method));
        }
        if !self.client.declares(method.capability()) {
            return Err(AskError::NotDeclared { method });
        }
        let Some((questions, _)) = &self.questions else {
            return Err(AskError::NoChannel(method));
        };
        self.hidden.redact_json(&mut params);
        let (reply, answer) = oneshot::channel();
        let question = ClientQuestion {
            method,
            params,
            reply,
        };
        let asked = async {
            questions
                .send(question)
                .await
                .map_err(|_| AskError::Ended(method))?;
            match answer.await {
                Ok(Ok(value)) => Ok(value),
                Ok(Err(error)) => Err(AskError::Refused { method, error }),
                Err(_) => Err(AskError::Ended(method)),
            }
        };
        tokio::select! {
            outcome = tokio::time::timeout(CLIENT_ANSWER_DEADLINE, asked) => {
                outcome.unwrap_or(Err(AskError::TimedOut { method, deadline: CLIENT_ANSWER_DEADLINE }))
            }
            () = self.cancel.cancelled() => Err(AskError::Ended(method)),
        }
    }
}
