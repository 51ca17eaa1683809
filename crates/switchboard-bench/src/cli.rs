//! Command-line arguments of `switchboard-bench`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// `switchboard-bench`: MCP stdio and Streamable HTTP benchmarks (clients, servers and the
/// driver).
#[derive(Debug, Parser)]
#[command(name = "switchboard-bench", version, about)]
pub struct Cli {
    /// What to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Our client (switchboard-session): spawn the server, echo calls, print one JSON line.
    ClientOurs(ClientArgs),
    /// The rmcp 3.11.0 client: the same measurement.
    ClientRmcp(ClientArgs),
    /// The floor: blocking pipes to `raw-pipe-server`, one JSON line each way, no MCP.
    RawPipeClient(ClientArgs),
    /// The other end of the floor: answers every line with the same canned JSON line.
    RawPipeServer,
    /// The HTTP floor: a keep-alive HTTP/1.1 POST loop of prebuilt request bytes to `--url`
    /// (`raw-http-server`), answers read by Content-Length, no MCP.
    RawHttpClient(ClientArgs),
    /// The other end of the HTTP floor: the same canned answer to every request.
    RawHttpServer(HttpServerArgs),
    /// A minimal blocking Streamable HTTP MCP server (keep-alive, JSON answers) with the
    /// trivial server's `echo`, in the era given by `--era`.
    TrivialHttpServer(HttpServerArgs),
    /// A minimal blocking Rust MCP server with one tool, `echo {text|message}` (or, with
    /// `--tools N`, a paged catalog of N echo tools).
    TrivialServer(TrivialArgs),
    /// Scenario 4: enables `--servers` fixture servers at once through `switchboard-runtime`
    /// and times it against one server's own start; prints one JSON line of metrics.
    ColdStart(StartupArgs),
    /// Scenario 6: enables one server with a `--tools` catalog through the runtime and times
    /// enable → snapshot published; prints one JSON line of metrics.
    Scale(StartupArgs),
    /// Scenario 6: this process's RSS growth with `--servers` fixture servers enabled
    /// through the runtime; prints one JSON line of metrics.
    Rss(StartupArgs),
    /// Scenario 5's baseline: spawn the server, initialize, make one echo call (timed), shut
    /// down; prints one JSON line of metrics.
    BareStart(ClientArgs),
    /// Scenario 9: starts of the trivial server (spawn → initialize → `tools/list`), without
    /// a sandbox and in the default sandbox (and in relaxed ones, to see where the time
    /// goes), interleaved; prints one JSON line of metrics.
    SandboxStart(SandboxStartArgs),
    /// Scenario 10's load driver: N sessions to a gateway (`--url`) or N stdio sessions to
    /// `--server` (the direct baseline), sequential echo calls on each for a bounded window;
    /// with `--idle-sessions M`, the gateway's memory idle and with M sessions open. Prints
    /// one JSON line.
    GatewayLoad(GatewayLoadArgs),
    /// Scenario 11's load driver: with `--phase scale`, N legacy sessions, a GET stream held
    /// on each and a call on every one, the gateway's RSS after each step; with `--phase
    /// cap`, sessions past the default cap and which were evicted. Prints one JSON line.
    GatewayScale(crate::gateway_scale::GatewayScaleArgs),
    /// Runs a command to its end and prints its wall time and peak RSS (getrusage of the
    /// reaped children: the largest of the command and the descendants it waited for).
    MeasureChild(MeasureArgs),
    /// The driver: every client against every server, interleaved rounds, three CPU regimes.
    Run(RunArgs),
    /// Re-renders the report from a saved results file (e.g. after editing bench/NOTES.md).
    Report(ReportArgs),
}

/// Arguments of `trivial-server`.
#[derive(Debug, Clone, Args)]
pub struct TrivialArgs {
    /// Serve a catalog of this many echo tools instead of the one `echo` (0: just `echo`).
    #[arg(long, default_value_t = 0)]
    pub tools: usize,
    /// Tools per `tools/list` page with `--tools`.
    #[arg(long, default_value_t = 1000)]
    pub page_size: usize,
}

