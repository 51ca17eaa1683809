//! `switchboard`: list and call MCP servers from the shell.
//!
//! Glue only: flags are parsed here, configuration comes from `switchboard-config`, the
//! protocol from `switchboard-session`; this file renders results and maps outcomes to exit
//! codes (0 success, 1 the tool reported an error, 2 usage or configuration error, 3 server,
//! transport or protocol failure). Logs go to stderr; stdout carries only results. Every
//! byte for a person goes out through `terminal`, which neutralises control sequences.
//!
//! # Map
//!
//! The `switchboard` binary: flags → config → session → rendering → exit code. Glue only.
//! The verbs beyond `tools`/`call` (`prompts`, `prompt`, `resources`, `read`, and `tools
//! SERVER TOOL` whole) are `browse.rs`; `call`'s `key=value` arguments are typed by the
//! tool's normalised input schema and checked before sending (`arguments.rs`). Each verb
//! connects, then runs a function on the connected session (`listed_tools`, `call_on`,
//! `prompt_on`, `read_on`, …); `shell.rs` (`switchboard shell`) keeps the sessions open and
//! runs those same functions per command, reading lines on a thread (rustyline through
//! `terminal::LineEditor` on a terminal, plain capped lines otherwise; Ctrl-C cancels the
//! running call's token). `status.rs`: every server started in parallel, one row each
//! (ready or the failure's reason, counts, start time, warnings: description lint, shared
//! tool names, more than 40 tools in a server or 128 in all). `scan.rs` (`switchboard
//! scan`, `docs/scan.md`): the servers started by `status.rs`'s own `targets`/`start`,
//! then, locally, the runtime's lint and `find_shadowing`, the tool lock, names and counts,
//! and each catalog's tokens (tiktoken-rs o200k_base, embedded); text, JSON or SARIF 2.1.0;
//! `accepted.rs`: the findings a user accepted (`mcp.scan-accepted.toml`, TOML, failing
//! closed), which `scan` shows as accepted and does not count.
//! `adhoc.rs`: a server given as `--url URL` or `-- CMD` instead of a config file, named
//! `adhoc`, in SERVER's place. `config_cmd.rs`: the `config` verbs and the discovery every
//! command uses without `--config` (`connect::load_config`), project definitions gated by
//! the runtime's `TrustStore`. Serves the bundled example via the hidden `example-server`
//! command (`example_server.rs`: a small well-behaved server with four tools, written on
//! the server crate's authoring kit and served by its stdio transport on `own_stdio`, or
//! with `--http ADDR` by its HTTP transport, in both eras; the binary links no test
//! fixture, checked by the testkit's tidy test), opens the browser for `login`
//! (`browser.rs`), and follows the config for `serve --watch` (`watch.rs`: the `notify`
//! crate on the folders of the `--config` file or of discovery's places and the trust file,
//! debounced, feeding `Runtime::set_source` + `Runtime::reload`; the watcher is owned by
//! `serve`). `--trace`/`SWITCHBOARD_TRACE=FILE` (`trace.rs`: a `FrameTap` per connection —
//! the verbs' through `ConnectOverrides::tap`, `check`'s through `ServerSpec::tap`,
//! `serve`'s servers' through the runtime's connection hooks (`connect::CliConnectHooks`,
//! which the verbs' connects use too) and its stdio client's through the gateway's
//! connection options —, frames cut at 64 KiB into a bounded queue that drops and counts
//! rather than waits, a writer thread that redacts the entry's secrets and writes NDJSON);
//! `serve --otlp URL` (`otlp.rs`: the OpenTelemetry SDK's batch span processor behind a
//! queue cap that drops and counts, and its OTLP/HTTP protobuf exporter; the gateway's
//! `traces` module makes the spans);
//! a call's progress on a terminal (`progress.rs`, indicatif, drawn through `terminal`);
//! `completions SHELL` (`completions.rs`: clap_complete's dynamic engine, the registration
//! script written raw by `terminal::print_generated`, each Tab answered by `main` first
//! thing through `CompleteEnv`, SERVER positions from discovery's files read on a thread
//! given 1.5 s, names a terminal would not show as they are left out). `era_memo.rs`: the
//! era each `auto` server negotiated last (`$XDG_CACHE_HOME/switchboard/eras.json`, 256
//! servers, written atomically, a hint only: a bad file is an empty memo), passed to
//! `connect` as `ConnectOverrides::era_hint` by the verbs and, through the connection
//! hooks, by `serve`'s runtime (`check` only records what it found). `serve --http ADDR`
//! puts the gateway's `GatewayService` behind `http::HttpServer` (`serve.rs`: the token
//! from `--bearer-token-env`, `--allow-origin`, the drain on SIGINT/SIGTERM before the
//! runtime is disposed).

mod accepted;
mod adhoc;
mod arguments;
mod asking;
mod audit_cmd;
mod audit_log;
mod browse;
mod browser;
mod check;
mod completions;
mod config_cmd;
mod conformance;
mod connect;
mod era_memo;
mod example_server;
mod held;
mod login;
mod otlp;
mod progress;
mod rate_limits;
mod render;
mod request;
mod sandbox;
mod scan;
mod serve;
mod shared_tokens;
mod shell;
mod state;
mod status;
mod team;
mod terminal;
mod trace;
mod upstream_credentials;
mod watch;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{CommandFactory, Parser, Subcommand};
use clap_complete::ArgValueCandidates;
use serde_json::Value;
use switchboard_config::{ConfigFile, ServerEntry};
use switchboard_session::{CallOptions, Repeatable, SessionError};

use crate::arguments::Checked;
use crate::connect::{ConnectedServer, LoadedConfig};
use crate::terminal::{JsonLayout, say};

/// `--version`: the package version and the commit it was built from.
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("SWITCHBOARD_COMMIT"),
    ")"
);

