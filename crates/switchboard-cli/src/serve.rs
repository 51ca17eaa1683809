//! `switchboard serve`: every configured server's tools as one MCP server (the gateway), on
//! stdin/stdout or, with `--http ADDR`, over Streamable HTTP at `http://ADDR/mcp`. Stdout
//! carries only the protocol; the startup report, where it listens, and logs go to stderr.
//! When the config file has a tool lock beside it (`switchboard scan --update`), tools new or
//! changed since they were pinned are left out (quarantined) and said in the report, unless
//! `--no-tool-lock` asks to serve them (the changes are then warnings in the report). A lock
//! that is there and cannot be used (unreadable, a folder, empty, cut short, a BOM, another
//! format version) stops `serve` before any server starts, exit 2, with what is wrong, how
//! to recreate it (`scan --update`) and how to serve without it (`--no-tool-lock`, which
//! then serves every tool and says the lock was not read). The runtime reads the lock again
//! at each reload and, if it became unusable, serves none of the tools. `--guard[=MODE]`
//! turns on the gateway's result guard (`switchboard_gateway::guard`): answers that carry
//! an order to the model are withheld (or, `mark`, passed with a warning), each said here.
//! The config file's `rateLimits` section limits tool calls (`rate_limits.rs`; a bad one
//! stops `serve`, exit 2), and `--requests-per-second-per-client` each HTTP client's
//! request rate (docs/gateway-limits.md).
//! `--state redis://…` shares the rate limits' buckets with the other instances
//! (`state.rs`).
//! `--otlp URL` exports the gateway's spans to an OpenTelemetry collector (`otlp.rs`).
//! `--metrics ADDR` serves the gateway's Prometheus metrics (`switchboard_gateway::metrics`)
//! at `/metrics` on a listener of its own (`switchboard_server::http::scrape`), said on
//! stderr as `metrics at URL` before the gateway serves; over HTTP they also read the
//! MCP server's counts.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use switchboard_config::{ServerEntry, TransportEntry};
use switchboard_gateway::guard::{GuardMode, Guarded, ResultGuard};
use switchboard_gateway::metrics::GatewayMetrics;
use switchboard_gateway::{ErrorDetail, Gateway, GatewayOptions, HttpDocumentFetcher};
use switchboard_runtime::naming::Naming;
use switchboard_runtime::sources::ServerSource;
use switchboard_runtime::{
    Authorizers, ConnectHooks, FindingKind, HeldTool, LockPolicy, OutputLimit, RuntimeOptions,
    ServerState, ToolLock,
};
use switchboard_server::http::scrape::{Page, PageServer};
use switchboard_server::http::{
    BearerToken, BearerTokens, HttpLimits, HttpServeOptions, HttpServer,
};
use tokio_util::sync::CancellationToken;

use crate::audit_log::{AuditLog, AuditSettings};
use crate::rate_limits::RateLimitsInForce;

use crate::terminal::say;
use crate::watch::{ConfigWatch, SectionReader, Selection, WatchedConfig};
use crate::{Failure, connect};

