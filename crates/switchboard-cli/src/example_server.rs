//! The bundled example server (`switchboard example-server`, hidden): a small, well-behaved
//! MCP server on stdin/stdout that the command runs when no `--config` is given, written on
//! the authoring kit (`switchboard_server::author`) and served by the core's stdio
//! transport, so it speaks both eras (2026-07-28 and `initialize`). Tools only: `echo`,
//! `add`, `slow` (progress, cancellation) and `fail`. It exits when stdin closes.

use std::process::ExitCode;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use switchboard_server::author::schemars::JsonSchema;
use switchboard_server::author::{
    BuildError, NoArguments, RequestContext, Server, Structured, Tool, ToolError,
};

/// `serverInfo.name` unless `--name` sets it.
const DEFAULT_NAME: &str = "switchboard-example";
/// `serverInfo.version`.
const VERSION: &str = "0.1.0";
/// The longest `slow` sleeps, in milliseconds.
const MAX_SLOW_MS: u64 = 60_000;
/// The most progress steps `slow` takes.
const MAX_SLOW_STEPS: u64 = 100;

/// Serves until stdin closes. `args` are what followed `example-server`.
pub(crate) fn run(args: Vec<String>) -> ExitCode {
    let name = match parse_name(&args) {
        Ok(name) => name,
        Err(problem) => {
            crate::terminal::say(format_args!("switchboard example-server: {problem}"));
            return ExitCode::from(2);
        }
    };
    let server = match server(name) {
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
    runtime.block_on(server.serve_stdio());
    ExitCode::SUCCESS
}

/// `--name NAME` (optional), nothing else.
fn parse_name(args: &[String]) -> Result<String, String> {
    match args {
        [] => Ok(DEFAULT_NAME.to_owned()),
        [flag, name] if flag == "--name" => Ok(name.clone()),
        _ => Err(format!(
            "unexpected arguments {args:?}; usage: example-server [--name NAME]"
        )),
    }
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