/// Arguments of the benchmark's own HTTP servers. They print their URL on stdout once
/// listening and exit when stdin closes.
#[derive(Debug, Clone, Args)]
pub struct HttpServerArgs {
    /// The loopback port to listen on (0: any free port).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// The protocol era spoken (`auto`: both, as a dual-era server).
    #[arg(long, value_enum, default_value = "auto")]
    pub era: EraArg,
}

/// A protocol era to speak (clients: which handshake; servers: which requests they serve).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EraArg {
    /// Clients probe with `server/discover` and fall back to `initialize`; servers serve both.
    Auto,
    /// `initialize` and sessions.
    Legacy,
    /// The stateless 2026-07-28 protocol.
    Modern,
}

impl EraArg {
    /// Our client's era choice for it.
    pub fn choice(self) -> switchboard_session::EraChoice {
        use switchboard_session::EraChoice;
        match self {
            EraArg::Auto => EraChoice::Auto,
            EraArg::Legacy => EraChoice::Legacy,
            EraArg::Modern => EraChoice::Modern,
        }
    }

    /// The flag value.
    pub fn flag(self) -> &'static str {
        match self {
            EraArg::Auto => "auto",
            EraArg::Legacy => "legacy",
            EraArg::Modern => "modern",
        }
    }
}

/// Arguments of the runtime scenarios (`cold-start`, `scale`, `rss`).
#[derive(Debug, Clone, Args)]
pub struct StartupArgs {
    /// Servers enabled at once (`cold-start`, `rss`).
    #[arg(long, default_value_t = 20)]
    pub servers: usize,
    /// Tools in the catalog (`scale`).
    #[arg(long, default_value_t = 10_000)]
    pub tools: usize,
    /// Tools per `tools/list` page (`scale`).
    #[arg(long, default_value_t = 1000)]
    pub page_size: usize,
    /// Timed solo starts of one server before the parallel start (`cold-start`).
    #[arg(long, default_value_t = 5)]
    pub solo: usize,
    /// Tokio runtime flavour of the host.
    #[arg(long, value_enum, default_value = "multi")]
    pub runtime: RuntimeKind,
    /// The fixture server binary (default: `switchboard-fixture` next to this binary).
    #[arg(long)]
    pub fixture: Option<PathBuf>,
}

/// Arguments of `sandbox-start`.
#[derive(Debug, Clone, Args)]
pub struct SandboxStartArgs {
    /// Timed starts of each variant (after one untimed start of each).
    #[arg(long, default_value_t = 20)]
    pub starts: usize,
    /// Idle time before each start, in milliseconds: starts in quick succession share the
    /// RCU grace period a cgroup v1 join waits for, which a server started on its own pays.
    #[arg(long, default_value_t = 100)]
    pub gap_ms: u64,
    /// The sandbox launcher: a binary answering `__sandbox-exec` (default: `switchboard`
    /// next to this binary, as the CLI launches its sandboxed servers).
    #[arg(long)]
    pub launcher: Option<PathBuf>,
    /// Tokio runtime flavour of the host.
    #[arg(long, value_enum, default_value = "current")]
    pub runtime: RuntimeKind,
}