/// Largest tool output passed through (bigger ones are cut with a marker saying so).
const MAX_OUTPUT_BYTES: usize = 8 * 1024 * 1024;
/// How long the audit writer gets at shutdown to write what is queued.
const AUDIT_FINISH_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Flags of `switchboard serve`.
#[derive(Debug, clap::Args)]
pub(crate) struct ServeArgs {
    /// The config file (mcp.json). Without it, the servers discovery finds (this project's
    /// and the user's files, `config list` shows them) are served, and when it finds none,
    /// the bundled example server.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Serve only this server (repeatable; default: every enabled server in the config).
    #[arg(
        long = "server",
        value_name = "NAME",
        add = clap_complete::ArgValueCandidates::new(crate::completions::server_names)
    )]
    servers: Vec<String>,
    /// Watch the config file (without --config: every file discovery reads, and where a
    /// project file may appear): apply its edits to the running gateway (changed servers
    /// restart, the rest keep running); a file that no longer parses is reported and ignored.
    #[arg(long)]
    watch: bool,
    /// With exactly one `--server`: expose its tools and prompts under their own names
    /// (not `<server>__<tool>`), so the gateway stands transparently in front of it.
    #[arg(long)]
    no_prefix: bool,
    /// Do not apply the tool lock beside the config file (`switchboard scan --update` writes
    /// it): serve the tools that are new or changed since they were pinned instead of
    /// leaving them out. The startup report still lists them as warnings. Without it, a lock
    /// that is there and cannot be used (empty, cut short, another version…) stops `serve`.
    #[arg(long)]
    no_tool_lock: bool,
    /// Scan what the servers answer (tool results, prompts, resources) with the rules
    /// `switchboard scan` applies to tool descriptions, and withhold an answer that carries
    /// an order to the model (the default: the client gets a tool error or JSON-RPC error
    /// -32008 saying why) or, with `--guard=mark`, pass it with a warning put first. Each is
    /// said on stderr. The first 256 KiB of an answer's text is scanned.
    #[arg(
        long,
        value_enum,
        value_name = "MODE",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "withhold"
    )]
    guard: Option<GuardFlag>,
    /// Serve over Streamable HTTP on this address (e.g. 127.0.0.1:8080; port 0 picks a free
    /// one) at `/mcp`, both protocol eras, instead of on stdin/stdout. `/healthz` answers
    /// 200 while serving and 503 while draining.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// Serve the stdio client one profile of the config's `profiles` (its servers, tools,
    /// renames and policy), as an HTTP client of `/mcp/<profile>` is served.
    #[arg(long, value_name = "NAME", conflicts_with = "http")]
    profile: Option<String>,
    /// With --http: clients must send `Authorization: Bearer <token>` with the token read
    /// from this environment variable.
    #[arg(
        long,
        value_name = "VAR",
        requires = "http",
        conflicts_with = "oauth_issuer"
    )]
    bearer_token_env: Option<String>,
    /// With --http: the gateway is an OAuth protected resource of this authorization server
    /// (its issuer URL): clients must send an access token it signed for --resource-url
    /// (JWT, RS256 or ES256, checked against its published keys). The protected-resource
    /// metadata is served at /.well-known/oauth-protected-resource/mcp.
    #[arg(long, value_name = "URL", requires_all = ["http", "resource_url"])]
    oauth_issuer: Option<String>,
    /// With --oauth-issuer: the gateway's MCP endpoint as clients address it (e.g.
    /// https://mcp.example.com/mcp): the audience its access tokens must name.
    #[arg(long, value_name = "URL", requires = "oauth_issuer")]
    resource_url: Option<String>,
    /// With --http: also accept requests from this browser origin (repeatable; loopback
    /// origins are always accepted), e.g. https://app.example.
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http")]
    allow_origins: Vec<String>,
    /// With --http: close a legacy call's event stream once it has been open this many
    /// milliseconds without the answer; its client resumes it (GET with Last-Event-ID,
    /// 2025-11-25 polling), so long calls survive proxies that cut long responses.
    #[arg(long, value_name = "MS", requires = "http", value_parser = clap::value_parser!(u64).range(10..))]
    poll_after_ms: Option<u64>,
    /// With --http: tell clients an upstream failure in full — the server's last stderr
    /// lines, its address, the start of an HTTP error body — as a stdio client is told.
    /// Without it they hear which server failed and how, and the details go to this
    /// process's log. The servers' configured secrets are hidden either way.
    #[arg(long, requires = "http")]
    full_errors: bool,
    /// Write one JSON line per tools/call, prompts/get and resources/read the gateway
    /// answers to this file (created 0600): time, identity, server, tool, a digest of the
    /// arguments (never their values), outcome, duration, hash-chained so that an edited or
    /// removed line shows (`switchboard audit verify FILE`). See docs/audit.md.
    #[arg(long, value_name = "FILE")]
    audit: Option<PathBuf>,
    /// With --audit: rotate the file (to FILE.1, five kept) when it would grow past this
    /// many bytes.
    #[arg(long, value_name = "BYTES", requires = "audit", default_value_t = crate::audit_log::DEFAULT_MAX_BYTES, value_parser = clap::value_parser!(u64).range(4096..))]
    audit_max_bytes: u64,
    /// Export OpenTelemetry spans of every request and its upstream call over OTLP/HTTP
    /// (protobuf) to this collector endpoint, e.g. http://127.0.0.1:4318/v1/traces. Without
    /// it, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (as is) or OTEL_EXPORTER_OTLP_ENDPOINT (plus
    /// /v1/traces) is used when set; else nothing is exported. Spans carry names, codes and
    /// outcomes, never argument values or secrets; a collector that is down or slow never
    /// slows a call. See docs/traces.md.
    #[arg(long, value_name = "URL")]
    otlp: Option<String>,
    /// Serve Prometheus metrics at `http://ADDR/metrics` on a listener of its own (e.g.
    /// 127.0.0.1:9464; port 0 picks a free one): calls by server, tool and outcome, errors
    /// by kind, latency, the servers' states and restarts, and with --http its sessions,
    /// streams and bytes. Keep it on a private address: it has no authentication. See
    /// docs/metrics.md.
    #[arg(long, value_name = "ADDR")]
    metrics: Option<SocketAddr>,
    /// Share the `rateLimits` buckets with every instance given the same store, so a
    /// client's quota is one quota across instances, and the upstream tokens they renew
    /// (one instance refreshes, the others adopt): redis://[:PASSWORD@]HOST:PORT[/DB], or
    /// ${VAR} to read it from the environment (also read from SWITCHBOARD_STATE). Redis must
    /// answer at the start; during an outage each instance decides with its own buckets,
    /// and says so. See docs/gateway-limits.md and docs/upstream-credentials.md.
    #[arg(long, value_name = "URL", env = crate::state::STATE_ENV, hide_env_values = true)]
    state: Option<String>,
    #[command(flatten)]
    limits: LimitFlags,
}

