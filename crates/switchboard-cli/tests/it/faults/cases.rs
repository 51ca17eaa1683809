//! The fault matrix's cases, as data: [`CASES`] hold today and run green; [`PENDING`] are
//! open — the issue's defects being fixed on other branches (written as they must behave
//! after the fix) and what the matrix found — and are asserted to still fail, so that each
//! moves to `CASES` (with a snapshot) the day it holds. `docs/dev/faults.md` lists both.
//!
//! Snapshots: `UPDATE_EXPECT=1 cargo test -p switchboard-cli --test it faults`.

use expect_test::expect;

use super::canned::Script;
use super::table::{
    Area, CANNED_URL, Case, Check, Close, Cmd, Exit, HANG, INITIALIZE, INITIALIZED, Outcome,
    PATIENT, PATIENT_LEGACY, PROMPT, QUICK, QUICK_LEGACY, ROOMY, ROOMY_LEGACY, ServeScript, Server,
    Settings, Status, frames,
};

/// Cases that hold today.
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
    Case {
        name: "duplicate-response",
        area: Area::JsonRpc,
        hostile: "the response sent twice",
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: ROOMY,
        command: Cmd::Call {
            tool: "duplicate_response",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the first answers the call; the second is a late response (counted)",
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
        name: "response-to-unknown-id",
        area: Area::JsonRpc,
        hostile: "a response to id 987654 (never used) before the real one",
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: ROOMY,
        command: Cmd::Call {
            tool: "unknown_id_first",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the stray response is counted; the call prints `ok`",
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
        name: "result-and-error",
        area: Area::JsonRpc,
        hostile: "a response with both `result` and `error`",
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: PATIENT,
        command: Cmd::Call {
            tool: "result_and_error",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "dropped as malformed (counted); the request fails at once with a typed error saying the answer was malformed, naming the server and method",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` answered `tools/call` with a malformed message: not a JSON-RPC message: response has both `result` and `error`: {"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"ok"}]},"error":{"code":-32000,"message":"also failed"}}; the server is broken: report it to its authors
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "found-malformed-answer-fails-at-once",
        area: Area::JsonRpc,
        hostile: "a response with both `result` and `error` (its id is readable)",
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: PATIENT,
        command: Cmd::Call {
            tool: "result_and_error",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "the request fails at once with a typed error saying the answer was malformed, not at the request deadline",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` answered `tools/call` with a malformed message: not a JSON-RPC message: response has both `result` and `error`: {"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"ok"}]},"error":{"code":-32000,"message":"also failed"}}; the server is broken: report it to its authors
            "#]]),
        },
        status: Status::Fixed { defect: 7 },
    },
    Case {
        name: "neither-result-nor-error",
        area: Area::JsonRpc,
        hostile: "a response with only `jsonrpc` and `id`",
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: PATIENT,
        command: Cmd::Call {
            tool: "neither_result_nor_error",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "only an id: taken as the request's broken answer (it has no `method`); the request fails at once with a typed error saying the answer was malformed",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` answered `tools/call` with a malformed message: not a JSON-RPC message: response has neither `result` nor `error`: {"jsonrpc":"2.0","id":4}; the server is broken: report it to its authors
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "null-id",
        area: Area::JsonRpc,
        hostile: "the answer carries `id: null`",
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: QUICK,
        command: Cmd::Call {
            tool: "null_id",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "matches no request; the request fails at its deadline",
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
        name: "id-echoed-as-string",
        area: Area::JsonRpc,
        hostile: r#"the answer carries `"2"` for id 2"#,
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: QUICK,
        command: Cmd::Call {
            tool: "string_id",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: r#"`"2"` never matches `2`; the request fails at its deadline"#,
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
        name: "id-echoed-as-float",
        area: Area::JsonRpc,
        hostile: "the answer carries `2.0` for id 2",
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: QUICK,
        command: Cmd::Call {
            tool: "float_id",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "matches no request; the request fails at its deadline",
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
        name: "error-code-not-integer",
        area: Area::JsonRpc,
        hostile: "an error whose `code` is a string",
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: PATIENT,
        command: Cmd::Call {
            tool: "error_code_not_integer",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "dropped as malformed (counted); the request fails at once with a typed error saying the answer was malformed",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` answered `tools/call` with a malformed message: not a JSON-RPC message: error `code` is missing or not an integer: {"jsonrpc":"2.0","id":4,"error":{"code":"boom","message":"the code is a string"}}; the server is broken: report it to its authors
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "error-without-message",
        area: Area::JsonRpc,
        hostile: "an error without `message`",
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: PATIENT,
        command: Cmd::Call {
            tool: "error_without_message",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "dropped as malformed (counted); the request fails at once with a typed error saying the answer was malformed",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` answered `tools/call` with a malformed message: not a JSON-RPC message: error `message` is missing or not a string: {"jsonrpc":"2.0","id":4,"error":{"code":-32000}}; the server is broken: report it to its authors
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "error-with-huge-data",
        area: Area::JsonRpc,
        hostile: "an error whose `data` is 2 MiB of text",
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: PATIENT,
        command: Cmd::Call {
            tool: "error_huge_data",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "fails at once with the error; `data` is shown as a bounded excerpt",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` answered `tools/call` with an error: failed with a lot of data (code -32000), data: "ddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd… (432 bytes)
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "jsonrpc-version-1-0",
        area: Area::JsonRpc,
        hostile: r#"an answer with `"jsonrpc": "1.0"`"#,
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: PATIENT,
        command: Cmd::Call {
            tool: "jsonrpc_one",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: r#"dropped as malformed (counted); the request fails at once with a typed error saying the answer was malformed (`jsonrpc` is not "2.0")"#,
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` answered `tools/call` with a malformed message: `jsonrpc` missing or not "2.0": {"jsonrpc":"1.0","id":4,"result":{"content":[{"type":"text","text":"ok"}]}}; the server is broken: report it to its authors
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "jsonrpc-field-missing",
        area: Area::JsonRpc,
        hostile: "every response lacks the `jsonrpc` member",
        servers: &[Server::Fixture(&["--mode", "no-jsonrpc-field"])],
        settings: PATIENT,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "dropped as malformed (counted); the unreadable answer to the `server/discover` probe falls back to `initialize`, whose unreadable answer fails it at once with a typed error naming the server and saying `jsonrpc` is missing",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` answered `initialize` with a malformed message: `jsonrpc` missing or not "2.0": {"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{},"resources":{"subscribe":true},"completions":{}},"serverInfo… (114 more bytes); the server is broken: report it to its authors
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "wrong-id",
        area: Area::JsonRpc,
        hostile: "the `tools/call` answer carries the request's id plus 1000",
        servers: &[Server::Fixture(&["--mode", "wrong-id"])],
        settings: QUICK,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "the stray response is counted; the request fails at its deadline",
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
        name: "notification-instead-of-response",
        area: Area::JsonRpc,
        hostile: "the `tools/call` answer is sent as a log notification",
        servers: &[Server::Fixture(&[
            "--mode",
            "notification-instead-of-response",
        ])],
        settings: QUICK,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "no notification completes a request; it fails at its deadline",
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
        name: "undeclared-server-requests",
        area: Area::JsonRpc,
        hostile: "after `initialized`, the server sends `ping`, `roots/list` and `sampling/createMessage` requests (roots and sampling not declared)",
        servers: &[Server::Fixture(&["--mode", "server-requests"])],
        settings: ROOMY,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the requests are answered (-32601 for the undeclared ones); the call prints `hi`",
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
        name: "json-without-content-type",
        area: Area::Http,
        hostile: "`tools/call` answered 200 with a JSON body and no `Content-Type`",
        servers: &[Server::Canned {
            script: Script::NoContentType,
            url: CANNED_URL,
        }],
        settings: ROOMY_LEGACY,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the body is read as JSON; the call prints `ok`",
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
        name: "html-instead-of-json",
        area: Area::Http,
        hostile: "`tools/call` answered 200 with an HTML page",
        servers: &[Server::Canned {
            script: Script::HtmlBody,
            url: CANNED_URL,
        }],
        settings: PATIENT_LEGACY,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed error at once: HTTP status, URL and an escaped excerpt",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` gave no answer to `tools/call`: HTTP 200 OK from http://<canned-s>/mcp: <html><body><h1>Welcome to nginx!</h1></body></html>
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "sse-content-type-json-body",
        area: Area::Http,
        hostile: "`Content-Type: text/event-stream` with a plain JSON body",
        servers: &[Server::Canned {
            script: Script::SseHeaderJsonBody,
            url: CANNED_URL,
        }],
        settings: PATIENT_LEGACY,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed error at once: the event stream ended before the answer",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` gave no answer to `tools/call`: the server's event stream ended before it answered (HTTP 200 OK)
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "json-content-type-sse-body",
        area: Area::Http,
        hostile: "`Content-Type: application/json` with an event stream body",
        servers: &[Server::Canned {
            script: Script::JsonHeaderSseBody,
            url: CANNED_URL,
        }],
        settings: PATIENT_LEGACY,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed error at once with an escaped excerpt",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` gave no answer to `tools/call`: HTTP 200 OK from http://<canned-s>/mcp: event: message\ndata: {"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"ok"}]}}\n\n
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "empty-200-for-a-request",
        area: Area::Http,
        hostile: "`tools/call` answered 200 with an empty body",
        servers: &[Server::Canned {
            script: Script::EmptyOk,
            url: CANNED_URL,
        }],
        settings: PATIENT_LEGACY,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed error at once: no response to the request",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` gave no answer to `tools/call`: the server answered HTTP 200 OK with no response to the request
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "202-for-a-request",
        area: Area::Http,
        hostile: "`tools/call` answered 202 Accepted",
        servers: &[Server::Canned {
            script: Script::AcceptedForRequest,
            url: CANNED_URL,
        }],
        settings: PATIENT_LEGACY,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed error at once: no response to the request",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` gave no answer to `tools/call`: the server answered HTTP 202 Accepted with no response to the request
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "sse-comments-retry-unknown-events-split-data",
        area: Area::Http,
        hostile: "an event stream with a comment, `retry`, an unknown event type and the response's `data:` split over two lines and three writes",
        servers: &[Server::Canned {
            script: Script::SseTricky,
            url: CANNED_URL,
        }],
        settings: ROOMY_LEGACY,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the call prints `ok`",
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
        name: "sse-trickled-byte-by-byte",
        area: Area::Http,
        hostile: "the response event written one byte at a time",
        servers: &[Server::Canned {
            script: Script::SseTrickle,
            url: CANNED_URL,
        }],
        settings: ROOMY_LEGACY,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the call prints `ok`",
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
        name: "sse-ends-before-the-response",
        area: Area::Http,
        hostile: "an event stream that ends after a progress event",
        servers: &[Server::Canned {
            script: Script::SseEndsEarly,
            url: CANNED_URL,
        }],
        settings: PATIENT_LEGACY,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed error at once: the event stream ended before the answer",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` gave no answer to `tools/call`: the server's event stream ended before it answered (HTTP 200 OK)
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "sse-response-for-another-id",
        area: Area::Http,
        hostile: "an event stream carrying a response to id 987654, then the end",
        servers: &[Server::Canned {
            script: Script::SseWrongId,
            url: CANNED_URL,
        }],
        settings: PATIENT_LEGACY,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "the stray response is counted; typed error at once: the stream ended before the answer",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` gave no answer to `tools/call`: the server's event stream ended before it answered (HTTP 200 OK)
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "sse-line-over-the-cap",
        area: Area::Http,
        hostile: "one 17 MiB `data:` line (over the 16 MiB event cap)",
        servers: &[Server::Canned {
            script: Script::SseHugeLine,
            url: CANNED_URL,
        }],
        settings: PATIENT_LEGACY,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed error at once naming the server and the limit; the line is not kept past the cap",
            checks: &[Check::PeakMemory(frames(
                2,
                "the SSE event cap (= the frame cap): one event buffered at most",
            ))],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` gave no answer to `tools/call`: an event the server sent on this request's response stream is larger than the 16777216-byte limit
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "session-expired-once",
        area: Area::Http,
        hostile: "the first `tools/call` answered 404 Session not found",
        servers: &[Server::Canned {
            script: Script::SessionExpiredOnce,
            url: CANNED_URL,
        }],
        settings: PATIENT_LEGACY,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "one fresh `initialize`, then the call prints `ok`",
            checks: &[],
            deadline: PROMPT,
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
        name: "session-always-expired",
        area: Area::Http,
        hostile: "every request after `initialize` answered 404 Session not found",
        servers: &[Server::Canned {
            script: Script::SessionAlwaysExpired,
            url: CANNED_URL,
        }],
        settings: PATIENT_LEGACY,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "one fresh `initialize` only (no loop); typed error",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` answered `tools/list` with an error: Session not found (code -32001)
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "redirect-not-followed",
        area: Area::Http,
        hostile: "`tools/call` answered 307 to another port",
        servers: &[Server::Canned {
            script: Script::RedirectToTripwire,
            url: CANNED_URL,
        }],
        settings: QUICK_LEGACY,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "the redirect is not followed; typed error with the status",
            checks: &[Check::TripwireUntouched],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` gave no answer to `tools/call`: HTTP 307 Temporary Redirect from http://<canned-s>/mcp
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "reset-mid-body",
        area: Area::Http,
        hostile: "the connection is reset after 16 of 1000 announced body bytes",
        servers: &[Server::Canned {
            script: Script::ResetMidBody,
            url: CANNED_URL,
        }],
        settings: PATIENT_LEGACY,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed error at once naming the server",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` gave no answer to `tools/call`: reading the server's response failed: error decoding response body: error reading a body from connection: Connection reset by peer (os error 104)
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "slowloris-status-line",
        area: Area::Http,
        hostile: "the `tools/call` status line trickles one byte every 200 ms, forever",
        servers: &[Server::Canned {
            script: Script::Slowloris,
            url: CANNED_URL,
        }],
        settings: QUICK_LEGACY,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed timeout at the request deadline naming the server",
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
        name: "body-over-the-cap",
        area: Area::Http,
        hostile: "`tools/call` answered with a 40 MiB body (over the 16 MiB body cap)",
        servers: &[Server::Canned {
            script: Script::OversizedBody,
            url: CANNED_URL,
        }],
        settings: PATIENT_LEGACY,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed error at once saying the body is over the limit; reading stops at the cap",
            checks: &[Check::PeakMemory(frames(
                2,
                "the body cap (= the frame cap): reading stops at it",
            ))],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` gave no answer to `tools/call`: the server's response body is larger than the 16777216-byte limit
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "500-with-html",
        area: Area::Http,
        hostile: "`tools/call` answered 500 with an HTML page",
        servers: &[Server::Canned {
            script: Script::ServerError,
            url: CANNED_URL,
        }],
        settings: PATIENT_LEGACY,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed error at once: status, URL, escaped excerpt",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` gave no answer to `tools/call`: HTTP 500 Internal Server Error from http://<canned-s>/mcp: <html><body>Internal Server Error</body></html>
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "legacy-sse-endpoint-on-another-origin",
        area: Area::Http,
        hostile: "`initialize` refused with 405; the 2024-11-05 event stream's `endpoint` is on another port",
        servers: &[Server::Canned {
            script: Script::EndpointOtherOrigin,
            url: CANNED_URL,
        }],
        settings: QUICK_LEGACY,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "the endpoint is refused; typed error",
            checks: &[Check::TripwireUntouched],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` gave no answer to `initialize`: the server refused `initialize` (HTTP 405 Method Not Allowed), and the HTTP+SSE (2024-11-05) fallback failed too: refusing the message endpoint http://<tripwire>/messages: it is on another origin than http://<canned-s>/mcp
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "status-line-not-http",
        area: Area::Http,
        hostile: "`tools/call` answered with `HELLO THERE` instead of an HTTP status line",
        servers: &[Server::Canned {
            script: Script::JunkStatusLine,
            url: CANNED_URL,
        }],
        settings: PATIENT_LEGACY,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed error at once naming the server",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s`: could not reach http://<canned-s>/mcp: error sending request: client error (SendRequest): invalid HTTP version parsed
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "era-probe-answered-400-html",
        area: Area::Http,
        hostile: "the `server/discover` probe answered 400 with an HTML page; a good legacy server otherwise",
        servers: &[Server::Canned {
            script: Script::EraProbeHtml400,
            url: CANNED_URL,
        }],
        settings: ROOMY,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "legacy era detected; the tools are listed",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                s: 1 tool (protocol 2025-11-25, legacy era, server canned 1.0)
                  echo  Returns the given text.
                          (text?: string)
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "connection-refused",
        area: Area::Http,
        hostile: "nothing listens at the URL",
        servers: &[Server::Nowhere],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed error at once: could not reach the URL",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s`: could not reach http://<closed-port>/mcp (is the server running? start it, or correct the entry's `url`): error sending request: client error (Connect): tcp connect error: Connection refused (os error 111)
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "d1-sse-event-of-endless-short-lines",
        area: Area::Http,
        hostile: "an event stream whose one event is endless 10-byte `data:` lines, never ended by a blank line",
        servers: &[Server::Canned {
            script: Script::SseEndlessEvent,
            url: CANNED_URL,
        }],
        settings: PATIENT_LEGACY,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed error at once naming the server: the event is over the cap",
            checks: &[
                Check::StderrHas("`s`"),
                Check::PeakMemory(frames(
                    2,
                    "the event cap (= the frame cap): an event is dropped once it reaches it",
                )),
            ],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` gave no answer to `tools/call`: an event the server sent on this request's response stream is larger than the 16777216-byte limit
            "#]]),
        },
        status: Status::Fixed { defect: 1 },
    },
    Case {
        name: "found-sse-data-with-a-line-break-inside-a-string",
        area: Area::Http,
        hostile: "the response event's `data:` is split over two lines inside the key `content` (joined, the data is not JSON)",
        servers: &[Server::Canned {
            script: Script::SseSplitInsideString,
            url: CANNED_URL,
        }],
        settings: PATIENT_LEGACY,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "the event is a malformed frame (its line break is never replaced by anything JSON accepts, which would make it the different valid message with a key `co ntent`); the request fails at once with the malformed answer, its line break shown as `\\u{1}`",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` answered `tools/call` with a malformed message: invalid JSON: control character (\\u0000-\\u001F) found while parsing a string at line 2 column 0: {"jsonrpc":"2.0","id":3,"result":{"co\nntent":[{"type":"text","text":"ok"}]}}; the server is broken: report it to its authors
            "#]]),
        },
        status: Status::FoundFixed,
    },
    Case {
        name: "same-cursor-again",
        area: Area::Lists,
        hostile: r#"every page returns `nextCursor: "again"`"#,
        servers: &[Server::Fixture(&["--mode", "pagination-loop"])],
        settings: PATIENT,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed error at once: pagination loop, naming the cursor",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` broke the protocol in `tools/list`: pagination loop: cursor "again" was returned twice
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "cycling-cursors",
        area: Area::Lists,
        hostile: "cursors cycle a → b → a",
        servers: &[Server::Fixture(&["--mode", "cycling-cursors"])],
        settings: PATIENT,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed error at once: pagination loop",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` broke the protocol in `tools/list`: pagination loop: cursor "a" was returned twice
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "empty-string-cursor-is-not-the-end",
        area: Area::Lists,
        hostile: r#"the first page returns `nextCursor: ""`"#,
        servers: &[Server::Fixture(&["--mode", "empty-string-cursor"])],
        settings: ROOMY,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: r#"`""` is followed; both pages are listed"#,
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
        name: "empty-pages-with-cursors",
        area: Area::Lists,
        hostile: "three empty pages, each with a cursor, before the tools",
        servers: &[Server::Fixture(&["--mode", "empty-pages"])],
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
        name: "error-on-the-second-page",
        area: Area::Lists,
        hostile: "the second page is a -32602 error",
        servers: &[Server::Fixture(&["--mode", "invalid-cursor-mid-list"])],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed error naming the server and the error",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` answered `tools/list` with an error: invalid cursor: next (code -32602)
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "duplicates-across-pages",
        area: Area::Lists,
        hostile: "`echo` on both pages",
        servers: &[Server::Fixture(&["--mode", "duplicate-across-pages"])],
        settings: ROOMY,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "the first is kept; a warning names the duplicate",
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
                  warning: page 2: duplicate entry `echo`; the first one is kept
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "names-with-spaces-and-duplicates",
        area: Area::Lists,
        hostile: "a tool named `bad name!` and a second `echo`",
        servers: &[Server::Fixture(&["--mode", "bad-tool-names"])],
        settings: ROOMY,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "listed with warnings",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                s: 7 tools (protocol 2025-11-25, legacy era, server switchboard-fixture 0.1.0)
                  echo          Returns the given text.
                                  (text: string)
                  add           Adds two integers.
                                  (a: integer, b: integer)
                  slow          Sleeps in steps, reporting progress after each; stops when cancelled.
                                  (duration_ms?: integer, steps?: integer)
                  fail          Always returns a tool error.
                  image         Returns a tiny PNG image and a caption.
                  change_tools  Adds a tool named extra_<n> and announces that the tool list changed.
                  bad name!     A tool whose name has a space and an exclamation mark.
                  warning: page 1: duplicate entry `echo`; the first one is kept
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "tool-without-a-name",
        area: Area::Lists,
        hostile: "a tool definition without `name`",
        servers: &[Server::Fixture(&["--mode", "bad-tool-entry"])],
        settings: ROOMY,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "the others are listed; a warning names the problem",
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
                  warning: page 1: the tool has no `name`
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "megabyte-description",
        area: Area::Lists,
        hostile: "a tool with a 1 MiB description",
        servers: &[Server::Fixture(&["--mode", "huge-description"])],
        settings: ROOMY,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "listed; the description is cut on display",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                s: 7 tools (protocol 2025-11-25, legacy era, server switchboard-fixture 0.1.0)
                  echo          Returns the given text.
                                  (text: string)
                  add           Adds two integers.
                                  (a: integer, b: integer)
                  slow          Sleeps in steps, reporting progress after each; stops when cancelled.
                                  (duration_ms?: integer, steps?: integer)
                  fail          Always returns a tool error.
                  image         Returns a tiny PNG image and a caption.
                  change_tools  Adds a tool named extra_<n> and announces that the tool list changed.
                  verbose       vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv…
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "schema-zoo",
        area: Area::Lists,
        hostile: r#"tools whose `inputSchema` is missing, `null`, a string, `type: 5`, `required: "x"`, an unknown dialect, a network `$ref`, a recursive `$ref`, 36-deep `anyOf`/`oneOf`, a 10000-value `enum`"#,
        servers: &[Server::Fixture(&["--mode", "schema-zoo"])],
        settings: ROOMY,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "every tool is listed; none hangs or crashes the listing",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                s: 16 tools (protocol 2025-11-25, legacy era, server switchboard-fixture 0.1.0)
                  echo                    Returns the given text.
                                            (text: string)
                  add                     Adds two integers.
                                            (a: integer, b: integer)
                  slow                    Sleeps in steps, reporting progress after each; stops when cancelled.
                                            (duration_ms?: integer, steps?: integer)
                  fail                    Always returns a tool error.
                  image                   Returns a tiny PNG image and a caption.
                  change_tools            Adds a tool named extra_<n> and announces that the tool list changed.
                  schema_missing          Schema case schema_missing.
                  schema_null             Schema case schema_null.
                  schema_string           Schema case schema_string.
                  schema_type_5           Schema case schema_type_5.
                  schema_required_string  Schema case schema_required_string.
                  schema_unknown_dialect  Schema case schema_unknown_dialect.
                  schema_network_ref      Schema case schema_network_ref.
                                            (x?: schema.json)
                  schema_recursive_ref    Schema case schema_recursive_ref.
                                            (x?: loop)
                  schema_deep_anyof       Schema case schema_deep_anyof.
                                            (x?: string | integer | null | integer | null | integer | null | integer | null | integer | null | integer | null | integer | null | integer | null | integer | null | integer | null | integer | null | integer | null)
                  schema_huge_enum        Schema case schema_huge_enum.
                                            (x?: one of "value_0", "value_1", "value_2", "value_3", "value_4", "value_5", "value_6", "value_7", "value_8", "value_9", "value_10", "value_11", "value_12", "value_13", "value_14", "value_15", "value_16", "value_17", "value_18", "value_19", "value_20", "value_21", "value_22", "value_23", "value_24", "value_25", "value_26", "value… (138929 bytes)
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "page-count-over-the-cap",
        area: Area::Lists,
        hostile: "1010 tools in pages of 10 (101 pages)",
        servers: &[Server::Fixture(&[
            "--mode",
            "many-tools",
            "--tools",
            "1010",
            "--page-size",
            "10",
        ])],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed error naming the server: more than 100 pages",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` sent a `tools/list` listing over its page cap: more than 100 pages; stopped following `nextCursor`; nothing of it is used (if the listing is genuine, raise the cap: `maxListPages` in the server's config entry, or `max_list_pages` in a host's session configuration)
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "ten-thousand-tools",
        area: Area::Lists,
        hostile: "10000 tools in one page",
        servers: &[Server::Fixture(&[
            "--mode",
            "many-tools",
            "--tools",
            "10000",
            "--page-size",
            "10000",
        ])],
        settings: ROOMY,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "all are listed",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                s: 10000 tools (protocol 2025-11-25, legacy era, server switchboard-fixture 0.1.0)
                  tool_0000  Echo tool number 0.
                               (text: string)
                  tool_0001  Echo tool number 1.
                               (text: string)
                  tool_0002  Echo tool number 2.
                               (text: string)
                  tool_0003  Echo tool number 3.
                               (text: string)
                  tool_0004  Echo tool number 4.
                               (text: string)
                  tool_0005  Echo tool number 5.
                               (text: string)
                  tool_0006  Echo tool number 6.
                               (text: string)
                  tool_0007  Echo tool number 7.
                               (text: string)
                  tool_0008  Echo tool number 8.
                               (text: string)
                  tool_0009  Echo tool number 9.
                               (text: string)
                  tool_0010  Echo tool number 10.
                               (text: string)
                  tool_0011  Echo tool number 11.
                               (text: string)
                  tool_0012  Echo tool number 12.
                               (text: string)
                  tool_0013  Echo tool number 13.
                               (text: string)
                  tool_0014  Echo tool number 14.
                               (text: string)
                  tool_0015  Echo tool number 15.
                               (text: string)
                  tool_0016  Echo tool number 16.
                               (text: string)
                  tool_0017  Echo tool number 17.
                               (text: string)
                  tool_0018  Echo tool number 18.
                               (text: string)
                  tool_0019  Echo tool number 19.
                … (19961 more lines)
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "d6-endless-fresh-pages",
        area: Area::Lists,
        hostile: "`tools/list` pages of 5000 tools (700 KB) with a fresh cursor every time, forever",
        servers: &[Server::Canned {
            script: Script::EndlessFreshPages,
            url: CANNED_URL,
        }],
        settings: PATIENT_LEGACY,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed error naming the server once the total byte or item cap is passed, long before the page cap",
            checks: &[Check::PeakMemory(frames(
                3,
                "the listing total cap (assumed at most 2 frames) plus one page being read",
            ))],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` sent a `tools/list` listing over its entry cap: 15000 entries, more than 10000; nothing of it is used (if the listing is genuine, raise the cap: `maxListItems` in the server's config entry, or `max_list_items` in a host's session configuration)
            "#]]),
        },
        status: Status::Fixed { defect: 6 },
    },
    Case {
        name: "d6-one-huge-page",
        area: Area::Lists,
        hostile: "one `tools/list` page of 100000 tools (14 MB, under the frame cap)",
        servers: &[Server::Canned {
            script: Script::HugeToolPage,
            url: CANNED_URL,
        }],
        settings: PATIENT_LEGACY,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed error naming the server (over the default item cap), with memory near the page's size instead of ~27x it",
            checks: &[Check::PeakMemory(frames(
                3,
                "one page as bytes plus its typed items, no `Value` tree",
            ))],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` sent a `tools/list` listing over its entry cap: 100000 entries, more than 10000; nothing of it is used (if the listing is genuine, raise the cap: `maxListItems` in the server's config entry, or `max_list_items` in a host's session configuration)
            "#]]),
        },
        status: Status::Fixed { defect: 6 },
    },
    Case {
        name: "found-deep-schema-loses-the-listing",
        area: Area::Lists,
        hostile: "one tool whose `inputSchema` nests 200 objects deep (valid JSON, deeper than the parser's recursion limit)",
        servers: &[Server::Fixture(&["--mode", "deep-schema"])],
        settings: PATIENT,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "the other tools are listed and the deep one is a listing problem (partial success), at once",
            checks: &[],
            deadline: PROMPT,
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
                  warning: page 1: tool `deep` cannot be read: recursion limit exceeded at line 1 column 2300
                --- stderr: empty
            "#]]),
        },
        status: Status::FoundFixed,
    },
    Case {
        name: "five-thousand-content-blocks",
        area: Area::Results,
        hostile: "a result of 5000 text blocks",
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: ROOMY,
        command: Cmd::Call {
            tool: "many_blocks",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "every block is printed",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                block 0
                block 1
                block 2
                block 3
                block 4
                block 5
                block 6
                block 7
                block 8
                block 9
                block 10
                block 11
                block 12
                block 13
                block 14
                block 15
                block 16
                block 17
                block 18
                block 19
                block 20
                block 21
                block 22
                block 23
                block 24
                block 25
                block 26
                block 27
                block 28
                block 29
                block 30
                block 31
                block 32
                block 33
                block 34
                block 35
                block 36
                block 37
                block 38
                block 39
                … (4960 more lines)
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "image-data-not-base64",
        area: Area::Results,
        hostile: "an image whose `data` is not base64",
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: ROOMY,
        command: Cmd::Call {
            tool: "bad_image",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "shown as a placeholder with its size, not decoded",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                [image image/png, 18 bytes base64]
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "unknown-content-type",
        area: Area::Results,
        hostile: "a content block of type `hologram` before a text block",
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: ROOMY,
        command: Cmd::Call {
            tool: "unknown_content",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "a placeholder names the unknown type; the text follows",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                [content of unknown type "hologram"]
                after the hologram
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "javascript-and-file-links",
        area: Area::Results,
        hostile: "resource links to `javascript:alert(1)` and `file:///etc/passwd`",
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: ROOMY,
        command: Cmd::Call {
            tool: "script_links",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "shown as text, never opened",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                [resource link click me (javascript:alert(1))]
                [resource link passwords (file:///etc/passwd)]
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "resource-mime-type-mismatch",
        area: Area::Results,
        hostile: "an embedded resource that says `image/png` and holds text",
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: ROOMY,
        command: Cmd::Call {
            tool: "mismatched_resource",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "its text is shown",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                not an image
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "terminal-escapes-in-result-text",
        area: Area::Results,
        hostile: "result text with CSI, OSC, BEL, C1, bidi overrides and a zero-width space",
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: ROOMY,
        command: Cmd::Call {
            tool: "escapes_in_text",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "escaped: nothing raw reaches the terminal",
            checks: &[Check::NoRawControls],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                red\u{1b}[31m title\u{1b}]0;owned\u{7} bidi\u{202e}txet\u{202c} zero\u{200b}width c1\u{9b}2J
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "result-without-content",
        area: Area::Results,
        hostile: "successful results without `content`",
        servers: &[Server::Fixture(&["--mode", "bad-call-result"])],
        settings: ROOMY,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "an empty result, no crash",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout: empty
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "quarter-megabyte-result",
        area: Area::Results,
        hostile: "`echo` pads its text to 256 KiB",
        servers: &[Server::Fixture(&["--mode", "huge-result"])],
        settings: ROOMY,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the whole text is printed",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                hixxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx… (262144 bytes)
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "tool-reports-an-error",
        area: Area::Results,
        hostile: "a tool answers `isError: true`",
        servers: &[Server::Fixture(&[])],
        settings: ROOMY,
        command: Cmd::Call {
            tool: "fail",
            args: r#"{}"#,
        },
        outcome: Outcome {
            exit: Exit::ToolErrorOrFindings,
            says: "the error text is printed; exit 1 names the tool and server",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 1
                --- stdout
                this tool always fails
                --- stderr
                switchboard: tool `fail` on server `s` reported an error
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "log-message-flood",
        area: Area::Notifications,
        hostile: "10000 log notifications before the result",
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: ROOMY,
        command: Cmd::Call {
            tool: "log_flood",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the call prints `ok`",
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
        name: "progress-unknown-backwards-and-late",
        area: Area::Notifications,
        hostile: "progress for an unknown token, backwards progress, then progress after the result",
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: ROOMY,
        command: Cmd::Call {
            tool: "progress_chaos",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the call prints `ok`",
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
        name: "list-changed-storm",
        area: Area::Notifications,
        hostile: "1000 tools list changes before the result",
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: ROOMY,
        command: Cmd::Call {
            tool: "list_changed_storm",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the call prints `ok`",
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
        name: "gateway-server-crashes-mid-call",
        area: Area::Gateway,
        hostile: "one of two servers exits when a tool is called",
        servers: &[
            Server::Fixture(&["--mode", "crash-mid-call"]),
            Server::Fixture(&[]),
        ],
        settings: PATIENT,
        command: Cmd::Serve {
            script: ServeScript::Lines(&[
                INITIALIZE,
                INITIALIZED,
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"s__echo","arguments":{"text":"x"}}}"#,
                r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"t__echo","arguments":{"text":"still here"}}}"#,
            ]),
            close: Close::AfterAnswers,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the crashed server's call gets an error naming it; the other server still answers",
            checks: &[Check::GatewayAnswersEveryRequest],
            deadline: PROMPT,
            transcript: Some(expect![[r###"
                exit 0
                --- stdout
                {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true},"completions":{},"logging":{}},"serverInfo":{"name":"switchboard","version":"0.1.0","title":"Switchboard gateway"},"instructions":"## MCP Server Instructions\n\nThe foll… (826 bytes)
                {"jsonrpc":"2.0","id":2,"error":{"code":-32005,"message":"server `s`: the server process exited (exit status: 3)\n--- last stderr output ---\nfixture: crashing on purpose\nThe server is being restarted; the request was not retried because it may have had effects.","data":{"server":"s"}}}
                {"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"still here"}]}}
                --- stderr
                switchboard serve: 2 of 2 server(s) ready
                  s: ready (6 tools)
                  t: ready (6 tools)
            "###]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "gateway-broken-server-beside-a-good-one",
        area: Area::Gateway,
        hostile: "one server exits at once, the other is good",
        servers: &[
            Server::Fixture(&["--mode", "exit-immediately"]),
            Server::Fixture(&[]),
        ],
        settings: ROOMY,
        command: Cmd::Serve {
            script: ServeScript::Lines(&[
                INITIALIZE,
                INITIALIZED,
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
            ]),
            close: Close::AfterAnswers,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the startup report names the failed server with its stderr; the good server's tools are served",
            checks: &[Check::GatewayAnswersEveryRequest],
            deadline: HANG,
            transcript: Some(expect![[r###"
                exit 0
                --- stdout
                {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true},"completions":{},"logging":{}},"serverInfo":{"name":"switchboard","version":"0.1.0","title":"Switchboard gateway"},"instructions":"## MCP Server Instructions\n\nThe foll… (762 bytes)
                {"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"t__add","description":"Adds two integers.","inputSchema":{"type":"object","properties":{"a":{"type":"integer","description":"First addend."},"b":{"type":"integer","description":"Second addend."}},"required":["a","b"],"additionalProperties":false},"outputSchema":{"type":"object","properties":{"sum":{"type":"… (1674 bytes)
                --- stderr
                switchboard serve: 1 of 2 server(s) ready
                  s: failed, retrying in <n>ms: server `s`: the server process exited (exit status: 2)
                    --- last stderr output ---
                    fixture: bad configuration, exiting
                  t: ready (6 tools)
            "###]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "gateway-line-not-json",
        area: Area::Gateway,
        hostile: "the client writes a line that is not JSON",
        servers: &[Server::Fixture(&[])],
        settings: ROOMY,
        command: Cmd::Serve {
            script: ServeScript::Lines(&[
                INITIALIZE,
                INITIALIZED,
                r#"this is not json"#,
                r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
            ]),
            close: Close::AfterAnswers,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "answered with a parse error and `id: null`; the gateway keeps serving",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r###"
                exit 0
                --- stdout
                {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true},"completions":{},"logging":{}},"serverInfo":{"name":"switchboard","version":"0.1.0","title":"Switchboard gateway"},"instructions":"## MCP Server Instructions\n\nThe foll… (762 bytes)
                {"jsonrpc":"2.0","id":2,"result":{}}
                {"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"not a JSON-RPC request: non-JSON text on the protocol channel (16 bytes): this is not json"}}
                --- stderr
                switchboard serve: 1 of 1 server(s) ready
                  s: ready (6 tools)
            "###]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "gateway-unknown-method",
        area: Area::Gateway,
        hostile: "the client calls a method the gateway does not have",
        servers: &[Server::Fixture(&[])],
        settings: ROOMY,
        command: Cmd::Serve {
            script: ServeScript::Lines(&[
                INITIALIZE,
                INITIALIZED,
                r#"{"jsonrpc":"2.0","id":2,"method":"no/such/method"}"#,
            ]),
            close: Close::AfterAnswers,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "answered -32601 with its id",
            checks: &[Check::GatewayAnswersEveryRequest],
            deadline: HANG,
            transcript: Some(expect![[r###"
                exit 0
                --- stdout
                {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true},"completions":{},"logging":{}},"serverInfo":{"name":"switchboard","version":"0.1.0","title":"Switchboard gateway"},"instructions":"## MCP Server Instructions\n\nThe foll… (762 bytes)
                {"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"method `no/such/method` is not offered by this server"}}
                --- stderr
                switchboard serve: 1 of 1 server(s) ready
                  s: ready (6 tools)
            "###]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "gateway-stubborn-server-at-eof",
        area: Area::Gateway,
        hostile: "a server that ignores stdin EOF and SIGTERM",
        servers: &[Server::Fixture(&["--mode", "stubborn"])],
        settings: ROOMY,
        command: Cmd::Serve {
            script: ServeScript::Lines(&[
                INITIALIZE,
                INITIALIZED,
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
            ]),
            close: Close::AfterAnswers,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the gateway exits on stdin EOF and the server is killed",
            checks: &[Check::GatewayAnswersEveryRequest],
            deadline: HANG,
            transcript: Some(expect![[r###"
                exit 0
                --- stdout
                {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true},"completions":{},"logging":{}},"serverInfo":{"name":"switchboard","version":"0.1.0","title":"Switchboard gateway"},"instructions":"## MCP Server Instructions\n\nThe foll… (762 bytes)
                {"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"s__add","description":"Adds two integers.","inputSchema":{"type":"object","properties":{"a":{"type":"integer","description":"First addend."},"b":{"type":"integer","description":"Second addend."}},"required":["a","b"],"additionalProperties":false},"outputSchema":{"type":"object","properties":{"sum":{"type":"… (1674 bytes)
                --- stderr
                switchboard serve: 1 of 1 server(s) ready
                  s: ready (6 tools)
            "###]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "gateway-grandchildren-at-eof",
        area: Area::Gateway,
        hostile: "a server that starts two long-lived copies of itself",
        servers: &[Server::Fixture(&["--mode", "forks-grandchild"])],
        settings: ROOMY,
        command: Cmd::Serve {
            script: ServeScript::Lines(&[
                INITIALIZE,
                INITIALIZED,
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
            ]),
            close: Close::AfterAnswers,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the whole tree is killed when the gateway exits",
            checks: &[Check::GatewayAnswersEveryRequest],
            deadline: HANG,
            transcript: Some(expect![[r###"
                exit 0
                --- stdout
                {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true},"completions":{},"logging":{}},"serverInfo":{"name":"switchboard","version":"0.1.0","title":"Switchboard gateway"},"instructions":"## MCP Server Instructions\n\nThe foll… (762 bytes)
                {"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"s__add","description":"Adds two integers.","inputSchema":{"type":"object","properties":{"a":{"type":"integer","description":"First addend."},"b":{"type":"integer","description":"Second addend."}},"required":["a","b"],"additionalProperties":false},"outputSchema":{"type":"object","properties":{"sum":{"type":"… (1674 bytes)
                --- stderr
                switchboard serve: 1 of 1 server(s) ready
                  s: ready (6 tools)
            "###]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "gateway-list-changed-storm",
        area: Area::Gateway,
        hostile: "a server announces 1000 tool list changes during a call",
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: ROOMY,
        command: Cmd::Serve {
            script: ServeScript::Lines(&[
                INITIALIZE,
                INITIALIZED,
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"s__list_changed_storm","arguments":{}}}"#,
            ]),
            close: Close::AfterAnswers,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the call is answered; the client is told the list changed",
            checks: &[Check::GatewayAnswersEveryRequest],
            deadline: HANG,
            transcript: Some(expect![[r###"
                exit 0
                --- stdout
                {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true},"completions":{},"logging":{}},"serverInfo":{"name":"switchboard","version":"0.1.0","title":"Switchboard gateway"},"instructions":"## MCP Server Instructions\n\nThe foll… (762 bytes)
                {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"ok"}]}}
                --- stderr
                switchboard serve: 1 of 1 server(s) ready
                  s: ready (43 tools)
            "###]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "gateway-recursive-and-network-refs",
        area: Area::Gateway,
        hostile: "tools whose schema has a recursive `$ref` or a `$ref` to a URL the server handed out",
        servers: &[Server::Fixture(&[
            "--mode",
            "schema-zoo",
            "--ref-url",
            "{tripwire}/schema.json",
        ])],
        settings: ROOMY,
        command: Cmd::Serve {
            script: ServeScript::Lines(&[
                INITIALIZE,
                INITIALIZED,
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"s__schema_recursive_ref","arguments":{"x":1}}}"#,
                r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"s__schema_network_ref","arguments":{"x":1}}}"#,
                r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"s__schema_deep_anyof","arguments":{"x":"y"}}}"#,
            ]),
            close: Close::AfterAnswers,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "argument validation is bounded; the network `$ref` is never fetched",
            checks: &[Check::GatewayAnswersEveryRequest, Check::TripwireUntouched],
            deadline: HANG,
            transcript: Some(expect![[r###"
                exit 0
                --- stdout
                {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true},"completions":{},"logging":{}},"serverInfo":{"name":"switchboard","version":"0.1.0","title":"Switchboard gateway"},"instructions":"## MCP Server Instructions\n\nThe foll… (762 bytes)
                {"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"unknown tool `s__schema_recursive_ref`: this gateway has 12 tools (tools/list shows them)"}}
                {"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"unknown tool `s__schema_network_ref`: this gateway has 12 tools (tools/list shows them)"}}
                {"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"schema_deep_anyof called"}]}}
                --- stderr
                switchboard serve: 1 of 1 server(s) ready
                  s: ready (16 tools)
                  warning: s/schema_network_ref: InvalidSchema: left out: `$ref` to "http://<tripwire>/schema.json" points outside the schema; it is not fetched
                  warning: s/schema_recursive_ref: InvalidSchema: left out: `$ref` "#/$defs/loop" nests deeper than 16 levels (recursive schema)
                  warning: s/schema_string: InvalidSchema: left out: `inputSchema` is not an object: "object"
                  warning: s/schema_type_5: InvalidSchema: left out: the root of `inputSchema` must have type "object", not 5
            "###]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "gateway-hostile-answers",
        area: Area::Gateway,
        hostile: "calls through the gateway get a malformed answer, an error with huge data, 5000 blocks and escapes",
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: QUICK,
        command: Cmd::Serve {
            script: ServeScript::Lines(&[
                INITIALIZE,
                INITIALIZED,
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"s__result_and_error","arguments":{}}}"#,
                r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"s__error_huge_data","arguments":{}}}"#,
                r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"s__escapes_in_text","arguments":{}}}"#,
                r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"s__huge_numbers","arguments":{}}}"#,
            ]),
            close: Close::AfterAnswers,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "each call is answered: the server's own error and results as it sent them, a malformed answer with a JSON-RPC error naming the server",
            checks: &[Check::GatewayAnswersEveryRequest],
            deadline: HANG,
            transcript: Some(expect![[r###"
                exit 0
                --- stdout
                {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true},"completions":{},"logging":{}},"serverInfo":{"name":"switchboard","version":"0.1.0","title":"Switchboard gateway"},"instructions":"## MCP Server Instructions\n\nThe foll… (762 bytes)
                {"jsonrpc":"2.0","id":2,"error":{"code":-32006,"message":"server `s` answered `tools/call` with a malformed message: not a JSON-RPC message: response has both `result` and `error`: {\"jsonrpc\":\"2.0\",\"id\":<id>,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]},\"error\":{\"code\":-32000,\"message\":\"also failed\"}}; the server is broken: rep… (406 bytes)
                {"jsonrpc":"2.0","id":3,"error":{"code":-32000,"message":"failed with a lot of data","data":"ddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd… (2097248 bytes)
                {"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"red\u001b[31m title\u001b]0;owned\u0007 bidi\u{202e}txet\u{202c} zero\u{200b}width c1\u{9b}2J"}]}}
                {"jsonrpc":"2.0","id":5,"error":{"code":-32006,"message":"server `s` broke the protocol in `tools/call`: the tool result is not valid JSON: number out of range at line 1 column 78","data":{"server":"s"}}}
                --- stderr
                switchboard serve: 1 of 1 server(s) ready
                  s: ready (43 tools)
            "###]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "gateway-passes-upstream-answers-unchanged",
        area: Area::Gateway,
        hostile: "calls through the gateway get a result with `structuredContent` and `_meta`, one with `isError`, a JSON-RPC error with data, and no answer within the deadline",
        servers: &[
            Server::Fixture(&[]),
            Server::Fixture(&["--mode", "hostile-text"]),
        ],
        settings: QUICK,
        command: Cmd::Serve {
            script: ServeScript::Lines(&[
                INITIALIZE,
                INITIALIZED,
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"s__add","arguments":{"a":2,"b":3}}}"#,
                r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"s__fail","arguments":{}}}"#,
                r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"s__slow","arguments":{"duration_ms":60000,"steps":1}}}"#,
                r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"t__rpc_error","arguments":{}}}"#,
            ]),
            close: Close::AfterAnswers,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "results and the server's JSON-RPC error (code, message, data) pass as the server sent them; the timeout is a JSON-RPC error naming the server and how long the gateway waited",
            checks: &[Check::GatewayAnswersEveryRequest],
            deadline: HANG,
            transcript: Some(expect![[r###"
                exit 0
                --- stdout
                {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true},"completions":{},"logging":{}},"serverInfo":{"name":"switchboard","version":"0.1.0","title":"Switchboard gateway"},"instructions":"## MCP Server Instructions\n\nThe foll… (826 bytes)
                {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"5"}],"structuredContent":{"sum":5},"_meta":{"fixture.switchboard.test/tool":"add"}}}
                {"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"this tool always fails"}],"isError":true}}
                {"jsonrpc":"2.0","id":4,"error":{"code":-32001,"message":"server `s` did not answer `tools/call` within 2s; if it is just slow, raise the timeout (`--timeout`, or `timeout` in the server's configuration)","data":{"server":"s","waitedMs":2000}}}
                {"jsonrpc":"2.0","id":5,"error":{"code":-32603,"message":"it broke: \u001b[2Jcleared \u001b]52;c;aGFja2Vk\u0007clipboard \u001b]8;;https://evil.example/\u001b\\link\u001b]8;;\u001b\\ bell\u0007 return\r over \u{9b}31m csi \u{202e}reversed","data":{"detail":"\u001b[2Jcleared \u001b]52;c;aGFja2Vk\u0007clipboard \u001b]8;;https://evil.example/\u001b\\link\u001b… (432 bytes)
                --- stderr
                switchboard serve: 2 of 2 server(s) ready
                  s: ready (6 tools)
                  t: ready (10 tools)
                  warning: t/hostile_\u{1b}[2Jcleared \u{1b}]52;c;aGFja2Vk\u{7}clipboard \u{1b}]8;;https://evil.example/\u{1b}\link\u{1b}]8;;\u{1b}\ bell\u{7} return\u{d} over \u{9b}31m csi \u{202e}reversed: HiddenCharacters: description: contains invisible or control characters (U+001B, U+001B, U+0007, U+001B, U+001B)
                  warning: t/shout: HiddenCharacters: description: contains invisible or control characters (U+001B, U+001B, U+0007, U+001B, U+001B)
            "###]]),
        },
        status: Status::Holds,
    },
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
        name: "d8-tools-never-fetches-resource-metadata",
        area: Area::Auth,
        hostile: "a 401 whose `resource_metadata` points at another port on 127.0.0.1",
        servers: &[Server::Canned {
            script: Script::MetadataAtTripwire,
            url: CANNED_URL,
        }],
        settings: QUICK_LEGACY,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "no discovery from a plain command: the error says to run `switchboard login s`",
            checks: &[
                Check::TripwireUntouched,
                Check::StderrHas("switchboard login s"),
            ],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` gave no answer to `initialize`: authorization failed: server `s` needs you to log in first: run `switchboard login s`
            "#]]),
        },
        status: Status::Fixed { defect: 8 },
    },
    Case {
        name: "d8-call-never-fetches-resource-metadata",
        area: Area::Auth,
        hostile: "the same 401, for `call`",
        servers: &[Server::Canned {
            script: Script::MetadataAtTripwire,
            url: CANNED_URL,
        }],
        settings: QUICK_LEGACY,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "no discovery: the login hint",
            checks: &[
                Check::TripwireUntouched,
                Check::StderrHas("switchboard login s"),
            ],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` gave no answer to `initialize`: authorization failed: server `s` needs you to log in first: run `switchboard login s`
            "#]]),
        },
        status: Status::Fixed { defect: 8 },
    },
    Case {
        name: "d8-check-never-fetches-resource-metadata",
        area: Area::Auth,
        hostile: "the same 401, for `check`",
        servers: &[Server::Canned {
            script: Script::MetadataAtTripwire,
            url: CANNED_URL,
        }],
        settings: QUICK_LEGACY,
        command: Cmd::Check { flags: &[] },
        outcome: Outcome {
            exit: Exit::ToolErrorOrFindings,
            says: "no discovery during the check",
            checks: &[Check::TripwireUntouched],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 1
                --- stdout
                s (http)
                  FAIL  initialize                   the handshake failed: server `s` gave no answer to `initialize`: authorization failed: server `s` needs you to log in first: run `switchboard login s`
                  s: <n> passed, 1 failed, 0 warnings, <n> skipped in <n> s
                --- stderr: empty
            "#]]),
        },
        status: Status::Fixed { defect: 8 },
    },
    Case {
        name: "d8-serve-never-fetches-resource-metadata",
        area: Area::Auth,
        hostile: "the same 401, behind the gateway",
        servers: &[Server::Canned {
            script: Script::MetadataAtTripwire,
            url: CANNED_URL,
        }],
        settings: QUICK_LEGACY,
        command: Cmd::Serve {
            script: ServeScript::Lines(&[
                INITIALIZE,
                INITIALIZED,
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
            ]),
            close: Close::AfterAnswers,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the server is reported as needing a login; nothing is fetched",
            checks: &[Check::TripwireUntouched, Check::GatewayAnswersEveryRequest],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true},"completions":{},"logging":{}},"serverInfo":{"name":"switchboard","version":"0.1.0","title":"Switchboard gateway"}}}
                {"jsonrpc":"2.0","id":2,"result":{"tools":[]}}
                --- stderr
                switchboard serve: 0 of 1 server(s) ready
                  s: failed, retrying in <n>ms: server `s` gave no answer to `initialize`: authorization failed: server `s` needs you to log in first: run `switchboard login s`
            "#]]),
        },
        status: Status::Fixed { defect: 8 },
    },
    Case {
        name: "d8-bare-401-never-registers",
        area: Area::Auth,
        hostile: "every request answered 401 without `WWW-Authenticate`",
        servers: &[Server::Canned {
            script: Script::UnauthorizedBare,
            url: CANNED_URL,
        }],
        settings: PATIENT_LEGACY,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "no discovery or registration from a plain command: the error says to run `switchboard login s`",
            checks: &[Check::StderrHas("switchboard login s")],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` gave no answer to `initialize`: authorization failed: server `s` needs you to log in first: run `switchboard login s`
            "#]]),
        },
        status: Status::Fixed { defect: 8 },
    },
    Case {
        name: "d10-path-secret-not-printed-by-check",
        area: Area::Auth,
        hostile: "a URL carrying a `${VAR}` secret (http://{addr}/${SWITCHBOARD_FAULT_SECRET}/mcp); the server answers 500",
        servers: &[Server::Canned {
            script: Script::ServerError,
            url: "http://{addr}/${SWITCHBOARD_FAULT_SECRET}/mcp",
        }],
        settings: QUICK_LEGACY,
        command: Cmd::Check { flags: &[] },
        outcome: Outcome {
            exit: Exit::ToolErrorOrFindings,
            says: "the error names the server and a redacted URL",
            checks: &[Check::SecretNeverShown],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 1
                --- stdout
                s (http, legacy era, protocol 2025-11-25, server canned 1.0)
                  FAIL  invalid-input                a call to an unknown tool got no answer: HTTP N Internal Server Error from http://N.N.N.N:N/<redacted>/mcp: <html><body>Internal Server Error</body></html>
                  FAIL  shutdown                     DELETE answered N, but the session still answers requests (HTTP N (JSON-RPC error -N: Method not found))
                  FAIL  utilities                    `ping` got JSON-RPC error -N: Method not found: a receiver MUST answer it promptly with an empty result
                  FAIL  http-origin                  the server accepted a request from a foreign origin: POST `initialize` with `Origin: http://evil.example` got HTTP N with a result; any web page the user visits can reach this local server through DNS rebinding
                  FAIL  http-session                 a request with a session id the server never issued was served (HTTP N (JSON-RPC error -N: Method not found)): the server does not check session ids (and N more)
                  s: <n> passed, 5 failed, 0 warnings, <n> skipped in <n> s
                --- stderr: empty
            "#]]),
        },
        status: Status::Fixed { defect: 10 },
    },
    Case {
        name: "d10-query-secret-not-printed-by-call",
        area: Area::Auth,
        hostile: "a URL carrying a `${VAR}` secret (http://{addr}/mcp?key=${SWITCHBOARD_FAULT_SECRET}); the server answers 500",
        servers: &[Server::Canned {
            script: Script::ServerError,
            url: "http://{addr}/mcp?key=${SWITCHBOARD_FAULT_SECRET}",
        }],
        settings: QUICK_LEGACY,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "the error names the server and a redacted URL",
            checks: &[Check::SecretNeverShown],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` gave no answer to `tools/call`: HTTP 500 Internal Server Error from http://<canned-s>/mcp?key=***: <html><body>Internal Server Error</body></html>
            "#]]),
        },
        status: Status::Fixed { defect: 10 },
    },
    Case {
        name: "d10-query-secret-not-printed-by-tools",
        area: Area::Auth,
        hostile: "a URL carrying a `${VAR}` secret (http://{addr}/mcp?key=${SWITCHBOARD_FAULT_SECRET}); the server answers every request 500",
        servers: &[Server::Canned {
            script: Script::AlwaysServerError,
            url: "http://{addr}/mcp?key=${SWITCHBOARD_FAULT_SECRET}",
        }],
        settings: QUICK_LEGACY,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "the error names the server and a redacted URL",
            checks: &[Check::SecretNeverShown],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` gave no answer to `initialize`: HTTP 500 Internal Server Error from http://<canned-s>/mcp?key=***: <html><body>Internal Server Error</body></html>
            "#]]),
        },
        status: Status::Fixed { defect: 10 },
    },
    Case {
        name: "d10-userinfo-not-printed",
        area: Area::Auth,
        hostile: "a URL carrying a `${VAR}` secret (http://user:${SWITCHBOARD_FAULT_SECRET}@{addr}/mcp); the server answers every request 500",
        servers: &[Server::Canned {
            script: Script::AlwaysServerError,
            url: "http://user:${SWITCHBOARD_FAULT_SECRET}@{addr}/mcp",
        }],
        settings: QUICK_LEGACY,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "the error names the server and a redacted URL",
            checks: &[Check::SecretNeverShown],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` gave no answer to `initialize`: HTTP 500 Internal Server Error from http://***@<canned-s>/mcp: <html><body>Internal Server Error</body></html>
            "#]]),
        },
        status: Status::Fixed { defect: 10 },
    },
    Case {
        name: "d8-login-refuses-link-local-metadata",
        area: Area::Auth,
        hostile: "during `login`, a 401 whose `resource_metadata` is `http://169.254.169.254/…` (link-local, where cloud metadata services answer)",
        servers: &[Server::Canned {
            script: Script::MetadataLinkLocal,
            url: CANNED_URL,
        }],
        settings: QUICK_LEGACY,
        command: Cmd::Login,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "a typed refusal naming the URL and the rule; nothing is fetched (every address off loopback is proxied to the tripwire, which stays untouched)",
            checks: &[
                Check::TripwireUntouched,
                Check::StderrHas("169.254.169.254"),
            ],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` gave no answer to `initialize`: authorization failed: refusing the resource metadata URL http://169.254.169.254/.well-known/oauth-protected-resource: its host is a link-local address (cloud metadata services answer there), never contacted
            "#]]),
        },
        status: Status::Fixed { defect: 8 },
    },
    Case {
        name: "d8-login-refuses-private-https-metadata",
        area: Area::Auth,
        hostile: "during `login` against a loopback server, a 401 whose `resource_metadata` is on `https://10.0.0.1/…` (private: another address class than the server's)",
        servers: &[Server::Canned {
            script: Script::MetadataPrivateHttps,
            url: CANNED_URL,
        }],
        settings: QUICK_LEGACY,
        command: Cmd::Login,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "a typed refusal naming the URL and the rule; nothing is fetched",
            checks: &[Check::TripwireUntouched, Check::StderrHas("10.0.0.1")],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` gave no answer to `initialize`: authorization failed: refusing the resource metadata URL https://10.0.0.1/.well-known/oauth-protected-resource: its host is a private-network address, and the MCP server is not on a private network
            "#]]),
        },
        status: Status::Fixed { defect: 8 },
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
    Case {
        name: "d2-escapes-in-jsonrpc-error-message",
        area: Area::Results,
        hostile: "a JSON-RPC error whose message holds CSI, OSC, BEL, a C1 CSI and a bidi override",
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: QUICK,
        command: Cmd::Call {
            tool: "escape_error",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "the message is shown with its controls neutralised",
            checks: &[Check::NoRawControls],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` answered `tools/call` with an error: boom\u{1b}[2J\u{1b}]0;owned\u{7} \u{202e}evil\u{202c} \u{9b}31m (code -32000)
            "#]]),
        },
        status: Status::Fixed { defect: 2 },
    },
    Case {
        name: "d2-escapes-in-serve-startup-report",
        area: Area::Gateway,
        hostile: "the same server beside a good one, behind the gateway",
        servers: &[
            Server::Command {
                program: "sh",
                args: &[
                    "-c",
                    "printf 'starting\\033]0;owned\\007\\033[2J\\033[31m red \\342\\200\\256evil\\n' >&2; exit 1",
                ],
            },
            Server::Fixture(&[]),
        ],
        settings: QUICK,
        command: Cmd::Serve {
            script: ServeScript::Lines(&[
                INITIALIZE,
                INITIALIZED,
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
            ]),
            close: Close::AfterAnswers,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the startup report's stderr tail is neutralised",
            checks: &[Check::NoRawControls, Check::GatewayAnswersEveryRequest],
            deadline: HANG,
            transcript: Some(expect![[r###"
                exit 0
                --- stdout
                {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true},"completions":{},"logging":{}},"serverInfo":{"name":"switchboard","version":"0.1.0","title":"Switchboard gateway"},"instructions":"## MCP Server Instructions\n\nThe foll… (762 bytes)
                {"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"t__add","description":"Adds two integers.","inputSchema":{"type":"object","properties":{"a":{"type":"integer","description":"First addend."},"b":{"type":"integer","description":"Second addend."}},"required":["a","b"],"additionalProperties":false},"outputSchema":{"type":"object","properties":{"sum":{"type":"… (1674 bytes)
                --- stderr
                switchboard serve: 1 of 2 server(s) ready
                  s: failed, retrying in <n>ms: server `s`: the server process exited (exit status: 1)
                    --- last stderr output ---
                    starting\u{1b}]0;owned\u{7}\u{1b}[2J\u{1b}[31m red \u{202e}evil
                  t: ready (6 tools)
            "###]]),
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
        name: "found-log-colours-on-a-pipe",
        area: Area::Gateway,
        hostile: "a server that exits at once beside a good one, behind the gateway, whose stderr is a pipe (as an MCP host that logs it)",
        servers: &[
            Server::Fixture(&["--mode", "exit-immediately"]),
            Server::Fixture(&[]),
        ],
        settings: QUICK,
        command: Cmd::Serve {
            script: ServeScript::Lines(&[
                INITIALIZE,
                INITIALIZED,
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
            ]),
            close: Close::AfterAnswers,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the WARN log lines are plain text when stderr is not a terminal; today they carry ANSI colour sequences into the host's log file",
            checks: &[Check::NoEscapeSequences, Check::GatewayAnswersEveryRequest],
            deadline: HANG,
            transcript: Some(expect![[r###"
                exit 0
                --- stdout
                {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true},"completions":{},"logging":{}},"serverInfo":{"name":"switchboard","version":"0.1.0","title":"Switchboard gateway"},"instructions":"## MCP Server Instructions\n\nThe foll… (762 bytes)
                {"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"t__add","description":"Adds two integers.","inputSchema":{"type":"object","properties":{"a":{"type":"integer","description":"First addend."},"b":{"type":"integer","description":"Second addend."}},"required":["a","b"],"additionalProperties":false},"outputSchema":{"type":"object","properties":{"sum":{"type":"… (1674 bytes)
                --- stderr
                switchboard serve: 1 of 2 server(s) ready
                  s: failed, retrying in <n>ms: server `s`: the server process exited (exit status: 2)
                    --- last stderr output ---
                    fixture: bad configuration, exiting
                  t: ready (6 tools)
            "###]]),
        },
        status: Status::Fixed { defect: 2 },
    },
    Case {
        name: "d5-gateway-eof-answers-requests-in-flight",
        area: Area::Gateway,
        hostile: r#"`printf '<initialize>\n<initialized>\n<tools/list>\n' | switchboard serve`"#,
        servers: &[Server::Fixture(&[])],
        settings: QUICK,
        command: Cmd::Serve {
            script: ServeScript::Lines(&[
                INITIALIZE,
                INITIALIZED,
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
            ]),
            close: Close::AtOnce,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the requests in flight at EOF are answered, then the gateway exits 0",
            checks: &[Check::GatewayAnswersEveryRequest],
            deadline: HANG,
            transcript: Some(expect![[r###"
                exit 0
                --- stdout
                {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true},"completions":{},"logging":{}},"serverInfo":{"name":"switchboard","version":"0.1.0","title":"Switchboard gateway"},"instructions":"## MCP Server Instructions\n\nThe foll… (762 bytes)
                {"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"s__add","description":"Adds two integers.","inputSchema":{"type":"object","properties":{"a":{"type":"integer","description":"First addend."},"b":{"type":"integer","description":"Second addend."}},"required":["a","b"],"additionalProperties":false},"outputSchema":{"type":"object","properties":{"sum":{"type":"… (1674 bytes)
                --- stderr
                switchboard serve: 1 of 1 server(s) ready
                  s: ready (6 tools)
            "###]]),
        },
        status: Status::Fixed { defect: 5 },
    },
    Case {
        name: "d5-gateway-eof-with-300-calls-to-a-hung-server",
        area: Area::Gateway,
        hostile: "300 calls of a tool that never finishes (over the 256 in-flight cap), then stdin EOF",
        servers: &[Server::Fixture(&[])],
        settings: PATIENT,
        command: Cmd::Serve {
            script: ServeScript::ManyCalls {
                tool: "s__slow",
                args: r#"{"duration_ms":3600000,"steps":1}"#,
                count: 300,
            },
            close: Close::AtOnce,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "EOF is seen despite the cap; every call is failed within a bounded grace, not at the upstream deadline",
            checks: &[Check::GatewayAnswersEveryRequest],
            deadline: PROMPT,
            transcript: Some(expect![[r###"
                exit 0
                --- stdout
                {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true},"completions":{},"logging":{}},"serverInfo":{"name":"switchboard","version":"0.1.0","title":"Switchboard gateway"},"instructions":"## MCP Server Instructions\n\nThe foll… (762 bytes)
                {"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":3,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":4,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":5,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":6,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":8,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":9,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":10,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":11,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":12,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":13,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":14,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":15,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":16,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":17,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":18,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":19,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":20,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":21,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":22,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":23,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":24,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":25,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":26,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":27,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":28,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":29,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":30,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":31,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":32,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":33,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":34,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":35,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":36,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":37,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":38,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":39,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                {"jsonrpc":"2.0","id":40,"error":{"code":-32000,"message":"cancelled unfinished: the client closed its input and this request did not finish within the 5s close grace"}}
                … (261 more lines)
                --- stderr
                switchboard serve: 1 of 1 server(s) ready
                  s: ready (6 tools)
            "###]]),
        },
        status: Status::Fixed { defect: 5 },
    },
    Case {
        name: "d5-invalid-request-answered-with-its-id",
        area: Area::Gateway,
        hostile: "a request whose `method` is a number but whose id is valid (7)",
        servers: &[Server::Fixture(&[])],
        settings: QUICK,
        command: Cmd::Serve {
            script: ServeScript::Lines(&[
                INITIALIZE,
                INITIALIZED,
                r#"{"jsonrpc":"2.0","id":7,"method":5}"#,
            ]),
            close: Close::AtOnce,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "answered -32600 with `id: 7`, not `null`",
            checks: &[Check::GatewayAnswersEveryRequest],
            deadline: HANG,
            transcript: Some(expect![[r###"
                exit 0
                --- stdout
                {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true},"completions":{},"logging":{}},"serverInfo":{"name":"switchboard","version":"0.1.0","title":"Switchboard gateway"},"instructions":"## MCP Server Instructions\n\nThe foll… (762 bytes)
                {"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"not a JSON-RPC request: not a JSON-RPC message: `method` is not a string (35 bytes): {\"jsonrpc\":\"2.0\",\"id\":<id>,\"method\":5}"}}
                --- stderr
                switchboard serve: 1 of 1 server(s) ready
                  s: ready (6 tools)
            "###]]),
        },
        status: Status::Fixed { defect: 5 },
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
    Case {
        name: "d3-gateway-daemonised-grandchild",
        area: Area::Gateway,
        hostile: "the daemonising wrapper behind the gateway",
        servers: &[Server::Command {
            program: "sh",
            args: &[
                "-c",
                "(setsid sleep 300 </dev/null >/dev/null 2>&1 &); exec {fixture}",
            ],
        }],
        settings: QUICK,
        command: Cmd::Serve {
            script: ServeScript::Lines(&[
                INITIALIZE,
                INITIALIZED,
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
            ]),
            close: Close::AfterAnswers,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the grandchild is killed when the gateway exits",
            checks: &[Check::GatewayAnswersEveryRequest],
            deadline: HANG,
            transcript: Some(expect![[r###"
                exit 0
                --- stdout
                {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true},"completions":{},"logging":{}},"serverInfo":{"name":"switchboard","version":"0.1.0","title":"Switchboard gateway"},"instructions":"## MCP Server Instructions\n\nThe foll… (762 bytes)
                {"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"s__add","description":"Adds two integers.","inputSchema":{"type":"object","properties":{"a":{"type":"integer","description":"First addend."},"b":{"type":"integer","description":"Second addend."}},"required":["a","b"],"additionalProperties":false},"outputSchema":{"type":"object","properties":{"sum":{"type":"… (1674 bytes)
                --- stderr
                switchboard serve: 1 of 1 server(s) ready
                  s: ready (6 tools)
            "###]]),
        },
        status: Status::Fixed { defect: 3 },
    },
    Case {
        name: "d1-gateway-sse-event-of-endless-short-lines",
        area: Area::Gateway,
        hostile: "the same event stream behind the gateway",
        servers: &[Server::Canned {
            script: Script::SseEndlessEvent,
            url: CANNED_URL,
        }],
        settings: PATIENT_LEGACY,
        command: Cmd::Serve {
            script: ServeScript::Lines(&[
                INITIALIZE,
                INITIALIZED,
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"s__echo","arguments":{"text":"x"}}}"#,
            ]),
            close: Close::AfterAnswers,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the call is answered with an error naming the server; memory stays bounded",
            checks: &[
                Check::GatewayAnswersEveryRequest,
                Check::PeakMemory(frames(2, "the event cap (= the frame cap)")),
            ],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true},"completions":{},"logging":{}},"serverInfo":{"name":"switchboard","version":"0.1.0","title":"Switchboard gateway"}}}
                {"jsonrpc":"2.0","id":2,"error":{"code":-32005,"message":"server `s` gave no answer to `tools/call`: an event the server sent on this request's response stream is larger than the 16777216-byte limit","data":{"server":"s"}}}
                --- stderr
                switchboard serve: 1 of 1 server(s) ready
                  s: ready (1 tools)
            "#]]),
        },
        status: Status::Fixed { defect: 1 },
    },
    Case {
        name: "d4-gateway-response-streams-left-open",
        area: Area::Gateway,
        hostile: "every `tools/call` answered on an event stream that stays open after the response; 200 calls",
        servers: &[Server::Canned {
            script: Script::SseOpenAfterResponse,
            url: CANNED_URL,
        }],
        settings: QUICK_LEGACY,
        command: Cmd::Serve {
            script: ServeScript::ManyCalls {
                tool: "s__echo",
                args: r#"{"text":"x"}"#,
                count: 200,
            },
            close: Close::AfterAnswers,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "each stream is closed once its request is answered: descriptors stay flat",
            checks: &[
                Check::GatewayAnswersEveryRequest,
                Check::GatewayFdsAtMost(64),
            ],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true},"completions":{},"logging":{}},"serverInfo":{"name":"switchboard","version":"0.1.0","title":"Switchboard gateway"}}}
                {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":6,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":8,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":9,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":10,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":11,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":12,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":13,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":14,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":15,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":16,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":17,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":18,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":19,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":20,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":21,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":22,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":23,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":24,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":25,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":26,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":27,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":28,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":29,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":30,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":31,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":32,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":33,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":34,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":35,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":36,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":37,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":38,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":39,"result":{"content":[{"type":"text","text":"ok"}]}}
                {"jsonrpc":"2.0","id":40,"result":{"content":[{"type":"text","text":"ok"}]}}
                … (161 more lines)
                --- stderr
                switchboard serve: 1 of 1 server(s) ready
                  s: ready (1 tools)
            "#]]),
        },
        status: Status::Fixed { defect: 4 },
    },
    Case {
        name: "d6-gateway-one-huge-page",
        area: Area::Gateway,
        hostile: "the same 100000-tool page behind the gateway",
        servers: &[Server::Canned {
            script: Script::HugeToolPage,
            url: CANNED_URL,
        }],
        settings: PATIENT_LEGACY,
        command: Cmd::Serve {
            script: ServeScript::Lines(&[
                INITIALIZE,
                INITIALIZED,
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
            ]),
            close: Close::AfterAnswers,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the server is reported failed (over the cap) or served; memory stays near the page's size",
            checks: &[
                Check::GatewayAnswersEveryRequest,
                Check::PeakMemory(frames(3, "one page as bytes plus its typed items")),
            ],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true},"completions":{},"logging":{}},"serverInfo":{"name":"switchboard","version":"0.1.0","title":"Switchboard gateway"}}}
                {"jsonrpc":"2.0","id":2,"result":{"tools":[]}}
                --- stderr
                switchboard serve: 0 of 1 server(s) ready
                  s: failed, retrying in <n>ms: server `s` sent a `tools/list` listing over its entry cap: 100000 entries, more than 10000; nothing of it is used (if the listing is genuine, raise the cap: `maxListItems` in the server's config entry, or `max_list_items` in a host's session configuration)
            "#]]),
        },
        status: Status::Fixed { defect: 6 },
    },
    // Hardening 2, item 1: the gateway's answers quote no secret of its servers.
    Case {
        name: "gateway-secret-in-stderr-tail",
        area: Area::Gateway,
        hostile: "a server writes its `env` (a `${VAR}` secret) to stderr, then crashes during a call",
        servers: &[Server::Command {
            program: "sh",
            args: &[
                "-c",
                "echo \"starting with API_KEY=$API_KEY\" >&2; exec '{fixture}' --mode crash-mid-call",
            ],
        }],
        settings: Settings {
            env: &[("API_KEY", "${SWITCHBOARD_FAULT_SECRET}")],
            ..PATIENT
        },
        command: Cmd::Serve {
            script: ServeScript::Lines(&[
                INITIALIZE,
                INITIALIZED,
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"s__echo","arguments":{"text":"x"}}}"#,
            ]),
            close: Close::AfterAnswers,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the client's error quotes the stderr tail with the secret replaced",
            checks: &[Check::SecretNeverShown, Check::GatewayAnswersEveryRequest],
            deadline: PROMPT,
            transcript: Some(expect![[r###"
                exit 0
                --- stdout
                {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true},"completions":{},"logging":{}},"serverInfo":{"name":"switchboard","version":"0.1.0","title":"Switchboard gateway"},"instructions":"## MCP Server Instructions\n\nThe foll… (762 bytes)
                {"jsonrpc":"2.0","id":2,"error":{"code":-32005,"message":"server `s`: the server process exited (exit status: 3)\n--- last stderr output ---\nstarting with API_KEY=<redacted>\nfixture: crashing on purpose\nThe server is being restarted; the request was not retried because it may have had effects.","data":{"server":"s"}}}
                --- stderr
                switchboard serve: 1 of 1 server(s) ready
                  s: ready (6 tools)
            "###]]),
        },
        status: Status::Hardened { item: 1 },
    },
    Case {
        name: "gateway-secret-in-http-error-page",
        area: Area::Gateway,
        hostile: "an HTTP server whose URL carries a `${VAR}` secret answers `tools/call` 500 with a page quoting the request's URL and headers",
        servers: &[Server::Canned {
            script: Script::ErrorPageQuotesRequest,
            url: "http://{addr}/mcp?key=${SWITCHBOARD_FAULT_SECRET}",
        }],
        settings: QUICK_LEGACY,
        command: Cmd::Serve {
            script: ServeScript::Lines(&[
                INITIALIZE,
                INITIALIZED,
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"s__echo","arguments":{"text":"x"}}}"#,
            ]),
            close: Close::AfterAnswers,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the client's error quotes the page with the secret replaced",
            checks: &[Check::SecretNeverShown, Check::GatewayAnswersEveryRequest],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true},"completions":{},"logging":{}},"serverInfo":{"name":"switchboard","version":"0.1.0","title":"Switchboard gateway"}}}
                {"jsonrpc":"2.0","id":2,"error":{"code":-32005,"message":"server `s` gave no answer to `tools/call`: HTTP 500 Internal Server Error from http://<canned-s>/mcp?key=***: Internal Server Error while handling\\nPOST /mcp?key=<redacted> HTTP/1.1\\r\\naccept: application/json, text/event-stream\\r\\ncontent-type: application/json\\r\\nmcp-session-id: canned-sessio… (471 bytes)
                --- stderr
                switchboard serve: 1 of 1 server(s) ready
                  s: ready (1 tools)
            "#]]),
        },
        status: Status::Hardened { item: 1 },
    },
    // Tool lock (Hardening 2, item 2): a lock beside the config that exists but cannot be
    // used stops `serve` with what is wrong and how to recreate it or do without it; no
    // tool is served past it.
    Case {
        name: "tool-lock-with-bom",
        area: Area::Gateway,
        hostile: "a tool lock that starts with a UTF-8 byte order mark (another program re-saved it)",
        servers: &[Server::Fixture(&[])],
        settings: ROOMY,
        command: Cmd::ServeBesideLock {
            lock: super::table::LockFile::Bytes(b"\xef\xbb\xbf{\"format\":\"switchboard-tool-lock/1\",\"servers\":{}}\n"),
        },
        outcome: Outcome {
            exit: Exit::Usage,
            says: "`serve` refuses to start: nothing is served; the message names the lock, what is wrong with it, `scan --update` to recreate it and `--no-tool-lock` to serve without it",
            checks: &[
                Check::StderrHas("not serving: the tool lock"),
                Check::StderrHas("--update"),
                Check::StderrHas("--no-tool-lock"),
            ],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 2
                --- stdout: empty
                --- stderr
                switchboard: not serving: the tool lock `<dir>/mcp.tool-lock.json` cannot be used: it starts with a UTF-8 byte order mark (BOM): another program saved it, and Switchboard, which writes it without one, does not guess what else changed
                  it pins the tools `switchboard serve` may serve from `<dir>/mcp.json`; check what happened to it, then move it aside and run `switchboard scan --config <dir>/mcp.json --update` to pin the tools offered now (review them first), or serve without it: `switchboard serve --config <dir>/mcp.json --no-tool-lock`
            "#]]),
        },
        status: Status::Hardened { item: 2 },
    },
    Case {
        name: "tool-lock-cut-short",
        area: Area::Gateway,
        hostile: "a tool lock cut short in the middle of its JSON (a write that was killed)",
        servers: &[Server::Fixture(&[])],
        settings: ROOMY,
        command: Cmd::ServeBesideLock {
            lock: super::table::LockFile::Bytes(b"{\n  \"format\": \"switchboard-tool-lock/1\",\n  \"servers\": {\n    \"s\": {\n      \"add\": \"0f"),
        },
        outcome: Outcome {
            exit: Exit::Usage,
            says: "`serve` refuses to start: nothing is served; the message names the lock, what is wrong with it, `scan --update` to recreate it and `--no-tool-lock` to serve without it",
            checks: &[
                Check::StderrHas("not serving: the tool lock"),
                Check::StderrHas("--update"),
                Check::StderrHas("--no-tool-lock"),
            ],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 2
                --- stdout: empty
                --- stderr
                switchboard: not serving: the tool lock `<dir>/mcp.tool-lock.json` cannot be used: its JSON ends early, cut short (EOF while parsing a string at line 5 column 16)
                  it pins the tools `switchboard serve` may serve from `<dir>/mcp.json`; check what happened to it, then move it aside and run `switchboard scan --config <dir>/mcp.json --update` to pin the tools offered now (review them first), or serve without it: `switchboard serve --config <dir>/mcp.json --no-tool-lock`
            "#]]),
        },
        status: Status::Hardened { item: 2 },
    },
    Case {
        name: "tool-lock-empty",
        area: Area::Gateway,
        hostile: "an empty tool lock (a write in place that was killed after the truncation)",
        servers: &[Server::Fixture(&[])],
        settings: ROOMY,
        command: Cmd::ServeBesideLock {
            lock: super::table::LockFile::Bytes(b""),
        },
        outcome: Outcome {
            exit: Exit::Usage,
            says: "`serve` refuses to start: nothing is served; the message names the lock, what is wrong with it, `scan --update` to recreate it and `--no-tool-lock` to serve without it",
            checks: &[
                Check::StderrHas("not serving: the tool lock"),
                Check::StderrHas("--update"),
                Check::StderrHas("--no-tool-lock"),
            ],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 2
                --- stdout: empty
                --- stderr
                switchboard: not serving: the tool lock `<dir>/mcp.tool-lock.json` cannot be used: it is empty (a write that was cut short leaves it so)
                  it pins the tools `switchboard serve` may serve from `<dir>/mcp.json`; check what happened to it, then move it aside and run `switchboard scan --config <dir>/mcp.json --update` to pin the tools offered now (review them first), or serve without it: `switchboard serve --config <dir>/mcp.json --no-tool-lock`
            "#]]),
        },
        status: Status::Hardened { item: 2 },
    },
    Case {
        name: "tool-lock-other-version",
        area: Area::Gateway,
        hostile: "a tool lock of another format version",
        servers: &[Server::Fixture(&[])],
        settings: ROOMY,
        command: Cmd::ServeBesideLock {
            lock: super::table::LockFile::Bytes(b"{\"format\":\"switchboard-tool-lock/3\",\"servers\":{}}\n"),
        },
        outcome: Outcome {
            exit: Exit::Usage,
            says: "`serve` refuses to start: nothing is served; the message names the lock, what is wrong with it, `scan --update` to recreate it and `--no-tool-lock` to serve without it",
            checks: &[
                Check::StderrHas("not serving: the tool lock"),
                Check::StderrHas("--update"),
                Check::StderrHas("--no-tool-lock"),
            ],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 2
                --- stdout: empty
                --- stderr
                switchboard: not serving: the tool lock `<dir>/mcp.tool-lock.json` cannot be used: its format is "switchboard-tool-lock/3", and this Switchboard reads only "switchboard-tool-lock/2" (another version of Switchboard wrote it?)
                  it pins the tools `switchboard serve` may serve from `<dir>/mcp.json`; check what happened to it, then move it aside and run `switchboard scan --config <dir>/mcp.json --update` to pin the tools offered now (review them first), or serve without it: `switchboard serve --config <dir>/mcp.json --no-tool-lock`
            "#]]),
        },
        status: Status::Hardened { item: 2 },
    },
    Case {
        name: "tool-lock-a-directory",
        area: Area::Gateway,
        hostile: "a folder where the tool lock belongs",
        servers: &[Server::Fixture(&[])],
        settings: ROOMY,
        command: Cmd::ServeBesideLock {
            lock: super::table::LockFile::Directory,
        },
        outcome: Outcome {
            exit: Exit::Usage,
            says: "`serve` refuses to start: nothing is served; the message names the lock, what is wrong with it, `scan --update` to recreate it and `--no-tool-lock` to serve without it",
            checks: &[
                Check::StderrHas("not serving: the tool lock"),
                Check::StderrHas("--update"),
                Check::StderrHas("--no-tool-lock"),
            ],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 2
                --- stdout: empty
                --- stderr
                switchboard: not serving: the tool lock `<dir>/mcp.tool-lock.json` cannot be used: it is a folder, not a file
                  it pins the tools `switchboard serve` may serve from `<dir>/mcp.json`; check what happened to it, then move it aside and run `switchboard scan --config <dir>/mcp.json --update` to pin the tools offered now (review them first), or serve without it: `switchboard serve --config <dir>/mcp.json --no-tool-lock`
            "#]]),
        },
        status: Status::Hardened { item: 2 },
    },
    Case {
        name: "tool-lock-dangling-link",
        area: Area::Gateway,
        hostile: "a tool lock that is a symbolic link to a file that does not exist",
        servers: &[Server::Fixture(&[])],
        settings: ROOMY,
        command: Cmd::ServeBesideLock {
            lock: super::table::LockFile::DanglingLink,
        },
        outcome: Outcome {
            exit: Exit::Usage,
            says: "`serve` refuses to start: nothing is served; the message names the lock, what is wrong with it, `scan --update` to recreate it and `--no-tool-lock` to serve without it",
            checks: &[
                Check::StderrHas("not serving: the tool lock"),
                Check::StderrHas("--update"),
                Check::StderrHas("--no-tool-lock"),
            ],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 2
                --- stdout: empty
                --- stderr
                switchboard: not serving: the tool lock `<dir>/mcp.tool-lock.json` cannot be used: it is a symbolic link to a file that does not exist
                  it pins the tools `switchboard serve` may serve from `<dir>/mcp.json`; check what happened to it, then move it aside and run `switchboard scan --config <dir>/mcp.json --update` to pin the tools offered now (review them first), or serve without it: `switchboard serve --config <dir>/mcp.json --no-tool-lock`
            "#]]),
        },
        status: Status::Hardened { item: 2 },
    },
    // Sandbox (the Contain issue): a server in its entry's sandbox tries what the policy
    // denies; the kernel's refusal reaches the user as the server reports it, and nothing
    // of what it started is left behind.
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

/// Open cases: asserted to fail today.
/// (None today: a new hostile case that does not hold yet is written here first, with the
/// status `BeingFixed` or `Found`, and moves to `CASES` with its fix.)
pub(crate) static PENDING: &[Case] = &[];

/// Fixed defects whose hostile input the matrix cannot stage; each names the test that
/// asserts it (checked to exist by `cases_tested_elsewhere_name_real_tests`).
pub(crate) static ELSEWHERE: &[Case] = &[
    Case {
        name: "gateway-loose-log-stays-with-its-identity",
        area: Area::Gateway,
        hostile: "through `serve --http`: a server logs each call's arguments while clients of three addresses have calls in flight, so its session cannot tie the message to one call (the matrix has one client)",
        servers: &[],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "neither the bystander nor the other caller hears B's query; the operator's log has it; clients of one address all hear it, as before",
            checks: &[],
            deadline: HANG,
            transcript: None,
        },
        status: Status::HardenedElsewhere {
            item: 6,
            test: "crates/switchboard-cli/tests/it/gateway_logs.rs::another_identitys_query_in_a_servers_log_reaches_only_the_operator",
        },
    },
    Case {
        name: "gateway-http-client-told-no-upstream-detail",
        area: Area::Gateway,
        hostile: "through `serve --http`: a server that crashes or times out after writing its `env` secrets to stderr, and an HTTP server whose 500 page quotes its URL and headers (the matrix has no HTTP client of the gateway)",
        servers: &[],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "the remote client hears which server failed and how (no stderr tail, address or page), the operator's log has the whole account with the secrets replaced; `--full-errors` tells the client everything, secrets replaced",
            checks: &[],
            deadline: HANG,
            transcript: None,
        },
        status: Status::HardenedElsewhere {
            item: 1,
            test: "crates/switchboard-cli/tests/it/gateway_secrets.rs::an_http_client_is_told_which_server_failed_and_how_and_the_log_has_the_rest",
        },
    },
    Case {
        name: "d8-login-refuses-http-metadata-for-a-remote-server",
        area: Area::Auth,
        hostile: "during `login` against an `https://` server on a public name, metadata over plain `http://`: refused (the matrix has no TLS server on a public name)",
        servers: &[],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed refusal naming the URL and why",
            checks: &[],
            deadline: HANG,
            transcript: None,
        },
        status: Status::TestedBy {
            defect: 8,
            test: "crates/switchboard-auth/src/policy.rs::urls_are_judged_by_the_class_of_their_host_and_the_servers",
        },
    },
    Case {
        name: "d9-preexisting-world-readable-temp-file",
        area: Area::Auth,
        hostile: "a 0644 `tokens.tmp` exists before `login`: the token file is still written 0600 (fresh temp file, O_EXCL)",
        servers: &[],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "the token file stays private and complete",
            checks: &[],
            deadline: HANG,
            transcript: None,
        },
        status: Status::TestedBy {
            defect: 9,
            test: "crates/switchboard-auth/tests/it/store.rs::a_stale_world_readable_temp_file_does_not_make_the_token_file_readable",
        },
    },
    Case {
        name: "d9-symlinked-temp-file",
        area: Area::Auth,
        hostile: "`tokens.tmp` is a symlink to another file: it is not followed, the target is untouched (O_NOFOLLOW)",
        servers: &[],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "the token file stays private and complete",
            checks: &[],
            deadline: HANG,
            transcript: None,
        },
        status: Status::TestedBy {
            defect: 9,
            test: "crates/switchboard-auth/tests/it/store.rs::a_symlink_at_the_temp_path_is_not_followed",
        },
    },
    Case {
        name: "d9-token-directory-readable-by-others",
        area: Area::Auth,
        hostile: "the token directory is 0755 or owned by another user: refused with a typed error",
        servers: &[],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "the token file stays private and complete",
            checks: &[],
            deadline: HANG,
            transcript: None,
        },
        status: Status::TestedBy {
            defect: 9,
            test: "crates/switchboard-auth/tests/it/store.rs::a_token_directory_others_can_read_or_write_is_refused",
        },
    },
    Case {
        name: "d9-concurrent-logins-keep-both-tokens",
        area: Area::Auth,
        hostile: "two `login`s (or refreshes) at once: both tokens survive (lock)",
        servers: &[],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "the token file stays private and complete",
            checks: &[],
            deadline: HANG,
            transcript: None,
        },
        status: Status::TestedBy {
            defect: 9,
            test: "crates/switchboard-auth/tests/it/store.rs::concurrent_saves_from_processes_lose_nothing",
        },
    },
    // HTTP exhaustion (Hardening 2, items 3–5): an attacker and a victim against a real
    // `serve --http`, which the case shape (one command against hostile servers) cannot
    // stage; asserted by the named tests.
    Case {
        name: "h2-3-one-client-takes-every-legacy-session",
        area: Area::Http,
        hostile: "HTTP exhaustion: against `serve --http --max-sessions 64 --max-sessions-per-client 8`, one client sends 300 `initialize` POSTs on one connection; a victim from another address then opens a session and lists tools",
        servers: &[],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "the attacker recycles its own idle sessions (never more than 8, each initialize answered); the victim's session and `tools/list` are answered; `/healthz` says ok and its detail counts the evictions",
            checks: &[],
            deadline: HANG,
            transcript: None,
        },
        status: Status::HardenedElsewhere {
            item: 3,
            test: "crates/switchboard-cli/tests/it/serve_http.rs::one_client_opening_sessions_in_a_loop_leaves_room_for_others",
        },
    },
    Case {
        name: "h2-4-one-client-fills-the-requests-in-flight",
        area: Area::Http,
        hostile: "HTTP exhaustion: against `serve --http --max-in-flight 8 --max-in-flight-per-client 4`, one client sends eight long calls, each in a session of its own (under the per-session cap); a victim from another address then lists tools",
        servers: &[],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "four of the attacker's calls are in flight, the other four get 429 naming `max_in_flight_per_client` at once; the victim's session and `tools/list` are answered",
            checks: &[],
            deadline: HANG,
            transcript: None,
        },
        status: Status::HardenedElsewhere {
            item: 4,
            test: "crates/switchboard-cli/tests/it/serve_http.rs::one_client_filling_requests_in_flight_leaves_room_for_others",
        },
    },
    Case {
        name: "h2-4-one-client-holds-the-connections-with-get-streams",
        area: Area::Http,
        hostile: "HTTP exhaustion: against `serve --http --max-connections 64 --max-sessions 64`, one client opens 200 sessions and holds a GET stream open on each; a victim from another address then opens a session, its GET stream, and lists tools",
        servers: &[],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "the attacker holds its 8 streams (`--max-streams-per-client`), the rest get 429 with `Retry-After` naming `max_streams_per_client`, never a hang; the victim's stream and requests are answered; `/healthz` answers on a fresh connection",
            checks: &[],
            deadline: HANG,
            transcript: None,
        },
        status: Status::HardenedElsewhere {
            item: 4,
            test: "crates/switchboard-cli/tests/it/serve_http.rs::one_client_holding_get_streams_leaves_room_for_others",
        },
    },
    Case {
        name: "h2-5-slowloris-before-authentication",
        area: Area::Http,
        hostile: "HTTP exhaustion: against `serve --http --bearer-token-env VAR --max-connections 64`, 300 sockets send half a request head and then nothing; an authenticated victim from another address then makes 20 exchanges, each on a fresh connection",
        servers: &[],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "every one of the victim's exchanges is answered: unauthenticated sockets count in their own budget (16 an address, the oldest closed for a newcomer), not against the connection cap; `/healthz` says ok and its detail counts the evictions",
            checks: &[],
            deadline: HANG,
            transcript: None,
        },
        status: Status::HardenedElsewhere {
            item: 5,
            test: "crates/switchboard-cli/tests/it/serve_http.rs::sockets_that_never_authenticate_do_not_starve_clients_that_do",
        },
    },
];
