//! The Streamable HTTP client transport, for both protocol eras.
//!
//! [`connect`] gives a [`switchboard_wire::Connection`] whose [`switchboard_wire::Transport`]
//! turns each outgoing message into an HTTP request, so deadlines, cancellation, pagination
//! and input rounds work as over stdio. The session says which era and version each message
//! is sent under ([`switchboard_wire::MessageContext`]); the transport reads nothing back
//! from the traffic to learn it:
//! - legacy (no version yet, or a version before 2026-07-28): `Mcp-Session-Id` captured from
//!   the `initialize` answer and echoed, `MCP-Protocol-Version` once negotiated, a GET
//!   stream for server messages (requests wait, briefly, for its response head so that
//!   nothing the server sends on it early is lost; 405 tolerated), one transparent
//!   re-`initialize` when a known session answers 404, `DELETE` of the session on close,
//!   and the 2024-11-05 HTTP+SSE fallback when `initialize` is refused without JSON-RPC;
//! - modern (2026-07-28): `MCP-Protocol-Version` and `Mcp-Method`; no session, no GET, no
//!   DELETE; cancelling a request closes its response stream; a 400 carrying -32020 (the
//!   server refused the request's headers) is [`switchboard_wire::TransportError::HeaderMismatch`].
//!
//! A request the server may have had when its answer was lost (the server restarted or
//! died) is never sent again here: a response stream that ended before its answer (in
//! both eras; a legacy one is resumed first when it can be) or a 2026-07-28 one that broke
//! is [`switchboard_wire::TransportError::StreamLost`], and a 2026-07-28 connection that
//! broke before any answer is [`switchboard_wire::TransportError::Interrupted`]; the
//! session sends such a request again only when that is safe. A legacy connection that
//! broke closes the connection.
//!
//! Headers that depend on a message's content (`Mcp-Name`, `Mcp-Param-*`) are the
//! session's: it gives them in the message's context. The transport reads no outgoing
//! message: it sends each as it was given, with those headers, and hands answers on as they
//! came (no result is rewritten, no id changed).
//!
//! Answers come back as JSON bodies or SSE streams (both handled) and enter the connection
//! message by message. An HTTP failure fails the request it belongs to with a typed
//! [`switchboard_wire::TransportError`] (status, a capped body excerpt); nothing is dressed
//! up as a JSON-RPC error. An unreachable server closes the connection. Retries are
//! explicit per-request state (`post.rs`).
//!
//! # Map
//!
//! The Streamable HTTP client transport, both eras (`connect`: a `Transport` that turns
//! each outgoing message into a POST with the headers of the era the session names in its
//! context and the headers given there, `driver.rs`; the POST and its retries as a small
//! state machine per request, `post.rs`;
//! JSON or SSE answers handed to the connection message by message and HTTP failures as
//! `TransportError`s, `answer.rs`; a body that is one plain result to its POST goes through
//! as its own text, `plain_answer.rs`; notifications, the GET stream and the 2024-11-05
//! event stream, `streams.rs`), the 2024-11-05 HTTP+SSE fallback (the SSE codec is
//! `switchboard-protocol`'s `sse`, shared with the server side), how each request reaches the
//! server (`client.rs`: hyper's `client::conn::http1` over connections the transport keeps,
//! for an `http://` endpoint no proxy applies to; reqwest, with rustls and the proxy
//! environment, for `https://` and proxied endpoints), and the `Authorizer` seam that the
//! OAuth client implements (`authorize.rs`: `credentials(RequestTarget)` gives each request
//! its `Authorization` value and, for DPoP, a proof bound to its method and URL;
//! `challenge(AuthChallenge)` answers a 401/403, with the `DPoP-Nonce` header, as
//! `ChallengeOutcome::{Retry, Refused}` or a typed `AuthorizeError`). This crate is an API
//! boundary: its public items are what other crates and hosts use.

mod answer;
mod authorize;
mod client;
mod driver;
mod plain_answer;
mod post;
mod streams;

pub use authorize::{
    AuthChallenge, AuthorizeError, AuthorizeFuture, Authorizer, ChallengeOutcome, Credentials,
    RequestTarget, with_credentials,
};
pub use driver::{HttpConnection, HttpOptions, HttpSetupError, connect, error_chain, read_body};