/// What `--guard` does with an answer that carries an order to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum GuardFlag {
    /// The client gets an error saying why in its place.
    Withhold,
    /// The answer passes with a warning put first.
    Mark,
}

/// The caps of `serve --http`, overall and per client (a client is its bearer token, its
/// OAuth subject, or without credentials its address). Unset: the defaults of
/// `switchboard_server::http::HttpLimits`, which `/healthz?detail` shows.
#[derive(Debug, clap::Args)]
struct LimitFlags {
    /// With --http: legacy sessions open at once (default 1024); beyond it the least
    /// recently used idle session ends for a new one.
    #[arg(long, value_name = "N", requires = "http", value_parser = clap::value_parser!(u64).range(1..))]
    max_sessions: Option<u64>,
    /// With --http: legacy sessions one client may have open (default 64); beyond it the
    /// client's own least recently used idle session ends for its new one, or, all busy, 429.
    #[arg(long, value_name = "N", requires = "http", value_parser = clap::value_parser!(u64).range(1..))]
    max_sessions_per_client: Option<u64>,
    /// With --http: authenticated connections at once (default 1024; more: 503).
    #[arg(long, value_name = "N", requires = "http", value_parser = clap::value_parser!(u64).range(1..))]
    max_connections: Option<u64>,
    /// With --http: authenticated connections of one client (default 64; more: 429).
    #[arg(long, value_name = "N", requires = "http", value_parser = clap::value_parser!(u64).range(1..))]
    max_connections_per_client: Option<u64>,
    /// With --http: requests in flight at once (default 1024; more: 503).
    #[arg(long, value_name = "N", requires = "http", value_parser = clap::value_parser!(u64).range(1..))]
    max_in_flight: Option<u64>,
    /// With --http: requests in flight of one client, across its sessions (default 256;
    /// more: 429).
    #[arg(long, value_name = "N", requires = "http", value_parser = clap::value_parser!(u64).range(1..))]
    max_in_flight_per_client: Option<u64>,
    /// With --http: event streams (GET streams, listen streams) one client holds open
    /// (default 32; more: 429).
    #[arg(long, value_name = "N", requires = "http", value_parser = clap::value_parser!(u64).range(1..))]
    max_streams_per_client: Option<u64>,
    /// With --http: connections not yet authenticated from one address (default 16); a new
    /// one beyond it closes that address's oldest.
    #[arg(long, value_name = "N", requires = "http", value_parser = clap::value_parser!(u64).range(1..))]
    max_unauthenticated_per_client: Option<u64>,
    /// With --http: connections not yet authenticated, from everyone (default 256); a new
    /// one beyond it closes the oldest.
    #[arg(long, value_name = "N", requires = "http", value_parser = clap::value_parser!(u64).range(1..))]
    max_unauthenticated_connections: Option<u64>,
    /// With --http: requests one client may send per second, on average (default: no such
    /// limit); more: 429 with Retry-After. Tool calls have their own limits in the config's
    /// `rateLimits` (docs/gateway-limits.md).
    #[arg(long, value_name = "N", requires = "http", value_parser = clap::value_parser!(u32).range(1..))]
    requests_per_second_per_client: Option<u32>,
    /// With --requests-per-second-per-client: how many requests one client may send at once,
    /// back to back (default: one second's worth).
    #[arg(long, value_name = "N", requires = "requests_per_second_per_client", value_parser = clap::value_parser!(u32).range(1..))]
    request_burst_per_client: Option<u32>,
}

