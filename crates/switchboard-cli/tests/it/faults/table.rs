//! The vocabulary of the fault matrix: what one case is (a hostile server, a command, the
//! outcome a user must see) as plain data, so that the cases are one table.

use std::time::Duration;

use expect_test::Expect;
use switchboard_wire::DEFAULT_MAX_FRAME_BYTES;

use super::canned::Script;

/// One named hostile case.
#[derive(Debug)]
pub(crate) struct Case {
    /// Unique, kebab-case; the doc's and the failure messages' key.
    pub(crate) name: &'static str,
    /// Which part of the bad-input list it belongs to.
    pub(crate) area: Area,
    /// The hostile input in words (faults.md).
    pub(crate) hostile: &'static str,
    /// The configured servers, named `s`, `t`, `u`, … in order.
    pub(crate) servers: &'static [Server],
    /// Per-server settings written into every entry.
    pub(crate) settings: Settings,
    /// What the user runs.
    pub(crate) command: Cmd,
    /// What must happen.
    pub(crate) outcome: Outcome,
    /// Whether it holds today.
    pub(crate) status: Status,
}

/// The sections of the bad-input list (`mcp-spec-and-security.md` (b)) plus the issue's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Area {
    Framing,
    JsonRpc,
    Lifecycle,
    StdioProcess,
    Http,
    Auth,
    Lists,
    Results,
    Notifications,
    Gateway,
    Cli,
    Checker,
}

impl Area {
    pub(crate) fn title(self) -> &'static str {
        match self {
            Area::Framing => "Framing and encoding",
            Area::JsonRpc => "JSON-RPC semantics",
            Area::Lifecycle => "Lifecycle and versions",
            Area::StdioProcess => "stdio process faults",
            Area::Http => "HTTP faults",
            Area::Auth => "Auth and secrets",
            Area::Lists => "Lists, pagination, schemas",
            Area::Results => "Tool results and content",
            Area::Notifications => "Notifications, progress, cancellation",
            Area::Gateway => "Gateway (`switchboard serve`)",
            Area::Cli => "CLI level",
            Area::Checker => "Checker (`switchboard check` catches the server)",
        }
    }
}

/// A configured server.
#[derive(Debug)]
pub(crate) enum Server {
    /// The stdio fixture (`switchboard-fixture ARGS`).
    Fixture(&'static [&'static str]),
    /// The fixture's HTTP front end (`switchboard-fixture --http --http-fault FAULT ARGS`),
    /// started by the test.
    FixtureHttp {
        fault: &'static str,
        args: &'static [&'static str],
    },
    /// A hand-written loopback HTTP server in the test; `url` is a template in which
    /// `{addr}` becomes its `127.0.0.1:port`.
    Canned { script: Script, url: &'static str },
    /// Any stdio command (a one-line hostile server, a missing binary). In `args`,
    /// `{fixture}` becomes the fixture's path.
    Command {
        program: &'static str,
        args: &'static [&'static str],
    },
    /// An HTTP URL where nothing listens.
    Nowhere,
    /// An entry written as this JSON text (a configuration mistake).
    Entry(&'static str),
}

/// The usual URL template of a canned server.
pub(crate) const CANNED_URL: &str = "http://{addr}/mcp";

/// Settings written into each server entry (`None`: not written).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Settings {
    /// `timeout`: the per-request deadline.
    pub(crate) timeout: Option<&'static str>,
    /// `startupTimeout`: the connect deadline.
    pub(crate) startup: Option<&'static str>,
    /// `era`.
    pub(crate) era: Option<&'static str>,
    /// `env` of stdio entries (besides the case's marker).
    pub(crate) env: &'static [(&'static str, &'static str)],
    /// `sandbox` of stdio entries, as JSON text (`None`: not written).
    pub(crate) sandbox: Option<&'static str>,
}

/// Short deadlines so that "the server never answers" cases end quickly.
pub(crate) const QUICK: Settings = Settings {
    timeout: Some("2s"),
    startup: Some("5s"),
    era: None,
    env: &[],
    sandbox: None,
};
/// [`QUICK`], legacy era without probing (canned servers speak only `initialize`).
pub(crate) const QUICK_LEGACY: Settings = Settings {
    era: Some("legacy"),
    ..QUICK
};
/// For cases that must succeed: room for floods (thousands of messages) and for a loaded
/// machine. A hang still ends at the case's deadline.
pub(crate) const ROOMY: Settings = Settings {
    timeout: Some("60s"),
    startup: Some("30s"),
    ..QUICK
};
/// [`ROOMY`], legacy era without probing.
pub(crate) const ROOMY_LEGACY: Settings = Settings {
    era: Some("legacy"),
    ..ROOMY
};
/// Deadlines far beyond the case's own: the case only passes if the failure is prompt.
pub(crate) const PATIENT: Settings = Settings {
    timeout: Some("300s"),
    startup: Some("300s"),
    era: None,
    env: &[],
    sandbox: None,
};
/// [`PATIENT`], legacy era.
pub(crate) const PATIENT_LEGACY: Settings = Settings {
    era: Some("legacy"),
    ..PATIENT
};

