//! `switchboard-bench`: every Rust participant of the benchmarks (our client, the rmcp
//! client, the raw pipe floor, a trivial server) and the driver that runs them all. See the
//! library docs and BENCHMARKS.md.

// A benchmark binary talks to its driver through stdout and to people through stderr.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;

use clap::Parser;
use switchboard_bench::cli::{Cli, ClientArgs, Command};
use switchboard_bench::stats::RunResult;
use switchboard_bench::{driver, ours, raw_pipe, rmcp_client, trivial_server};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::ClientOurs(args) => client("ours", &args, ours::run),
        Command::ClientRmcp(args) => client("rmcp", &args, rmcp_client::run),
        Command::RawPipeClient(args) => client("raw", &args, raw_pipe::run),
        Command::RawPipeServer => raw_pipe::serve().map_err(anyhow::Error::from),
        Command::TrivialServer => trivial_server::serve().map_err(anyhow::Error::from),
        Command::Run(args) => driver::run(&args),
        Command::Report(args) => driver::rerender(&args),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("switchboard-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn client(
    name: &str,
    args: &ClientArgs,
    run: fn(&ClientArgs) -> anyhow::Result<RunResult>,
) -> anyhow::Result<()> {
    let result = run(args).map_err(|e| e.context(format!("{name} client")))?;
    println!("{}", result.to_line());
    Ok(())
}