impl LimitFlags {
    /// The limits with the flags given applied.
    fn apply(&self, limits: &mut HttpLimits) {
        let set = |field: &mut usize, flag: Option<u64>| {
            if let Some(value) = flag {
                *field = usize::try_from(value).unwrap_or(usize::MAX);
            }
        };
        set(&mut limits.max_sessions, self.max_sessions);
        set(
            &mut limits.max_sessions_per_client,
            self.max_sessions_per_client,
        );
        set(&mut limits.max_connections, self.max_connections);
        set(
            &mut limits.max_connections_per_client,
            self.max_connections_per_client,
        );
        set(
            &mut limits.max_streams_per_client,
            self.max_streams_per_client,
        );
        set(&mut limits.max_in_flight, self.max_in_flight);
        set(
            &mut limits.max_in_flight_per_client,
            self.max_in_flight_per_client,
        );
        set(
            &mut limits.max_unauthenticated_per_client,
            self.max_unauthenticated_per_client,
        );
        set(
            &mut limits.max_unauthenticated_connections,
            self.max_unauthenticated_connections,
        );
        if let Some(rate) = self.requests_per_second_per_client {
            limits.requests_per_second_per_client = std::num::NonZeroU32::new(rate);
            limits.request_burst_per_client = self
                .request_burst_per_client
                .and_then(std::num::NonZeroU32::new);
        }
    }
}

