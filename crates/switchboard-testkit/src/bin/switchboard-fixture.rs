//! The `switchboard-fixture` binary: an MCP test server over stdio. See
//! `switchboard_testkit::fixture` for its flags and modes.

fn main() -> std::process::ExitCode {
    switchboard_testkit::fixture::run_fixture(std::env::args().skip(1))
}