/// Operate MCP servers: list their tools and call them.
#[derive(Debug, Parser)]
#[command(name = "switchboard", version = VERSION, about, long_about = None)]
#[command(
    after_help = "Exit codes: 0 success, 1 the tool reported an error, 2 usage or configuration error, \
3 server, transport or protocol failure.\nLogs: set SWITCHBOARD_LOG=debug (they go to stderr). \
Frames: --trace, or SWITCHBOARD_TRACE=FILE to append them to FILE."
)]
struct Cli {
    /// Write every JSON-RPC frame both ways to stderr as NDJSON (secrets redacted);
    /// SWITCHBOARD_TRACE=FILE appends them to FILE instead.
    #[arg(long, global = true)]
    trace: bool,
    /// Start every stdio server whose entry says nothing about a sandbox in the default
    /// sandbox (project-scoped servers always are; `SWITCHBOARD_SANDBOX=on` does the same;
    /// an entry's `"sandbox": false` opts out). See docs/sandbox.md.
    #[arg(long, global = true)]
    sandbox: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List the tools of one server, or of every enabled server; with a tool's name, show
    /// that tool whole (description, annotations, input and output schemas).
    Tools {
        /// Only this server (left out with an ad-hoc server).
        #[arg(add = ArgValueCandidates::new(completions::server_names))]
        server: Option<String>,
        /// Only this tool of the server, shown whole.
        #[arg(requires = "server")]
        tool: Option<String>,
        #[command(flatten)]
        common: Common,
    },
    /// Call one tool and print its result.
    #[command(
        override_usage = "switchboard call [OPTIONS] SERVER TOOL [ARGUMENTS]...\n       \
switchboard call [OPTIONS] --url URL TOOL [ARGUMENTS]...\n       \
switchboard call [OPTIONS] TOOL [ARGUMENTS]... -- CMD [ARGS]..."
    )]
    Call {
        /// The server, by its name in the config (left out with an ad-hoc server).
        #[arg(
            required_unless_present_any = ["url", "command"],
            add = ArgValueCandidates::new(completions::server_names)
        )]
        server: Option<String>,
        /// The tool, by its name on the server.
        #[arg(required_unless_present_any = ["url", "command"])]
        tool: Option<String>,
        /// Arguments: key=value pairs typed by the tool's schema (count=3 flag=true
        /// tags=a tags=b point.x=1, a JSON literal where a value is complex), one JSON
        /// object ('{"text":"hi"}'), - to read the JSON from stdin, or @FILE.
        arguments: Vec<String>,
        /// Send the arguments without checking them against the tool's input schema first.
        #[arg(long)]
        no_check: bool,
        /// Call the tool even if the tool lock beside the config file holds it (new or
        /// changed since `switchboard scan --update` pinned it; `serve` leaves it out).
        #[arg(long)]
        no_tool_lock: bool,
        /// A folder the server may work in, answered to its `roots/list` (repeatable;
        /// without it no roots are declared).
        #[arg(long = "root", value_name = "DIR")]
        roots: Vec<PathBuf>,
        #[command(flatten)]
        common: Common,
    },
    /// List the prompts of one server, or of every enabled server.
    Prompts {
        /// Only this server (left out with an ad-hoc server).
        #[arg(add = ArgValueCandidates::new(completions::server_names))]
        server: Option<String>,
        #[command(flatten)]
        common: Common,
    },
    /// Get one prompt, its arguments given as NAME=VALUE.
    Prompt {
        /// The server, by its name in the config (left out with an ad-hoc server).
        #[arg(
            required_unless_present_any = ["url", "command"],
            add = ArgValueCandidates::new(completions::server_names)
        )]
        server: Option<String>,
        /// The prompt, by its name on the server.
        #[arg(required_unless_present_any = ["url", "command"])]
        name: Option<String>,
        /// The prompt's arguments, NAME=VALUE.
        arguments: Vec<String>,
        #[command(flatten)]
        common: Common,
    },
    /// List the resources and resource templates of one server, or of every enabled server.
    Resources {
        /// Only this server (left out with an ad-hoc server).
        #[arg(add = ArgValueCandidates::new(completions::server_names))]
        server: Option<String>,
        #[command(flatten)]
        common: Common,
    },
    /// Read one resource: text to stdout; binary contents to --out FILE, or to stdout when
    /// it is not a terminal.
    Read {
        /// The server, by its name in the config (left out with an ad-hoc server).
        #[arg(
            required_unless_present_any = ["url", "command"],
            add = ArgValueCandidates::new(completions::server_names)
        )]
        server: Option<String>,
        /// The resource's URI (alone, without SERVER, when one server is configured).
        uri: Option<String>,
        /// Write the contents to this file.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        #[command(flatten)]
        common: Common,
    },
    /// Send any request (with --notify, a notification) and print its raw result as JSON:
    /// for what the other verbs do not cover. A JSON-RPC error is printed as the server sent
    /// it (exit 1).
    Request {
        /// The server, by its name in the config (left out with an ad-hoc server).
        #[arg(
            required_unless_present_any = ["url", "command"],
            add = ArgValueCandidates::new(completions::server_names)
        )]
        server: Option<String>,
        /// The method, e.g. `ping` or `tools/list`.
        method: Option<String>,
        /// Its parameters: one JSON object, `-` (JSON on stdin), `@FILE`, or key=value
        /// pairs (each value a JSON literal where it reads as one, else text).
        params: Vec<String>,
        /// Send a notification: nothing is waited for.
        #[arg(long)]
        notify: bool,
        #[command(flatten)]
        common: Common,
    },
    /// Start servers (the named ones, or every enabled one) in parallel and show each one's
    /// state: ready or why not, era and protocol version, its tools, prompts and resources,
    /// how long it took to start, and warnings (descriptions that read like instructions,
    /// tool names on several servers, more tools than clients take). Exit codes: 0 all
    /// ready, 2 usage or configuration error, 3 any failed.
    Status {
        /// Only these servers (left out with an ad-hoc server).
        #[arg(add = ArgValueCandidates::new(completions::server_names))]
        servers: Vec<String>,
        #[command(flatten)]
        common: Common,
    },
    /// Scan servers before trusting them, on this machine (nothing is sent anywhere): tool
    /// poisoning in descriptions, cross-server shadowing, tools changed since they were
    /// pinned in the lock file (rug pulls; `--update` pins them), the tokens each server's
    /// tools cost an agent, and names and counts clients refuse; findings accepted with
    /// --accept are shown as such and not counted. Text, --json or --sarif. Exit codes: 0 no
    /// findings, 1 findings, 2 usage or configuration error.
    Scan(scan::ScanArgs),
    /// An interactive session with servers kept connected between commands (`tools`,
    /// `call`, `prompts`, `prompt`, `resources`, `read`, `reconnect`, `help`, `exit`): on
    /// a terminal with line editing, history and Tab completion; else lines from stdin.
    Shell {
        /// Only this server (left out with an ad-hoc server); else every enabled one.
        #[arg(add = ArgValueCandidates::new(completions::server_names))]
        server: Option<String>,
        /// A folder the servers may work in, answered to their `roots/list` (repeatable;
        /// the current folder when none is given).
        #[arg(long = "root", value_name = "DIR")]
        roots: Vec<PathBuf>,
        #[command(flatten)]
        common: Common,
    },
    /// Check servers for MCP compatibility: the seven seed steps and the spec checks, with
    /// evidence. Exit codes: 0 no failures, 1 failures, 2 usage or configuration error.
    Check(check::CheckArgs),
    /// Serve every configured server's tools as one MCP server on stdin/stdout, or over
    /// Streamable HTTP with `--http ADDR` (a gateway for MCP clients; tools are named
    /// `<server>__<tool>`, or their own names with `--server NAME --no-prefix`). Stops the
    /// servers when the client closes stdin, or on SIGINT/SIGTERM.
    Serve(serve::ServeArgs),
    /// Log in to an HTTP server that needs OAuth; its tokens are saved for later commands.
    Login {
        #[command(flatten)]
        target: LoginTarget,
        /// Do not open a browser: print the address and read back the one the browser ends at.
        #[arg(long)]
        no_browser: bool,
        /// Log in on a machine without a browser with the device authorization grant
        /// (RFC 8628): print a code and the address to enter it at on any device, and wait
        /// for the approval there.
        #[arg(long, conflicts_with = "no_browser")]
        device: bool,
    },
    /// Forget the saved OAuth tokens of an HTTP server.
    Logout {
        #[command(flatten)]
        target: LoginTarget,
    },
    /// Where servers are configured, and changing it: `list`, `show`, `add`, `remove`,
    /// `import`, `trust`. Exit codes: 0 done, 2 usage or configuration error.
    Config(config_cmd::ConfigCommand),
    /// The gateway's audit log (`serve --audit FILE`): `verify` checks its hash chain.
    #[command(subcommand)]
    Audit(audit_cmd::AuditCommand),
    /// Print the completion script for a shell (verbs, flags, files and the discovered
    /// servers' names), e.g.
    /// `switchboard completions bash > ~/.local/share/bash-completion/completions/switchboard`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Run as the official conformance suite's client under test (scenario from the
    /// environment, server URL last).
    #[command(hide = true)]
    ConformanceClient {
        /// The scenario server's URL.
        url: String,
    },
    /// Serve the bundled example MCP server (tools, a prompt, resources) on stdin/stdout,
    /// or with `--http ADDR` over Streamable HTTP: something to point a client or the
    /// checker at.
    ExampleServer {
        /// `--name NAME`: the name the server reports (`switchboard-example` by default);
        /// `--http ADDR`: serve Streamable HTTP at `http://ADDR/mcp` instead.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

/// The flags every verb that talks to servers takes.
#[derive(Debug, clap::Args)]
struct Common {
    /// The config file (mcp.json). Without it, the servers discovery finds (this project's
    /// and the user's files, `config list` shows them), and when it finds none, the bundled
    /// example server.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Deadline for each request, e.g. 30s, 500ms, 2m (progress from the server extends
    /// it). The start-up deadline is the entry's `startupTimeout`.
    #[arg(long, value_name = "DURATION")]
    timeout: Option<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// An ad-hoc HTTP server instead of a config file, named `adhoc`: `--url
    /// https://host/mcp`. Leave SERVER out: `call --url URL TOOL key=value`.
    #[arg(long, value_name = "URL", conflicts_with_all = ["config", "command"])]
    url: Option<String>,
    /// An ad-hoc stdio server instead of a config file, named `adhoc`: its command and
    /// arguments after `--`. Leave SERVER out: `call TOOL key=value -- node server.js`.
    #[arg(last = true, value_name = "CMD", conflicts_with = "config")]
    command: Vec<String>,
    /// With an ad-hoc server after `--`: set this variable in its environment
    /// (repeatable; the value is a secret, never shown).
    #[arg(short = 'e', long = "env", value_name = "KEY=VALUE")]
    env: Vec<String>,
    /// With `--url`: send this header with every request (repeatable; the value is a
    /// secret, never shown), e.g. 'Authorization: Bearer TOKEN'.
    #[arg(long = "header", value_name = "'Name: value'")]
    headers: Vec<String>,
}

/// The server `login` and `logout` are for: a config entry, or an HTTP server by its URL.
#[derive(Debug, clap::Args)]
struct LoginTarget {
    /// The config file (mcp.json).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The server, by its name in the config.
    #[arg(
        required_unless_present = "url",
        add = ArgValueCandidates::new(completions::server_names)
    )]
    server: Option<String>,
    /// An HTTP server by its URL instead of a config entry: its tokens are saved for the
    /// URL, and the other verbs' `--url URL` uses them.
    #[arg(long, value_name = "URL", conflicts_with_all = ["config", "server"])]
    url: Option<String>,
    /// For a gateway client rather than yourself: the tokens are kept for that identity
    /// (`client:NAME` of `serve`'s `clients`, or `subject:SUB` of an OAuth token) and
    /// `serve` uses them for that client's calls to a server of `upstreamCredentials`.
    #[arg(long = "as", value_name = "IDENTITY", requires = "server")]
    on_behalf_of: Option<String>,
}

