//! JSON-RPC semantics: ids, batches, error objects and answers to nothing.

use expect_test::expect;

use super::super::table::{
    Area, Case, Cmd, Exit, HANG, Outcome, PATIENT, PROMPT, QUICK, ROOMY, Server, Status,
};

pub(crate) static CASES: &[Case] = &[
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
        hostile: "after `initialized`, the server sends `ping`, `roots/list` (roots not declared) and `sampling/createMessage` requests",
        servers: &[Server::Fixture(&["--mode", "server-requests"])],
        settings: ROOMY,
        command: Cmd::Call {
            tool: "echo",
            args: r#"{"text":"hi"}"#,
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the requests are answered (-32601 for roots; sampling refused, stderr saying the command line has no model); the call prints `hi`",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                hi
                --- stderr
                switchboard: server `s` asked for a model's answer (sampling); refused: the command line has no model (behind `switchboard serve`, its client is asked)
            "#]]),
        },
        status: Status::Holds,
    },
];