/// Serves until the client closes stdin (stdio) or a SIGINT/SIGTERM arrives (either), then
/// stops every server. Errors are usage errors (bad config, unknown `--server`, an unset
/// token variable, an address that cannot be bound).
pub(crate) async fn run(args: ServeArgs) -> Result<u8, Failure> {
    let naming = naming(&args)?;
    let bearer_token = bearer_token(args.bearer_token_env.as_deref())?;
    let loaded = connect::load_config(args.config.as_deref())?;
    let file = &loaded.file;
    let team = crate::team::read(&file.team, &switchboard_config::ProcessEnv)
        .map_err(|problem| Failure::Usage(format!("{}: {problem}", file.path.display())))?;
    let selection = Selection {
        names: args.servers,
    };
    let entries = selection.entries(file)?;
    team.check_profile_servers(file, &selection)
        .map_err(|problem| Failure::Usage(format!("{}: {problem}", file.path.display())))?;
    for line in team.summary(args.http.is_some()) {
        say(format_args!("switchboard serve: {line}"));
    }
    for problem in file.errors() {
        if selection.includes(&problem.name) {
            say(format_args!(
                "switchboard serve: `{}` is left out: {}",
                problem.name, problem.detail
            ));
        }
    }
    let served = entries.clone();
    // `--state`: the store instances share (a store that does not answer stops here):
    // the rate limits' buckets, and the upstream tokens they renew in turns.
    let state = crate::state::connect(args.state.as_deref()).await?;
    let shared_tokens = state.clone().map(crate::shared_tokens::RedisTokens::shared);
    let mut options = RuntimeOptions::new(ServerSource::Entries(entries));
    options.output_limit = OutputLimit {
        max_bytes: MAX_OUTPUT_BYTES,
        spill_dir: None,
    };
    let logins_shared = shared_tokens.clone();
    options.policy.authorizers = Some(Authorizers(Arc::new(move |entry: &ServerEntry| {
        saved_logins(entry, logins_shared.clone())
    })));
    // Each upstream connection is traced and takes and teaches the era memo, as the
    // verbs' connections do.
    options.policy.connect_hooks = Some(ConnectHooks(Arc::new(connect::CliConnectHooks)));
    options.naming = naming;
    // A lock file beside the config (`switchboard scan --update` writes it) is applied
    // strictly: a tool that is new or changed since it was pinned is left out. With
    // `--no-tool-lock` it is only read, so that the changes are still reported. A lock that
    // is there and cannot be used stops the serve (it fails closed), unless `--no-tool-lock`
    // says to do without it.
    let lock_flag = if args.no_tool_lock {
        LockFlag::DoWithout
    } else {
        LockFlag::Apply
    };
    if file.path.is_file() {
        options.lock = tool_lock_policy(&file.path, lock_flag)?;
    }
    let said_holds = SaidHolds::default();
    let holds_said_at_start = said_holds.clone();
    let mut gateway_options = GatewayOptions::new(env!("CARGO_PKG_VERSION"));
    gateway_options.on_started = Some(Box::new(move |report| {
        let ready = report.ready().count();
        say(format_args!(
            "switchboard serve: {ready} of {} server(s) ready",
            report.servers.len()
        ));
        for server in &report.servers {
            // A failed server's state ends with the tail of its stderr, over several lines.
            let state = server.state.to_string();
            let mut lines = state.lines();
            let first = lines.next().unwrap_or("");
            let held = report
                .held
                .iter()
                .filter(|h| h.server == server.name)
                .count();
            match server.state {
                ServerState::Ready if held > 0 => say(format_args!(
                    "  {}: {first} ({} tools, {held} held by the tool lock{})",
                    server.name,
                    server.tools,
                    switchboard_runtime::sandbox_suffix(&server.sandbox)
                )),
                ServerState::Ready => say(format_args!(
                    "  {}: {first} ({} tools{})",
                    server.name,
                    server.tools,
                    switchboard_runtime::sandbox_suffix(&server.sandbox)
                )),
                _ => say(format_args!(
                    "  {}: {first}{}",
                    server.name,
                    switchboard_runtime::sandbox_suffix(&server.sandbox)
                )),
            }
            for line in lines {
                say(format_args!("    {line}"));
            }
        }
        for held in &report.held {
            if holds_said_at_start.first_time(held) {
                say(format_args!("  {}", held_line(held)));
            }
        }
        // Held tools are said above, each with what to do.
        for warning in report
            .warnings
            .iter()
            .filter(|w| w.kind != FindingKind::Quarantined)
        {
            say(format_args!("  warning: {warning}"));
        }
        holds_said_at_start
            .reported
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }));
    if let Some(flag) = args.guard {
        gateway_options.guard = Some(result_guard(flag));
    }
    gateway_options.access = team.access();
    if let Some(profile) = &args.profile {
        if !team.profiles.iter().any(|known| known.name == *profile) {
            let names: Vec<&str> = team.profiles.iter().map(|p| p.name.as_str()).collect();
            return Err(Failure::Usage(format!(
                "--profile `{profile}`: {} has no such profile (its profiles: {})",
                file.path.display(),
                match names.is_empty() {
                    true => "none".to_owned(),
                    false => names.join(", "),
                }
            )));
        }
        gateway_options.stdio_profile = Some(profile.clone());
    }
    // HTTP servers called with each client's own credentials (`upstreamCredentials`),
    // read at start.
    if let Some(section) = file.team.section(crate::upstream_credentials::SECTION) {
        let per_caller =
            crate::upstream_credentials::read(section, &served, &switchboard_config::ProcessEnv)
                .map_err(|problem| Failure::Usage(format!("{}: {problem}", file.path.display())))?
                .sharing(shared_tokens.clone());
        if let Some(line) = per_caller.summary() {
            say(format_args!("switchboard serve: {line}"));
        }
        gateway_options.credentials = Some(Arc::new(per_caller));
    }
    let audit_log = match &args.audit {
        Some(path) => Some({
            for warning in crate::audit_log::open_to_others(path) {
                say(format_args!("switchboard serve: warning: {warning}"));
            }
            AuditLog::open(AuditSettings {
                path: path.clone(),
                max_bytes: args.audit_max_bytes,
            })
            .map_err(|error| Failure::Usage(error.to_string()))?
        }),
        None => None,
    };
    gateway_options.audit = audit_log.clone().map(|log| {
        std::sync::Arc::new(log) as std::sync::Arc<dyn switchboard_gateway::audit::AuditSink>
    });
    // Rate limits and quotas on tool calls (`rateLimits`): a bad section stops here; a
    // reload under --watch reads it again.
    let rate_limits = Arc::new(RateLimitsInForce::start(file)?);
    gateway_options.rate_limits = Some(rate_limits.limits());
    let otlp = crate::otlp::start(args.otlp.as_deref())?;
    let otlp = otlp.map(|(export, traces)| {
        gateway_options.traces = Some(traces);
        export
    });
    // `--metrics`: its listener is up (and said) before the gateway serves.
    let metrics = match args.metrics {
        Some(addr) => Some(MetricsEndpoint::start(addr).await?),
        None => None,
    };
    gateway_options.metrics = metrics.as_ref().map(|endpoint| endpoint.metrics.clone());
    // `--state`: the rate limits' buckets shared through Redis.
    if let Some(state) = &state {
        let limits = rate_limits.limits();
        crate::state::share_limits(state, &limits, gateway_options.metrics.clone());
    }
    if args.http.is_some() {
        // Remote clients hear which server failed and how; the operator's log has the rest.
        gateway_options.error_detail = if args.full_errors {
            ErrorDetail::Full
        } else {
            ErrorDetail::Brief
        };
    } else {
        gateway_options.connection.tap = crate::trace::client_tap("stdio");
    }
    // The servers' questions during a call (elicitation, sampling) go to its client: the
    // gateway makes the runtime with its relay as the host.
    let gateway = Gateway::new(options, gateway_options);
    let runtime = gateway.runtime().clone();
    let policy_control = gateway.policy_control();
    // The tokens HTTP clients may present: `--bearer-token-env`'s and the named clients'.
    // A reload replaces the named ones (a client taken out is refused from then on).
    let bearer_tokens = BearerTokens::new(
        bearer_token
            .iter()
            .cloned()
            .chain(team.tokens.iter().cloned())
            .collect(),
    );
    let reloaded_tokens = bearer_tokens.clone();
    let follow_holds = tokio::spawn(say_new_holds(runtime.subscribe(), said_holds));
    let watch = if args.watch {
        let watched = match args.config {
            Some(path) => WatchedConfig::File(path),
            None => WatchedConfig::Discovered,
        };
        let reread_rate_limits: SectionReader = Box::new(move |file| rate_limits.reload(file));
        let reload_selection = selection.clone();
        Some(ConfigWatch::start(
            watched,
            selection,
            runtime.clone(),
            served,
            Box::new(move |file| {
                let team = crate::team::read(&file.team, &switchboard_config::ProcessEnv)?;
                team.check_profile_servers(file, &reload_selection)?;
                policy_control.replace(team.access());
                reloaded_tokens.replace(bearer_token.iter().cloned().chain(team.tokens).collect());
                Ok(())
            }),
            vec![reread_rate_limits],
        )?)
    } else {
        None
    };
    let served = match args.http {
        Some(addr) => {
            let oauth = match (args.oauth_issuer, args.resource_url) {
                (Some(issuer), Some(resource)) => Some(oauth_resource(issuer, resource).await?),
                _ => None,
            };
            let mut options = HttpServeOptions {
                allowed_origins: args.allow_origins,
                bearer_tokens,
                oauth,
                ..HttpServeOptions::default()
            };
            options.limits.poll_after = args.poll_after_ms.map(std::time::Duration::from_millis);
            args.limits.apply(&mut options.limits);
            serve_http(HttpServing {
                addr,
                options,
                gateway,
                metrics: metrics.as_ref().map(|endpoint| endpoint.metrics.clone()),
            })
            .await
        }
        None => {
            serve_stdio(gateway).await;
            Ok(())
        }
    };
    if let Some(watch) = watch {
        watch.stop().await;
    }
    follow_holds.abort();
    if let Some(endpoint) = metrics {
        endpoint.stop().await;
    }
    if let Some(log) = audit_log {
        let end = log.finish(AUDIT_FINISH_WAIT).await;
        if end.dropped > 0 {
            say(format_args!(
                "switchboard serve: audit: {} line(s) dropped (the writer fell behind or could not write)",
                end.dropped
            ));
        }
        if !end.finished {
            say(format_args!(
                "switchboard serve: audit: the writer did not finish within {} s; its last lines may be missing",
                AUDIT_FINISH_WAIT.as_secs()
            ));
        }
    }
    runtime.dispose().await;
    if let Some(export) = otlp {
        export.finish().await;
    }
    served.map(|()| 0)
}