impl LoginTarget {
    /// The identity of `--as`, checked.
    fn on_behalf_of(&self) -> Result<Option<&str>, Failure> {
        let Some(identity) = self.on_behalf_of.as_deref() else {
            return Ok(None);
        };
        login::check_identity(identity).map_err(Failure::Usage)?;
        Ok(Some(identity))
    }

    /// The configuration holding the server, its name there, and how messages name it.
    fn load(&self) -> Result<(LoadedConfig, String, String), Failure> {
        match (&self.url, &self.server) {
            (Some(url), _) => {
                let adhoc = adhoc::AdHoc::from_flags(&adhoc::AdHocFlags {
                    url: Some(url),
                    ..adhoc::AdHocFlags::default()
                })?;
                let loaded = adhoc
                    .map(adhoc::AdHoc::config)
                    .ok_or_else(|| Failure::Usage("--url: give the server's URL".to_owned()))?;
                let shown = switchboard_text::redact::url_for_display(url);
                Ok((loaded, adhoc::ADHOC_NAME.to_owned(), shown))
            }
            (None, Some(server)) => {
                let loaded = connect::load_config(self.config.as_deref())?;
                Ok((loaded, server.clone(), server.clone()))
            }
            (None, None) => Err(Failure::Usage(
                "give the server: its name in the config, or --url URL".to_owned(),
            )),
        }
    }
}

