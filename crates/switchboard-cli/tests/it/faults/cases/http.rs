//! HTTP faults: Streamable HTTP and HTTP+SSE servers that answer wrongly, slowly or hugely.

use expect_test::expect;

use super::super::canned::Script;
use super::super::table::{
    Area, CANNED_URL, Case, Check, Cmd, Exit, HANG, Outcome, PATIENT_LEGACY, PROMPT, QUICK,
    QUICK_LEGACY, ROOMY, ROOMY_LEGACY, Server, Status, frames,
};

pub(crate) static CASES: &[Case] = &[
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
                switchboard: server `s` restarted, or its connection broke, while `tools/call` was in flight; it was not retried because it may have had effects: the server's event stream ended before it answered (HTTP 200 OK)
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
        name: "http-202-for-a-request",
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
                switchboard: server `s` restarted, or its connection broke, while `tools/call` was in flight; it was not retried because it may have had effects: the server's event stream ended before it answered (HTTP 200 OK)
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
                switchboard: server `s` restarted, or its connection broke, while `tools/call` was in flight; it was not retried because it may have had effects: the server's event stream ended before it answered (HTTP 200 OK)
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
                switchboard: server `s` gave no answer to `tools/call`: reading the server's response failed: error reading a body from connection: Connection reset by peer (os error 104)
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
        name: "http-500-with-html",
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
                switchboard: server `s`: could not reach http://<canned-s>/mcp: error sending request: invalid HTTP version parsed
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
                switchboard: server `s`: could not reach http://<closed-port>/mcp (is the server running? start it, or correct the entry's `url`): error sending request: tcp connect error: Connection refused (os error 111)
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
        name: "invalid-header-annotation-over-modern-http",
        area: Area::Http,
        hostile: "over 2026-07-28 HTTP, a tool (`weigh`) whose `x-mcp-header` annotation is on a `number` property, which may not be a header",
        servers: &[Server::FixtureHttp {
            fault: "none",
            args: &["--mode", "bad-param-header", "--era", "modern"],
        }],
        settings: ROOMY,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "the other tools are listed; `weigh` is left out and a warning says why",
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
                  warning: page 1: tool `weigh` left out: `x-mcp-header` on `weight` of type number (only string, integer and boolean may be headers)
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
];
