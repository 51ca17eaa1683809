//! stdio process faults: a server that crashes, hangs, floods, forks or holds its pipes.

use expect_test::expect;

use super::super::table::{
    Area, Case, Check, Cmd, Exit, HANG, Outcome, PATIENT, PROMPT, QUICK, ROOMY, Server, Status,
    frames,
};

pub(crate) static CASES: &[Case] = &[
    Case {
        name: "missing-binary",
        area: Area::StdioProcess,
        hostile: "the configured command does not exist",
        servers: &[Server::Command {
            program: "/nonexistent/mcp-server",
            args: &[],
        }],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed spawn error naming the server and the command",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: could not start server `s`: program `/nonexistent/mcp-server` was not found; check `command` in the server's configuration (a bare name is looked up in PATH)
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "command-not-executable",
        area: Area::StdioProcess,
        hostile: "the configured command is a file without execute permission",
        servers: &[Server::Command {
            program: "/etc/passwd",
            args: &[],
        }],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed spawn error naming the server and the command",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: could not start server `s`: program `/etc/passwd` is not executable (permission denied); check the path and its mode
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "exits-immediately",
        area: Area::StdioProcess,
        hostile: "the server exits 2 at once after a line on stderr",
        servers: &[Server::Fixture(&["--mode", "exit-immediately"])],
        settings: PATIENT,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "fails at once: exit status and stderr tail",
            checks: &[],
            deadline: PROMPT,
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
        name: "shell-one-liner-exits-with-stderr",
        area: Area::StdioProcess,
        hostile: "a one-line shell server that prints to stderr and exits 7",
        servers: &[Server::Command {
            program: "sh",
            args: &[
                "-c",
                "echo 'config file not found: /etc/mcp.conf' >&2; exit 7",
            ],
        }],
        settings: PATIENT,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "fails at once: exit status 7 and the stderr line",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s`: the server process exited (exit status: 7)
                --- last stderr output ---
                config file not found: /etc/mcp.conf
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "crash-mid-call",
        area: Area::StdioProcess,
        hostile: "the server exits 3 when a tool is called",
        servers: &[Server::Fixture(&["--mode", "crash-mid-call"])],
        settings: PATIENT,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "the in-flight call fails at once with the exit status and stderr tail",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s`: the server process exited (exit status: 3)
                --- last stderr output ---
                fixture: crashing on purpose
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "ignores-eof-and-sigterm",
        area: Area::StdioProcess,
        hostile: "the server ignores stdin EOF and SIGTERM",
        servers: &[Server::Fixture(&["--mode", "stubborn"])],
        settings: ROOMY,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the call prints `hi`; shutdown escalates to SIGKILL",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                hi
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "spawns-grandchildren",
        area: Area::StdioProcess,
        hostile: "the server starts two long-lived copies of itself, one in its own process group",
        servers: &[Server::Fixture(&["--mode", "forks-grandchild"])],
        settings: ROOMY,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the call prints `hi`; the whole tree is killed at shutdown",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                hi
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "stderr-flood",
        area: Area::StdioProcess,
        hostile: "the server writes stderr as fast as it is read (up to 200 MB)",
        servers: &[Server::Fixture(&["--mode", "stderr-flood"])],
        settings: ROOMY,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "stdout is served undisturbed; the call prints `hi`",
            checks: &[Check::PeakMemory(frames(
                1,
                "the stderr tail is capped at 8 KiB; one frame of headroom",
            ))],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                hi
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "closes-stdout-keeps-running",
        area: Area::StdioProcess,
        hostile: "during a call the server closes its stdout and keeps running",
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: PATIENT,
        command: Cmd::Call {
            tool: "closes_stdout",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "fails at once: the server closed its output (with the stderr tail)",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s`: the server closed its output
                --- last stderr output ---
                fixture: closed stdout
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "closes-stdin-keeps-running",
        area: Area::StdioProcess,
        hostile: "the server closes its stdin before it answers `initialize`, and keeps running",
        servers: &[Server::Fixture(&["--mode", "closes-stdin"])],
        settings: PATIENT,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "the next write fails at once (broken pipe), naming the server",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s`: could not write to the server: Broken pipe (os error 32)
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "stops-reading-stdin",
        area: Area::StdioProcess,
        hostile: "after `initialized` the server never reads stdin again",
        servers: &[Server::Fixture(&["--mode", "stops-reading"])],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "the request fails at its deadline; shutdown still ends the server",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` did not answer `tools/list` within 2s; if it is just slow, raise the timeout (`--timeout`, or `timeout` in the server's configuration)
                --- last stderr output ---
                fixture: no longer reading stdin
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "slow-tool-past-the-deadline",
        area: Area::StdioProcess,
        hostile: "a tool that takes 60 s (`slow`)",
        servers: &[Server::Fixture(&[])],
        settings: QUICK,
        command: Cmd::Call {
            tool: "slow",
            args: r#"{"duration_ms":60000,"steps":1}"#,
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed timeout naming the server and `tools/call`; the call is cancelled",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` did not answer `tools/call` within 2s; if it is just slow, raise the timeout (`--timeout`, or `timeout` in the server's configuration)
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "ignores-cancellation",
        area: Area::StdioProcess,
        hostile: "the server ignores `notifications/cancelled` and keeps working",
        servers: &[Server::Fixture(&["--mode", "ignores-cancel"])],
        settings: QUICK,
        command: Cmd::Call {
            tool: "slow",
            args: r#"{"duration_ms":60000,"steps":1}"#,
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed timeout; the late work does not keep the command alive",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` did not answer `tools/call` within 2s; if it is just slow, raise the timeout (`--timeout`, or `timeout` in the server's configuration)
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "never-speaks",
        area: Area::StdioProcess,
        hostile: "a process that never writes anything (sleeps)",
        servers: &[Server::Fixture(&["--mode", "sleeper"])],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "`initialize` fails at its deadline naming the server",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` did not answer `initialize` within 5s; if it is just slow to start, raise `startupTimeout` in the server's configuration
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "d2-escapes-in-call-stderr-tail",
        area: Area::StdioProcess,
        hostile: "the same server, for `call`",
        servers: &[Server::Command {
            program: "sh",
            args: &[
                "-c",
                "printf 'starting\\033]0;owned\\007\\033[2J\\033[31m red \\342\\200\\256evil\\n' >&2; exit 1",
            ],
        }],
        settings: QUICK,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "the stderr tail is shown with its controls neutralised",
            checks: &[Check::NoRawControls],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s`: the server process exited (exit status: 1)
                --- last stderr output ---
                starting\u{1b}]0;owned\u{7}\u{1b}[2J\u{1b}[31m red \u{202e}evil
            "#]]),
        },
        status: Status::Fixed { defect: 2 },
    },
    Case {
        name: "d2-escapes-in-stderr-tail",
        area: Area::StdioProcess,
        hostile: "a server that writes terminal escapes to stderr and exits 1",
        servers: &[Server::Command {
            program: "sh",
            args: &[
                "-c",
                "printf 'starting\\033]0;owned\\007\\033[2J\\033[31m red \\342\\200\\256evil\\n' >&2; exit 1",
            ],
        }],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "the stderr tail is shown with its controls neutralised",
            checks: &[Check::NoRawControls],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s`: the server process exited (exit status: 1)
                --- last stderr output ---
                starting\u{1b}]0;owned\u{7}\u{1b}[2J\u{1b}[31m red \u{202e}evil
            "#]]),
        },
        status: Status::Fixed { defect: 2 },
    },
    Case {
        name: "d3-daemonised-grandchild",
        area: Area::StdioProcess,
        hostile: "the server's wrapper daemonises a grandchild (`setsid`, its parent exits, it is re-parented) before exec'ing the server",
        servers: &[Server::Command {
            program: "sh",
            args: &[
                "-c",
                "(setsid sleep 300 </dev/null >/dev/null 2>&1 &); exec {fixture}",
            ],
        }],
        settings: QUICK,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the call prints `hi`; the daemonised grandchild is killed too",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                hi
                --- stderr: empty
            "#]]),
        },
        status: Status::Fixed { defect: 3 },
    },
    Case {
        name: "d3-daemonised-grandchild-holds-stdout",
        area: Area::StdioProcess,
        hostile: "the daemonised grandchild keeps the server's stdout and stderr open; the server exits 3 during the call",
        servers: &[Server::Command {
            program: "sh",
            args: &[
                "-c",
                "(setsid sleep 300 &); exec {fixture} --mode crash-mid-call",
            ],
        }],
        settings: PATIENT,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "fails at once (after a short drain) with the exit status, not at the request deadline; the grandchild is killed",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s`: the server process exited (a process it left behind still held its output) (exit status: 3)
                --- last stderr output ---
                fixture: crashing on purpose
            "#]]),
        },
        status: Status::Fixed { defect: 3 },
    },
];
