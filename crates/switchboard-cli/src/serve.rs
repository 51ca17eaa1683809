//! `switchboard serve`: every configured server's tools as one MCP server on stdin/stdout
//! (the gateway). Stdout carries only the protocol; the startup report and logs go to stderr.

use std::path::PathBuf;
use std::sync::Arc;

use switchboard_config::{ServerEntry, TransportEntry};
use switchboard_runtime::naming::Naming;
use switchboard_runtime::sources::ServerSource;
use switchboard_runtime::{Authorizers, OutputLimit, Runtime, RuntimeOptions};
use switchboard_server::gateway::{self, GatewayOptions};

use crate::connect;
use crate::terminal::say;
use crate::watch::{ConfigWatch, Selection};

/// Largest tool output passed through (bigger ones are cut with a marker saying so).
const MAX_OUTPUT_BYTES: usize = 8 * 1024 * 1024;

/// Flags of `switchboard serve`.
#[derive(Debug, clap::Args)]
pub(crate) struct ServeArgs {
    /// The config file (mcp.json). Without it, the bundled example server is served.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Serve only this server (repeatable; default: every enabled server in the config).
    #[arg(long = "server", value_name = "NAME")]
    servers: Vec<String>,
    /// Watch the config file: apply its edits to the running gateway (changed servers
    /// restart, the rest keep running); a file that no longer parses is reported and ignored.
    #[arg(long, requires = "config")]
    watch: bool,
    /// With exactly one `--server`: expose its tools and prompts under their own names
    /// (not `<server>__<tool>`), so the gateway stands transparently in front of it.
    #[arg(long)]
    no_prefix: bool,
}

/// Serves until the client closes stdin or a SIGINT/SIGTERM arrives, then stops every
/// server. Errors are usage errors (bad config, unknown `--server`).
pub(crate) async fn run(args: ServeArgs) -> Result<u8, String> {
    let naming = naming(&args)?;
    let loaded = connect::load_config(args.config.as_deref())?;
    let file = &loaded.file;
    let selection = Selection {
        names: args.servers,
    };
    let entries = selection.entries(file)?;
    for problem in file.errors() {
        if selection.includes(&problem.name) {
            say(format_args!(
                "switchboard serve: `{}` is left out: {}",
                problem.name, problem.detail
            ));
        }
    }
    let mut options = RuntimeOptions::new(ServerSource::Entries(entries));
    options.output_limit = OutputLimit {
        max_bytes: MAX_OUTPUT_BYTES,
        spill_dir: None,
    };
    options.policy.authorizers = Some(Authorizers(Arc::new(saved_logins)));
    options.naming = naming;
    let runtime = Runtime::new(options);
    let mut gateway = GatewayOptions::new(env!("CARGO_PKG_VERSION"));
    gateway.on_started = Some(Box::new(move |report| {
        let ready = report.ready().count();
        say(format_args!(
            "switchboard serve: {ready} of {} server(s) ready",
            report.servers.len()
        ));
        for server in &report.servers {
            // A failed server's state ends with the tail of its stderr, over several lines.
            let state = server.state.to_string();
            let mut lines = state.lines();
            say(format_args!(
                "  {}: {} ({} tools)",
                server.name,
                lines.next().unwrap_or(""),
                server.tools
            ));
            for line in lines {
                say(format_args!("    {line}"));
            }
        }
    }));
    if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        say(format_args!(
            "switchboard serve: stdin is a terminal. This command is an MCP server for an MCP \
             client: put it in the client's config, e.g. {{\"command\": \"switchboard\", \"args\": \
             [\"serve\", \"--config\", \"/path/to/mcp.json\"]}}. Waiting for JSON-RPC lines; Ctrl-D \
             ends."
        ));
    }
    let (stdin, stdout) = switchboard_wire::stdio::own_stdio();
    let watch = if args.watch {
        Some(ConfigWatch::start(&file.path, selection, runtime.clone())?)
    } else {
        None
    };
    let served = gateway::serve(runtime.clone(), stdin, stdout, gateway);
    tokio::select! {
        end = served => tracing::debug!(?end, "the client closed the connection"),
        signal = shutdown_signal() => say(format_args!("switchboard serve: {signal}; stopping the servers")),
    }
    if let Some(watch) = watch {
        watch.stop().await;
    }
    runtime.dispose().await;
    Ok(0)
}

/// `--no-prefix` fronts one server: it needs exactly one `--server`.
fn naming(args: &ServeArgs) -> Result<Naming, String> {
    if !args.no_prefix {
        return Ok(Naming::Prefixed);
    }
    match args.servers.as_slice() {
        [_] => Ok(Naming::Unprefixed),
        [] => Err(
            "--no-prefix needs `--server NAME`: it fronts one server under its own names".into(),
        ),
        several => Err(format!(
            "--no-prefix needs exactly one `--server NAME` (got {}): names of several servers could collide",
            several.len()
        )),
    }
}

/// HTTP servers use the tokens saved by `switchboard login` (refreshed when needed).
fn saved_logins(entry: &ServerEntry) -> Option<Arc<dyn switchboard_http::Authorizer>> {
    let TransportEntry::Http { url, .. } = &entry.transport else {
        return None;
    };
    match connect::saved_login_authorizer(entry, url) {
        Ok(authorizer) => Some(authorizer),
        Err(error) => {
            say(format_args!(
                "switchboard serve: `{}` gets no authorization: {error}",
                entry.name
            ));
            None
        }
    }
}

/// Resolves on SIGINT or SIGTERM, naming it.
async fn shutdown_signal() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut terminate) = signal(SignalKind::terminate()) else {
        let _ = tokio::signal::ctrl_c().await;
        return "interrupted";
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => "interrupted",
        _ = terminate.recv() => "terminated",
    }
}