/// What the user runs (always with `--config <the case's config>`).
#[derive(Debug)]
pub(crate) enum Cmd {
    /// `switchboard tools`.
    Tools,
    /// `switchboard call s TOOL ARGS`.
    Call {
        tool: &'static str,
        args: &'static str,
    },
    /// `switchboard check s FLAGS…`.
    Check { flags: &'static [&'static str] },
    /// `switchboard serve`, fed these lines on stdin.
    Serve { script: ServeScript, close: Close },
    /// `switchboard login s --no-browser` (stdin closed: no address is pasted back).
    Login,
    /// `switchboard serve` with this tool lock beside the config (`mcp.tool-lock.json`), fed
    /// [`INITIALIZE`], [`INITIALIZED`] and a `tools/list` ([`LOCK_SCRIPT`]); stdin closed
    /// after the answers.
    ServeBesideLock { lock: LockFile },
}

/// What a case leaves where the config's tool lock belongs.
#[derive(Debug)]
pub(crate) enum LockFile {
    /// A file of these bytes.
    Bytes(&'static [u8]),
    /// A folder of that name.
    Directory,
    /// A symbolic link to a file that does not exist.
    DanglingLink,
}

/// What [`Cmd::ServeBesideLock`] writes to the gateway.
pub(crate) const LOCK_SCRIPT: &[&str] = &[
    INITIALIZE,
    INITIALIZED,
    r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
];

/// What is written to the gateway's stdin.
#[derive(Debug)]
pub(crate) enum ServeScript {
    /// These lines as they are.
    Lines(&'static [&'static str]),
    /// [`INITIALIZE`], [`INITIALIZED`], then `count` calls of `tool` with ids 2, 3, ….
    ManyCalls {
        tool: &'static str,
        args: &'static str,
        count: usize,
    },
}

/// When the gateway's stdin is closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Close {
    /// Once every request written has an answer on stdout (as an MCP client would).
    AfterAnswers,
    /// Right after the last line (as `printf … | switchboard serve` does).
    AtOnce,
}

/// The client's `initialize` line for [`Cmd::Serve`].
pub(crate) const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"fault-matrix","version":"1"}}}"#;
/// The client's `initialized` line.
pub(crate) const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// What must happen.
#[derive(Debug)]
pub(crate) struct Outcome {
    pub(crate) exit: Exit,
    /// The asserted outcome in words (faults.md).
    pub(crate) says: &'static str,
    /// What the user sees, normalised: the exit code, stdout and stderr. Required for cases
    /// that hold; `None` for open ones (their wording is not decided yet).
    pub(crate) transcript: Option<Expect>,
    /// Further assertions.
    pub(crate) checks: &'static [Check],
    /// Hang detection: the command is killed (and the case fails) if it runs longer. Never
    /// a measure of speed; where a case is about failing promptly, the configured request
    /// deadline ([`PATIENT`]) is far beyond this one.
    pub(crate) deadline: Duration,
}

/// Hang detection for ordinary cases (seconds of work at most, on a loaded machine).
pub(crate) const HANG: Duration = Duration::from_secs(60);
/// Hang detection for cases that must fail before a [`PATIENT`] deadline.
pub(crate) const PROMPT: Duration = Duration::from_secs(30);

/// The exit classes of `switchboard` (and of `switchboard check`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    /// 0: success (check: no failures).
    Success,
    /// 1: the tool reported an error (check: failures found).
    ToolErrorOrFindings,
    /// 2: usage or configuration error.
    Usage,
    /// 3: server, transport or protocol failure.
    ServerFailure,
}

impl Exit {
    pub(crate) fn code(self) -> i32 {
        match self {
            Exit::Success => 0,
            Exit::ToolErrorOrFindings => 1,
            Exit::Usage => 2,
            Exit::ServerFailure => 3,
        }
    }
}

