//! The stdio transport seen from the client's side of the pipes: a tool's question to its
//! client, answered, and withdrawn when the call that asked is cancelled.

use std::time::Duration;

use serde_json::{Value, json};
use switchboard_server::stdio::{StdioOptions, serve};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::probe_service::ProbeService;

/// A bound on each wait, to detect a hang (never a speed assertion).
const HANG: Duration = Duration::from_secs(20);

struct Client {
    to_server: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    from_server: tokio::io::Lines<BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
}

impl Client {
    async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.to_server
            .write_all(line.as_bytes())
            .await
            .expect("the server reads");
    }

    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(HANG, self.from_server.next_line())
            .await
            .expect("the server wrote in time")
            .expect("readable")
            .expect("a line, not the end");
        serde_json::from_str(&line).expect("JSON")
    }
}

#[tokio::test]
async fn a_tools_question_reaches_its_client_and_is_withdrawn_when_the_call_is_cancelled() {
    let (client_side, server_side) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server_side);
    let serving = tokio::spawn(serve(
        ProbeService::new(),
        server_read,
        server_write,
        StdioOptions::default(),
    ));
    let (client_read, to_server) = tokio::io::split(client_side);
    let mut client = Client {
        to_server,
        from_server: BufReader::new(client_read).lines(),
    };
    client
        .send(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": { "elicitation": {} },
                "clientInfo": { "name": "test", "version": "1" },
            }}),
        )
        .await;
    assert!(client.next().await.get("result").is_some());
    let call = |id: i64| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "ask", "arguments": {}}});

    // Asked during the call; the answer goes back under the question's id.
    client.send(call(2)).await;
    let question = client.next().await;
    assert_eq!(question["method"], "elicitation/create", "{question}");
    assert_eq!(question["params"]["message"], "Name?");
    let answer = json!({"action": "accept", "content": {"name": "Ada"}});
    client
        .send(json!({"jsonrpc": "2.0", "id": question["id"], "result": answer}))
        .await;
    let result = client.next().await;
    assert_eq!(result["id"], 2, "{result}");
    assert_eq!(
        result["result"]["content"][0]["text"],
        answer.to_string(),
        "{result}"
    );

    // The client cancels the call while the question is open: the question is withdrawn.
    client.send(call(3)).await;
    let question = client.next().await;
    assert_eq!(question["method"], "elicitation/create", "{question}");
    client
        .send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}}))
        .await;
    let withdrawn = client.next().await;
    assert_eq!(
        withdrawn["method"], "notifications/cancelled",
        "{withdrawn}"
    );
    assert_eq!(
        withdrawn["params"]["requestId"], question["id"],
        "{withdrawn}"
    );

    drop(client);
    let end = tokio::time::timeout(HANG, serving)
        .await
        .expect("serving ends at EOF")
        .expect("no panic");
    assert_eq!((end.answered, end.cancelled), (2, 1), "{end:?}");
}
