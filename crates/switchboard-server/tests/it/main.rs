//! Integration tests of `switchboard-server`: the Streamable HTTP transport over real TCP
//! and the stdio transport over a pipe pair, in front of a small service of the tests' own; the authoring kit's example against the
//! compatibility checker.

mod author;
mod http;
mod oauth;
mod probe_service;
mod scrape;
mod stdio;
