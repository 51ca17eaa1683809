//! The bundled example server (`switchboard example-server`, hidden): a small, well-behaved
//! MCP server on stdin/stdout that the command runs when no `--config` is given, written on
//! the authoring kit (`switchboard_server::author`) and served by the core's stdio
//! transport, so it speaks both eras (2026-07-28 and `initialize`). Tools only: `echo`,
//! `add`, `slow` (progress, cancellation) and `fail`. It exits when stdin closes. With
//! `--http ADDR` it serves Streamable HTTP at `http://ADDR/mcp` instead (saying where on
//! stderr) until SIGINT or SIGTERM, then drains.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use switchboard_server::author::schemars::JsonSchema;
use switchboard_server::author::{
    BuildError, NoArguments, RequestContext, Server, Structured, Tool, ToolError,
};
use switchboard_server::http::HttpServeOptions;
use tokio_util::sync::CancellationToken;

/// `serverInfo.name` unless `--name` sets it.
const DEFAULT_NAME: &str = "switchboard-example";
/// `serverInfo.version`.
const VERSION: &str = "0.1.0";
/// The longest `slow` sleeps, in milliseconds.
const MAX_SLOW_MS: u64 = 60_000;
/// The most progress steps `slow` takes.
const MAX_SLOW_STEPS: u64 = 100;

/// Serves until stdin closes (or, over HTTP, a signal). `args` are what followed
/// `example-server`.
pub(crate) fn run(args: Vec<String>) -> ExitCode {
    let args = match parse_args(&args) {
        Ok(args) => args,
        Err(problem) => {
            crate::terminal::say(format_args!("switchboard example-server: {problem}"));
            return ExitCode::from(2);
        }
    };
    let server = match server(args.name) {
        Ok(server) => server,
        Err(error) => {
            crate::terminal::say(format_args!("switchboard example-server: {error}"));
            return ExitCode::from(1);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            crate::terminal::say(format_args!(
                "switchboard example-server: could not start the async runtime: {error}"
            ));
            return ExitCode::from(1);
        }
    };
    match args.http {
        None => {
            runtime.block_on(server.serve_stdio());
            ExitCode::SUCCESS
        }
        Some(addr) => runtime.block_on(serve_http(server, addr)),
    }
}

const USAGE: &str = "usage: example-server [--name NAME] [--http ADDR]";

/// What follows `example-server`.
struct ExampleArgs {
    /// `--name NAME`: `serverInfo.name`.
    name: String,
    /// `--http ADDR`: serve Streamable HTTP there instead of stdio.
    http: Option<SocketAddr>,
}

/// `--name NAME` and `--http ADDR`, both optional, nothing else.
fn parse_args(args: &[String]) -> Result<ExampleArgs, String> {
    let mut parsed = ExampleArgs {
        name: DEFAULT_NAME.to_owned(),
        http: None,
    };
    let mut rest = args.iter();
    while let Some(flag) = rest.next() {
        let value = rest.next();
        match (flag.as_str(), value) {
            ("--name", Some(name)) => parsed.name = name.clone(),
            ("--http", Some(addr)) => {
                parsed.http = Some(addr.parse().map_err(|error| {
                    format!("--http {addr}: {error}; give an address such as 127.0.0.1:8080")
                })?);
            }
            _ => return Err(format!("unexpected arguments {args:?}; {USAGE}")),
        }
    }
    Ok(parsed)
}

/// Serves Streamable HTTP at `addr` until SIGINT or SIGTERM, then drains (requests in
/// flight get their grace).
async fn serve_http(server: Server, addr: SocketAddr) -> ExitCode {
    let bound = match server.bind_http(addr, HttpServeOptions::default()).await {
        Ok(bound) => bound,
        Err(error) => {
            crate::terminal::say(format_args!("switchboard example-server: {error}"));
            return ExitCode::from(1);
        }
    };
    crate::terminal::say(format_args!(
        "switchboard example-server: listening on {}",
        bound.url()
    ));
    let shutdown = CancellationToken::new();
    let mut served = tokio::spawn(bound.serve(shutdown.clone()));
    tokio::select! {
        _ = &mut served => return ExitCode::SUCCESS,
        _ = crate::serve::shutdown_signal() => {}
    }
    shutdown.cancel();
    let _ = served.await;
    ExitCode::SUCCESS
}

/// The example's four tools.
fn server(name: String) -> Result<Server, BuildError> {
    Server::builder(name, VERSION)
        .instructions("The example server bundled with switchboard: echo, add, slow and fail.")
        .tool(Tool::new("echo", "Returns the given text.", echo).read_only())
        .tool(Tool::new("add", "Adds two integers.", add).read_only())
        .tool(
            Tool::new(
                "slow",
                "Sleeps in steps, reporting progress after each; stops when cancelled.",
                slow,
            )
            .read_only(),
        )
        .tool(Tool::new("fail", "Always returns a tool error.", fail))
        .build()
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "switchboard_server::author::schemars")]
#[serde(deny_unknown_fields)]
struct EchoInput {
    /// The text to return.
    text: String,
}

async fn echo(input: EchoInput, _: RequestContext) -> Result<String, ToolError> {
    Ok(input.text)
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "switchboard_server::author::schemars")]
#[serde(deny_unknown_fields)]
struct AddInput {
    /// The first number.
    a: i64,
    /// The second number.
    b: i64,
}

#[derive(Serialize, JsonSchema)]
#[schemars(crate = "switchboard_server::author::schemars")]
struct Sum {
    /// `a + b`.
    sum: i64,
}

async fn add(input: AddInput, _: RequestContext) -> Result<Structured<Sum>, ToolError> {
    let sum = input
        .a
        .checked_add(input.b)
        .ok_or_else(|| ToolError::new("the sum does not fit in 64 bits"))?;
    Ok(Structured::new(Sum { sum }).with_text(sum.to_string()))
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "switchboard_server::author::schemars")]
#[serde(deny_unknown_fields)]
struct SlowInput {
    /// How long to sleep, in milliseconds.
    #[serde(default = "default_duration_ms")]
    #[schemars(range(max = MAX_SLOW_MS))]
    duration_ms: u64,
    /// How many progress steps to report.
    #[serde(default = "default_steps")]
    #[schemars(range(min = 1, max = MAX_SLOW_STEPS))]
    steps: u64,
}

fn default_duration_ms() -> u64 {
    5000
}

fn default_steps() -> u64 {
    5
}

/// Sleeps `duration_ms` in `steps`, reporting progress after each step when the call asked
/// for it. A cancelled call's future is dropped at its next sleep, so no progress follows.
async fn slow(input: SlowInput, context: RequestContext) -> Result<String, ToolError> {
    // The schema keeps `steps` at 1 or more; `max` keeps a zero from dividing anyway.
    let steps = input.steps.max(1);
    let step = Duration::from_millis(input.duration_ms / steps);
    for done in 1..=steps {
        tokio::time::sleep(step).await;
        context
            .progress(done as f64, Some(steps as f64), None)
            .await;
    }
    Ok(format!("slept {} ms in {steps} steps", input.duration_ms))
}

async fn fail(_: NoArguments, _: RequestContext) -> Result<String, ToolError> {
    Err(ToolError::new("this tool always fails"))
}
