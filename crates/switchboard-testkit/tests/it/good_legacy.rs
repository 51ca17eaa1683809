//! `good` mode in the legacy era: handshake, tools, resources, prompts, completions.

use serde_json::json;

use crate::support::{Fixture, initialize_params, tool_names};

#[tokio::test]
async fn handshake_tools_and_errors() {
    let mut fixture = Fixture::spawn(&[]);
    let response = fixture
        .call(1, "initialize", initialize_params("2025-06-18"))
        .await;
    assert_eq!(
        response,
        r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true},"prompts":{},"resources":{"subscribe":true},"completions":{}},"serverInfo":{"name":"switchboard-fixture","version":"0.1.0"},"instructions":"Fixture server for Switchboard tests."}}"#
    );
    fixture.notify("notifications/initialized", json!({})).await;

    let tools: serde_json::Value =
        serde_json::from_str(&fixture.call(2, "tools/list", json!({})).await).expect("json");
    assert_eq!(
        tool_names(&tools),
        ["echo", "add", "slow", "fail", "image", "change_tools"]
    );
    assert_eq!(
        tools["result"]["tools"][0]["annotations"]["readOnlyHint"],
        true
    );
    assert_eq!(tools["result"].get("nextCursor"), None);

    let echo = fixture
        .call(
            3,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hello"}}),
        )
        .await;
    assert_eq!(
        echo,
        r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"hello"}]}}"#
    );

    let missing = fixture
        .call(4, "tools/call", json!({"name": "echo", "arguments": {}}))
        .await;
    assert_eq!(
        missing,
        r#"{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"invalid arguments: `text` is required (string)"}],"isError":true}}"#
    );
    let wrong_type = fixture
        .call(
            5,
            "tools/call",
            json!({"name": "add", "arguments": {"a": 1, "b": "2"}}),
        )
        .await;
    assert_eq!(
        wrong_type,
        r#"{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"invalid arguments: `b` must be an integer"}],"isError":true}}"#
    );

    let unknown = fixture
        .call(6, "tools/call", json!({"name": "nope", "arguments": {}}))
        .await;
    assert_eq!(
        unknown,
        r#"{"jsonrpc":"2.0","id":6,"error":{"code":-32602,"message":"unknown tool: nope"}}"#
    );

    let add = fixture
        .call(
            7,
            "tools/call",
            json!({"name": "add", "arguments": {"a": 2, "b": 40}}),
        )
        .await;
    assert_eq!(
        add,
        r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"42"}],"structuredContent":{"sum":42},"_meta":{"fixture.switchboard.test/tool":"add"}}}"#
    );
    let fail = fixture
        .call(8, "tools/call", json!({"name": "fail", "arguments": {}}))
        .await;
    assert_eq!(
        fail,
        r#"{"jsonrpc":"2.0","id":8,"result":{"content":[{"type":"text","text":"this tool always fails"}],"isError":true}}"#
    );
    let image: serde_json::Value = serde_json::from_str(
        &fixture
            .call(9, "tools/call", json!({"name": "image"}))
            .await,
    )
    .expect("json");
    assert_eq!(image["result"]["content"][0]["type"], "image");
    assert_eq!(image["result"]["content"][0]["mimeType"], "image/png");
    assert_eq!(image["result"]["content"][1]["type"], "text");

    let discover = fixture.call(10, "server/discover", json!({})).await;
    assert_eq!(
        discover,
        r#"{"jsonrpc":"2.0","id":10,"error":{"code":-32601,"message":"Method not found"}}"#
    );
    let ping = fixture.call(11, "ping", json!({})).await;
    assert_eq!(ping, r#"{"jsonrpc":"2.0","id":11,"result":{}}"#);
    let confirm = fixture
        .call(
            12,
            "tools/call",
            json!({"name": "confirm", "arguments": {"question": "?"}}),
        )
        .await;
    assert_eq!(
        confirm,
        r#"{"jsonrpc":"2.0","id":12,"error":{"code":-32602,"message":"unknown tool: confirm"}}"#
    );

    fixture.send_line("this is not json").await;
    assert_eq!(
        fixture.next_line().await,
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"non-JSON text on the protocol channel"}}"#
    );

    fixture.close_stdin();
    assert!(fixture.wait_exit().await.success());
}

