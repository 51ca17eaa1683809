//! Lifecycle and versions: the handshake, its versions and eras.

use expect_test::expect;

use super::super::table::{
    Area, Case, Check, Cmd, Exit, HANG, Outcome, PATIENT, PROMPT, QUICK, ROOMY, Server, Status,
};

pub(crate) static CASES: &[Case] = &[
    Case {
        name: "no-initialize-answer",
        area: Area::Lifecycle,
        hostile: "`initialize` is never answered",
        servers: &[Server::Fixture(&["--mode", "no-init-reply"])],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed timeout naming the server and `initialize`, saying how to raise the deadline",
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
        name: "unsupported-version",
        area: Area::Lifecycle,
        hostile: "`initialize` answered with protocol version `1999-01-01`",
        servers: &[Server::Fixture(&["--mode", "wrong-version"])],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed version mismatch listing both sides' versions",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` speaks protocol version(s) 1999-01-01, but Switchboard speaks 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05; update the server or pin a common version in its configuration
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "unknown-future-version",
        area: Area::Lifecycle,
        hostile: "`initialize` answered with protocol version `2099-12-31`",
        servers: &[Server::Fixture(&["--mode", "future-version"])],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed version mismatch listing both sides' versions",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` speaks protocol version(s) 2099-12-31, but Switchboard speaks 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05; update the server or pin a common version in its configuration
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "version-not-a-string",
        area: Area::Lifecycle,
        hostile: "`initialize` answered with `protocolVersion: 20251125` (a number)",
        servers: &[Server::Fixture(&["--mode", "version-not-string"])],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed protocol error naming the server and the field",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` broke the protocol in `initialize`: `protocolVersion` is not a string: 20251125
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "no-capabilities",
        area: Area::Lifecycle,
        hostile: "the `initialize` result has no `capabilities`",
        servers: &[Server::Fixture(&["--mode", "no-capabilities"])],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "nothing undeclared is used: `tools/list` is not sent, and the error says so",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` does not offer tools, so `tools/list` was not sent
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "messages-before-initialize-answer",
        area: Area::Lifecycle,
        hostile: "a `ping` request, a log message, progress for an unknown token and a list change before the `initialize` answer",
        servers: &[Server::Fixture(&["--mode", "chatty-before-init"])],
        settings: ROOMY,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "the tools are listed",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                s: 6 tools (protocol 2025-11-25, legacy era, server switchboard-fixture 0.1.0)
                  echo          Returns the given text.
                                  (text: string)
                  add           Adds two integers.
                                  (a: integer, b: integer)
                  slow          Sleeps in steps, reporting progress after each; stops when cancelled.
                                  (duration_ms?: integer, steps?: integer)
                  fail          Always returns a tool error.
                  image         Returns a tiny PNG image and a caption.
                  change_tools  Adds a tool named extra_<n> and announces that the tool list changed.
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "probe-answered-with-custom-error",
        area: Area::Lifecycle,
        hostile: "a legacy server answers the `server/discover` probe with a custom error (-32000)",
        servers: &[Server::Fixture(&["--mode", "discover-custom-error"])],
        settings: ROOMY,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "falls back to `initialize`; the tools are listed",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                s: 6 tools (protocol 2025-11-25, legacy era, server switchboard-fixture 0.1.0)
                  echo          Returns the given text.
                                  (text: string)
                  add           Adds two integers.
                                  (a: integer, b: integer)
                  slow          Sleeps in steps, reporting progress after each; stops when cancelled.
                                  (duration_ms?: integer, steps?: integer)
                  fail          Always returns a tool error.
                  image         Returns a tiny PNG image and a caption.
                  change_tools  Adds a tool named extra_<n> and announces that the tool list changed.
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "probe-never-answered",
        area: Area::Lifecycle,
        hostile: "a legacy server never answers the `server/discover` probe",
        servers: &[Server::Fixture(&["--mode", "discover-silence"])],
        settings: ROOMY,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "falls back to `initialize` after the probe deadline; the tools are listed",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                s: 6 tools (protocol 2025-11-25, legacy era, server switchboard-fixture 0.1.0)
                  echo          Returns the given text.
                                  (text: string)
                  add           Adds two integers.
                                  (a: integer, b: integer)
                  slow          Sleeps in steps, reporting progress after each; stops when cancelled.
                                  (duration_ms?: integer, steps?: integer)
                  fail          Always returns a tool error.
                  image         Returns a tiny PNG image and a caption.
                  change_tools  Adds a tool named extra_<n> and announces that the tool list changed.
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "modern-version-refused-once",
        area: Area::Lifecycle,
        hostile: "a modern server refuses the first `server/discover` with -32022 (`supported` listed)",
        servers: &[Server::Fixture(&[
            "--mode",
            "version-retry",
            "--era",
            "modern",
        ])],
        settings: ROOMY,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "retries with a supported version; the tools are listed",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                s: 7 tools (protocol 2026-07-28, modern era, server switchboard-fixture 0.1.0)
                  echo          Returns the given text.
                                  (text: string)
                  add           Adds two integers.
                                  (a: integer, b: integer)
                  slow          Sleeps in steps, reporting progress after each; stops when cancelled.
                                  (duration_ms?: integer, steps?: integer)
                  fail          Always returns a tool error.
                  image         Returns a tiny PNG image and a caption.
                  change_tools  Adds a tool named extra_<n> and announces that the tool list changed.
                  confirm       Asks the user a yes/no question through a multi round-trip request.
                                  (question: string)
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "found-version-refused-forever-says-why",
        area: Area::Lifecycle,
        hostile: "a modern server answers every `server/discover` with -32022",
        servers: &[Server::Fixture(&[
            "--mode",
            "version-loop",
            "--era",
            "modern",
        ])],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "the retries are capped, and the error says the server refused every version (with the versions), not that `initialize` is unknown",
            checks: &[Check::StderrHas("version")],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` refused every protocol version Switchboard offered (2026-07-28; `server/discover` sent 3 times), though it lists 2026-07-28 as supported; its version negotiation is broken: report it to its authors
            "#]]),
        },
        status: Status::FoundFixed,
    },
    Case {
        name: "list-changed-not-declared",
        area: Area::Lifecycle,
        hostile: "a tools list change announced right after `initialized` without `listChanged` declared",
        servers: &[Server::Fixture(&["--mode", "undeclared-list-changed"])],
        settings: ROOMY,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "the notification is ignored (counted); the tools are listed",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                s: 6 tools (protocol 2025-11-25, legacy era, server switchboard-fixture 0.1.0)
                  echo          Returns the given text.
                                  (text: string)
                  add           Adds two integers.
                                  (a: integer, b: integer)
                  slow          Sleeps in steps, reporting progress after each; stops when cancelled.
                                  (duration_ms?: integer, steps?: integer)
                  fail          Always returns a tool error.
                  image         Returns a tiny PNG image and a caption.
                  change_tools  Adds a tool named extra_<n> and announces that the tool list changed.
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "unknown-result-type",
        area: Area::Lifecycle,
        hostile: r#"a modern result with `resultType: "banana"`"#,
        servers: &[Server::Fixture(&[
            "--mode",
            "hostile-answers",
            "--era",
            "modern",
        ])],
        settings: PATIENT,
        command: Cmd::Call {
            tool: "result_type_unknown",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed protocol error at once: an unknown `resultType` is invalid",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` broke the protocol in `tools/call`: unknown `resultType` "banana"
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "missing-result-type",
        area: Area::Lifecycle,
        hostile: "a modern result without `resultType`",
        servers: &[Server::Fixture(&[
            "--mode",
            "hostile-answers",
            "--era",
            "modern",
        ])],
        settings: PATIENT,
        command: Cmd::Call {
            tool: "result_type_missing",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "read as `complete`; the call prints the text",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                ok without resultType
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "input-required-without-requests-or-state",
        area: Area::Lifecycle,
        hostile: "`resultType: input_required` without `inputRequests` or `requestState`",
        servers: &[Server::Fixture(&[
            "--mode",
            "hostile-answers",
            "--era",
            "modern",
        ])],
        settings: PATIENT,
        command: Cmd::Call {
            tool: "input_required_empty",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed protocol error at once",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` broke the protocol in `tools/call`: `input_required` without `inputRequests` or `requestState`
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "endless-input-required-rounds",
        area: Area::Lifecycle,
        hostile: "`confirm` answers `input_required` with a growing `requestState` every round",
        servers: &[Server::Fixture(&[
            "--mode",
            "endless-input",
            "--era",
            "modern",
        ])],
        settings: PATIENT,
        command: Cmd::Call {
            tool: "confirm",
            args: r#"{"question":"ok?"}"#,
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "the rounds are capped; typed error naming the server",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` broke the protocol in `tools/call`: the server still wanted input after 8 rounds
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "server-request-in-modern-era",
        area: Area::Lifecycle,
        hostile: "a modern server sends a `ping` request (servers must not send requests in 2026-07-28)",
        servers: &[Server::Fixture(&[
            "--mode",
            "server-requests",
            "--era",
            "modern",
        ])],
        settings: ROOMY,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "the request is refused; the tools are listed",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                s: 7 tools (protocol 2026-07-28, modern era, server switchboard-fixture 0.1.0)
                  echo          Returns the given text.
                                  (text: string)
                  add           Adds two integers.
                                  (a: integer, b: integer)
                  slow          Sleeps in steps, reporting progress after each; stops when cancelled.
                                  (duration_ms?: integer, steps?: integer)
                  fail          Always returns a tool error.
                  image         Returns a tiny PNG image and a caption.
                  change_tools  Adds a tool named extra_<n> and announces that the tool list changed.
                  confirm       Asks the user a yes/no question through a multi round-trip request.
                                  (question: string)
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
];
