//! `many-tools` mode: pagination with opaque cursors.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::support::{Fixture, tool_names};

#[tokio::test]
async fn pages_cover_every_tool_once() {
    let mut fixture = Fixture::spawn(&[
        "--mode",
        "many-tools",
        "--tools",
        "120",
        "--page-size",
        "50",
    ]);
    fixture.legacy_handshake().await;
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let params = match &cursor {
            Some(cursor) => json!({"cursor": cursor}),
            None => json!({}),
        };
        let page: Value =
            serde_json::from_str(&fixture.call(10 + pages, "tools/list", params).await)
                .expect("json");
        pages += 1;
        names.extend(tool_names(&page));
        match page["result"]["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
        assert!(pages < 10, "too many pages");
    }
    assert_eq!(pages, 3);
    let expected: Vec<String> = (0..120).map(|i| format!("tool_{i:04}")).collect();
    assert_eq!(names, expected);
    assert_eq!(names.iter().collect::<BTreeSet<_>>().len(), 120);

    let invalid = fixture
        .call(50, "tools/list", json!({"cursor": "not-a-cursor"}))
        .await;
    assert_eq!(
        invalid,
        r#"{"jsonrpc":"2.0","id":50,"error":{"code":-32602,"message":"invalid cursor: not-a-cursor"}}"#
    );
    let call = fixture
        .call(
            51,
            "tools/call",
            json!({"name": "tool_0119", "arguments": {"text": "x"}}),
        )
        .await;
    assert_eq!(
        call,
        r#"{"jsonrpc":"2.0","id":51,"result":{"content":[{"type":"text","text":"x"}]}}"#
    );
}