impl Common {
    fn timeout(&self) -> Result<Option<Duration>, Failure> {
        match &self.timeout {
            Some(text) => switchboard_config::parse_duration(text)
                .map(Some)
                .map_err(|e| Failure::Usage(format!("--timeout: {e}"))),
            None => Ok(None),
        }
    }

    fn output(&self) -> Output {
        Output::json_if(self.json)
    }

    fn load(&self) -> Result<LoadedConfig, Failure> {
        let flags = adhoc::AdHocFlags {
            url: self.url.as_deref(),
            command: &self.command,
            env: &self.env,
            headers: &self.headers,
        };
        match adhoc::AdHoc::from_flags(&flags)? {
            Some(adhoc) => Ok(adhoc.config()),
            None => connect::load_config(self.config.as_deref()),
        }
    }

    /// The verb's positional words, SERVER first: an ad-hoc server takes SERVER's place.
    fn words(&self, given: impl IntoIterator<Item = String>) -> adhoc::Words {
        adhoc::Words::new(
            adhoc::AdHoc::given(self.url.as_deref(), &self.command),
            given,
        )
    }

    /// What a verb asks of `loaded`: `only` that server, or every enabled one.
    fn browse<'a>(
        &self,
        loaded: &'a LoadedConfig,
        only: Option<&'a str>,
    ) -> Result<browse::Browse<'a>, Failure> {
        Ok(browse::Browse {
            loaded,
            only,
            output: self.output(),
            timeout: self.timeout()?,
        })
    }
}

/// What ends the program, with its exit code.
enum Failure {
    /// Bad flags or configuration (exit 2).
    Usage(String),
    /// A server failed (exit 3).
    Server(String),
    /// A server did not answer within the deadline (exit 3, like any server failure); the
    /// server may still be busy with the request.
    TimedOut(String),
    /// The system refused a file or an address the command needs: a file that cannot be
    /// read or written, an address that cannot be listened on (exit 5).
    System(String),
}

impl Failure {
    /// `{"error": {"kind": "usage" | "server" | "system", "message"}}`, secrets replaced.
    fn to_json(&self) -> Value {
        let (kind, message) = match self {
            Failure::Usage(message) => ("usage", message),
            Failure::Server(message) | Failure::TimedOut(message) => ("server", message),
            Failure::System(message) => ("system", message),
        };
        serde_json::json!({"error": {
            "kind": kind,
            "message": terminal::without_secrets(message),
        }})
    }

    /// The exit status this failure ends the program with.
    fn exit_code(&self) -> u8 {
        match self {
            Failure::Usage(_) => EXIT_USAGE,
            Failure::Server(_) | Failure::TimedOut(_) => EXIT_SERVER,
            Failure::System(_) => EXIT_SYSTEM,
        }
    }

    /// What it says.
    fn message(&self) -> &str {
        match self {
            Failure::Usage(message)
            | Failure::Server(message)
            | Failure::TimedOut(message)
            | Failure::System(message) => message,
        }
    }

    /// A config file that could not be used: one that is there but cannot be read is the
    /// system's refusal, anything else (missing, invalid) a configuration error.
    fn of_config(error: &switchboard_config::ConfigError) -> Failure {
        match error {
            switchboard_config::ConfigError::Read { source, .. }
                if source.kind() != std::io::ErrorKind::NotFound =>
            {
                Failure::System(error.to_string())
            }
            _ => Failure::Usage(error.to_string()),
        }
    }
}

/// A message alone is a usage or configuration error (exit 2).
impl From<String> for Failure {
    fn from(message: String) -> Failure {
        Failure::Usage(message)
    }
}

const EXIT_TOOL_ERROR: u8 = 1;
const EXIT_USAGE: u8 = 2;
const EXIT_SERVER: u8 = 3;
/// After 4, `scan`'s "`--update` refused to pin a tool".
const EXIT_SYSTEM: u8 = 5;

