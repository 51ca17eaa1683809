//! Switchboard as an MCP server.
//!
//! [`core`] is what every MCP server built here shares: a [`core::Service`] answers typed
//! requests, and the core serves it in both eras (2026-07-28 with per-request `_meta`, and
//! `initialize` with 2025-11-25 and earlier) on the transports of this crate. The authoring
//! kit ([`author`]) makes a service of typed Rust tools, prompts and resources: an MCP
//! server in a few lines. The gateway (`switchboard-gateway`) is another such service;
//! this crate depends on no client crate.
//!
//! # Map
//!
//! Switchboard as an MCP server. The server core (`core/`): a `Service` answers typed
//! `ServiceRequest`s (the lists, `tools/call`, `prompts/get`, `resources/read`, completion,
//! resource subscriptions) with a `RequestContext` (the client's era, version and declared
//! capabilities for that request, its cancellation, its progress and log messages, and for
//! a legacy request its questions to the client: `ask.rs`, `ask_client` with elicitation,
//! sampling or roots, which the transport carries on the request's own channel) and
//! publishes `ServiceEvent`s (list changes, resource updates, log messages); the core
//! decides each request's era and answers the era's own methods (`route.rs`: modern `_meta`
//! validated, -32022/-32602/-32601 with the HTTP status a Streamable HTTP server gives
//! them; `initialize`, `ping`, `logging/setLevel` for legacy clients), shapes results per
//! era (`finish.rs`: `resultType`, `serverInfo` and caching hints only for modern clients)
//! and runs `subscriptions/listen` streams (`listen.rs`). Transports: `stdio::serve` (one
//! client on a reader/writer pair: requests in flight with cancellation, a bound on them,
//! broken frames answered, legacy sessions hearing the service's events after `initialize`,
//! a request's questions sent on the output and withdrawn with `notifications/cancelled`
//! when it ends unanswered, the close grace at EOF). `http::HttpServer` (Streamable HTTP on
//! hyper, both eras on one endpoint: `exchange.rs` reads one HTTP request under its caps
//! and routes it; `headers.rs` the era and the 2026-07-28 header rules (one of each);
//! `sessions.rs` legacy sessions (with the questions they wait on, answered by the client's
//! POSTed responses; each kept by its `ClientIdentity`, the least recently used idle one
//! ended for a new one); `clients.rs` what each client (`core/identity.rs`: the token's
//! fingerprint, the OAuth subject, or the peer's address) holds — connections, streams,
//! requests in flight — against per-client limits far below the global ones, and the budget
//! of connections not yet authenticated; `streams.rs` a request's event stream (its
//! questions go on it; a legacy one is resumable, `resume.rs`: a priming event, an id on
//! every event, the events kept (1 MiB) so a GET with `Last-Event-ID` resumes a lost or
//! polled stream, an answer nobody took kept 60 s), a session's GET stream, listen streams;
//! `guard.rs` Origin, Host and the bearer token or, with `oauth.rs`, the server as an OAuth
//! protected resource: RFC 9728 metadata, JWT access tokens checked against the
//! authorization server's published keys (RS256/ES256 with `ring`), issuer, audience = the
//! resource, `exp`/`nbf`/`iat` as NumericDates; `reply.rs` bodies and encoding; `/healthz`
//! answered before every cap (`?detail`: limits, counts, refusals), caps on bodies,
//! sessions, connections, streams and requests in flight, an optional per-client request
//! rate, and a graceful drain). `rate` is a keyed GCRA limiter (`governor`) with a bounded
//! key table, for that request rate and for the gateway's rate limits. The
//! authoring kit (`author/`) makes a `Service` of typed Rust code: `Server::builder(name,
//! version)` takes `Tool`s, `Prompt`s and `Resource`s and `build()` checks them
//! (`server.rs`: unique names, tool names clients accept, object schemas; lists in
//! registration order on one page, no `list_changed` since a built server never changes). A
//! tool's input type derives `Deserialize` + `JsonSchema` and its schema is the
//! `inputSchema` (`schema.rs`, schemars, JSON Schema 2020-12 with local `$defs`); arguments
//! are checked against it (the protocol crate's `ArgumentCheck`) before the handler runs, a misfit being an
//! `isError` result that names the key (missing, unknown with the arguments there are, or
//! what was expected); the handler's return type gives the `outputSchema` (`Structured<T>`,
//! `tool.rs`); `ToolError` is an `isError` result or a JSON-RPC error (`error.rs`). Every
//! handler runs in a task of its own owned by its request (`guard.rs`): a panic is an error
//! result naming the tool, cancellation aborts the task, a result over the cap (1 MiB by
//! default) is an error saying its size. Prompts take a struct of strings as arguments
//! (`prompt.rs`); resources are fixed text or read by a handler (`resource.rs`). A built
//! server serves itself with `serve_stdio()` or `bind_http(addr, options)`.
//! `docs/authoring.md` is the guide, `examples/hello.rs` its server.
//! `examples/conformance_server.rs` is the official conformance suite's server fixture as a
//! `Service` on the core directly (raw results, the 2026-07-28 `input_required` flows with
//! an HMAC-protected, request-bound, expiring `requestState`; stdio, or `--http ADDR`); the
//! CLI's `tests/it/conformance_server.rs` runs the suite's server scenarios against it
//! directly and behind the gateway (`docs/conformance.md`). This crate is an API boundary:
//! its public items are what other crates and hosts use.

pub mod author;
pub mod core;
pub mod http;
pub mod rate;
pub mod stdio;

/// `docs/authoring.md`, whose Rust snippets are compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/authoring.md")]
pub struct AuthoringGuide;
