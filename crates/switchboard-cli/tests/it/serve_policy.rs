//! `switchboard serve` with the team sections `clients` (named bearer tokens and their
//! groups) and `policies`: two named clients see different tools and resources and get
//! denials naming the rule, through our client in both eras and through the Python SDK;
//! OAuth subjects (JWTs of a loopback authorization server) are judged by their scopes,
//! groups, roles, client id and subject; a profile serves its own view with a renamed tool
//! and a fixed argument the upstream gets; an
//! argument rule refuses a path outside its folder without quoting it; under `--watch` an
//! edited policy reaches the client as `list_changed` and a broken one keeps what was in
//! force; a section that does not read stops `serve` saying what to write; two instances
//! behind HAProxy judge every client as one instance does.

use std::path::{Path, PathBuf};
use std::process::Command;

use expect_test::expect;
use serde_json::{Value, json};
use switchboard_http::HttpOptions;
use switchboard_session::{CallOptions, EraChoice, Session, SessionConfig};
use switchboard_testkit::canned::{self, CannedRequest, CountingServer};
use switchboard_testkit::jwt::Signer;
use switchboard_testkit::wait::{TEST_DEADLINE, within};

use crate::serve::{GRACE, follow_tool_changes, gateway_for, tools_list_changed};
use crate::serve_http::HttpGateway;
use crate::support::{listed_resources, listed_tools, stderr_with, tool_names};
use crate::{fixture_entry, scratch_dir, switchboard};

const ALICE_TOKEN: &str = "alice-token-0123456789abcdef";
const BOB_TOKEN: &str = "bob-token-0123456789abcdef";

/// Written to `dir/mcp.json`: the fixture server `fx` and the team sections given.
fn team_config(dir: &Path, team: Value) -> PathBuf {
    let mut root = json!({ "mcpServers": { "fx": fixture_entry(&[]) } });
    if let (Value::Object(root), Value::Object(team)) = (&mut root, team) {
        root.extend(team);
    }
    let path = dir.join("mcp.json");
    let fresh = dir.join("mcp.json.tmp");
    std::fs::write(&fresh, serde_json::to_string_pretty(&root).expect("json")).expect("write");
    std::fs::rename(&fresh, &path).expect("rename over the config");
    path
}

/// Alice (group `data`) may read two tools and the readme, `echo` only with a public text;
/// Bob (by name) gets the whole server but `add`, and the item template.
fn two_clients() -> Value {
    json!({
        "clients": {
            "alice": { "token": "${SB_ALICE_TOKEN}", "groups": ["data"] },
            "bob": { "token": "${SB_BOB_TOKEN}" }
        },
        "policies": [
            { "name": "data-readers", "who": ["group:data"],
              "allow": { "tools": ["fx__echo", "fx__add"], "resources": ["fixture://readme"] },
              "arguments": { "fx__echo": { "text": { "prefix": "public:" } } } },
            { "name": "ops", "who": ["client:bob"],
              "allow": { "servers": ["fx"] },
              "deny": { "tools": ["fx__add"] } }
        ]
    })
}

pub(crate) async fn connect(url: &str, token: &str, era: EraChoice) -> Session {
    let mut http = HttpOptions::new("gw", url);
    http.headers
        .push(("Authorization".into(), format!("Bearer {token}")));
    let mut config = SessionConfig::new("gw");
    config.era = era;
    within(
        "the handshake",
        TEST_DEADLINE,
        Session::connect_http(http, config),
    )
    .await
    .expect("connected")
}

/// A call's outcome in one line: the result's text, or the error's code and message.
pub(crate) async fn outcome(session: &Session, tool: &str, arguments: Value) -> String {
    let called = within(
        "tools/call",
        TEST_DEADLINE,
        session.call_tool_raw(tool, Some(&arguments), &CallOptions::default()),
    )
    .await;
    match called {
        Ok(result) => format!("ok {}", result["content"][0]["text"]),
        Err(error) => error.to_string(),
    }
}