fn main() -> ExitCode {
    // As a sandbox launcher (`__sandbox-exec`), before anything else: apply the policy to
    // this process and become the server. Returns only when that failed.
    #[cfg(target_os = "linux")]
    {
        let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
        if switchboard_sandbox::launch::is_launch(&args) {
            let error = switchboard_sandbox::launch::launch(&args);
            say(format_args!(
                "{} {error}",
                switchboard_sandbox::launch_failure_prefix()
            ));
            return ExitCode::from(switchboard_sandbox::launch::LAUNCH_FAILURE_EXIT);
        }
    }
    // A Tab in a shell with our completion script: answered here, then the program exits.
    completions::answer_if_asked(Cli::command);
    let cli = Cli::parse();
    sandbox::init(if cli.sandbox {
        sandbox::SandboxFlag::Given
    } else {
        sandbox::SandboxFlag::Absent
    });
    if let Command::ExampleServer { args } = cli.command {
        return example_server::run(args);
    }
    if let Command::Completions { shell } = cli.command {
        return match completions::script(shell, &Cli::command()) {
            Ok(script) => {
                terminal::print_generated(&script);
                ExitCode::SUCCESS
            }
            Err(message) => {
                say(format_args!("switchboard: {message}"));
                ExitCode::from(EXIT_USAGE)
            }
        };
    }
    init_logging();
    let _trace = match trace::start(cli.trace.then_some(trace::TraceDestination::Stderr)) {
        Ok(guard) => guard,
        Err(message) => {
            say(format_args!("switchboard: {message}"));
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            say(format_args!(
                "switchboard: could not start the async runtime: {e}"
            ));
            return ExitCode::from(EXIT_SERVER);
        }
    };
    let wants_json = cli.command.wants_json();
    let outcome = runtime.block_on(run(cli.command));
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(failure) => {
            let code = failure.exit_code();
            if wants_json {
                terminal::print_json(&failure.to_json(), JsonLayout::Compact);
            }
            say(format_args!("switchboard: {}", failure.message()));
            ExitCode::from(code)
        }
    }
}

impl Command {
    /// Whether the output asked for is JSON (`--json`): a failure is then also a JSON
    /// object on stdout, so that a program reading it always reads JSON.
    fn wants_json(&self) -> bool {
        match self {
            Command::Tools { common, .. }
            | Command::Call { common, .. }
            | Command::Prompts { common, .. }
            | Command::Prompt { common, .. }
            | Command::Resources { common, .. }
            | Command::Read { common, .. }
            | Command::Request { common, .. }
            | Command::Status { common, .. } => common.json,
            Command::Check(args) => args.wants_json(),
            Command::Config(command) => command.wants_json(),
            _ => false,
        }
    }
}

/// The `--root` folders, each an existing folder made absolute and canonical.
fn folders(given: Vec<PathBuf>) -> Result<Vec<PathBuf>, Failure> {
    given
        .into_iter()
        .map(|folder| match std::fs::canonicalize(&folder) {
            Ok(found) if found.is_dir() => Ok(found),
            Ok(_) => Err(Failure::Usage(format!(
                "--root {}: not a folder",
                folder.display()
            ))),
            Err(e) => Err(Failure::Usage(format!("--root {}: {e}", folder.display()))),
        })
        .collect()
}

/// Logs go to stderr through the terminal's sanitising writer, without colour (see
/// `terminal`).
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("SWITCHBOARD_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(terminal::LogOutput)
        .try_init();
}