/// The result guard `--guard` asks for, said on stderr now and at each answer it withholds
/// or marks (server, tool, rule and where; never the answer's text or the arguments).
fn result_guard(flag: GuardFlag) -> ResultGuard {
    let mode = match flag {
        GuardFlag::Withhold => {
            say(format_args!(
                "switchboard serve: --guard: answers that carry an order to the model are withheld"
            ));
            GuardMode::Withhold
        }
        GuardFlag::Mark => {
            say(format_args!(
                "switchboard serve: --guard=mark: answers that carry an order to the model pass \
                 with a warning put first"
            ));
            GuardMode::Mark
        }
    };
    ResultGuard {
        mode,
        on_guarded: Some(Arc::new(|guarded: &Guarded| {
            say(format_args!("switchboard serve: guard: {guarded}"));
        })),
    }
}

/// A held tool in `serve`'s reports: `held: fx/echo (fx__echo): its description changed since
/// it was pinned (…); run `…` to accept it`.
pub(crate) fn held_line(held: &HeldTool) -> String {
    format!(
        "held: {}/{} ({}): {}; {}",
        held.server,
        held.tool,
        held.name,
        held.hold.reason(),
        held.accept
    )
}

/// The held tools `serve` has said (by exported name and reason), so that each is said
/// once: in the startup report, or when a later listing or reload holds it. Capped: past
/// [`MAX_SAID_HOLDS`] it is cleared (a tool may then be said again).
#[derive(Clone, Default)]
struct SaidHolds {
    said: Arc<std::sync::Mutex<std::collections::HashSet<(String, String)>>>,
    /// Set once the startup report is said: later holds are said as they come.
    reported: Arc<std::sync::atomic::AtomicBool>,
}

/// Most held tools remembered as said.
const MAX_SAID_HOLDS: usize = 4096;

