//! Integration tests of `switchboard-server`: the Streamable HTTP transport over real TCP,
//! in front of a small service of the tests' own.

mod http;
mod probe_service;
