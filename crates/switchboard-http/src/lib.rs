//! The Streamable HTTP client transport, for both protocol eras.
//!
//! A driver task sits behind an in-memory pipe, so the session above sees an ordinary
//! [`Connection`]: deadlines, cancellation, pagination and input rounds work unchanged. Each
//! outgoing message becomes a POST with the headers its era needs, derived from the message
//! itself:
//! - legacy (after `initialize`): `Mcp-Session-Id` captured and echoed, `MCP-Protocol-Version`
//!   after negotiation, a GET stream for server messages (requests wait, briefly, for its
//!   response head so that nothing the server sends on it early is lost; 405 tolerated),
//!   one transparent re-`initialize` when a known session answers 404, `DELETE` of the
//!   session on close;
//! - modern (a request whose `_meta` names a protocol version): `MCP-Protocol-Version` from
//!   `_meta`, `Mcp-Method`, and `Mcp-Name` for `tools/call`, `resources/read` and
//!   `prompts/get` (Base64 sentinel form for values that are not plain visible ASCII); no
//!   session, no GET, no DELETE; cancelling a request closes its response stream.
//!
//! Answers come back as JSON bodies or SSE streams (both handled); an HTTP failure becomes a
//! JSON-RPC error for the request it belongs to; an unreachable server closes the connection.

mod authorize;
mod driver;
pub mod param_headers;
mod plain_answer;
pub mod sse;

pub use authorize::{
    AuthChallenge, AuthorizeError, AuthorizeFuture, Authorizer, ChallengeOutcome, Credentials,
    RequestTarget, with_credentials,
};
pub use driver::{
    HTTP_ERROR_CODE, HttpOptions, HttpSetupError, HttpTransport, connect, error_chain, header_text,
    read_body,
};
