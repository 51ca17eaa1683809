//! Tool results and content: what a tool call answers.

use expect_test::expect;

use super::super::table::{
    Area, Case, Check, Cmd, Exit, HANG, Outcome, QUICK, ROOMY, Server, Status,
};

pub(crate) static CASES: &[Case] = &[
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
];