async fn what_a_client_sees(url: &str, token: &str, era: EraChoice) -> String {
    let session = connect(url, token, era).await;
    let tools = tool_names(&session).await;
    let (resources, templates) = listed_resources(&session).await;
    let mut lines = vec![
        format!("tools: {}", tools.join(", ")),
        format!(
            "resources: {}",
            resources
                .items
                .iter()
                .map(|r| r.uri.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        format!(
            "templates: {}",
            templates
                .items
                .iter()
                .map(|t| t.uri_template.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    ];
    for (tool, arguments) in [
        ("fx__echo", json!({"text": "public:hello"})),
        ("fx__echo", json!({"text": "/etc/passwd"})),
        ("fx__add", json!({"a": 2, "b": 3})),
        ("fx__fail", json!({})),
        ("fx__no_such_tool", json!({})),
    ] {
        let shown = format!("{tool} {arguments}");
        lines.push(format!(
            "{shown}: {}",
            outcome(&session, tool, arguments).await
        ));
    }
    let read = within(
        "resources/read",
        TEST_DEADLINE,
        session.read_resource("fixture://item/7"),
    )
    .await;
    lines.push(format!(
        "read fixture://item/7: {}",
        match read {
            Ok(_) => "ok".to_owned(),
            Err(error) => error.to_string(),
        }
    ));
    lines.join("\n")
}

/// The Python SDK's view: its tool list and calls, one JSON line each.
fn sdk_client(url: &str, token: &str, calls: Value) -> String {
    let root = crate::workspace_root();
    let python = root.join("target/peers/venv/bin/python");
    assert!(
        python.exists(),
        "the Python SDK is missing: run scripts/peers.sh (it installs target/peers/venv)"
    );
    let mut command = Command::new(python);
    command
        .arg(root.join("scripts/peers/sdk_client.py"))
        .args([url, token, &calls.to_string()]);
    let run = crate::run_bounded(command, "the Python SDK client");
    assert_eq!(run.code, 0, "the SDK client ran: {}", run.stderr);
    run.stdout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_named_clients_see_their_own_tools_and_are_denied_by_the_rule_in_both_eras() {
    let dir = scratch_dir("serve-policy");
    let path = team_config(&dir, two_clients());
    let gateway = HttpGateway::start(
        &path,
        &[],
        &[("SB_ALICE_TOKEN", ALICE_TOKEN), ("SB_BOB_TOKEN", BOB_TOKEN)],
    );
    let url = gateway.url().to_owned();
    let mut seen = String::new();
    for (name, token) in [("alice", ALICE_TOKEN), ("bob", BOB_TOKEN)] {
        let legacy = what_a_client_sees(&url, token, EraChoice::Legacy).await;
        let modern = what_a_client_sees(&url, token, EraChoice::Modern).await;
        assert_eq!(legacy, modern, "{name}: both eras are judged alike");
        seen.push_str(&format!("== {name}\n{legacy}\n"));
    }
    expect![[r#"
        == alice
        tools: fx__add, fx__echo
        resources: fixture://readme
        templates: 
        fx__echo {"text":"public:hello"}: ok "public:hello"
        fx__echo {"text":"/etc/passwd"}: server `gw` answered `tools/call` with an error: denied by policy rule `data-readers`: argument `text` of tool `fx__echo` must start with `public:` (code -32010), data: {"rule":"data-readers"}
        fx__add {"a":2,"b":3}: ok "5"
        fx__fail {}: server `gw` answered `tools/call` with an error: denied by policy: no rule for this client grants tool `fx__fail` (rule `default-deny`) (code -32010), data: {"rule":"default-deny"}
        fx__no_such_tool {}: server `gw` answered `tools/call` with an error: denied by policy: no rule for this client grants tool `fx__no_such_tool` (rule `default-deny`) (code -32010), data: {"rule":"default-deny"}
        read fixture://item/7: server `gw` answered `resources/read` with an error: denied by policy: no rule for this client grants resource `fixture://item/7` (rule `default-deny`) (code -32010), data: {"rule":"default-deny"}
        == bob
        tools: fx__change_tools, fx__echo, fx__fail, fx__image, fx__slow
        resources: fixture://readme
        templates: fixture://item/{id}
        fx__echo {"text":"public:hello"}: ok "public:hello"
        fx__echo {"text":"/etc/passwd"}: ok "/etc/passwd"
        fx__add {"a":2,"b":3}: server `gw` answered `tools/call` with an error: denied by policy rule `ops`: tool `fx__add` (code -32010), data: {"rule":"ops"}
        fx__fail {}: ok "this tool always fails"
        fx__no_such_tool {}: server `gw` answered `tools/call` with an error: denied by policy: no rule for this client grants tool `fx__no_such_tool` (rule `default-deny`) (code -32010), data: {"rule":"default-deny"}
        read fixture://item/7: ok
    "#]]
    .assert_eq(&seen);

    let calls = json!([["fx__echo", {"text": "public:sdk"}], ["fx__add", {"a": 1, "b": 1}]]);
    let sdk = format!(
        "alice\n{}bob\n{}",
        sdk_client(&url, ALICE_TOKEN, calls.clone()),
        sdk_client(&url, BOB_TOKEN, calls)
    );
    expect![[r#"
        alice
        {"tools": ["fx__add", "fx__echo"]}
        {"call": "fx__echo", "isError": false, "text": ["public:sdk"]}
        {"call": "fx__add", "isError": false, "text": ["2"]}
        bob
        {"tools": ["fx__change_tools", "fx__echo", "fx__fail", "fx__image", "fx__slow"]}
        {"call": "fx__echo", "isError": false, "text": ["public:sdk"]}
        {"call": "fx__add", "code": -32010, "message": "denied by policy rule `ops`: tool `fx__add`"}
    "#]]
    .assert_eq(&sdk);

    // Neither token is ever said.
    let stderr = gateway.stderr().join("\n");
    assert!(
        !stderr.contains(ALICE_TOKEN) && !stderr.contains(BOB_TOKEN),
        "{stderr}"
    );
    expect![""].assert_eq(
        &stderr
            .lines()
            .filter(|line| line.contains("clients:") || line.contains("policy:"))
            .collect::<Vec<_>>()
            .join("\n"),
    );
}

#[tokio::test]
async fn an_argument_rule_keeps_paths_in_their_folder_without_quoting_them() {
    let dir = scratch_dir("serve-policy-paths");
    let path = team_config(
        &dir,
        json!({ "policies": [
            { "name": "in-data", "who": ["local"], "allow": { "tools": ["fx__echo"] },
              "arguments": { "fx__echo": { "text": { "under": "/data" } } } }
        ]}),
    );
    let session = gateway_for(&path, &[]).await;
    let mut lines = Vec::new();
    for text in [
        "/data/report.csv",
        "/data/../etc/passwd",
        "/database/x",
        "data/relative",
    ] {
        lines.push(format!(
            "{text}: {}",
            outcome(&session, "fx__echo", json!({ "text": text })).await
        ));
    }
    lines.push(format!(
        "missing: {}",
        outcome(&session, "fx__echo", json!({})).await
    ));
    session.shutdown(GRACE).await;
    expect![[r#"
        /data/report.csv: ok "/data/report.csv"
        /data/../etc/passwd: server `gateway` answered `tools/call` with an error: denied by policy rule `in-data`: argument `text` of tool `fx__echo` must be a path in `/data` (no `..`, no backslash) (code -32010), data: {"rule":"in-data"}
        /database/x: server `gateway` answered `tools/call` with an error: denied by policy rule `in-data`: argument `text` of tool `fx__echo` must be a path in `/data` (no `..`, no backslash) (code -32010), data: {"rule":"in-data"}
        data/relative: server `gateway` answered `tools/call` with an error: denied by policy rule `in-data`: argument `text` of tool `fx__echo` must be a path in `/data` (no `..`, no backslash) (code -32010), data: {"rule":"in-data"}
        missing: server `gateway` answered `tools/call` with an error: denied by policy rule `in-data`: argument `text` of tool `fx__echo` is required by the policy and missing (code -32010), data: {"rule":"in-data"}"#]]
    .assert_eq(&lines.join("\n"));
}

#[tokio::test]
async fn an_edited_policy_reaches_the_client_under_watch_and_a_broken_one_keeps_the_old() {
    let dir = scratch_dir("serve-policy-watch");
    let rule = |tools: Value| json!({ "policies": [ { "name": "mine", "who": ["local"], "allow": { "tools": tools } } ] });
    let path = team_config(&dir, rule(json!(["fx__echo"])));
    let session = gateway_for(&path, &["--watch"]).await;
    assert_eq!(tool_names(&session).await, ["fx__echo"]);

    let mut events = session.events();
    let _stream = follow_tool_changes(&session).await;
    team_config(&dir, rule(json!(["fx__echo", "fx__add"])));
    tools_list_changed(&mut events).await;
    assert_eq!(tool_names(&session).await, ["fx__add", "fx__echo"]);

    // A rule with a typo is refused whole, and the policy in force stays.
    team_config(
        &dir,
        json!({ "policies": [ { "name": "mine", "who": ["local"], "alow": { "tools": ["*"] } } ] }),
    );
    let stderr = stderr_with(&session, "is not reloaded", 1).await;
    let refused: Vec<String> = stderr
        .lines()
        .filter(|line| line.contains("is not reloaded"))
        .map(|line| line.replace(&path.display().to_string(), "<config>"))
        .collect();
    expect![[r#"
        [
            "switchboard serve: <config>: policy `mine`: `alow` is not a setting here (known: `name`, `who`, `allow`, `deny`, `arguments`); a rule with an unknown key is refused rather than half applied; the config is not reloaded: the policy and the running servers stay as they were",
        ]
    "#]]
    .assert_debug_eq(&refused);
    assert_eq!(tool_names(&session).await, ["fx__add", "fx__echo"]);
    session.shutdown(GRACE).await;
}

#[test]
fn a_team_section_that_does_not_read_stops_serve_saying_what_to_write() {
    let dir = scratch_dir("serve-policy-bad");
    let mut shown = Vec::new();
    for team in [
        json!({ "clients": { "ci": { "token": "short" } } }),
        json!({ "clients": { "ci": { "token": "${SB_UNSET_TOKEN_VAR}" } } }),
        json!({ "policies": [ { "name": "r", "who": ["team:x"] } ] }),
        json!({ "policies": [ { "name": "r", "who": ["client:nobody"] } ] }),
    ] {
        let path = team_config(&dir, team);
        let run = switchboard(&["serve", "--config", &path.display().to_string()]);
        shown.push(format!(
            "exit {}: {}",
            run.code,
            run.stderr
                .trim_end()
                .replace(&path.display().to_string(), "<config>")
        ));
    }
    expect![[r#"
        exit 2: switchboard: <config>: `clients.ci`: the token is shorter than 16 characters; use a long random one (e.g. `openssl rand -hex 32`)
        exit 2: switchboard: <config>: `clients.ci`: `token` uses the variable `SB_UNSET_TOKEN_VAR`, which is not set; set it to the client's token
        exit 2: switchboard: <config>: policy `r`: `who`: `team:x` is not a client: write `*`, `local`, `bearer`, `client:NAME`, `group:NAME`, `subject:SUB`, `clientId:ID` or `scope:NAME`
        exit 2: switchboard: <config>: policy `r`: `who` names `client:nobody`, which is not in `clients`"#]]
    .assert_eq(&shown.join("\n"));
}

/// Written to `dir/mcp.json`: the fixture servers `fx` and `fy`, and these `profiles`.
fn two_servers_and_profiles(dir: &Path, profiles: Value) -> PathBuf {
    let text = json!({
        "mcpServers": { "fx": fixture_entry(&[]), "fy": fixture_entry(&["--name", "fy"]) },
        "profiles": profiles,
    });
    let path = dir.join("mcp.json");
    let fresh = dir.join("mcp.json.tmp");
    std::fs::write(&fresh, text.to_string()).expect("write");
    std::fs::rename(&fresh, &path).expect("rename over the config");
    path
}

#[tokio::test]
async fn a_profile_naming_a_server_not_served_is_refused_at_start_and_on_reload() {
    let dir = scratch_dir("serve-profile-servers");
    let ops = |server: &str| json!({ "ops": { "servers": ["fx", server] } });
    let mut shown = Vec::new();
    for (server, flags) in [("gti", &[][..]), ("fy", &["--server", "fx"][..])] {
        let path = two_servers_and_profiles(&dir, ops(server));
        let mut args = vec!["serve", "--config"];
        let config = path.display().to_string();
        args.push(&config);
        args.extend_from_slice(flags);
        let run = switchboard(&args);
        shown.push(format!(
            "exit {}: {}",
            run.code,
            run.stderr.trim_end().replace(&config, "<config>")
        ));
    }
    // Under --watch, an edit naming a server that is not there keeps what is in force.
    let path = two_servers_and_profiles(&dir, ops("fy"));
    let session = gateway_for(&path, &["--watch"]).await;
    two_servers_and_profiles(&dir, ops("gti"));
    let stderr = stderr_with(&session, "is not reloaded", 1).await;
    shown.extend(
        stderr
            .lines()
            .filter(|line| line.contains("is not reloaded"))
            .map(|line| line.replace(&path.display().to_string(), "<config>")),
    );
    session.shutdown(GRACE).await;
    expect![[r#"
        exit 2: switchboard: <config>: profile `ops`: `servers` names `gti`, which is not in `mcpServers`; configured: fx, fy
        exit 2: switchboard: <config>: profile `ops`: `servers` names `fy`, which --server leaves out; served: fx
        switchboard serve: <config>: profile `ops`: `servers` names `gti`, which is not in `mcpServers`; configured: fx, fy; the config is not reloaded: the policy and the running servers stay as they were"#]].assert_eq(&shown.join("\n"));
}

/// `calc`: the fixture's tools but `fail`; `add` renamed `add_forty`, its `b` fixed at 40,
/// its description amended; a policy of its own that lets Alice call only `add_forty`.
fn calc_profile() -> Value {
    json!({
        "clients": {
            "alice": { "token": "${SB_ALICE_TOKEN}", "groups": ["data"] }
        },
        "profiles": {
            "calc": {
                "servers": ["fx"],
                "tools": { "deny": ["fx__fail"] },
                "policies": [
                    { "name": "calc-only", "who": ["client:alice"], "allow": { "tools": ["fx__add"] } }
                ],
                "overrides": {
                    "fx__add": {
                        "name": "add_forty",
                        "appendDescription": "The second number is always 40.",
                        "fixedArguments": { "b": 40 }
                    }
                }
            }
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renamed_tools_param_headers_are_checked_under_its_new_name() {
    let dir = scratch_dir("serve-profile-headers");
    // The fixture offers `confirm` (whose `question` is a header parameter) in the
    // 2026-07-28 era.
    let fixture = fixture_entry(&["--era", "modern"]);
    let path = dir.join("mcp.json");
    let root = json!({
        "mcpServers": { "fx": fixture },
        "profiles": { "asker": { "overrides": { "fx__confirm": { "name": "ask" } } } }
    });
    std::fs::write(&path, root.to_string()).expect("write the config");
    let gateway = HttpGateway::start(&path, &[], &[]);
    let profile_url = format!("{}/asker", gateway.url());
    let mut config = SessionConfig::new("gw");
    config.era = EraChoice::Modern;
    let listing = within(
        "the profile's listing",
        TEST_DEADLINE,
        Session::connect_http(HttpOptions::new("gw", &profile_url), config),
    )
    .await
    .expect("connected");
    assert!(tool_names(&listing).await.contains(&"ask".to_owned()));
    let client = reqwest::Client::new();
    let call = |header: &'static str| {
        let body = json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {
                "name": "ask", "arguments": { "question": "Delete everything?" },
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": { "elicitation": {} }
                }
            }
        });
        client
            .post(&profile_url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "ask")
            .header("mcp-param-question", header)
            .body(body.to_string())
            .send()
    };
    // An intermediary that routes on the header must see what the server will act on.
    let lying = call("Is it sunny?").await.expect("an answer");
    let status = lying.status().as_u16();
    let text = lying.text().await.expect("a body");
    let answer: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    expect!["400 the `Mcp-Param-Question` header differs from argument `question`"].assert_eq(
        &format!(
            "{status} {}",
            answer["error"]["message"].as_str().unwrap_or("?")
        ),
    );
    let honest = call("Delete everything?").await.expect("an answer");
    let status = honest.status().as_u16();
    assert_eq!(
        status,
        200,
        "a matching header passes: {}",
        honest.text().await.unwrap_or_default()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_profile_gives_the_stdio_client_the_profiles_view() {
    let dir = scratch_dir("serve-profile-stdio");
    let path = team_config(
        &dir,
        json!({ "profiles": { "calc": {
            "servers": ["fx"],
            "tools": { "allow": ["fx__add"] },
            "overrides": { "fx__add": { "name": "add_forty", "fixedArguments": { "b": 40 } } }
        }}}),
    );
    let session = gateway_for(&path, &["--profile", "calc"]).await;
    let listed = tool_names(&session).await;
    let added = outcome(&session, "add_forty", json!({"a": 2})).await;
    let hidden = outcome(&session, "fx__echo", json!({"text": "x"})).await;
    let unknown = switchboard(&[
        "serve",
        "--config",
        path.to_str().expect("UTF-8"),
        "--profile",
        "nope",
    ]);
    expect![[r#"
        tools: add_forty
        add_forty: ok "42"
        fx__echo: server `gateway` answered `tools/call` with an error: unknown tool `fx__echo`: the profile `calc` has no such tool (tools/list shows its tools) (code -32602)
        exit 2: switchboard serve: profiles: calc (each at /mcp/<profile> over --http; one over stdio with --profile NAME)
        switchboard: --profile `nope`: PATH has no such profile (its profiles: calc)
    "#]]
    .assert_eq(&format!(
        "tools: {}\nadd_forty: {added}\nfx__echo: {hidden}\nexit {}: {}",
        listed.join(", "),
        unknown.code,
        unknown.stderr.replace(path.to_str().expect("UTF-8"), "PATH")
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_profile_serves_its_own_view_with_renames_and_fixed_arguments_in_both_eras() {
    let dir = scratch_dir("serve-profile");
    let path = team_config(&dir, calc_profile());
    let gateway = HttpGateway::start(&path, &[], &[("SB_ALICE_TOKEN", ALICE_TOKEN)]);
    let profile_url = format!("{}/calc", gateway.url());
    let mut seen = String::new();
    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let session = connect(&profile_url, ALICE_TOKEN, era).await;
        let tools: Vec<String> = listed_tools(&session)
            .await
            .iter()
            .map(|tool| {
                format!(
                    "{} {:?} {}",
                    tool.name,
                    tool.description.as_deref().unwrap_or(""),
                    tool.input_schema
                )
            })
            .collect();
        seen.push_str(&format!("== {era:?}\n{}\n", tools.join("\n")));
        for (tool, arguments) in [
            ("add_forty", json!({"a": 2})),
            ("add_forty", json!({"a": 2, "b": 1})),
            ("fx__add", json!({"a": 2, "b": 1})),
            ("fx__echo", json!({"text": "x"})),
            ("fx__fail", json!({})),
        ] {
            let shown = format!("{tool} {arguments}");
            seen.push_str(&format!(
                "{shown}: {}\n",
                outcome(&session, tool, arguments).await
            ));
        }
    }
    expect![[r#"
        == Legacy
        add_forty "Adds two integers.\n\nThe second number is always 40." {"type":"object","properties":{"a":{"type":"integer","description":"First addend."}},"required":["a"],"additionalProperties":false}
        add_forty {"a":2}: ok "42"
        add_forty {"a":2,"b":1}: server `gw` answered `tools/call` with an error: argument `b` of tool `add_forty` is fixed by the operator of the profile `calc`; call it without it (code -32602)
        fx__add {"a":2,"b":1}: server `gw` answered `tools/call` with an error: unknown tool `fx__add`: the profile `calc` has no such tool (tools/list shows its tools) (code -32602)
        fx__echo {"text":"x"}: server `gw` answered `tools/call` with an error: denied by policy: no rule for this client grants tool `fx__echo` (rule `default-deny`) (code -32010), data: {"rule":"default-deny"}
        fx__fail {}: server `gw` answered `tools/call` with an error: unknown tool `fx__fail`: the profile `calc` has no such tool (tools/list shows its tools) (code -32602)
        == Modern
        add_forty "Adds two integers.\n\nThe second number is always 40." {"type":"object","properties":{"a":{"type":"integer","description":"First addend."}},"required":["a"],"additionalProperties":false}
        add_forty {"a":2}: ok "42"
        add_forty {"a":2,"b":1}: server `gw` answered `tools/call` with an error: argument `b` of tool `add_forty` is fixed by the operator of the profile `calc`; call it without it (code -32602)
        fx__add {"a":2,"b":1}: server `gw` answered `tools/call` with an error: unknown tool `fx__add`: the profile `calc` has no such tool (tools/list shows its tools) (code -32602)
        fx__echo {"text":"x"}: server `gw` answered `tools/call` with an error: denied by policy: no rule for this client grants tool `fx__echo` (rule `default-deny`) (code -32010), data: {"rule":"default-deny"}
        fx__fail {}: server `gw` answered `tools/call` with an error: unknown tool `fx__fail`: the profile `calc` has no such tool (tools/list shows its tools) (code -32602)
    "#]].assert_eq(&seen);

    // The default endpoint is the whole gateway (no policy there: everything).
    let whole = connect(gateway.url(), ALICE_TOKEN, EraChoice::Modern).await;
    assert_eq!(tool_names(&whole).await.len(), 6);

    // A session opened at the profile is not found at another endpoint, and an endpoint
    // no profile has is 404.
    let client = reqwest::Client::new();
    let (status, session, _) =
        crate::serve_http::open_session(&client, &profile_url, Some(ALICE_TOKEN)).await;
    assert_eq!(status, 200);
    let elsewhere = client
        .post(gateway.url())
        .bearer_auth(ALICE_TOKEN)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", session.expect("a session id"))
        .body(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string())
        .send()
        .await
        .expect("an answer");
    let nowhere = client
        .post(format!("{}/nope", gateway.url()))
        .bearer_auth(ALICE_TOKEN)
        .body("{}")
        .send()
        .await
        .expect("an answer");
    // Without a credential, a profile that exists and one that does not look alike.
    let anonymous = client
        .post(format!("{}/nope", gateway.url()))
        .body("{}")
        .send()
        .await
        .expect("an answer");
    assert_eq!(
        (
            elsewhere.status().as_u16(),
            nowhere.status().as_u16(),
            anonymous.status().as_u16()
        ),
        (404, 404, 401)
    );
}

/// The audience the gateway's OAuth tokens must name.
const RESOURCE: &str = "https://mcp.test/mcp";

/// An authorization server on loopback: its metadata and the key set of `signer`.
async fn token_issuer(signer: &Signer) -> CountingServer {
    let keys = json!({ "keys": [signer.jwk()] });
    CountingServer::start_with(move |origin, request: &CannedRequest| {
        let body = match request.path() {
            "/.well-known/oauth-authorization-server" => {
                json!({ "issuer": origin, "jwks_uri": format!("{origin}/jwks") })
            }
            "/jwks" => keys.clone(),
            _ => return canned::empty_answer("404 Not Found"),
        };
        canned::answer("200 OK", "application/json", &body.to_string())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oauth_subjects_are_judged_by_their_tokens_claims_in_both_eras() {
    let signer = Signer::new("k1");
    let issuer = token_issuer(&signer).await;
    let dir = scratch_dir("serve-policy-oauth");
    let path = team_config(
        &dir,
        json!({ "policies": [
            { "name": "readers", "who": ["scope:files.read"], "allow": { "tools": ["fx__echo"] } },
            { "name": "math", "who": ["group:math"], "allow": { "tools": ["fx__add"] } },
            { "name": "the-app", "who": ["clientId:cli-app"], "allow": { "tools": ["fx__image"] } },
            { "name": "not-carol", "who": ["subject:carol"], "deny": { "tools": ["fx__add"] } }
        ]}),
    );
    let gateway = HttpGateway::start(
        &path,
        &[
            "--oauth-issuer",
            issuer.origin(),
            "--resource-url",
            RESOURCE,
        ],
        &[],
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs());
    let token = |subject: &str, grants: Value| {
        let mut claims = json!({
            "iss": issuer.origin(), "aud": RESOURCE, "sub": subject,
            "iat": now, "exp": now + 3600,
        });
        if let (Value::Object(claims), Value::Object(grants)) = (&mut claims, grants) {
            claims.extend(grants);
        }
        signer.token(
            &json!({ "alg": "ES256", "typ": "JWT", "kid": "k1" }),
            &claims,
        )
    };
    let mut seen = String::new();
    for (subject, grants) in [
        (
            "dana",
            json!({ "scope": "openid files.read", "client_id": "cli-app" }),
        ),
        (
            "carol",
            json!({ "groups": ["math"], "scp": ["files.read"] }),
        ),
        ("erin", json!({ "roles": ["math"] })),
    ] {
        let token = token(subject, grants);
        let legacy = connect(gateway.url(), &token, EraChoice::Legacy).await;
        let modern = connect(gateway.url(), &token, EraChoice::Modern).await;
        let listed = tool_names(&legacy).await;
        assert_eq!(
            listed,
            tool_names(&modern).await,
            "{subject}: both eras alike"
        );
        let added = outcome(&modern, "fx__add", json!({"a": 1, "b": 2})).await;
        seen.push_str(&format!(
            "{subject}: {} | fx__add: {added}\n",
            listed.join(", ")
        ));
    }
    expect![[r#"
        dana: fx__echo, fx__image | fx__add: server `gw` answered `tools/call` with an error: denied by policy: no rule for this client grants tool `fx__add` (rule `default-deny`) (code -32010), data: {"rule":"default-deny"}
        carol: fx__echo | fx__add: server `gw` answered `tools/call` with an error: denied by policy rule `not-carol`: tool `fx__add` (code -32010), data: {"rule":"not-carol"}
        erin: fx__add | fx__add: ok "3"
    "#]].assert_eq(&seen);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_taken_out_of_the_config_is_refused_after_the_reload() {
    let dir = scratch_dir("serve-policy-revoke");
    let both = json!({ "clients": {
        "alice": { "token": ALICE_TOKEN },
        "bob": { "token": BOB_TOKEN }
    }});
    let path = team_config(&dir, both);
    let gateway = HttpGateway::start(&path, &["--watch"], &[]);
    let client = reqwest::Client::new();
    let status = |token: &'static str| {
        let (client, url) = (client.clone(), gateway.url().to_owned());
        async move {
            crate::serve_http::open_session(&client, &url, Some(token))
                .await
                .0
        }
    };
    assert_eq!(
        (status(ALICE_TOKEN).await, status(BOB_TOKEN).await),
        (200, 200)
    );
    team_config(
        &dir,
        json!({ "clients": { "alice": { "token": ALICE_TOKEN } } }),
    );
    switchboard_testkit::wait::until_async("bob's token refused", TEST_DEADLINE, || async {
        (status(BOB_TOKEN).await == 401).then_some(())
    })
    .await;
    assert_eq!(status(ALICE_TOKEN).await, 200, "alice stays");

    // A reload that leaves no client refuses everyone: it never opens the door.
    team_config(&dir, json!({ "clients": {} }));
    switchboard_testkit::wait::until_async("alice's token refused", TEST_DEADLINE, || async {
        (status(ALICE_TOKEN).await == 401).then_some(())
    })
    .await;
    let anonymous = client
        .post(gateway.url())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body("{}")
        .send()
        .await
        .expect("an answer");
    assert_eq!(anonymous.status().as_u16(), 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_two_instances_each_client_sees_what_its_rules_grant() {
    let dir = scratch_dir("serve-policy-balanced");
    let mut team = two_clients();
    // The instances read the tokens from the file (no per-instance environment here).
    team["clients"]["alice"]["token"] = json!(ALICE_TOKEN);
    team["clients"]["bob"]["token"] = json!(BOB_TOKEN);
    let path = team_config(&dir, team);
    let balanced = crate::serve_balanced::Balanced::start(&path, "balanced-policy");
    let single = HttpGateway::start(&path, &[], &[]);
    for (name, token) in [("alice", ALICE_TOKEN), ("bob", BOB_TOKEN)] {
        for era in [EraChoice::Legacy, EraChoice::Modern] {
            let alone = what_a_client_sees(single.url(), token, era).await;
            // Several sessions, so that round-robin reaches both instances.
            for _ in 0..2 {
                let through = what_a_client_sees(&balanced.url, token, era).await;
                assert_eq!(through, alone, "{name} {era:?}: as one instance judges");
            }
        }
    }
    let served = balanced.served();
    assert!(
        served.len() == 2 && served.values().all(|count| *count > 0),
        "both instances judged requests: {served:?}"
    );
}