async fn run(command: Command) -> Result<u8, Failure> {
    let _orphans = adopt_orphans(&command);
    match command {
        Command::Tools {
            common,
            server,
            tool,
        } => {
            let mut words = common.words(server.into_iter().chain(tool));
            let (server, tool) = (words.optional(), words.optional());
            words.no_more()?;
            let loaded = common.load()?;
            let browse = common.browse(&loaded, server.as_deref())?;
            match tool {
                Some(tool) => one_tool(&browse, &tool).await,
                None => tools(&browse).await,
            }
        }
        Command::Call {
            common,
            server,
            tool,
            arguments,
            no_check,
            no_tool_lock,
            roots,
        } => {
            asking::declare_roots(folders(roots)?);
            let mut words = common.words(server.into_iter().chain(tool).chain(arguments));
            let (server, tool) = (words.required("SERVER")?, words.required("TOOL")?);
            let timeout = common.timeout()?;
            let arguments = words.call_arguments(&tool)?;
            let loaded = common.load()?;
            let entry = pick_server(&loaded.file, &server)?;
            let lock = (!no_tool_lock)
                .then(|| held::LockBeside::of(&loaded.file.path))
                .flatten()
                .filter(held::LockBeside::is_there);
            let request = CallRequest {
                lock: lock.as_ref(),
                tool: &tool,
                arguments,
                checked: if no_check {
                    Checked::AsGiven
                } else {
                    Checked::AgainstSchema
                },
                timeout,
                output: common.output(),
                cancel: None,
            };
            call(entry, &request).await
        }
        Command::Prompts { common, server } => {
            let mut words = common.words(server);
            let server = words.optional();
            words.no_more()?;
            let loaded = common.load()?;
            browse::prompts(&common.browse(&loaded, server.as_deref())?).await
        }
        Command::Prompt {
            common,
            server,
            name,
            arguments,
        } => {
            let mut words = common.words(server.into_iter().chain(name).chain(arguments));
            let (server, name) = (words.required("SERVER")?, words.required("NAME")?);
            let loaded = common.load()?;
            let browse = common.browse(&loaded, Some(&server))?;
            browse::prompt(&browse, &name, &words.rest()).await
        }
        Command::Resources { common, server } => {
            let mut words = common.words(server);
            let server = words.optional();
            words.no_more()?;
            let loaded = common.load()?;
            browse::resources(&common.browse(&loaded, server.as_deref())?).await
        }
        Command::Read {
            common,
            server,
            uri,
            out,
        } => {
            let mut words = common.words(server.into_iter().chain(uri));
            let first = words.required("SERVER")?;
            let second = words.optional();
            words.no_more()?;
            let loaded = common.load()?;
            let (server, uri) = match second {
                Some(uri) => (first, uri),
                None if first.contains("://") => (only_server_for(&loaded.file, &first)?, first),
                None => return Err(Failure::Usage("give the URI: `read SERVER URI`".to_owned())),
            };
            let browse = common.browse(&loaded, Some(&server))?;
            let target = match &out {
                Some(path) => browse::ReadTarget::File(path),
                None => browse::ReadTarget::Stdout,
            };
            browse::read(&browse, &uri, target).await
        }
        Command::Request {
            common,
            server,
            method,
            params,
            notify,
        } => {
            let mut words = common.words(server.into_iter().chain(method).chain(params));
            let (server, method) = (words.required("SERVER")?, words.required("METHOD")?);
            let params =
                arguments::ArgumentSource::from_words(&words.rest()).map_err(Failure::Usage)?;
            let timeout = common.timeout()?;
            let loaded = common.load()?;
            let entry = pick_server(&loaded.file, &server)?;
            let raw = request::RawRequest {
                method: &method,
                params,
                kind: if notify {
                    request::RequestKind::Notification
                } else {
                    request::RequestKind::Request
                },
                timeout,
                output: common.output(),
            };
            request::run(entry, &raw).await
        }
        Command::Status { common, servers } => {
            let words = common.words(servers);
            let servers = words.rest();
            let loaded = common.load()?;
            status::run(&common.browse(&loaded, None)?, &servers).await
        }
        Command::Shell {
            common,
            server,
            roots,
        } => {
            let roots = if roots.is_empty() {
                vec![PathBuf::from(".")]
            } else {
                roots
            };
            asking::declare_roots(folders(roots)?);
            shell::run(&common, server).await
        }
        Command::Scan(args) => scan::run(args).await,
        Command::Check(args) => check::run(args).await,
        Command::Serve(args) => serve::run(args).await,
        Command::Login {
            target,
            no_browser,
            device,
        } => {
            let (loaded, name, server) = target.load()?;
            let entry = pick_server(&loaded.file, &name)?;
            let approval = match (device, no_browser) {
                (true, _) => login::Approval::Device,
                (false, true) => login::Approval::Paste,
                (false, false) => login::Approval::Browser,
            };
            let on_behalf_of = target.on_behalf_of()?;
            let as_whom = on_behalf_of
                .map(|identity| format!(" as `{identity}`"))
                .unwrap_or_default();
            match login::login(entry, approval, on_behalf_of).await {
                Ok(login::LoginOutcome::LoggedIn { tools }) => say(format_args!(
                    "switchboard: logged in to `{server}`{as_whom}; it offers {tools} tool(s)"
                )),
                Ok(login::LoginOutcome::NotNeeded { tools }) => say(format_args!(
                    "switchboard: server `{server}` did not ask for authorization, so there is \
                     nothing to log in to and nothing was saved; it offers {tools} tool(s) as it is"
                )),
                Err(login::LoginError::NotApplicable(message)) => {
                    return Err(Failure::Usage(message));
                }
                Err(login::LoginError::Failed(message)) => return Err(Failure::Server(message)),
            }
            Ok(0)
        }
        Command::Logout { target } => {
            let (loaded, name, server) = target.load()?;
            let entry = pick_server(&loaded.file, &name)?;
            let on_behalf_of = target.on_behalf_of()?;
            let as_whom = on_behalf_of
                .map(|identity| format!(" as `{identity}`"))
                .unwrap_or_default();
            match login::logout(entry, on_behalf_of).map_err(Failure::Usage)? {
                true => say(format_args!(
                    "switchboard: logged out of `{server}`{as_whom}; its saved tokens were deleted"
                )),
                false => say(format_args!(
                    "switchboard: no saved login for `{server}`{as_whom}"
                )),
            }
            Ok(0)
        }
        Command::Config(command) => config_cmd::run(command),
        Command::Audit(command) => audit_cmd::run(command),
        Command::ConformanceClient { url } => conformance::run(&url).await.map_err(Failure::Server),
        Command::ExampleServer { .. } | Command::Completions { .. } => Ok(0),
    }
}

/// Commands that start servers adopt their orphans while they run: daemonised descendants
/// are reaped, and killed at the end (see `switchboard_wire::orphans`). `login` starts no
/// server, only a browser, which is not ours to kill.
fn adopt_orphans(command: &Command) -> Option<switchboard_wire::orphans::OrphanGuard> {
    let starts_servers = matches!(
        command,
        Command::Tools { .. }
            | Command::Call { .. }
            | Command::Prompts { .. }
            | Command::Prompt { .. }
            | Command::Resources { .. }
            | Command::Read { .. }
            | Command::Request { .. }
            | Command::Status { .. }
            | Command::Scan(_)
            | Command::Shell { .. }
            | Command::Check(_)
            | Command::Serve(_)
    );
    if !starts_servers {
        return None;
    }
    match switchboard_wire::orphans::adopt_orphans() {
        Ok(guard) => Some(guard),
        Err(error) => {
            tracing::debug!(%error, "orphans of servers are not adopted");
            None
        }
    }
}

/// `read URI` without SERVER: the one server configured, else a usage error that names the
/// servers to choose from.
fn only_server_for(file: &ConfigFile, uri: &str) -> Result<String, Failure> {
    let names: Vec<&str> = file
        .servers
        .iter()
        .filter_map(|server| server.as_ref().ok().map(|entry| entry.name.as_str()))
        .collect();
    match names.as_slice() {
        [only] => Ok((*only).to_owned()),
        _ => Err(Failure::Usage(format!(
            "`{uri}` is a URI, not a server: write `switchboard read SERVER {uri}`; configured: {}",
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        ))),
    }
}

fn pick_server<'a>(file: &'a ConfigFile, name: &str) -> Result<&'a ServerEntry, Failure> {
    match file.find(name) {
        Some(Ok(entry)) => Ok(entry),
        Some(Err(error)) => Err(Failure::Usage(error.to_string())),
        None => {
            let names: Vec<String> = file
                .servers
                .iter()
                .map(|s| match s {
                    Ok(entry) => entry.name.clone(),
                    Err(error) => error.name.clone(),
                })
                .collect();
            Err(Failure::Usage(format!(
                "no server named `{name}` in {}; configured: {}",
                file.path.display(),
                if names.is_empty() {
                    "none".to_owned()
                } else {
                    names.join(", ")
                }
            )))
        }
    }
}

