//! Gateway (`switchboard serve`): hostile servers behind the gateway, as its client sees them.

use expect_test::expect;

use super::super::canned::Script;
use super::super::table::{
    Area, CANNED_URL, Case, Check, Close, Cmd, Exit, HANG, INITIALIZE, INITIALIZED, Outcome,
    PATIENT, PATIENT_LEGACY, PROMPT, QUICK, QUICK_LEGACY, ROOMY, ServeScript, Server, Settings,
    Status, frames,
};

pub(crate) static CASES: &[Case] = &[
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
                {"jsonrpc":"2.0","id":2,"error":{"code":-32005,"message":"server `s`: the server process exited (exit status: 3)\n--- last stderr output ---\nfixture: crashing on purpose","data":{"server":"s"}}}
                {"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"still here"}]}}
                --- stderr
                switchboard serve: 2 of 2 server(s) ready
                  s: ready (6 tools; sandbox off)
                  t: ready (6 tools; sandbox off)
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
                  s: failed, retrying in <n>ms: server `s`: the server process exited (exit status: 2); sandbox off
                    --- last stderr output ---
                    fixture: bad configuration, exiting
                  t: ready (6 tools; sandbox off)
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
                  s: ready (6 tools; sandbox off)
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
                  s: ready (6 tools; sandbox off)
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
                  s: ready (6 tools; sandbox off)
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
                  s: ready (6 tools; sandbox off)
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
                  s: ready (43 tools; sandbox off)
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
                  s: ready (16 tools; sandbox off)
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
                  s: ready (43 tools; sandbox off)
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
                  s: ready (6 tools; sandbox off)
                  t: ready (10 tools; sandbox off)
                  warning: t/hostile_\u{1b}[2Jcleared \u{1b}]52;c;aGFja2Vk\u{7}clipboard \u{1b}]8;;https://evil.example/\u{1b}\link\u{1b}]8;;\u{1b}\ bell\u{7} return\u{d} over \u{9b}31m csi \u{202e}reversed: HiddenCharacters: name: "hostile_\u{1b}[2Jcleared \u{1b}]52;c;aGFja2Vk\u{7}clipboard \u{1b}]8;;https://evil.example/\u{1b}\\link\u{1b}]8;;\u{1b}\\ bell\u{7} return\r ov… (477 bytes)
                  warning: t/hostile_\u{1b}[2Jcleared \u{1b}]52;c;aGFja2Vk\u{7}clipboard \u{1b}]8;;https://evil.example/\u{1b}\link\u{1b}]8;;\u{1b}\ bell\u{7} return\u{d} over \u{9b}31m csi \u{202e}reversed: HiddenCharacters: description: "\u{1b}[2Jcleared \u{1b}]52;c;aGFja2Vk\u{7}clipboard \u{1b}]8;;https://evil.example/\u{1b}\\link\u{1b}]8;;\u{1b}\\ bell\u{7} return\r ove… (476 bytes)
                  warning: t/hostile_\u{1b}[2Jcleared \u{1b}]52;c;aGFja2Vk\u{7}clipboard \u{1b}]8;;https://evil.example/\u{1b}\link\u{1b}]8;;\u{1b}\ bell\u{7} return\u{d} over \u{9b}31m csi \u{202e}reversed: HiddenCharacters: inputSchema.properties.\u{1b}[2Jcleared \u{1b}]52;c;aGFja2Vk\u{7}clipboard \u{1b}]8;;https://evil.example/\u{1b}\link\u{1b}]8;;\u{1b}\ bell\u{7} retur… (657 bytes)
                  warning: t/shout: HiddenCharacters: description: "Returns \u{1b}[2Jcleared \u{1b}]52;c;aGFja2Vk\u{7}clipboard \u{1b}]8;;https://evil.example/\u{1b}\\link\u{1b}]8;;\u{1b}\\ bell\u{7} return\r over \u{9b}31m csi \u{202e}rever…": contains invisible or control characters (U+001B, U+001B, U+0007, U+001B, U+001B)
            "###]]),
        },
        status: Status::Holds,
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
                  s: failed, retrying in <n>ms: server `s`: the server process exited (exit status: 1); sandbox off
                    --- last stderr output ---
                    starting\u{1b}]0;owned\u{7}\u{1b}[2J\u{1b}[31m red \u{202e}evil
                  t: ready (6 tools; sandbox off)
            "###]]),
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
                  s: failed, retrying in <n>ms: server `s`: the server process exited (exit status: 2); sandbox off
                    --- last stderr output ---
                    fixture: bad configuration, exiting
                  t: ready (6 tools; sandbox off)
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
                  s: ready (6 tools; sandbox off)
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
                  s: ready (6 tools; sandbox off)
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
                  s: ready (6 tools; sandbox off)
            "###]]),
        },
        status: Status::Fixed { defect: 5 },
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
                  s: ready (6 tools; sandbox off)
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
                {"jsonrpc":"2.0","id":2,"error":{"code":-32005,"message":"server `s`: the server process exited (exit status: 3)\n--- last stderr output ---\nstarting with API_KEY=<redacted>\nfixture: crashing on purpose","data":{"server":"s"}}}
                --- stderr
                switchboard serve: 1 of 1 server(s) ready
                  s: ready (6 tools; sandbox off)
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
];
