//! Connection semantics over an in-memory pair: correlation by id, unexpected responses,
//! close handling, concurrent sends, the transcript tap.

use std::sync::Arc;
use std::time::Duration;

use expect_test::expect;
use serde_json::json;
use switchboard_wire::memory::memory_pair;
use switchboard_wire::{ConnectionOptions, Inbound, RequestId, Transcript, UnexpectedReason};

async fn bounded<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
    match tokio::time::timeout(Duration::from_secs(10), future).await {
        Ok(value) => value,
        Err(_) => panic!("timed out waiting for {what}"),
    }
}

#[tokio::test]
async fn responses_match_by_id_and_the_rest_is_reported() {
    let transcript = Arc::new(Transcript::new(100));
    let mut client_options = ConnectionOptions::new("peer");
    client_options.tap = Some(transcript.clone());
    let ((client, mut client_inbound), (server, mut server_inbound)) =
        memory_pair(client_options, ConnectionOptions::new("client"));

    let first = client.allocate_id();
    let mut call = client
        .send_request(first.clone(), "tools/list", None)
        .await
        .expect("send");
    let Some(Inbound::Request(request)) = bounded("request", server_inbound.recv()).await else {
        panic!("no request")
    };
    assert_eq!(request.id, first);

    // A string id "1" is not the integer id 1; then the real answer; then a duplicate.
    server
        .send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":\"1\",\"result\":{}}\n")
        .await
        .expect("raw");
    server
        .notify("notifications/message", Some(&json!({"level": "info"})))
        .await
        .expect("notify");
    server
        .respond(&request.id, Ok(&json!({"tools": []})))
        .await
        .expect("respond");
    server
        .respond(&request.id, Ok(&json!({"again": true})))
        .await
        .expect("respond twice");
    server
        .send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":999,\"result\":{}}\n")
        .await
        .expect("raw");

    assert_eq!(
        bounded("response", call.response()).await,
        Ok(Ok(json!({"tools": []})))
    );
    let mut events = Vec::new();
    for _ in 0..4 {
        events.push(
            match bounded("inbound", client_inbound.recv())
                .await
                .expect("event")
            {
                Inbound::UnexpectedResponse { response, reason } => {
                    format!("{reason:?} {:?}", response.id)
                }
                Inbound::Notification(n) => format!("notification {}", n.method),
                other => format!("{other:?}"),
            },
        );
    }
    expect![[r#"
        UnknownId Some("1")
        notification notifications/message
        Late Some(1)
        UnknownId Some(999)"#]]
    .assert_eq(&events.join("\n"));
    let stats = client.stats();
    assert_eq!((stats.late_responses, stats.unknown_responses), (1, 2));
    expect![[r#"
        → {"jsonrpc":"2.0","id":1,"method":"tools/list"}
        ← {"jsonrpc":"2.0","id":"1","result":{}}
        ← {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info"}}
        ← {"jsonrpc":"2.0","id":1,"result":{"tools":[]}}
        ← {"jsonrpc":"2.0","id":1,"result":{"again":true}}
        ← {"jsonrpc":"2.0","id":999,"result":{}}
    "#]]
    .assert_eq(&transcript.render());
    let _ = UnexpectedReason::NullId;
}

#[tokio::test]
async fn closing_rejects_every_outstanding_request_and_new_ones() {
    let ((client, _client_inbound), (server, server_inbound)) = memory_pair(
        ConnectionOptions::new("peer"),
        ConnectionOptions::new("client"),
    );
    let mut calls = Vec::new();
    for _ in 0..3 {
        calls.push(
            client
                .send_request(client.allocate_id(), "slow", None)
                .await
                .expect("send"),
        );
    }
    assert_eq!(client.pending_requests(), 3);
    drop(server_inbound);
    drop(server);
    for call in &mut calls {
        let error = bounded("rejection", call.response())
            .await
            .expect_err("closed");
        assert_eq!(
            error.to_string(),
            "connection to `peer` closed: the server closed its output"
        );
    }
    assert_eq!(client.pending_requests(), 0);
    let later = client.request("x", None).await.expect_err("closed");
    assert!(later.to_string().contains("closed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_never_share_an_id_and_all_complete() {
    let ((client, _client_inbound), (server, mut server_inbound)) = memory_pair(
        ConnectionOptions::new("peer"),
        ConnectionOptions::new("client"),
    );
    let echo = tokio::spawn(async move {
        while let Some(Inbound::Request(request)) = server_inbound.recv().await {
            let _ = server
                .respond(&request.id, Ok(&json!({ "id": request.id })))
                .await;
        }
    });
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            for _ in 0..200 {
                let id = client.allocate_id();
                let mut call = client
                    .send_request(id.clone(), "echo", None)
                    .await
                    .expect("send");
                let result = call.response().await.expect("wire").expect("result");
                assert_eq!(RequestId::from_json(&result["id"]), Some(id.clone()));
                ids.push(id);
            }
            ids
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(bounded("requests", task).await.expect("join"));
    }
    let count = all.len();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), count);
    echo.abort();
}

#[tokio::test]
async fn dropped_calls_send_a_cancellation_when_asked() {
    let ((client, _client_inbound), (_server, mut server_inbound)) = memory_pair(
        ConnectionOptions::new("peer"),
        ConnectionOptions::new("client"),
    );
    // The protocol above the wire layer says what a cancellation looks like.
    client.set_cancel_notice(|id, reason| {
        (
            "notifications/cancelled",
            serde_json::json!({ "requestId": id, "reason": reason }),
        )
    });
    let mut call = client
        .send_request(client.allocate_id(), "tools/call", None)
        .await
        .expect("send");
    call.cancel_on_drop("request abandoned by the caller");
    let plain = client
        .send_request(client.allocate_id(), "initialize", None)
        .await
        .expect("send");
    drop(call);
    drop(plain);
    let mut methods = Vec::new();
    for _ in 0..3 {
        match bounded("inbound", server_inbound.recv())
            .await
            .expect("frame")
        {
            Inbound::Request(r) => methods.push(r.method),
            Inbound::Notification(n) => {
                methods.push(format!("{} {}", n.method, n.params.unwrap_or_default()))
            }
            other => methods.push(format!("{other:?}")),
        }
    }
    expect![[r#"
        tools/call
        initialize
        notifications/cancelled {"requestId":1,"reason":"request abandoned by the caller"}"#]]
    .assert_eq(&methods.join("\n"));
    assert_eq!(client.pending_requests(), 0);
}

#[tokio::test]
async fn a_broken_answer_fails_its_request_at_once_by_its_own_id() {
    let mut client_options = ConnectionOptions::new("peer");
    client_options.max_frame_bytes = 1024;
    let ((client, mut client_inbound), (server, _server_inbound)) =
        memory_pair(client_options, ConnectionOptions::new("client"));
    let mut calls = Vec::new();
    for _ in 0..3 {
        let id = client.allocate_id();
        calls.push(client.send_request(id, "slow", None).await.expect("send"));
    }
    let oversized = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{{\"t\":\"{}\"}}}}\n",
        "x".repeat(3000)
    );
    let frames: [&[u8]; 6] = [
        // Not ours: a string id, a frame with a method, an id nobody waits for.
        b"{\"jsonrpc\":\"2.0\",\"id\":\"1\",\"result\":{},\"error\":{}}\n",
        b"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"id\":1,\"result\":1}\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":99,\"result\":1,\"error\":1}\n",
        // Broken answers to 1, 2 and 3.
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"error\":{\"code\":1,\"message\":\"x\"}}\n",
        oversized.as_bytes(),
        b"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"t\":\"cut\n",
    ];
    for frame in frames {
        server.send_raw(frame).await.expect("raw");
    }
    let mut shown = Vec::new();
    for call in &mut calls {
        let error = bounded("the broken answer", call.response())
            .await
            .expect_err("a broken answer");
        assert!(!error.is_closed());
        let malformed = error.bad_answer().expect("a bad answer");
        shown.push(format!("{} → {:?}", call.id(), malformed.kind));
    }
    for _ in 0..frames.len() {
        match bounded("inbound", client_inbound.recv()).await {
            Some(Inbound::Malformed(malformed)) => shown.push(format!("event {:?}", malformed.id)),
            other => panic!("not a malformed frame: {other:?}"),
        }
    }
    expect![[r#"
        1 → InvalidMessage("response has both `result` and `error`")
        2 → Oversized { limit: 1024 }
        3 → InvalidJson("EOF while parsing a string at line 1 column 42")
        event Some(Response("1"))
        event Some(Request(1))
        event Some(Response(99))
        event Some(Response(1))
        event Some(Response(2))
        event Some(Response(3))"#]]
    .assert_eq(&shown.join("\n"));
    assert_eq!(client.stats().malformed_frames, 6);
    assert_eq!(client.pending_requests(), 0);
}

#[tokio::test]
async fn parameters_that_cannot_be_encoded_are_an_error_and_nothing_is_sent() {
    let ((client, _client_inbound), (_server, mut server_inbound)) = memory_pair(
        ConnectionOptions::new("peer"),
        ConnectionOptions::new("client"),
    );
    // JSON object keys must be strings: a map keyed by pairs cannot be encoded.
    let params: std::collections::BTreeMap<(i32, i32), i32> = [((1, 2), 3)].into();
    let sent = client
        .send_request_with(client.allocate_id(), "tools/call", Some(&params))
        .await;
    let error = sent.expect_err("unencodable parameters");
    assert!(
        matches!(error, switchboard_wire::WireError::Unencodable { .. }),
        "{error:?}"
    );
    assert_eq!(client.pending_requests(), 0);
    client.close_write().await;
    let next = tokio::time::timeout(std::time::Duration::from_secs(5), server_inbound.recv())
        .await
        .expect("the peer sees the end, not a message");
    assert!(next.is_none(), "nothing was sent: {next:?}");
}