/// How a command prints its results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Output {
    /// Text for people.
    Text,
    /// JSON (`--json`).
    Json,
}

impl Output {
    /// The output a `--json` flag asks for.
    fn json_if(flag: bool) -> Output {
        if flag { Output::Json } else { Output::Text }
    }
}

async fn tools(browse: &browse::Browse<'_>) -> Result<u8, Failure> {
    let entries = browse.entries()?;
    let mut listings =
        futures_join_all(entries.iter().map(|entry| list_one(entry, browse.timeout))).await;
    if let Some(lock) = held::LockBeside::of(&browse.loaded.file.path) {
        for (entry, listed) in entries.iter().zip(listings.iter_mut()) {
            if let Ok(listed) = listed {
                listed.held = lock.held(&entry.name, &listed.listing.items);
            }
        }
    }
    Ok(show_tools(
        browse.output,
        entries.iter().map(|e| e.name.as_str()).zip(listings),
    ))
}

/// Prints each server's tools (text, or one JSON object by server) and says each failure;
/// the exit code is 3 when any failed.
fn show_tools<'a>(
    output: Output,
    listings: impl Iterator<Item = (&'a str, Result<render::ListedTools, SessionError>)>,
) -> u8 {
    browse::print_listings(
        output,
        listings.map(|(name, listing)| {
            let shown = listing.map(|listed| browse::Shown {
                json: render::tools_json(&listed),
                text: render::tools_text(name, &listed),
            });
            (name, shown)
        }),
    )
}

async fn list_one(
    entry: &ServerEntry,
    timeout: Option<Duration>,
) -> Result<render::ListedTools, SessionError> {
    let server = ConnectedServer::connect(entry, timeout).await?;
    let listed = listed_tools(&server, entry).await;
    server.close().await;
    listed
}

/// The tools of a connected server that its entry's filter lets through.
async fn listed_tools(
    server: &ConnectedServer,
    entry: &ServerEntry,
) -> Result<render::ListedTools, SessionError> {
    let mut listing = server.session.list_tools().await?;
    let listed = listing.items.len();
    listing
        .items
        .retain(|tool| entry.tool_filter.allows(&tool.name));
    Ok(render::ListedTools {
        negotiated: server.session.negotiated().clone(),
        left_out: listed - listing.items.len(),
        listing,
        held: Vec::new(),
    })
}

/// `switchboard tools SERVER TOOL`: one tool, whole.
async fn one_tool(browse: &browse::Browse<'_>, name: &str) -> Result<u8, Failure> {
    let entry = browse.entries()?[0];
    let listed = list_one(entry, browse.timeout)
        .await
        .map_err(|e| Failure::Server(e.to_string()))?;
    show_one_tool(&entry.name, &listed, name, browse.output)
}

/// Prints one tool of a server's listing, whole; a tool it does not list is a usage error.
fn show_one_tool(
    server: &str,
    listed: &render::ListedTools,
    name: &str,
    output: Output,
) -> Result<u8, Failure> {
    let Some(tool) = listed.listing.items.iter().find(|t| t.name == name) else {
        let names: Vec<&str> = listed
            .listing
            .items
            .iter()
            .map(|t| t.name.as_str())
            .collect();
        return Err(Failure::Usage(format!(
            "server `{server}` has no tool `{name}`; its tools: {}",
            names.join(", ")
        )));
    };
    if output == Output::Json {
        terminal::print_json(&tool.raw, JsonLayout::Compact);
    } else {
        terminal::print(&render::tool_text(server, tool));
    }
    Ok(0)
}