#[tokio::test]
async fn unknown_version_gets_the_latest_legacy_one() {
    let mut fixture = Fixture::spawn(&["--name", "custom"]);
    let response: serde_json::Value = serde_json::from_str(
        &fixture
            .call(1, "initialize", initialize_params("2030-01-01"))
            .await,
    )
    .expect("json");
    assert_eq!(response["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(response["result"]["serverInfo"]["name"], "custom");
}

#[tokio::test]
async fn change_tools_sends_a_plain_list_changed() {
    let mut fixture = Fixture::spawn(&[]);
    fixture.legacy_handshake().await;
    fixture
        .request(
            2,
            "tools/call",
            json!({"name": "change_tools", "arguments": {}}),
        )
        .await;
    assert_eq!(
        fixture.next_line().await,
        r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#
    );
    assert_eq!(
        fixture.next_line().await,
        r#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"added tool extra_1"}]}}"#
    );
    let tools: serde_json::Value =
        serde_json::from_str(&fixture.call(3, "tools/list", json!({})).await).expect("json");
    assert_eq!(
        tool_names(&tools).last().map(String::as_str),
        Some("extra_1")
    );
    let extra = fixture
        .call(4, "tools/call", json!({"name": "extra_1", "arguments": {}}))
        .await;
    assert_eq!(
        extra,
        r#"{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"extra_1 called"}]}}"#
    );
}

#[tokio::test]
async fn resources_prompts_and_completions() {
    let mut fixture = Fixture::spawn(&[]);
    fixture.legacy_handshake().await;
    assert_eq!(
        fixture.call(2, "resources/list", json!({})).await,
        r#"{"jsonrpc":"2.0","id":2,"result":{"resources":[{"uri":"fixture://readme","name":"readme","description":"About this fixture.","mimeType":"text/plain"}]}}"#
    );
    assert_eq!(
        fixture.call(3, "resources/templates/list", json!({})).await,
        r#"{"jsonrpc":"2.0","id":3,"result":{"resourceTemplates":[{"uriTemplate":"fixture://item/{id}","name":"item","description":"An item by id.","mimeType":"text/plain"}]}}"#
    );
    assert_eq!(
        fixture
            .call(4, "resources/read", json!({"uri": "fixture://item/7"}))
            .await,
        r#"{"jsonrpc":"2.0","id":4,"result":{"contents":[{"uri":"fixture://item/7","mimeType":"text/plain","text":"Item 7"}]}}"#
    );
    assert_eq!(
        fixture
            .call(5, "resources/read", json!({"uri": "fixture://missing"}))
            .await,
        r#"{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"unknown resource: fixture://missing","data":{"uri":"fixture://missing"}}}"#
    );
    assert_eq!(
        fixture
            .call(
                6,
                "prompts/get",
                json!({"name": "greet", "arguments": {"name": "Ada"}})
            )
            .await,
        r#"{"jsonrpc":"2.0","id":6,"result":{"description":"Greets someone by name.","messages":[{"role":"user","content":{"type":"text","text":"Hello, Ada!"}}]}}"#
    );
    let completion = fixture
        .call(
            7,
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "name", "value": "b"}}),
        )
        .await;
    assert_eq!(
        completion,
        r#"{"jsonrpc":"2.0","id":7,"result":{"completion":{"values":["bob"],"total":1,"hasMore":false}}}"#
    );
    let prompts: serde_json::Value =
        serde_json::from_str(&fixture.call(8, "prompts/list", json!({})).await).expect("json");
    assert_eq!(prompts["result"]["prompts"][0]["name"], "greet");
}
