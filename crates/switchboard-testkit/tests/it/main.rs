//! Integration tests of the fixture server: each test spawns the `switchboard-fixture`
//! binary, writes JSON-RPC lines to it (or HTTP requests, for `--http`) and checks exactly
//! what it answers with.

mod broken_modes;
mod good_legacy;
mod good_modern;
mod http;
mod locate;
mod many_tools;
mod slow_tool;
mod support;
mod tidy;