/// One further assertion on a run.
#[derive(Debug)]
pub(crate) enum Check {
    /// Stderr contains this text.
    StderrHas(&'static str),
    /// No raw terminal control reaches the user: stdout and stderr hold no C0 control
    /// other than newline and tab, no DEL, no C1 control, no bidi override or isolate (our
    /// own log lines carry no colour either).
    NoRawControls,
    /// Stderr (a pipe here, as for an MCP host that logs it) holds no escape sequence at
    /// all, colours included.
    NoEscapeSequences,
    /// The secret (`$SWITCHBOARD_FAULT_SECRET`) appears nowhere in stdout or stderr.
    SecretNeverShown,
    /// The tripwire (a loopback listener whose URL a hostile server handed out) was never
    /// connected to.
    TripwireUntouched,
    /// The switchboard process's peak RSS stays below the bound.
    PeakMemory(MemoryBound),
    /// Every request written to the gateway got exactly one answer, with its id.
    GatewayAnswersEveryRequest,
    /// The gateway holds at most this many open file descriptors once every request is
    /// answered (read from `/proc/PID/fd` before stdin is closed).
    GatewayFdsAtMost(usize),
}

/// A memory bound derived from a cap in code.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MemoryBound {
    pub(crate) bytes: u64,
    /// How the number follows from the caps (faults.md).
    pub(crate) derivation: &'static str,
}

const MIB: u64 = 1024 * 1024;
/// A generous ceiling on what `switchboard` needs with no peer input at all (measured:
/// about 20 MiB for the debug build; its runtime, parsers and buffers).
pub(crate) const BASELINE_BYTES: u64 = 48 * MIB;
/// The frame cap in code (`switchboard_wire::DEFAULT_MAX_FRAME_BYTES`, also the HTTP
/// body and SSE event cap).
pub(crate) const FRAME_CAP_BYTES: u64 = DEFAULT_MAX_FRAME_BYTES as u64;

/// Baseline plus `n` frames: what a client that holds at most a few capped frames at once
/// may use.
pub(crate) const fn frames(n: u64, derivation: &'static str) -> MemoryBound {
    MemoryBound {
        bytes: BASELINE_BYTES + n * FRAME_CAP_BYTES,
        derivation,
    }
}

/// Whether a case holds today.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    /// It holds: in [`super::cases::HOLD`], run green.
    Holds,
    /// It holds since one of the issue's defects was fixed: in [`super::cases::HOLD`], run
    /// green; the doc names the defect.
    Fixed { defect: u8 },
    /// One of the issue's defects, being fixed on another branch: in
    /// [`super::cases::PENDING`], asserted to still fail until the fix merges.
    #[allow(
        dead_code,
        reason = "how a hostile case is written before its fix; every defect of the hardening issue is fixed"
    )]
    BeingFixed { defect: u8 },
    /// Found while building the matrix, not fixed yet: in [`super::cases::PENDING`] too.
    Found,
    /// Found while building the matrix and fixed since: in [`super::cases::HOLD`], run
    /// green.
    FoundFixed,
    /// One of the issue's defects, fixed, whose hostile input the matrix cannot stage (it
    /// needs a TLS server on a public name, or a complete OAuth login): in
    /// [`super::cases::ELSEWHERE`], asserted by the named test instead (`path::function`,
    /// the path from the workspace root), which the matrix checks exists.
    TestedBy { defect: u8, test: &'static str },
    /// One of the items of the second hardening issue (the gateway and the tool lock),
    /// fixed: in [`super::cases::HOLD`], run green.
    Hardened { item: u8 },
    /// One of the items of the second hardening issue, fixed, whose hostile input the
    /// matrix cannot stage (several clients at once: an attacker and a victim; a client
    /// over HTTP): in [`super::cases::ELSEWHERE`], asserted by the named test.
    HardenedElsewhere { item: u8, test: &'static str },
}

impl Status {
    /// True for the statuses that belong in [`super::cases::HOLD`] (run green).
    pub(crate) fn holds(&self) -> bool {
        matches!(
            self,
            Status::Holds | Status::Fixed { .. } | Status::FoundFixed | Status::Hardened { .. }
        )
    }

    /// The test that asserts a case of [`super::cases::ELSEWHERE`] (`path::function`).
    pub(crate) fn elsewhere_test(&self) -> Option<&'static str> {
        match self {
            Status::TestedBy { test, .. } | Status::HardenedElsewhere { test, .. } => Some(test),
            _ => None,
        }
    }
}
