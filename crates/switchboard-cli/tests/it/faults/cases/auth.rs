//! Auth and secrets: OAuth metadata, tokens, and secrets that must not be shown.

use expect_test::expect;

use super::super::canned::Script;
use super::super::table::{
    Area, CANNED_URL, Case, Check, Close, Cmd, Exit, HANG, INITIALIZE, INITIALIZED, Outcome,
    PATIENT_LEGACY, PROMPT, QUICK_LEGACY, ServeScript, Server, Status,
};

pub(crate) static CASES: &[Case] = &[
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
];
