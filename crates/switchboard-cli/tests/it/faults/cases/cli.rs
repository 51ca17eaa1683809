//! CLI level: configuration mistakes and what the command line makes of them.

use expect_test::expect;

use super::super::canned::Script;
use super::super::table::{
    Area, CANNED_URL, Case, Check, Cmd, Exit, HANG, Outcome, QUICK, QUICK_LEGACY, Server, Settings,
    Status,
};

pub(crate) static CASES: &[Case] = &[
    Case {
        name: "unset-variable-in-env",
        area: Area::Cli,
        hostile: "the entry's `env` uses `${SWITCHBOARD_FAULT_SURELY_UNSET}`",
        servers: &[Server::Fixture(&[])],
        settings: Settings {
            env: &[("API_KEY", "${SWITCHBOARD_FAULT_SURELY_UNSET}")],
            ..QUICK
        },
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::Usage,
            says: "configuration error naming the variable, never a value",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 2
                --- stdout: empty
                --- stderr
                switchboard: <dir>/mcp.json:3: server `s`: `env.API_KEY` uses ${SWITCHBOARD_FAULT_SURELY_UNSET}, which is not set; set it, or write ${SWITCHBOARD_FAULT_SURELY_UNSET:-default}
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "secret-env-not-in-errors",
        area: Area::Cli,
        hostile: "the entry's `env` carries a secret from `${SWITCHBOARD_FAULT_SECRET}`; the server fails at once",
        servers: &[Server::Fixture(&["--mode", "exit-immediately"])],
        settings: Settings {
            env: &[("API_KEY", "${SWITCHBOARD_FAULT_SECRET}")],
            ..QUICK
        },
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "the error has the exit status and stderr tail, never the secret",
            checks: &[Check::SecretNeverShown],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s`: the server process exited (exit status: 2)
                --- last stderr output ---
                fixture: bad configuration, exiting
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "unknown-transport-type",
        area: Area::Cli,
        hostile: "an entry with `type: carrier-pigeon`",
        servers: &[Server::Entry(
            r#"{"type": "carrier-pigeon", "command": "x"}"#,
        )],
        settings: QUICK,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::Usage,
            says: "configuration error naming the entry and the field",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 2
                --- stdout: empty
                --- stderr
                switchboard: <dir>/mcp.json:3: server `s`: unknown `type` "carrier-pigeon"; use "stdio" or "http"
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "unknown-tool",
        area: Area::Cli,
        hostile: "the user calls a tool the server does not have",
        servers: &[Server::Fixture(&[])],
        settings: QUICK,
        command: Cmd::Call {
            tool: "nope",
            args: r#"{}"#,
        },
        outcome: Outcome {
            exit: Exit::Usage,
            says: "the caller's mistake: the server's error and its tool list",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 2
                --- stdout: empty
                --- stderr
                switchboard: server `s` has no tool `nope`; its tools: echo, add, slow, fail, image, change_tools
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "d2-escapes-in-its-tools-list",
        area: Area::Cli,
        hostile: "a tool name with OSC and CSI sequences; the user calls a tool that does not exist and the error message has escapes too",
        servers: &[Server::Canned {
            script: Script::EscapesInNames,
            url: CANNED_URL,
        }],
        settings: QUICK_LEGACY,
        command: Cmd::Call {
            tool: "nope",
            args: r#"{}"#,
        },
        outcome: Outcome {
            exit: Exit::Usage,
            says: "the error and the `its tools:` list are neutralised",
            checks: &[Check::NoRawControls],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 2
                --- stdout: empty
                --- stderr
                switchboard: server `s` has no tool `nope`; its tools: echo, \u{1b}]0;owned\u{7}\u{1b}[2Jevil
            "#]]),
        },
        status: Status::Fixed { defect: 2 },
    },
];
