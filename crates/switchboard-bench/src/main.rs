//! `switchboard-bench`: every Rust participant of the benchmarks (our client, the rmcp
//! client, the raw pipe floor, a trivial server) and the driver that runs them all. See the
//! library docs and BENCHMARKS.md.

// A benchmark binary talks to its driver through stdout and to people through stderr.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;

use clap::Parser;
use switchboard_bench::cli::{Cli, ClientArgs, Command};
use switchboard_bench::startup::{self, Metrics};
use switchboard_bench::stats::RunResult;
use switchboard_bench::{
    driver, ours, raw_http, raw_pipe, rmcp_client, trivial_http, trivial_server,
};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::ClientOurs(args) => client("ours", &args, ours::run),
        Command::ClientRmcp(args) => client("rmcp", &args, rmcp_client::run),
        Command::RawPipeClient(args) => client("raw", &args, raw_pipe::run),
        Command::RawPipeServer => raw_pipe::serve().map_err(anyhow::Error::from),
        Command::RawHttpClient(args) => client("raw", &args, raw_http::run),
        Command::RawHttpServer(args) => {
            raw_http::serve(args.port, args.era).map_err(anyhow::Error::from)
        }
        Command::TrivialHttpServer(args) => {
            trivial_http::serve(args.port, args.era).map_err(anyhow::Error::from)
        }
        Command::TrivialServer(args) => {
            trivial_server::serve(args.tools, args.page_size).map_err(anyhow::Error::from)
        }
        Command::ColdStart(args) => metrics(
            "cold-start",
            startup::block_on(args.runtime, || startup::cold_start(&args)),
        ),
        Command::Scale(args) => metrics(
            "scale",
            std::env::current_exe()
                .map_err(anyhow::Error::from)
                .and_then(|bench| {
                    startup::block_on(args.runtime, || startup::scale(&args, &bench))
                }),
        ),
        Command::Rss(args) => metrics(
            "rss",
            startup::block_on(args.runtime, || startup::rss(&args)),
        ),
        Command::BareStart(args) => metrics(
            "bare-start",
            startup::block_on(args.runtime, || startup::bare_start(&args)),
        ),
        Command::SandboxStart(args) => metrics(
            "sandbox-start",
            std::env::current_exe()
                .map_err(anyhow::Error::from)
                .and_then(|bench| {
                    startup::block_on(args.runtime, || {
                        switchboard_bench::sandbox::sandbox_start(&args, &bench)
                    })
                }),
        ),
        Command::GatewayLoad(args) => {
            switchboard_bench::gateway_peers::main(&args).map(|line| println!("{line}"))
        }
        Command::GatewayScale(args) => {
            switchboard_bench::gateway_scale::main(&args).map(|line| println!("{line}"))
        }
        Command::MeasureChild(args) => metrics("measure-child", startup::measure_child(&args)),
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

fn metrics(name: &str, outcome: anyhow::Result<Metrics>) -> anyhow::Result<()> {
    let metrics = outcome.map_err(|e| e.context(name.to_owned()))?;
    println!("{}", startup::to_line(&metrics));
    Ok(())
}
