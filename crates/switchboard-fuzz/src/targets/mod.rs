//! The fuzz targets, one module each; every `run` takes the raw input bytes.

pub mod config;
pub mod edit;
pub mod envelope;
pub mod framing;
pub mod gateway;
pub mod headers;
pub mod sse;

/// Words of JSON-RPC and MCP frames, for the mutator.
pub const JSON_RPC_WORDS: &[&[u8]] = &[
    b"{\"jsonrpc\":\"2.0\",",
    b"\"jsonrpc\":\"2.0\"",
    b"\"id\":",
    b"\"id\":1",
    b"\"id\":\"1\"",
    b"\"id\":null",
    b"\"id\":1.5",
    b"\"id\":-9223372036854775808",
    b"\"id\":18446744073709551616",
    b"\"method\":",
    b"\"method\":\"initialize\"",
    b"\"method\":\"tools/list\"",
    b"\"method\":\"tools/call\"",
    b"\"method\":\"ping\"",
    b"\"method\":\"notifications/cancelled\"",
    b"\"method\":\"notifications/initialized\"",
    b"\"params\":",
    b"\"result\":",
    b"\"error\":",
    b"{\"code\":-32601,\"message\":\"x\"}",
    b"\"requestId\":",
    b"\"cursor\":",
    b"\"_meta\":{\"progressToken\":1}",
    b"\"protocolVersion\":\"2025-11-25\"",
    b"\\u0000",
    b"\\ud800",
    b"\\\"",
    b"\xEF\xBB\xBF",
    b"\r\n",
    b"\n",
    b"[",
    b"]",
    b"{}",
    b"null",
    b"1e999",
];

/// Runs a future on this thread's current-thread tokio runtime (made once per thread).
pub(crate) fn block_on<F: std::future::Future>(future: F) -> F::Output {
    thread_local! {
        static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|error| panic!("no tokio runtime for the fuzz targets: {error}"));
    }
    RUNTIME.with(|runtime| runtime.block_on(future))
}
