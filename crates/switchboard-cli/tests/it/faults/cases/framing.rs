//! Framing and encoding: what a stdio server writes around and between its messages.

use expect_test::expect;

use super::super::table::{
    Area, Case, Check, Cmd, Exit, HANG, Outcome, PATIENT, PROMPT, QUICK, ROOMY, Server, Status,
    frames,
};

pub(crate) static CASES: &[Case] = &[
    Case {
        name: "banner-and-garbage-before-first-message",
        area: Area::Framing,
        hostile: "non-JSON banner text, a JSON object that is not JSON-RPC and broken JSON on stdout before the first message, and a banner line before every response",
        servers: &[Server::Fixture(&["--mode", "garbage-stdout"])],
        settings: ROOMY,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the noise is skipped; the call prints `hi`",
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
        name: "bom-at-stream-start",
        area: Area::Framing,
        hostile: "a UTF-8 byte-order mark before the first message",
        servers: &[Server::Fixture(&["--mode", "bom-start"])],
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
        name: "crlf-line-ends-and-blank-lines",
        area: Area::Framing,
        hostile: "every line ends in CRLF and is followed by a blank line",
        servers: &[Server::Fixture(&["--mode", "crlf-blank-lines"])],
        settings: ROOMY,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the call prints `hi`",
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
        name: "stdout-written-byte-by-byte",
        area: Area::Framing,
        hostile: "every byte of stdout written and flushed on its own",
        servers: &[Server::Fixture(&["--mode", "byte-by-byte"])],
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
        name: "two-per-line",
        area: Area::Framing,
        hostile: "a log message and the response on one line",
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: QUICK,
        command: Cmd::Call {
            tool: "two_per_line",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "two JSON objects on one line: the frame is dropped (counted); its first object (a notification) has no id and nothing after it is read, so the request fails at its deadline naming the server",
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
        name: "trailing-garbage",
        area: Area::Framing,
        hostile: "text after the JSON on the response's line",
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: PATIENT,
        command: Cmd::Call {
            tool: "trailing_garbage",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "text after the JSON on the response's line: the frame is dropped (counted); its id is read from the object before the text, so the request fails at once with a typed error saying the answer was malformed, naming the server",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` answered `tools/call` with a malformed message: invalid JSON: trailing characters at line 1 column 77: {"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"ok"}]}} trailing garbage; the server is broken: report it to its authors
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "truncated-json",
        area: Area::Framing,
        hostile: "the first half of the response, then a newline",
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: PATIENT,
        command: Cmd::Call {
            tool: "truncated_json",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "half a response and a newline: the frame is dropped (counted); its id comes before the cut, so the request fails at once with a typed error saying the answer was malformed",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` answered `tools/call` with a malformed message: invalid JSON: EOF while parsing a string at line 1 column 37: {"jsonrpc":"2.0","id":4,"result":{"co; the server is broken: report it to its authors
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "invalid-utf8",
        area: Area::Framing,
        hostile: "raw bytes FF FE C3 28 inside the result text",
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: PATIENT,
        command: Cmd::Call {
            tool: "invalid_utf8",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "bytes that are not UTF-8 inside a string: the frame is dropped (counted); the request fails at once with a typed error saying the answer was malformed",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` answered `tools/call` with a malformed message: invalid UTF-8: {"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"bad ���( bytes"}]}}; the server is broken: report it to its authors
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "lone-surrogate",
        area: Area::Framing,
        hostile: r#"a lone surrogate escape `\ud800` in the result text"#,
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: PATIENT,
        command: Cmd::Call {
            tool: "lone_surrogate",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: r#"a lone `\ud800` escape in a string: the frame is dropped (counted); the request fails at once with a typed error saying the answer was malformed"#,
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` answered `tools/call` with a malformed message: invalid JSON: unexpected end of hex escape at line 1 column 81: {"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"alone \\ud800 here"}]}}; the server is broken: report it to its authors
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "deep-nesting",
        area: Area::Framing,
        hostile: "structured content nested 100000 arrays deep",
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: QUICK,
        command: Cmd::Call {
            tool: "deep_nesting",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "structured content nested 100000 arrays deep: no stack overflow; the result stays text through the wire, and the call fails at once with a typed error: too deep to read",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` broke the protocol in `tools/call`: the tool result is not valid JSON: recursion limit exceeded at line 1 column 168
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "batch-array-answer",
        area: Area::Framing,
        hostile: "the response wrapped in a JSON array",
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: QUICK,
        command: Cmd::Call {
            tool: "batch_answer",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "the response inside a JSON array (a batch, not negotiated): dropped (counted); an id is read only from a top-level object, so the request fails at its deadline",
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
        name: "numbers-beyond-f64-and-i64",
        area: Area::Framing,
        hostile: "structured content with `1e400` and a 30-digit integer",
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: PATIENT,
        command: Cmd::Call {
            tool: "huge_numbers",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "fails at once with a typed protocol error naming the server (the result is not valid JSON for us)",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` broke the protocol in `tools/call`: the tool result is not valid JSON: number out of range at line 1 column 78
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "duplicate-object-keys",
        area: Area::Framing,
        hostile: "a result object holding `content` twice",
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: ROOMY,
        command: Cmd::Call {
            tool: "duplicate_keys",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the last key wins; the call prints `second`",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                second
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "empty-batch-line",
        area: Area::Framing,
        hostile: "a line `[]` before the response",
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: ROOMY,
        command: Cmd::Call {
            tool: "empty_batch_first",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the empty batch is skipped; the call prints `ok`",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                ok
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "partial-line-then-eof",
        area: Area::Framing,
        hostile: "half a response without a newline, then the process exits 0",
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: PATIENT,
        command: Cmd::Call {
            tool: "partial_line_then_exit",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "fails at once: the server process exited, with its exit status and stderr tail",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s`: the server process exited (exit status: 0)
                --- last stderr output ---
                fixture: exiting after half a line
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "long-line-under-the-cap",
        area: Area::Framing,
        hostile: "a 2 MiB log notification line before the `tools/list` answer",
        servers: &[Server::Fixture(&["--mode", "long-line"])],
        settings: ROOMY,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "the line is read; the tools are listed",
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
        name: "line-over-the-frame-cap",
        area: Area::Framing,
        hostile: "a 20 MB notification line (over the 16 MiB frame cap) before the `tools/list` answer",
        servers: &[Server::Fixture(&[
            "--mode",
            "long-line",
            "--long-line-bytes",
            "20000000",
        ])],
        settings: ROOMY,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "the line is skipped as it streams past (counted); the tools are listed",
            checks: &[Check::PeakMemory(frames(
                2,
                "the frame cap: one line buffered at most, plus the fixture's own copy of its line",
            ))],
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
        name: "endless-line-without-newline",
        area: Area::Framing,
        hostile: "an endless stream of NUL bytes without a newline",
        servers: &[Server::Command {
            program: "cat",
            args: &["/dev/zero"],
        }],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "`initialize` fails at its deadline naming the server; memory stays bounded while the stream is discarded",
            checks: &[Check::PeakMemory(frames(
                1,
                "the frame cap: the unfinished line is discarded past it",
            ))],
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
        name: "endless-non-json-lines",
        area: Area::Framing,
        hostile: "an endless flood of short non-JSON lines",
        servers: &[Server::Command {
            program: "yes",
            args: &[],
        }],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "`initialize` fails at its deadline naming the server; each line is counted, none kept",
            checks: &[Check::PeakMemory(frames(
                1,
                "nothing is kept per malformed line: counters only",
            ))],
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
        name: "d7-stdio-answer-over-the-frame-cap",
        area: Area::Framing,
        hostile: "a 33 MiB `tools/call` answer (over the 16 MiB frame cap)",
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: PATIENT,
        command: Cmd::Call {
            tool: "oversized_answer",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "the request fails at once (its id is recovered from the dropped frame) with a typed error saying the answer was over the limit",
            checks: &[
                Check::StderrHas("limit"),
                Check::PeakMemory(frames(2, "the frame cap")),
            ],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` answered `tools/call` with a 34603081-byte message, over the 16777216-byte frame limit; it was skipped unread: ask for less (a narrower request, fewer items per page) or have the server send smaller answers
            "#]]),
        },
        status: Status::Fixed { defect: 7 },
    },
];
