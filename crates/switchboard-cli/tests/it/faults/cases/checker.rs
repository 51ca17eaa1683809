//! Checker: `switchboard check` catches the server.

use expect_test::expect;

use super::super::table::{
    Area, Case, Check, Cmd, Exit, HANG, Outcome, QUICK, ROOMY, Server, Status,
};

pub(crate) static CASES: &[Case] = &[
    Case {
        name: "check-garbage-stdout",
        area: Area::Checker,
        hostile: "non-JSON lines on stdout",
        servers: &[Server::Fixture(&["--mode", "garbage-stdout"])],
        settings: ROOMY,
        command: Cmd::Check { flags: &[] },
        outcome: Outcome {
            exit: Exit::ToolErrorOrFindings,
            says: "`stdout-purity` fails with the offending lines",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 1
                --- stdout
                s (stdio, legacy era, protocol 2025-11-25, server switchboard-fixture 0.1.0)
                  FAIL  stdout-purity                N line(s) on stdout were not JSON-RPC messages
                  s: <n> passed, 1 failed, 0 warnings, <n> skipped in <n> s
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "check-tool-without-name",
        area: Area::Checker,
        hostile: "a tool without a name",
        servers: &[Server::Fixture(&["--mode", "bad-tool-entry"])],
        settings: ROOMY,
        command: Cmd::Check { flags: &[] },
        outcome: Outcome {
            exit: Exit::ToolErrorOrFindings,
            says: "`tools-list` finds it",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 1
                --- stdout
                s (stdio, legacy era, protocol 2025-11-25, server switchboard-fixture 0.1.0)
                  FAIL  tools-list                   an entry on page N is invalid: the tool has no `name`
                  FAIL  wire-schema                  N of N messages do not match the N-N-N schema: the result answering `tools/list` (ListToolsResult): at /result/tools/N: "name" is a required property
                  s: <n> passed, 2 failed, 0 warnings, <n> skipped in <n> s
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "check-bad-tool-names",
        area: Area::Checker,
        hostile: "a name with a space and `!`, and a duplicate",
        servers: &[Server::Fixture(&["--mode", "bad-tool-names"])],
        settings: ROOMY,
        command: Cmd::Check { flags: &[] },
        outcome: Outcome {
            exit: Exit::ToolErrorOrFindings,
            says: "`tool-names` fails",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 1
                --- stdout
                s (stdio, legacy era, protocol 2025-11-25, server switchboard-fixture 0.1.0)
                  FAIL  tool-names                   two different tools are named `echo`; a client can reach only one of them (and N more)
                  s: <n> passed, 1 failed, 0 warnings, <n> skipped in <n> s
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "check-schema-zoo",
        area: Area::Checker,
        hostile: "every way an `inputSchema` can be wrong",
        servers: &[Server::Fixture(&[
            "--mode",
            "schema-zoo",
            "--ref-url",
            "{tripwire}/schema.json",
        ])],
        settings: ROOMY,
        command: Cmd::Check { flags: &[] },
        outcome: Outcome {
            exit: Exit::ToolErrorOrFindings,
            says: "`input-schemas` fails listing each; the network `$ref` is not fetched",
            checks: &[Check::TripwireUntouched],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 1
                --- stdout
                s (stdio, legacy era, protocol 2025-11-25, server switchboard-fixture 0.1.0)
                  FAIL  input-schemas                tool `schema_missing`: inputSchema is missing (and N more)
                  FAIL  wire-schema                  N of N messages do not match the N-N-N schema: the result answering `tools/list` (ListToolsResult): at /result/tools/N: "inputSchema" is a required property; at /result/tools/N/inputSchema: null is not of type "object"; at /result/tools/N/inputSchema: "object" is not of type "object" (and N more)
                  s: <n> passed, 2 failed, 0 warnings, <n> skipped in <n> s
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "check-credential-in-description",
        area: Area::Checker,
        hostile: "an access key in a description",
        servers: &[Server::Fixture(&["--mode", "leaky-description"])],
        settings: ROOMY,
        command: Cmd::Check { flags: &[] },
        outcome: Outcome {
            exit: Exit::ToolErrorOrFindings,
            says: "`no-credentials` fails",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 1
                --- stdout
                s (stdio, legacy era, protocol 2025-11-25, server switchboard-fixture 0.1.0)
                  FAIL  no-credentials               tool `deploy` description contains what looks like an AWS access key id (N characters)
                  s: <n> passed, 1 failed, 0 warnings, <n> skipped in <n> s
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "check-result-without-content",
        area: Area::Checker,
        hostile: "results without `content`",
        servers: &[Server::Fixture(&["--mode", "bad-call-result"])],
        settings: ROOMY,
        command: Cmd::Check { flags: &[] },
        outcome: Outcome {
            exit: Exit::ToolErrorOrFindings,
            says: "`tools-call` fails",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 1
                --- stdout
                s (stdio, legacy era, protocol 2025-11-25, server switchboard-fixture 0.1.0)
                  FAIL  tools-call                   `echo`: the result has no `content` array (it is required)
                  FAIL  wire-schema                  N of N messages do not match the N-N-N schema: the result answering `tools/call` (CallToolResult): at /result: "content" is a required property
                  s: <n> passed, 2 failed, 0 warnings, <n> skipped in <n> s
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "check-quarter-megabyte-result",
        area: Area::Checker,
        hostile: "256 KiB results",
        servers: &[Server::Fixture(&["--mode", "huge-result"])],
        settings: ROOMY,
        command: Cmd::Check { flags: &[] },
        outcome: Outcome {
            exit: Exit::Success,
            says: "`results-bounded` warns (exit 0: a warning is not a failure)",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                s (stdio, legacy era, protocol 2025-11-25, server switchboard-fixture 0.1.0)
                  warn  results-bounded              `echo` returned N bytes for a normal call; the limit is N bytes
                  s: <n> passed, 0 failed, 1 warnings, <n> skipped in <n> s
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "check-accepts-invalid-arguments",
        area: Area::Checker,
        hostile: "wrong argument types coerced, unknown fields ignored",
        servers: &[Server::Fixture(&["--mode", "accepts-invalid"])],
        settings: ROOMY,
        command: Cmd::Check { flags: &[] },
        outcome: Outcome {
            exit: Exit::ToolErrorOrFindings,
            says: "`invalid-input` fails",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 1
                --- stdout
                s (stdio, legacy era, protocol 2025-11-25, server switchboard-fixture 0.1.0)
                  FAIL  invalid-input                `echo` accepted schema-violating arguments (`text` given a number where the schema says type "string") and reported success
                  s: <n> passed, 1 failed, 0 warnings, <n> skipped in <n> s
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "check-vague-errors",
        area: Area::Checker,
        hostile: "argument errors that do not name the field",
        servers: &[Server::Fixture(&["--mode", "vague-errors"])],
        settings: ROOMY,
        command: Cmd::Check { flags: &[] },
        outcome: Outcome {
            exit: Exit::Success,
            says: "`errors-actionable` warns (exit 0)",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                s (stdio, legacy era, protocol 2025-11-25, server switchboard-fixture 0.1.0)
                  warn  errors-actionable            the error for invalid arguments does not name the offending field `text`
                  s: <n> passed, 0 failed, 1 warnings, <n> skipped in <n> s
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "check-unknown-tool-succeeds",
        area: Area::Checker,
        hostile: "an unknown tool gets a success result",
        servers: &[Server::Fixture(&["--mode", "unknown-tool-success"])],
        settings: ROOMY,
        command: Cmd::Check { flags: &[] },
        outcome: Outcome {
            exit: Exit::ToolErrorOrFindings,
            says: "`unknown-tool` fails",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 1
                --- stdout
                s (stdio, legacy era, protocol 2025-11-25, server switchboard-fixture 0.1.0)
                  FAIL  unknown-tool                 a call to the unknown tool `switchboard-check-no-such-tool` was reported as a success
                  s: <n> passed, 1 failed, 0 warnings, <n> skipped in <n> s
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "check-unstable-tools",
        area: Area::Checker,
        hostile: "a tool named after the process id",
        servers: &[Server::Fixture(&["--mode", "unstable-tools"])],
        settings: ROOMY,
        command: Cmd::Check { flags: &[] },
        outcome: Outcome {
            exit: Exit::ToolErrorOrFindings,
            says: "`reconnect` fails: the tools differ after a restart",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 1
                --- stdout
                s (stdio, legacy era, protocol 2025-11-25, server switchboard-fixture 0.1.0)
                  FAIL  reconnect                    the fresh instance lists different tools: gone ["instance_N"], new ["instance_N"]
                  s: <n> passed, 1 failed, 0 warnings, <n> skipped in <n> s
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "check-ignores-cancellation",
        area: Area::Checker,
        hostile: "`notifications/cancelled` ignored",
        servers: &[Server::Fixture(&["--mode", "ignores-cancel"])],
        settings: ROOMY,
        command: Cmd::Check { flags: &[] },
        outcome: Outcome {
            exit: Exit::ToolErrorOrFindings,
            says: "`cancellation` fails",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 1
                --- stdout
                s (stdio, legacy era, protocol 2025-11-25, server switchboard-fixture 0.1.0)
                  FAIL  cancellation                 N progress notification(s) arrived after the cancel, N of them N–N ms after it (more than N ms later): the work went on
                  s: <n> passed, 1 failed, 0 warnings, <n> skipped in <n> s
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "check-ignores-eof-and-sigterm",
        area: Area::Checker,
        hostile: "stdin EOF and SIGTERM ignored",
        servers: &[Server::Fixture(&["--mode", "stubborn"])],
        settings: ROOMY,
        command: Cmd::Check { flags: &[] },
        outcome: Outcome {
            exit: Exit::ToolErrorOrFindings,
            says: "`shutdown` fails; the checker kills it",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 1
                --- stdout
                s (stdio, legacy era, protocol 2025-11-25, server switchboard-fixture 0.1.0)
                  FAIL  shutdown                     the server ignored stdin closing and SIGTERM (N ms each); it needed SIGKILL
                  s: <n> passed, 1 failed, 0 warnings, <n> skipped in <n> s
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "check-grandchildren-left-behind",
        area: Area::Checker,
        hostile: "two long-lived copies of itself outlive it",
        servers: &[Server::Fixture(&["--mode", "forks-grandchild"])],
        settings: ROOMY,
        command: Cmd::Check { flags: &[] },
        outcome: Outcome {
            exit: Exit::ToolErrorOrFindings,
            says: "`shutdown` fails naming them; the checker kills them",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 1
                --- stdout
                s (stdio, legacy era, protocol 2025-11-25, server switchboard-fixture 0.1.0)
                  FAIL  shutdown                     N process(es) the server started were still running after it exited (pids N, N); the checker killed them
                  s: <n> passed, 1 failed, 0 warnings, <n> skipped in <n> s
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "check-http-no-origin-check",
        area: Area::Checker,
        hostile: "the fixture over HTTP with the fault `no-origin-check`",
        servers: &[Server::FixtureHttp {
            fault: "no-origin-check",
            args: &[],
        }],
        settings: ROOMY,
        command: Cmd::Check { flags: &[] },
        outcome: Outcome {
            exit: Exit::ToolErrorOrFindings,
            says: "`http-origin` fails: a foreign `Origin` is served",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 1
                --- stdout
                s (http, legacy era, protocol 2025-11-25, server switchboard-fixture 0.1.0)
                  FAIL  http-origin                  the server accepted a request from a foreign origin: POST `initialize` with `Origin: http://evil.example` got HTTP N with a result; any web page the user visits can reach this local server through DNS rebinding
                  s: <n> passed, 1 failed, 0 warnings, <n> skipped in <n> s
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "check-http-ignores-session",
        area: Area::Checker,
        hostile: "the fixture over HTTP with the fault `ignores-session`",
        servers: &[Server::FixtureHttp {
            fault: "ignores-session",
            args: &[],
        }],
        settings: ROOMY,
        command: Cmd::Check { flags: &[] },
        outcome: Outcome {
            exit: Exit::ToolErrorOrFindings,
            says: "`http-session` fails",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 1
                --- stdout
                s (http, legacy era, protocol 2025-11-25, server switchboard-fixture 0.1.0)
                  FAIL  http-session                 a request with a session id the server never issued was served (HTTP N with a result): the server does not check session ids (and N more)
                  s: <n> passed, 1 failed, 0 warnings, <n> skipped in <n> s
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "check-http-delete-ignored",
        area: Area::Checker,
        hostile: "the fixture over HTTP with the fault `delete-ignored`",
        servers: &[Server::FixtureHttp {
            fault: "delete-ignored",
            args: &[],
        }],
        settings: ROOMY,
        command: Cmd::Check { flags: &[] },
        outcome: Outcome {
            exit: Exit::ToolErrorOrFindings,
            says: "`shutdown` fails: the session outlives `DELETE`",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 1
                --- stdout
                s (http, legacy era, protocol 2025-11-25, server switchboard-fixture 0.1.0)
                  FAIL  shutdown                     DELETE answered N, but the session still answers requests (HTTP N with a result)
                  s: <n> passed, 1 failed, 0 warnings, <n> skipped in <n> s
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "d3-check-sees-daemonised-grandchild",
        area: Area::Checker,
        hostile: "the daemonising wrapper under `switchboard check`",
        servers: &[Server::Command {
            program: "sh",
            args: &[
                "-c",
                "(setsid sleep 300 </dev/null >/dev/null 2>&1 &); exec {fixture}",
            ],
        }],
        settings: QUICK,
        command: Cmd::Check { flags: &[] },
        outcome: Outcome {
            exit: Exit::ToolErrorOrFindings,
            says: r#"`shutdown` fails (never a false "no process left behind"); the grandchild is killed"#,
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 1
                --- stdout
                s (stdio, legacy era, protocol 2025-11-25, server switchboard-fixture 0.1.0)
                  FAIL  shutdown                     N process(es) the server started were still running after it exited (pids N); the checker killed them
                  s: <n> passed, 1 failed, 0 warnings, <n> skipped in <n> s
                --- stderr: empty
            "#]]),
        },
        status: Status::Fixed { defect: 3 },
    },
];
