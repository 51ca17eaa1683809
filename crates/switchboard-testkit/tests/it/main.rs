//! Integration tests of the fixture server: each test spawns the `switchboard-fixture`
//! binary, writes JSON-RPC lines to it and checks the exact lines it answers with.

mod broken_modes;
mod good_legacy;
mod good_modern;
mod locate;
mod many_tools;
mod slow_tool;
mod support;
mod tidy;