impl SaidHolds {
    /// Whether `held` (with its reason) has not been said yet; it counts as said from now.
    fn first_time(&self, held: &HeldTool) -> bool {
        let mut said = self
            .said
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if said.len() >= MAX_SAID_HOLDS {
            said.clear();
        }
        said.insert((held.name.clone(), held.hold.reason()))
    }
}

/// Says each tool a new snapshot holds that was not said before: the listing report for a
/// tool held after the start (a server's list changed, a reload).
async fn say_new_holds(
    mut snapshots: tokio::sync::watch::Receiver<Arc<switchboard_runtime::Snapshot>>,
    said: SaidHolds,
) {
    while snapshots.changed().await.is_ok() {
        let snapshot = snapshots.borrow_and_update().clone();
        // Until the startup report is said, it says them.
        if !said.reported.load(std::sync::atomic::Ordering::SeqCst) {
            continue;
        }
        for held in &snapshot.held {
            if said.first_time(held) {
                say(format_args!("switchboard serve: {}", held_line(held)));
            }
        }
    }
}

/// Whether `--no-tool-lock` was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LockFlag {
    Apply,
    DoWithout,
}

/// The lock beside `config`, said on stderr: `None` when there is none, or when it cannot
/// be used and `--no-tool-lock` was given. Errors: it cannot be used (what is wrong, how to
/// recreate it, how to serve without it).
fn tool_lock_policy(
    config: &std::path::Path,
    flag: LockFlag,
) -> Result<Option<LockPolicy>, String> {
    let lock_path = ToolLock::beside(config);
    match (ToolLock::read(&lock_path), flag) {
        (Ok(None), _) => Ok(None),
        (Ok(Some(lock)), LockFlag::Apply) => {
            say(format_args!(
                "switchboard serve: tools pinned in {}: new or changed ones are held (left out) \
                 until `switchboard scan --update` accepts them; new tools: {}",
                lock_path.display(),
                lock.new_tools()
            ));
            Ok(Some(LockPolicy {
                accept_command: Some(accept_command(config)),
                path: lock_path,
                strict: true,
            }))
        }
        (Ok(Some(_)), LockFlag::DoWithout) => {
            say(format_args!(
                "switchboard serve: --no-tool-lock: the tool lock {} is not applied: tools new or \
                 changed since they were pinned are served (warnings below name them)",
                lock_path.display()
            ));
            Ok(Some(LockPolicy {
                accept_command: Some(accept_command(config)),
                path: lock_path,
                strict: false,
            }))
        }
        (Err(error), LockFlag::DoWithout) => {
            say(format_args!(
                "switchboard serve: --no-tool-lock: the tool lock {} is not read: {}; every tool \
                 is served",
                lock_path.display(),
                error.problem
            ));
            Ok(None)
        }
        (Err(error), LockFlag::Apply) => Err(format!(
            "not serving: {}",
            crate::scan::unusable_lock_message(&error, config)
        )),
    }
}

/// The command that accepts a server's held tools (the server's name goes after it).
pub(crate) fn accept_command(config: &std::path::Path) -> String {
    format!("switchboard scan --config {} --update", config.display())
}

/// Serves one client on stdin/stdout until it closes stdin or a signal comes.
async fn serve_stdio(gateway: Gateway) {
    if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        say(format_args!(
            "switchboard serve: stdin is a terminal. This command is an MCP server for an MCP \
             client: put it in the client's config, e.g. {{\"command\": \"switchboard\", \"args\": \
             [\"serve\", \"--config\", \"/path/to/mcp.json\"]}}. Waiting for JSON-RPC lines; Ctrl-D \
             ends."
        ));
    }
    let (stdin, stdout) = switchboard_wire::stdio::own_stdio();
    let served = gateway.serve(stdin, stdout);
    tokio::select! {
        end = served => tracing::debug!(?end, "the client closed the connection"),
        signal = shutdown_signal() => say(format_args!("switchboard serve: {signal}; stopping the servers")),
    }
}

/// What `--http` serves, and where.
struct HttpServing {
    addr: SocketAddr,
    options: HttpServeOptions,
    gateway: Gateway,
    /// `--metrics`: they read the server's counts.
    metrics: Option<GatewayMetrics>,
}

/// `--metrics ADDR`: the gateway's metrics, served at `/metrics` on a listener of its own.
struct MetricsEndpoint {
    metrics: GatewayMetrics,
    shutdown: CancellationToken,
    serving: tokio::task::JoinHandle<()>,
}