/// Arguments of `gateway-load`. `--server` must come last: everything after it is the
/// server's command line.
#[derive(Debug, Clone, Args)]
pub struct GatewayLoadArgs {
    /// Sessions opened at once, each making calls one after the other.
    #[arg(long, default_value_t = 1)]
    pub sessions: usize,
    /// The timed window, in seconds (calls in flight at its end are waited for).
    #[arg(long, default_value_t = 3.0)]
    pub seconds: f64,
    /// Most calls one session makes in the window.
    #[arg(long, default_value_t = 200_000)]
    pub max_calls: u64,
    /// Untimed calls per session before the window.
    #[arg(long, default_value_t = 20)]
    pub warmup: u64,
    /// The era spoken.
    #[arg(long, value_enum, default_value = "legacy")]
    pub era: EraArg,
    /// Handshakes in flight at once while opening the sessions.
    #[arg(long, default_value_t = 32)]
    pub connect_parallel: usize,
    /// Longest one session may take to open, in seconds.
    #[arg(long, default_value_t = 60)]
    pub connect_timeout_s: u64,
    /// The gateway's process: its tree's CPU time over the window (and its memory with
    /// `--idle-sessions`) is measured.
    #[arg(long)]
    pub gateway_pid: Option<u32>,
    /// The upstream server's program: processes running it (and shells, and their
    /// descendants) in the gateway's tree are the upstream's, not the gateway's.
    #[arg(long)]
    pub upstream_exe: Option<PathBuf>,
    /// Open loop: the calls/s of all sessions together, each session's calls set at fixed
    /// times (spread evenly over the sessions); a call that had to wait for the session's
    /// call before it counts its latency from its set time. Without it, closed loop: each
    /// session calls again as soon as it is answered.
    #[arg(long)]
    pub rate: Option<f64>,
    /// Measure memory instead: the gateway's RSS idle, after one session's 100 calls, and
    /// with this many more sessions open and idle.
    #[arg(long, default_value_t = 0)]
    pub idle_sessions: usize,
    /// The gateway's Streamable HTTP URL.
    #[arg(long)]
    pub url: Option<String>,
    /// Without `--url`: the stdio server each session starts (must be last).
    #[arg(long, required_unless_present = "url", num_args = 1.., allow_hyphen_values = true)]
    pub server: Vec<String>,
}

/// Arguments of `measure-child`.
#[derive(Debug, Clone, Args)]
pub struct MeasureArgs {
    /// Fail unless the command's stdout contains this text (the call's answer).
    #[arg(long)]
    pub expect: Option<String>,
    /// The command and its arguments.
    #[arg(required = true, num_args = 1.., trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
}

/// Arguments of `report`.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// The results file written by `run`.
    #[arg(long, default_value = "target/bench/results.json")]
    pub json: PathBuf,
    /// Where to write the report.
    #[arg(long, default_value = "BENCHMARKS.md")]
    pub out: PathBuf,
    /// Hand-written notes appended to the report.
    #[arg(long, default_value = "bench/NOTES.md")]
    pub notes: PathBuf,
    /// Another results file whose scenario 4–6 measurements (if it has any) and whose
    /// measured cases (each in the regimes it measured) replace those of `--json`; the other
    /// cases stay (e.g. from `run --only cold,scale,rss,oneshot --json
    /// target/bench/startup.json`, or `run --only gateway --json target/bench/gateway.json`).
    #[arg(long)]
    pub merge: Option<PathBuf>,
    /// With `--merge`: also write the merged results back to `--json`.
    #[arg(long)]
    pub save: bool,
    /// Render only this section of the report and put it into `--out` in place of the same
    /// section (between its markers, else its heading up to the next `## `; where a full
    /// report has it when absent), leaving the rest of `--out` as it is; the section's goal
    /// rows replace the same rows of the Goals table (appended to it when absent); the
    /// section's hand-written notes (the block between the same markers in `--notes`)
    /// replace those in `--out` too (appended when absent).
    #[arg(long, value_enum)]
    pub section: Option<Section>,
}

/// A report section that can be rendered alone (`report --section`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Section {
    /// Scenario 7: the gateway hops against the direct call, and the gateway with the team
    /// features on (policy, rate limits, metrics) against the plain one.
    Gateway,
    /// Scenario 9: a sandboxed server against an unsandboxed one.
    Sandbox,
    /// Scenario 10: our gateway beside the gateways a user could install (supergateway,
    /// mcp-proxy from npm and from PyPI, FastMCP's proxy).
    GatewayPeers,
    /// Scenario 11: one gateway holding 10,000 legacy sessions and GET streams (memory per
    /// session and per stream, every session served) and its default session cap.
    GatewayScale,
}

/// Which tokio runtime a Rust client uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RuntimeKind {
    /// `new_current_thread` (what the `switchboard` CLI uses).
    Current,
    /// `new_multi_thread` with the default worker count.
    Multi,
}

impl RuntimeKind {
    /// The flag value.
    pub fn flag(self) -> &'static str {
        match self {
            RuntimeKind::Current => "current",
            RuntimeKind::Multi => "multi",
        }
    }

    /// Builds the runtime.
    pub fn build(self) -> std::io::Result<tokio::runtime::Runtime> {
        match self {
            RuntimeKind::Current => tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build(),
            RuntimeKind::Multi => tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build(),
        }
    }
}

