//! Per-tool filtering from the CLI: `tools` lists only what the entry's `enabledTools` /
//! `disabledTools` let through, `call` refuses a tool they leave out, and the gateway
//! (`serve`) neither lists nor calls it.

use expect_test::expect;

use crate::serve::{GRACE, call, gateway};
use crate::support::tool_names;
use crate::{config, fixture_entry, switchboard};

#[test]
fn tools_and_call_honour_the_entry_filter() {
    let mut filtered = fixture_entry(&[]);
    filtered["enabledTools"] = serde_json::json!(["e*", "add", "slow"]);
    filtered["disabledTools"] = serde_json::json!(["slow"]);
    let mut gemini = fixture_entry(&[]);
    gemini["excludeTools"] = serde_json::json!(["*"]);
    let path = config(serde_json::json!({ "filtered": filtered, "gemini": gemini }));
    let path = path.to_str().expect("utf-8 path");

    let tools = switchboard(&["tools", "--config", path]);
    assert_eq!(tools.code, 0, "{}", tools.stderr);
    expect![[r#"
        filtered: 2 tools (protocol 2025-11-25, legacy era, server switchboard-fixture 0.1.0)
          echo  Returns the given text.
                  (text: string)
          add   Adds two integers.
                  (a: integer, b: integer)
          (4 left out by the entry's enabledTools/disabledTools)
        gemini: 0 tools (protocol 2025-11-25, legacy era, server switchboard-fixture 0.1.0)
          (6 left out by the entry's enabledTools/disabledTools)
    "#]]
    .assert_eq(&tools.stdout);

    let json = switchboard(&["tools", "--config", path, "filtered", "--json"]);
    assert_eq!(json.code, 0, "{}", json.stderr);
    let parsed: serde_json::Value = serde_json::from_str(&json.stdout).expect("valid JSON");
    let names: Vec<&str> = parsed["filtered"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(
        (names, &parsed["filtered"]["leftOut"]),
        (vec!["echo", "add"], &serde_json::json!(4))
    );

    let denied = switchboard(&["call", "--config", path, "filtered", "slow"]);
    assert_eq!(denied.code, 2, "{}", denied.stderr);
    expect![[r#"
        switchboard: server `filtered` has no tool `slow` here: the entry's enabledTools/disabledTools leave it out (CONFIG:3)
    "#]]
    .assert_eq(&denied.stderr.replace(path, "CONFIG"));

    let allowed = switchboard(&[
        "call",
        "--config",
        path,
        "filtered",
        "add",
        r#"{"a":40,"b":2}"#,
    ]);
    assert_eq!(allowed.code, 0, "{}", allowed.stderr);
}

#[tokio::test]
async fn the_gateway_serves_only_what_the_filter_lets_through() {
    let mut filtered = fixture_entry(&[]);
    filtered["includeTools"] = serde_json::json!(["e*", "add"]);
    let session = gateway(serde_json::json!({ "alpha": filtered })).await;
    assert_eq!(tool_names(&session).await, ["alpha__add", "alpha__echo"]);
    let add = call(&session, "alpha__add", serde_json::json!({"a": 40, "b": 2})).await;
    assert!(add.is_ok(), "{add:?}");
    // A filtered-out tool is answered exactly as a name that never existed.
    let denied = call(&session, "alpha__slow", serde_json::json!({})).await;
    let unknown = call(&session, "alpha__nosuch", serde_json::json!({})).await;
    assert!(denied.is_err(), "{denied:?}");
    assert_eq!(
        denied.map_err(|e| e.replace("alpha__slow", "NAME")),
        unknown.map_err(|e| e.replace("alpha__nosuch", "NAME"))
    );
    session.shutdown(GRACE).await;
}
