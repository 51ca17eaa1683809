//! `switchboard scan` against the bundled example and real fixture processes: poisoned
//! descriptions and instructions, one server shadowing another, a rug pull against the lock
//! file (and `serve` leaving the changed tool out), token counts and limits, `--json`,
//! `--sarif`, and the exit codes.

use std::path::Path;

use expect_test::expect;
use serde_json::{Value, json};

use crate::serve::{gateway_for, tool_names};
use crate::{Run, config, fixture_entry, scratch_dir, switchboard};

/// `run`'s stdout with `path` (a config file or its folder) written as `$DIR`.
fn masked(run: &Run, dir: &Path) -> String {
    run.stdout.replace(&dir.display().to_string(), "$DIR")
}

fn folder(config: &Path) -> &Path {
    config.parent().expect("a config file has a folder")
}

#[test]
fn the_bundled_example_scans_clean() {
    let run = switchboard(&["scan"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    expect![[r#"
        example: 4 tool(s), 310 tokens
        1 server(s), 4 tool(s), 310 tokens (o200k_base); 0 finding(s)
        lock: none (no config file; give --lock FILE)
    "#]]
    .assert_eq(&run.stdout);
}

#[test]
fn poisoned_tools_and_a_server_shadowing_another_are_found() {
    let path = config(json!({
        "fx": fixture_entry(&[]),
        "notes": fixture_entry(&["--mode", "poisoned-tools"]),
    }));
    let path = path.display().to_string();
    let run = switchboard(&["scan", "--config", &path]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    expect![[r#"
        fx: 6 tool(s), 292 tokens
        notes: 4 tool(s), 220 tokens
          error cross-tool-instruction: notes/echo: description: tells the model how to use other tools: any other tool, before calling any
          error hidden-markup: notes/echo: description: hides text from a person reading it rendered, not from the model: an HTML comment
          error instruction-like: notes/read_note: description: reads like instructions to the model or names secrets: ~/.ssh, id_rsa
          error exfiltration: notes/read_note: description: asks the model to send data away or to put private data into a call: include the contents of
          error hidden-markup: notes/read_note: description: hides text from a person reading it rendered, not from the model: a markdown comment
          error exfiltration: notes/sync_notes: description: asks the model to send data away or to put private data into a call: send … conversation … to a URL
          error hidden-characters: notes/tidy: description: contains invisible or control characters (U+2067)
          error shadowing: notes/echo: redefines `fx`'s tool `echo` (a client that does not prefix tool names calls one of them in place of the other)
          error shadowing: notes/tidy: description: names `fx`'s tool `change_tools` (a server's text should speak only of its own tools)
        2 server(s), 10 tool(s), 512 tokens (o200k_base); 9 finding(s)
        lock: none yet at $DIR/mcp-$N.tool-lock.json; `switchboard scan --update` pins the tools shown, and `switchboard serve` then leaves out tools that change
    "#]]
    .assert_eq(&lock_name_masked(&masked(&run, folder(Path::new(&path)))));
}

/// The numbered config files of `config()` (`mcp-PID-N.json`) as `mcp-$N`.
fn lock_name_masked(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("/mcp-") {
        out.push_str(&rest[..at]);
        out.push_str("/mcp-$N");
        rest = &rest[at + 5..];
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '-'))
            .unwrap_or(rest.len());
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

#[test]
fn poisoned_instructions_are_found() {
    let path = config(json!({"fx": fixture_entry(&["--mode", "poisoned-instructions"])}));
    let run = switchboard(&["scan", "--config", &path.display().to_string()]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    expect![[r#"
        fx: 6 tool(s), 292 tokens
          error hidden-characters: fx: instructions: contains invisible or control characters (U+200B)
          error instruction-like: fx: instructions: reads like instructions to the model or names secrets: <important>, </important>, do not tell the user, ~/.ssh, id_rsa
          error cross-tool-instruction: fx: instructions: tells the model how to use other tools: before using any
    "#]]
    .assert_eq(
        &run.stdout
            .lines()
            .take(4)
            .map(|l| format!("{l}\n"))
            .collect::<String>(),
    );
}

#[test]
fn a_rug_pull_is_reported_until_accepted_and_serve_leaves_the_tool_out() {
    let dir = scratch_dir("scan-rug-pull");
    let path = dir.join("mcp.json");
    let write = |args: &[&str]| {
        let text = json!({"mcpServers": {"fx": fixture_entry(args)}}).to_string();
        std::fs::write(&path, text).expect("write config");
    };
    let scan = |extra: &[&str]| {
        let mut args = vec!["scan", "--config", path.to_str().expect("utf-8 path")];
        args.extend_from_slice(extra);
        switchboard(&args)
    };
    write(&[]);
    let first = scan(&[]);
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    assert!(
        first.stdout.contains("lock: none yet at"),
        "{}",
        first.stdout
    );

    let pinned = scan(&["--update"]);
    assert_eq!(pinned.code, 0, "{}{}", pinned.stdout, pinned.stderr);
    expect![[r#"
        fx: 6 tool(s), 292 tokens
        1 server(s), 6 tool(s), 292 tokens (o200k_base); 0 finding(s)
        pinned the tools of fx in $DIR/mcp.tool-lock.json
    "#]]
    .assert_eq(&masked(&pinned, &dir));
    let lock: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("mcp.tool-lock.json")).expect("the lock is written"),
    )
    .expect("the lock is JSON");
    assert_eq!(lock["format"], "switchboard-tool-lock/1");
    assert_eq!(lock["servers"]["fx"].as_object().map(|t| t.len()), Some(6));
    assert_eq!(scan(&[]).code, 0, "nothing changed since the pin");

    write(&["--rug-pull"]);
    let changed = scan(&[]);
    assert_eq!(changed.code, 1, "{}", changed.stderr);
    let changed_text = masked(&changed, &dir);
    let hash = |text: &str| {
        text.split("(hash ")
            .nth(1)
            .and_then(|rest| rest.split(')').next())
            .map(str::to_owned)
            .unwrap_or_default()
    };
    let hashes = hash(&changed_text);
    expect![[r#"
        fx: 6 tool(s), 304 tokens
          error instruction-like: fx/echo: description: reads like instructions to the model or names secrets: ~/.ssh, id_rsa
          error exfiltration: fx/echo: description: asks the model to send data away or to put private data into a call: include the contents of
          error changed-tool: fx/echo: its definition changed since it was approved (hash $HASHES)
        1 server(s), 6 tool(s), 304 tokens (o200k_base); 3 finding(s)
        lock: $DIR/mcp.tool-lock.json
    "#]]
    .assert_eq(&changed_text.replace(&hashes, "$HASHES"));

    // The gateway refuses the changed tool while the lock stands.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let served = runtime.block_on(async {
        let session = gateway_for(&path, &[]).await;
        let names = tool_names(&session).await;
        session.shutdown(crate::serve::GRACE).await;
        names
    });
    assert!(
        !served.contains(&"fx__echo".to_owned()) && served.contains(&"fx__add".to_owned()),
        "{served:?}"
    );

    let accepted = scan(&["--update"]);
    assert!(
        !accepted.stdout.contains("changed-tool"),
        "{}",
        accepted.stdout
    );
    let after = scan(&[]);
    assert!(
        !after.stdout.contains("changed-tool") && after.stdout.contains("exfiltration"),
        "accepted, the change is no longer a finding; the lint still is: {}",
        after.stdout
    );
}

#[test]
fn token_counts_tool_counts_and_names_in_json() {
    let path = config(json!({
        "many": fixture_entry(&["--mode", "many-tools", "--tools", "45", "--page-size", "50"]),
        "fx": fixture_entry(&["--mode", "bad-tool-names"]),
    }));
    let run = switchboard(&[
        "scan",
        "--config",
        &path.display().to_string(),
        "--json",
        "--token-budget",
        "1000",
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let dir = folder(&path);
    expect![[r#"
        {
          "format": "switchboard-scan/1",
          "tokenizer": "o200k_base",
          "lock": {
            "path": "$DIR/mcp-$N.tool-lock.json",
            "present": false,
            "pinned": []
          },
          "servers": [
            {
              "name": "many",
              "state": "ready",
              "tools": 45,
              "tokens": 1845,
              "location": {
                "file": "$DIR/mcp-$N.json",
                "line": 3
              }
            },
            {
              "name": "fx",
              "state": "ready",
              "tools": 7,
              "tokens": 329,
              "location": {
                "file": "$DIR/mcp-$N.json",
                "line": 14
              }
            }
          ],
          "findings": [
            {
              "rule": "too-many-tools",
              "level": "warning",
              "server": "many",
              "tool": null,
              "message": "45 tools, more than 40: some clients (Cursor) use only 40 and leave the rest out; narrow it with enabledTools"
            },
            {
              "rule": "token-budget",
              "level": "warning",
              "server": "many",
              "tool": null,
              "message": "its tool catalog costs 1845 tokens (o200k_base), more than the budget of 1000: every request of an agent carries it; narrow it with enabledTools"
            },
            {
              "rule": "tool-name",
              "level": "warning",
              "server": "fx",
              "tool": "bad name!",
              "message": "the name has characters clients refuse (they take a-z, A-Z, 0-9, _ and -)"
            },
            {
              "rule": "listing-problem",
              "level": "warning",
              "server": "fx",
              "tool": null,
              "message": "tools/list: page 1: duplicate entry `echo`; the first one is kept"
            }
          ]
        }
    "#]]
    .assert_eq(&lock_name_masked(&masked(&run, dir)));
}

#[test]
fn sarif_has_the_required_shape_and_points_at_the_entry() {
    let path = config(json!({
        "fx": fixture_entry(&[]),
        "notes": fixture_entry(&["--mode", "poisoned-tools"]),
    }));
    let run = switchboard(&["scan", "--config", &path.display().to_string(), "--sarif"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let sarif: Value = serde_json::from_str(&run.stdout).expect("SARIF is JSON");
    assert_eq!(sarif["version"], "2.1.0");
    let runs = sarif["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 1);
    let driver = &runs[0]["tool"]["driver"];
    assert_eq!(driver["name"], "switchboard");
    let rules = driver["rules"].as_array().expect("rules");
    let rule_ids: Vec<&str> = rules.iter().filter_map(|r| r["id"].as_str()).collect();
    assert_eq!(rule_ids.len(), rules.len(), "every rule has an id");
    for rule in rules {
        assert!(rule["shortDescription"]["text"].is_string(), "{rule}");
    }
    let results = runs[0]["results"].as_array().expect("results");
    assert_eq!(results.len(), 9);
    for result in results {
        let rule = result["ruleId"].as_str().expect("ruleId");
        let index = result["ruleIndex"].as_u64().expect("ruleIndex") as usize;
        assert_eq!(rule_ids[index], rule);
        assert!(
            ["error", "warning", "note", "none"].contains(&result["level"].as_str().unwrap_or("")),
            "{result}"
        );
        assert!(result["message"]["text"].is_string(), "{result}");
        let physical = &result["locations"][0]["physicalLocation"];
        assert!(physical["artifactLocation"]["uri"].is_string(), "{result}");
        assert!(
            physical["region"]["startLine"].as_u64().is_some(),
            "{result}"
        );
    }
    let shadowing = results
        .iter()
        .find(|r| r["ruleId"] == "shadowing")
        .expect("a shadowing result");
    let uri = path.display().to_string();
    expect![[r#"
        {
          "ruleId": "shadowing",
          "ruleIndex": 6,
          "level": "error",
          "message": {
            "text": "notes/echo: redefines `fx`'s tool `echo` (a client that does not prefix tool names calls one of them in place of the other)"
          },
          "locations": [
            {
              "logicalLocations": [
                {
                  "fullyQualifiedName": "notes/echo",
                  "kind": "module"
                }
              ],
              "physicalLocation": {
                "artifactLocation": {
                  "uri": "file://$CONFIG"
                },
                "region": {
                  "startLine": 7
                }
              }
            }
          ]
        }"#]]
    .assert_eq(
        &lock_name_masked(
            &serde_json::to_string_pretty(shadowing)
                .expect("JSON text")
                .replace(&format!("file://{uri}"), "file://$CONFIG"),
        ),
    );
}

#[test]
fn exit_codes_for_usage_errors() {
    let path = config(json!({"fx": fixture_entry(&[])}));
    let path = path.display().to_string();
    let unknown = switchboard(&["scan", "--config", &path, "nope"]);
    assert_eq!(unknown.code, 2, "{}", unknown.stderr);
    let both = switchboard(&["scan", "--config", &path, "--json", "--sarif"]);
    assert_eq!(both.code, 2, "{}", both.stderr);
    let no_lock = switchboard(&["scan", "--update"]);
    assert_eq!(no_lock.code, 2, "{}", no_lock.stderr);
    assert!(
        no_lock.stderr.contains("--update needs a lock file"),
        "{}",
        no_lock.stderr
    );
    let broken = switchboard(&["scan", "--config", "/nonexistent/mcp.json"]);
    assert_eq!(broken.code, 2, "{}", broken.stderr);
}