/// Arguments shared by every benchmark client. `--server` must come last: everything after
/// it is the server's command line.
#[derive(Debug, Clone, Args)]
pub struct ClientArgs {
    /// Timed calls.
    #[arg(long, default_value_t = 1000)]
    pub calls: u64,
    /// Untimed calls before the timed ones.
    #[arg(long, default_value_t = 50)]
    pub warmup: u64,
    /// Calls kept in flight at once (1 = sequential).
    #[arg(long, default_value_t = 1)]
    pub inflight: usize,
    /// The tool to call.
    #[arg(long, default_value = "echo")]
    pub tool: String,
    /// The name of the tool's string argument (`text` for ours and rmcp's, `message` for
    /// server-everything).
    #[arg(long, default_value = "text")]
    pub arg: String,
    /// The string sent.
    #[arg(long, default_value = "hello")]
    pub text: String,
    /// Tokio runtime flavour (Rust clients).
    #[arg(long, value_enum, default_value = "current")]
    pub runtime: RuntimeKind,
    /// A Streamable HTTP server's URL to connect to instead of spawning `--server` (our
    /// client, rmcp's, the TS client and the HTTP floor).
    #[arg(long)]
    pub url: Option<String>,
    /// The era our client speaks (`auto`: probe, then fall back), and the era of the HTTP
    /// floor's request bytes (`auto` sends the legacy ones).
    #[arg(long, value_enum, default_value = "auto")]
    pub era: EraArg,
    /// Start the server in the default sandbox through this launcher (a binary answering
    /// `__sandbox-exec`, e.g. `switchboard`); our client only.
    #[arg(long)]
    pub sandbox_launcher: Option<PathBuf>,
    /// The server's program and arguments (must be last).
    #[arg(long, required_unless_present = "url", num_args = 1.., allow_hyphen_values = true)]
    pub server: Vec<String>,
}

/// Arguments of `run`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// One tiny unpinned round of a few cases; writes to target/bench/ only.
    #[arg(long)]
    pub smoke: bool,
    /// Measured rounds (after one warm-up round).
    #[arg(long, default_value_t = 5)]
    pub rounds: usize,
    /// Timed calls per sequential client run.
    #[arg(long, default_value_t = 2000)]
    pub calls: u64,
    /// Timed calls per pipelined client run.
    #[arg(long, default_value_t = 8000)]
    pub pipelined_calls: u64,
    /// Calls in flight in the pipelined scenario.
    #[arg(long, default_value_t = 64)]
    pub inflight: usize,
    /// Untimed calls at the start of every client run.
    #[arg(long, default_value_t = 50)]
    pub warmup: u64,
    /// Where to write the report (default: BENCHMARKS.md, or target/bench/SMOKE.md with --smoke).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Where to write the raw numbers (default: target/bench/results.json, or
    /// target/bench/smoke-results.json with --smoke).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// The repository root (default: derived from this binary's location).
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// Skip the callgrind measurement.
    #[arg(long)]
    pub no_callgrind: bool,
    /// Skip the pinned (`taskset -c 0`) and split (client CPU 0, server CPU 1) regimes.
    #[arg(long)]
    pub no_pinned: bool,
    /// Only run cases whose id contains one of these strings (comma separated).
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// Rounds of the start-up scenarios (4–6; each round runs each of them once).
    #[arg(long, default_value_t = 10)]
    pub startup_rounds: usize,
    /// Longest one client run may take before it is killed, in seconds.
    #[arg(long, default_value_t = 120)]
    pub case_timeout_s: u64,
    /// Before each regime of each round, wait until other processes use less than this
    /// fraction of the CPUs (measured over one second while nothing of ours runs).
    #[arg(long, default_value_t = 0.10)]
    pub quiet_busy: f64,
    /// Longest such wait, in seconds.
    #[arg(long, default_value_t = 90)]
    pub quiet_wait_s: u64,
    /// Longest total waiting for quiet over the whole run, in seconds (0: never wait).
    #[arg(long, default_value_t = 600)]
    pub quiet_total_s: u64,
    /// No new round starts after this many minutes.
    #[arg(long, default_value_t = 25)]
    pub max_minutes: u64,
}