/// Runs futures concurrently on the current task and returns their outputs in order.
async fn futures_join_all<F: std::future::Future>(
    futures: impl Iterator<Item = F>,
) -> Vec<F::Output> {
    let mut set = Vec::new();
    for future in futures {
        set.push(Box::pin(future));
    }
    let mut outputs: Vec<Option<F::Output>> = set.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (slot, future) in outputs.iter_mut().zip(set.iter_mut()) {
            if slot.is_none() {
                match future.as_mut().poll(cx) {
                    std::task::Poll::Ready(out) => *slot = Some(out),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    outputs.into_iter().flatten().collect()
}

struct CallRequest<'a> {
    tool: &'a str,
    arguments: arguments::ArgumentSource,
    checked: Checked,
    timeout: Option<Duration>,
    output: Output,
    /// Cancelling it cancels the call (the shell's Ctrl-C).
    cancel: Option<tokio_util::sync::CancellationToken>,
    /// The tool lock whose held tools are refused (`None`: none, or `--no-tool-lock`).
    lock: Option<&'a held::LockBeside>,
}

async fn call(entry: &ServerEntry, request: &CallRequest<'_>) -> Result<u8, Failure> {
    check_filter(entry, request.tool)?;
    let server = ConnectedServer::connect(entry, request.timeout)
        .await
        .map_err(|e| Failure::Server(e.to_string()))?;
    let outcome = call_on(&server, entry, request).await;
    match outcome {
        // The server may still be busy with the call: it is stopped at once rather than
        // given the usual grace, so the timeout is said and the command ends at the deadline.
        Err(Failure::TimedOut(message)) => Err(Failure::TimedOut(match server.stop_busy().await {
            Some(signal) => format!(
                "{message}\nthe server was still busy with the call and was stopped with {signal}"
            ),
            None => message,
        })),
        outcome => {
            server.close().await;
            outcome
        }
    }
}

/// A tool the entry's enabledTools/disabledTools leave out is not there to call.
fn check_filter(entry: &ServerEntry, tool: &str) -> Result<(), Failure> {
    if entry.tool_filter.allows(tool) {
        return Ok(());
    }
    Err(Failure::Usage(format!(
        "server `{}` has no tool `{tool}` here: the entry's enabledTools/disabledTools leave it out ({})",
        entry.name, entry.origin
    )))
}

/// Calls the tool on a connected server and prints its result: the arguments typed and
/// checked first, the progress drawn while it runs; exit code 1 when the tool reported an
/// error.
async fn call_on(
    server: &ConnectedServer,
    entry: &ServerEntry,
    request: &CallRequest<'_>,
) -> Result<u8, Failure> {
    check_filter(entry, request.tool)?;
    if let Some(lock) = request.lock {
        let listing = server
            .session
            .list_tools()
            .await
            .map_err(|e| Failure::Server(e.to_string()))?;
        let allowed = listing
            .items
            .iter()
            .filter(|t| entry.tool_filter.allows(&t.name));
        if let Some(held) = lock
            .held(&entry.name, allowed)
            .into_iter()
            .find(|held| held.tool == request.tool)
        {
            return Err(Failure::Usage(format!(
                "{}; `switchboard serve` leaves it out too (`--no-tool-lock` calls it anyway)",
                held.message
            )));
        }
    }
    let (arguments, repeatable) = call_arguments(server, entry, request).await?;
    let progress = progress::CallProgress::for_call(request.tool);
    let options = CallOptions {
        timeout: request.timeout,
        progress: progress.sender(),
        cancel: request.cancel.clone(),
        repeatable,
        ..CallOptions::default()
    };
    let outcome = server
        .session
        .call_tool(request.tool, arguments.as_ref(), &options)
        .await;
    progress.finish();
    let result = match outcome {
        Ok(result) => result,
        Err(error) => return Err(explain_call_error(server, entry, request.tool, error).await),
    };
    if request.output == Output::Json {
        terminal::print_json(&render::call_json(&result), JsonLayout::Compact);
    } else {
        terminal::print(&render::call_text(&result));
    }
    if result.is_error {
        say(format_args!(
            "switchboard: tool `{}` on server `{}` reported an error",
            request.tool, entry.name
        ));
        return Ok(EXIT_TOOL_ERROR);
    }
    Ok(0)
}

/// The arguments to send: pairs typed by the tool's input schema, and (unless
/// `--no-check`) checked against it, so that a wrong key or type is said before anything
/// is sent; a tool the server does not list is the caller's mistake. With them, whether the
/// listed tool may be sent again after a server restart interrupted it (its annotations).
async fn call_arguments(
    server: &ConnectedServer,
    entry: &ServerEntry,
    request: &CallRequest<'_>,
) -> Result<(Option<Value>, Repeatable), Failure> {
    if request.checked == Checked::AsGiven {
        say(format_args!(
            "switchboard: --no-check: the arguments go as given; nothing is checked against \
             the tool's schema"
        ));
    }
    let needs_schema = matches!(request.arguments, arguments::ArgumentSource::Pairs(_))
        || request.checked == Checked::AgainstSchema;
    if !needs_schema {
        let arguments = match &request.arguments {
            arguments::ArgumentSource::Json(value) => Some(value.clone()),
            _ => None,
        };
        return Ok((arguments, Repeatable::ByMethod));
    }
    let listing = server
        .session
        .list_tools()
        .await
        .map_err(|e| Failure::Server(e.to_string()))?;
    let Some(tool) = listing.items.iter().find(|t| t.name == request.tool) else {
        let names: Vec<&str> = listing
            .items
            .iter()
            .map(|t| t.name.as_str())
            .filter(|name| entry.tool_filter.allows(name))
            .collect();
        return Err(Failure::Usage(format!(
            "server `{}` has no tool `{}`; its tools: {}",
            entry.name,
            request.tool,
            names.join(", ")
        )));
    };
    let schema = switchboard_runtime::schema::normalize(&tool.input_schema).ok();
    let arguments = match &request.arguments {
        arguments::ArgumentSource::Nothing => None,
        arguments::ArgumentSource::Json(value) => Some(value.clone()),
        arguments::ArgumentSource::Pairs(pairs) => {
            let schema = schema.clone().unwrap_or(Value::Bool(true));
            Some(
                arguments::from_pairs(pairs, &schema, request.checked).map_err(|problem| {
                    Failure::Usage(format!("tool `{}`: {problem}", request.tool))
                })?,
            )
        }
    };
    if request.checked == Checked::AgainstSchema
        && let Some(schema) = &schema
        && let Ok(validator) = switchboard_protocol::ArgumentCheck::new(schema)
        && let Err(problems) = validator.check(
            arguments
                .as_ref()
                .unwrap_or(&Value::Object(Default::default())),
        )
    {
        return Err(Failure::Usage(format!(
            "invalid arguments for tool `{}`: {problems} (nothing was sent; --no-check sends them anyway)",
            request.tool
        )));
    }
    Ok((arguments, Repeatable::of_tool(&tool.raw)))
}

/// Adds what the user can do next to a failed call. A tool name the server does not have is
/// the caller's mistake (exit 2), shown with the list of tools it does have (those the
/// entry's filter lets through).
async fn explain_call_error(
    server: &ConnectedServer,
    entry: &ServerEntry,
    tool: &str,
    error: SessionError,
) -> Failure {
    let message = error.to_string();
    if matches!(error, SessionError::Timeout { .. }) {
        return Failure::TimedOut(message);
    }
    if error.rpc_error().is_none() {
        return Failure::Server(message);
    }
    match server.session.list_tools().await {
        Ok(listing) if !listing.items.iter().any(|t| t.name == tool) => {
            let names: Vec<&str> = listing
                .items
                .iter()
                .map(|t| t.name.as_str())
                .filter(|name| entry.tool_filter.allows(name))
                .collect();
            Failure::Usage(format!(
                "{message}\nserver `{}` has no tool `{tool}`; its tools: {}",
                server.session.server_name(),
                names.join(", ")
            ))
        }
        _ => Failure::Server(message),
    }
}