impl MetricsEndpoint {
    /// Binds `addr` and serves, said on stderr (`metrics at http://ADDR/metrics`). Errors:
    /// the address cannot be bound (exit 5).
    async fn start(addr: SocketAddr) -> Result<MetricsEndpoint, Failure> {
        let metrics = GatewayMetrics::new();
        let rendered = metrics.clone();
        let page = Page {
            path: "/metrics",
            content_type: switchboard_gateway::metrics::CONTENT_TYPE,
            render: Arc::new(move || rendered.render()),
        };
        let server = PageServer::bind(addr, page)
            .await
            .map_err(|error| Failure::System(format!("--metrics: {error}")))?;
        say(format_args!(
            "switchboard serve: metrics at {}",
            server.url()
        ));
        let shutdown = CancellationToken::new();
        let serving = tokio::spawn(server.serve(shutdown.clone()));
        Ok(MetricsEndpoint {
            metrics,
            shutdown,
            serving,
        })
    }

    /// Stops serving (bounded by the listener's own close).
    async fn stop(self) {
        self.shutdown.cancel();
        if let Err(error) = self.serving.await {
            tracing::warn!(%error, "the metrics listener task failed");
        }
    }
}

/// Serves over Streamable HTTP until a signal comes, then drains (requests in flight get
/// their grace, listen streams their final result). Errors: the address cannot be bound
/// (the system's refusal, exit 5), or the options are not usable (exit 2).
async fn serve_http(serving: HttpServing) -> Result<(), Failure> {
    let HttpServing {
        addr,
        options,
        gateway,
        metrics,
    } = serving;
    if !addr.ip().is_loopback() && options.bearer_tokens.is_empty() && options.oauth.is_none() {
        say(format_args!(
            "switchboard serve: warning: {addr} is not a loopback address and neither --bearer-token-env nor --oauth-issuer is set: anyone who can reach it can use every configured server"
        ));
    }
    let service = gateway.start();
    let server = HttpServer::bind(addr, service.clone(), options)
        .await
        .map_err(|error| {
            if error.is_bind() {
                Failure::System(error.to_string())
            } else {
                Failure::Usage(error.to_string())
            }
        })?;
    if let Some(metrics) = &metrics {
        metrics.watch_http(server.stats());
    }
    say(format_args!(
        "switchboard serve: listening on {}",
        server.url()
    ));
    let shutdown = CancellationToken::new();
    let mut served = tokio::spawn(server.serve(shutdown.clone()));
    tokio::select! {
        end = &mut served => {
            tracing::debug!(?end, "the HTTP server ended");
            return Ok(());
        }
        signal = shutdown_signal() => say(format_args!("switchboard serve: {signal}; draining, then stopping the servers")),
    }
    shutdown.cancel();
    match served.await {
        Ok(end) => tracing::debug!(?end, "the HTTP server drained"),
        Err(error) => tracing::warn!(%error, "the HTTP server task failed"),
    }
    drop(service);
    Ok(())
}

/// The authorization server `--oauth-issuer` names, its metadata and keys read.
async fn oauth_resource(
    issuer: String,
    resource: String,
) -> Result<Arc<switchboard_server::http::oauth::OAuthResource>, String> {
    let options = switchboard_server::http::oauth::OAuthResourceOptions { issuer, resource };
    let fetcher = HttpDocumentFetcher::new().map_err(|error| format!("--oauth-issuer: {error}"))?;
    switchboard_server::http::oauth::OAuthResource::discover(options, Arc::new(fetcher))
        .await
        .map(Arc::new)
        .map_err(|error| format!("--oauth-issuer: {error}"))
}

/// The token `--bearer-token-env VAR` names: the variable must be set and not empty.
fn bearer_token(var: Option<&str>) -> Result<Option<BearerToken>, String> {
    let Some(var) = var else {
        return Ok(None);
    };
    let value = std::env::var(var).unwrap_or_default();
    match BearerToken::new(value) {
        Some(token) => Ok(Some(token)),
        None => Err(format!(
            "--bearer-token-env {var}: the environment variable `{var}` is not set or is empty; set it to the token clients must send"
        )),
    }
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

/// HTTP servers use the tokens saved by `switchboard login` (refreshed when needed, in
/// turns with the instances that share `shared`).
fn saved_logins(
    entry: &ServerEntry,
    shared: Option<Arc<dyn switchboard_auth::SharedTokens>>,
) -> Option<Arc<dyn switchboard_http::Authorizer>> {
    let TransportEntry::Http { url, .. } = &entry.transport else {
        return None;
    };
    match connect::saved_login_authorizer(entry, url, shared) {
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
pub(crate) async fn shutdown_signal() -> &'static str {
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
