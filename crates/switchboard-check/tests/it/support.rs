//! Shared helpers: fixture and peer specs, quick options, and report summaries.

use std::time::Duration;

use switchboard_check::{Options, ProcessSpec, Report, ServerSpec, Status};
use switchboard_testkit::locate::fixture_bin;
pub(crate) use switchboard_testkit::locate::{peer_path, rmcp_peer_bin};
use switchboard_testkit::serve::HttpServer;
use switchboard_testkit::wait::within;

/// A fixture server with these arguments.
pub(crate) fn fixture(name: &str, args: &[&str]) -> ServerSpec {
    ServerSpec::stdio(
        name,
        ProcessSpec {
            program: fixture_bin().display().to_string(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env: Vec::new(),
            cwd: None,
            sandbox: None,
        },
    )
}

/// The spec of a server at this URL.
pub(crate) fn http_spec(name: &str, url: &str) -> ServerSpec {
    ServerSpec::http(name, url, Vec::new())
}

/// The fixture over HTTP with these arguments (`--http-fault`, `--era`, `--mode`, …); the
/// server lives as long as the returned handle.
pub(crate) fn http_fixture(name: &str, args: &[&str]) -> (HttpServer, ServerSpec) {
    let server = HttpServer::fixture(args);
    let spec = http_spec(name, server.url());
    (server, spec)
}

/// Options with short deadlines suited to tests.
pub(crate) fn quick() -> Options {
    Options {
        connect_timeout: Duration::from_secs(5),
        request_timeout: Duration::from_secs(2),
        ..Options::default()
    }
}

/// Runs the suite, bounded.
pub(crate) async fn check(spec: &ServerSpec, options: &Options) -> Report {
    within(
        &format!("the check run on {}", spec.name),
        Duration::from_secs(60),
        switchboard_check::run(spec, options),
    )
    .await
}

/// The ids of checks that failed or warned.
pub(crate) fn not_passing(report: &Report) -> Vec<&'static str> {
    report
        .results
        .iter()
        .filter(|r| matches!(r.status, Status::Fail | Status::Warn))
        .map(|r| r.id)
        .collect()
}
