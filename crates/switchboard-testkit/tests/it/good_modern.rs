//! `good` mode in the modern era (and `both`): discovery, per-request `_meta`, MRTR,
//! subscriptions.

use serde_json::{Value, json};

use crate::support::{Fixture, initialize_params, modern_call, modern_meta, tool_names};

#[tokio::test]
async fn discover_and_call_without_initialize() {
    let mut fixture = Fixture::spawn(&["--era", "modern"]);
    let discover = fixture
        .call(1, "server/discover", json!({"_meta": modern_meta()}))
        .await;
    assert_eq!(
        discover,
        r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true},"prompts":{},"resources":{"subscribe":true},"completions":{}},"instructions":"Fixture server for Switchboard tests.","ttlMs":0,"cacheScope":"public","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"switchboard-fixture","version":"0.1.0"}}}}"#
    );

    let echo = fixture
        .call(2, "tools/call", modern_call("echo", json!({"text": "hi"})))
        .await;
    assert_eq!(
        echo,
        r#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"hi"}],"resultType":"complete"}}"#
    );

    let no_meta = fixture
        .call(
            3,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hi"}}),
        )
        .await;
    assert_eq!(
        no_meta,
        r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"missing required _meta key `io.modelcontextprotocol/protocolVersion`","data":{"missingMetaKey":"io.modelcontextprotocol/protocolVersion"}}}"#
    );
    let no_capabilities = fixture
        .call(
            4,
            "tools/list",
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}),
        )
        .await;
    assert_eq!(
        no_capabilities,
        r#"{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"missing required _meta key `io.modelcontextprotocol/clientCapabilities`","data":{"missingMetaKey":"io.modelcontextprotocol/clientCapabilities"}}}"#
    );

    let old_version = fixture
        .call(
            5,
            "tools/list",
            json!({"_meta": {
                "io.modelcontextprotocol/protocolVersion": "2025-11-25",
                "io.modelcontextprotocol/clientCapabilities": {},
            }}),
        )
        .await;
    assert_eq!(
        old_version,
        r#"{"jsonrpc":"2.0","id":5,"error":{"code":-32022,"message":"unsupported protocol version 2025-11-25","data":{"supported":["2026-07-28"],"requested":"2025-11-25"}}}"#
    );

    let initialize = fixture
        .call(6, "initialize", initialize_params("2025-11-25"))
        .await;
    assert_eq!(
        initialize,
        r#"{"jsonrpc":"2.0","id":6,"error":{"code":-32601,"message":"Method not found"}}"#
    );

    let tools: Value = serde_json::from_str(
        &fixture
            .call(7, "tools/list", json!({"_meta": modern_meta()}))
            .await,
    )
    .expect("json");
    assert_eq!(
        tool_names(&tools),
        [
            "echo",
            "add",
            "slow",
            "fail",
            "image",
            "change_tools",
            "confirm"
        ]
    );
    assert_eq!(tools["result"]["resultType"], "complete");
    assert_eq!(tools["result"]["ttlMs"], 0);
}

#[tokio::test]
async fn confirm_multi_round_trip() {
    // `ask`: the call declares no capabilities, and the question is asked all the same.
    let mut fixture = Fixture::spawn(&["--era", "modern", "--undeclared-input", "ask"]);
    let first = fixture
        .call(
            1,
            "tools/call",
            modern_call("confirm", json!({"question": "Proceed?"})),
        )
        .await;
    assert_eq!(
        first,
        r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{"answer":{"method":"elicitation/create","params":{"mode":"form","message":"Proceed?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}}}},"requestState":"state-Ω-\u0000-1"}}"#
    );
    let state: Value = serde_json::from_str(&first).expect("json");
    let state = state["result"]["requestState"].clone();

    let mut retry = modern_call("confirm", json!({"question": "Proceed?"}));
    retry["inputResponses"] = json!({"answer": {"action": "accept", "content": {"ok": true}}});
    retry["requestState"] = json!("state-Ω-0-1");
    assert_eq!(
        fixture.call(2, "tools/call", retry.clone()).await,
        r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"requestState was not echoed exactly"}}"#
    );
    retry["requestState"] = state;
    assert_eq!(
        fixture.call(3, "tools/call", retry).await,
        r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"answer: {\"action\":\"accept\",\"content\":{\"ok\":true}}"}],"resultType":"complete"}}"#
    );
}

#[tokio::test]
async fn listen_acknowledges_and_carries_tool_changes() {
    let mut fixture = Fixture::spawn(&["--era", "modern"]);
    fixture
        .request(
            6,
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true, "promptsListChanged": true}, "_meta": modern_meta()}),
        )
        .await;
    assert_eq!(
        fixture.next_line().await,
        r#"{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":6}}}"#
    );
    fixture
        .request(7, "tools/call", modern_call("change_tools", json!({})))
        .await;
    assert_eq!(
        fixture.next_line().await,
        r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":6}}}"#
    );
    assert_eq!(
        fixture.next_line().await,
        r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"added tool extra_1"}],"resultType":"complete"}}"#
    );
    // The listen request stays open: nothing else arrives, and EOF ends the fixture.
    fixture.expect_silence().await;
    fixture.close_stdin();
    assert!(fixture.wait_exit().await.success());
    fixture.expect_stdout_closed().await;
}

#[tokio::test]
async fn both_eras_answer_both_ways() {
    let mut fixture = Fixture::spawn(&["--era", "both"]);
    let discover: Value = serde_json::from_str(
        &fixture
            .call(1, "server/discover", json!({"_meta": modern_meta()}))
            .await,
    )
    .expect("json");
    assert_eq!(
        discover["result"]["supportedVersions"],
        json!(["2026-07-28"])
    );
    let initialize: Value = serde_json::from_str(
        &fixture
            .call(2, "initialize", initialize_params("2025-03-26"))
            .await,
    )
    .expect("json");
    assert_eq!(initialize["result"]["protocolVersion"], "2025-03-26");
    let legacy_echo = fixture
        .call(
            3,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "a"}}),
        )
        .await;
    assert_eq!(
        legacy_echo,
        r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"a"}]}}"#
    );
    let modern_echo = fixture
        .call(4, "tools/call", modern_call("echo", json!({"text": "b"})))
        .await;
    assert_eq!(
        modern_echo,
        r#"{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"b"}],"resultType":"complete"}}"#
    );
}
