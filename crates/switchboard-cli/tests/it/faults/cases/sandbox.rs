//! Sandbox (the Contain issue): a server in its entry's sandbox tries what the policy
//! denies; the kernel's refusal reaches the user as the server reports it, and nothing of
//! what it started is left behind.

use expect_test::expect;

use super::super::table::{
    Area, Case, Check, Cmd, Exit, HANG, Outcome, QUICK, ROOMY, Server, Settings, Status,
};

pub(crate) static CASES: &[Case] = &[
    Case {
        name: "sandbox-write-outside-its-folders",
        area: Area::StdioProcess,
        hostile: "a server in the default sandbox writes a file outside its folders (`/tmp`, not its private temp dir)",
        servers: &[Server::Fixture(&["--mode", "sandbox-probe"])],
        settings: Settings {
            sandbox: Some(r#"true"#),
            ..ROOMY
        },
        command: Cmd::Call {
            tool: "sandbox_probe",
            args: r#"{"probe":"write","target":"/tmp/switchboard-fault-sandbox-write"}"#,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the write is denied (EACCES)",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                write /tmp/switchboard-fault-sandbox-write: denied (EACCES)
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "sandbox-network-none",
        area: Area::StdioProcess,
        hostile: "a server in the default sandbox (`network: none`) connects to a loopback port",
        servers: &[Server::Fixture(&["--mode", "sandbox-probe"])],
        settings: Settings {
            sandbox: Some(r#"true"#),
            ..ROOMY
        },
        command: Cmd::Call {
            tool: "sandbox_probe",
            args: r#"{"probe":"connect","target":"9"}"#,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the connection is refused by the kernel (ENETUNREACH: no network at all)",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                connect 9: denied (ENETUNREACH)
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "sandbox-fork-bomb",
        area: Area::StdioProcess,
        hostile: "a server whose sandbox allows 16 processes forks 64 children",
        servers: &[Server::Fixture(&["--mode", "sandbox-probe"])],
        settings: Settings {
            sandbox: Some(r#"{"limits": {"processes": 16}}"#),
            ..ROOMY
        },
        command: Cmd::Call {
            tool: "sandbox_probe",
            args: r#"{"probe":"fork","target":"64"}"#,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the forks past the limit fail (EAGAIN); every child is gone after",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                fork 64: denied (EAGAIN)
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "sandbox-signal-its-parent",
        area: Area::StdioProcess,
        hostile: "a server in the default sandbox signals its parent (the switchboard process)",
        servers: &[Server::Fixture(&["--mode", "sandbox-probe"])],
        settings: Settings {
            sandbox: Some(r#"true"#),
            ..ROOMY
        },
        command: Cmd::Call {
            tool: "sandbox_probe",
            args: r#"{"probe":"signal-parent","target":"-"}"#,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the signal is denied (EPERM)",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                signal-parent -: denied (EPERM)
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "sandbox-denial-named-in-the-failure",
        area: Area::StdioProcess,
        hostile: "a sandboxed server writes where its policy denies at start, then exits",
        servers: &[Server::Command {
            program: "sh",
            args: &[
                "-c",
                "echo x > /tmp/switchboard-fault-sandbox-start || exit 3; exec '{fixture}'",
            ],
        }],
        settings: Settings {
            sandbox: Some("true"),
            ..QUICK
        },
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "the failure quotes the server's stderr and says the sandbox denies what it reports as refused",
            checks: &[Check::StderrHas("it runs in a sandbox")],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s`: the server process exited; it runs in a sandbox, which denies what its stderr reports as refused (see docs/sandbox.md) (exit status: 3)
                --- last stderr output ---
                /usr/bin/sh: 1: cannot create /tmp/switchboard-fault-sandbox-start: Permission denied
            "#]]),
        },
        status: Status::Holds,
    },
];
