//! `switchboard serve --audit FILE`: calls through a stdio gateway are written one JSON line
//! each (times, durations and hashes masked in the snapshot), the file is 0600 and carries
//! no argument value, and `switchboard audit verify` passes the file as written and names
//! the line of an edited or removed one. Over HTTP a bearer client is `bearer`, never its
//! token. A tool result `--guard` withheld is recorded as `withheld`, not as a tool error; a
//! log that exists open to others, or in a folder others may write, is warned about at
//! start with the `chmod` to run. Rotation by size (`--audit-max-bytes`) keeps one chain
//! that `audit verify` follows across the files.

use serde_json::{Value, json};
use switchboard_session::{CallOptions, Session};
use switchboard_testkit::wait::{self, TEST_DEADLINE, within};

use crate::serve::{GRACE, gateway_with_flags};
use crate::serve_http::HttpGateway;
use crate::{config, fixture_entry, scratch_dir, switchboard};

/// A value that must never reach the log.
const SECRET_ARGUMENT: &str = "the-argument-value-7f3a";

/// Makes these tool calls, one after another, whatever each gets.
async fn call_each<const N: usize>(session: &Session, calls: [(&str, Value); N]) {
    for (tool, arguments) in calls {
        let _ = within(
            "tools/call",
            TEST_DEADLINE,
            session.call_tool_raw(tool, Some(&arguments), &CallOptions::default()),
        )
        .await;
    }
}

/// The log's lines with the varying fields masked.
fn masked(text: &str) -> String {
    text.lines()
        .map(|line| {
            let mut fields: Value = serde_json::from_str(line).expect("a JSON line");
            for key in ["time", "hash", "prev", "durationMs"] {
                if let Some(value) = fields.get_mut(key) {
                    *value = json!("…");
                }
            }
            fields.to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn verify(path: &std::path::Path) -> String {
    let run = switchboard(&["audit", "verify", &path.display().to_string()]);
    let dir = path.parent().expect("a folder").display().to_string();
    format!(
        "exit {}: {}",
        run.code,
        run.stdout.replace(&dir, "DIR").trim_end()
    )
}

#[tokio::test]
async fn audit_log_records_calls_chained_and_verify_finds_edits_and_removals() {
    let dir = scratch_dir("serve-audit");
    let log = dir.join("audit.log");
    let log_flag = format!("--audit={}", log.display());
    let session = gateway_with_flags(json!({ "fx": fixture_entry(&[]) }), &[&log_flag]).await;
    call_each(
        &session,
        [
            ("fx__echo", json!({"text": SECRET_ARGUMENT})),
            ("fx__add", json!({"a": 2, "b": 3})),
            ("fx__no_such_tool", json!({})),
        ],
    )
    .await;
    let _ = within(
        "prompts/get",
        TEST_DEADLINE,
        session.get_prompt("fx__greet", Some(json!({"name": SECRET_ARGUMENT}))),
    )
    .await;
    session.shutdown(GRACE).await;

    let text = std::fs::read_to_string(&log).expect("the audit log");
    assert!(
        !text.contains(SECRET_ARGUMENT),
        "no argument value in the log: {text}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&log)
            .expect("metadata")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "the log is the owner's only");
    }
    expect_test::expect![[r#"
        {"time":"…","identity":"stdio","profile":"default","method":"tools/call","server":"fx","tool":"fx__echo","argumentsDigest":"sha256:0e09c7c24df388d14d062d5369dd5e9f6d67ae8ccd1945d3f2aefe9b6aac51d5","outcome":"ok","durationMs":"…","seq":1,"prev":"…","hash":"…"}
        {"time":"…","identity":"stdio","profile":"default","method":"tools/call","server":"fx","tool":"fx__add","argumentsDigest":"sha256:206f7b5543e6f2ef39bf334988fd7097b725caeed16588cd9d785480f2f0f8f6","outcome":"ok","durationMs":"…","seq":2,"prev":"…","hash":"…"}
        {"time":"…","identity":"stdio","profile":"default","method":"tools/call","server":null,"tool":"fx__no_such_tool","argumentsDigest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","code":-32602,"outcome":"error","durationMs":"…","seq":3,"prev":"…","hash":"…"}
        {"time":"…","identity":"stdio","profile":"default","method":"prompts/get","server":"fx","tool":"fx__greet","argumentsDigest":"sha256:c44d5634f618aaa2fe9c4cb51996b9a78ebbfc1e49e7aaa4990df668d07d6091","outcome":"ok","durationMs":"…","seq":4,"prev":"…","hash":"…"}"#]].assert_eq(&masked(&text));
    expect_test::expect!["exit 0: 4 lines, chain intact"].assert_eq(&verify(&log));

    let lines: Vec<&str> = text.lines().collect();
    let edited = dir.join("edited.log");
    let mut changed: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
    changed[1] = changed[1].replace("\"fx\"", "\"other\"");
    std::fs::write(&edited, changed.join("\n") + "\n").expect("write");
    let removed = dir.join("removed.log");
    let mut fewer: Vec<&str> = lines.clone();
    fewer.remove(1);
    std::fs::write(&removed, fewer.join("\n") + "\n").expect("write");
    let first_removed = dir.join("first-removed.log");
    std::fs::write(&first_removed, lines[1..].join("\n") + "\n").expect("write");
    let not_json = dir.join("not-json.log");
    std::fs::write(&not_json, format!("{}\nnot json\n", lines[0])).expect("write");
    expect_test::expect![[r#"
        exit 1: chain broken: DIR/edited.log line 2: edited: its hash does not match its content
        exit 1: chain broken: DIR/removed.log line 2: does not follow the line before it (seq 3 after 1): a line was removed or the lines were reordered
        exit 1: chain broken: DIR/first-removed.log line 1: the chain does not start here (seq 2): the lines before it were removed
        exit 1: chain broken: DIR/not-json.log line 2: not a JSON object"#]].assert_eq(
        &[&edited, &removed, &first_removed, &not_json]
            .iter()
            .map(|path| verify(path))
            .collect::<Vec<_>>()
            .join("\n"),
    );
}

#[test]
fn over_http_a_bearer_client_is_recorded_as_bearer_without_its_token() {
    let dir = scratch_dir("serve-audit-http");
    let log = dir.join("audit.log");
    let log_flag = format!("--audit={}", log.display());
    let gateway = HttpGateway::start(
        &config(json!({ "fx": fixture_entry(&[]) })),
        &["--bearer-token-env", "SB_TEST_TOKEN", &log_flag],
        &[("SB_TEST_TOKEN", "tok-audit-123")],
    );
    let client = config(json!({ "gw": {
        "url": gateway.url(), "era": "modern", "headers": {"Authorization": "Bearer tok-audit-123"}
    }}));
    let call = switchboard(&[
        "call",
        "--config",
        &client.display().to_string(),
        "gw",
        "fx__add",
        r#"{"a": 40, "b": 2}"#,
    ]);
    assert_eq!(call.code, 0, "{}", call.stderr);
    let text = wait::until("the call's audit line", TEST_DEADLINE, || {
        std::fs::read_to_string(&log)
            .ok()
            .filter(|text| text.lines().count() >= 1)
    });
    assert!(
        !text.contains("tok-audit-123"),
        "no token in the log: {text}"
    );
    expect_test::expect![[r#"{"time":"…","identity":"bearer","profile":"default","method":"tools/call","server":"fx","tool":"fx__add","argumentsDigest":"sha256:9d4b5019c4ffade7c5beef3bd7e8fb3796c3cd3ebc9626506b066f80b7b5230d","outcome":"ok","durationMs":"…","seq":1,"prev":"…","hash":"…"}"#]].assert_eq(&masked(&text));
}

/// `method tool: outcome` of each call line of the log.
fn outcomes(text: &str) -> String {
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|fields| fields.get("method").is_some())
        .map(|fields| {
            format!(
                "{} {}: {}",
                fields["method"].as_str().unwrap_or("?"),
                fields["tool"].as_str().unwrap_or("-"),
                fields["outcome"].as_str().unwrap_or("?")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(unix)]
fn set_mode(path: &std::path::Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

#[cfg(unix)]
#[tokio::test]
async fn a_withheld_result_is_recorded_as_withheld_and_a_log_open_to_others_is_warned_about() {
    let dir = scratch_dir("serve-audit-guard");
    let log = dir.join("audit.log");
    // A log that exists, readable by everyone, in a folder its group may write.
    std::fs::write(&log, "").expect("create the log");
    set_mode(&log, 0o644);
    set_mode(&dir, 0o775);
    let log_flag = format!("--audit={}", log.display());
    let session =
        gateway_with_flags(json!({ "fx": fixture_entry(&[]) }), &["--guard", &log_flag]).await;
    call_each(
        &session,
        [
            ("fx__echo", json!({"text": crate::serve_guard::ORDER})),
            ("fx__echo", json!({"text": "the weather is mild"})),
            ("fx__fail", json!({})),
        ],
    )
    .await;
    let stderr = crate::support::stderr_of(&session);
    session.shutdown(GRACE).await;
    set_mode(&dir, 0o755);
    let text = std::fs::read_to_string(&log).expect("the audit log");
    let warnings: Vec<String> = stderr
        .lines()
        .filter(|line| line.contains("warning: the audit log"))
        .map(|line| line.replace(&dir.display().to_string(), "DIR"))
        .collect();
    expect_test::expect![[r#"
        switchboard serve: warning: the audit log DIR/audit.log is open to others (mode 644); run `chmod 600 DIR/audit.log`
        switchboard serve: warning: the audit log's folder DIR is writable by others (mode 775), who could remove or replace the log; run `chmod go-w DIR`
        tools/call fx__echo: withheld
        tools/call fx__echo: ok
        tools/call fx__fail: tool-error"#]].assert_eq(&format!(
        "{}\n{}",
        warnings.join("\n"),
        outcomes(&text)
    ));
}

#[test]
fn rotation_by_size_keeps_one_chain_that_verify_follows_across_the_files() {
    let dir = scratch_dir("serve-audit-rotation");
    let log = dir.join("audit.log");
    let log_flag = format!("--audit={}", log.display());
    let gateway = HttpGateway::start(
        &config(json!({ "fx": fixture_entry(&[]) })),
        &[&log_flag, "--audit-max-bytes", "4096"],
        &[],
    );
    // Thirty calls of about 370 bytes each: three or four files of 4096 bytes (six are kept).
    let client = config(json!({ "gw": { "url": gateway.url(), "era": "modern" }}));
    let client = client.display().to_string();
    const CALLS: usize = 30;
    for n in 0..CALLS {
        let arguments = format!(r#"{{"a": {n}, "b": 1}}"#);
        let call = switchboard(&["call", "--config", &client, "gw", "fx__add", &arguments]);
        assert_eq!(call.code, 0, "{}", call.stderr);
    }
    let calls_written = || {
        let mut files: Vec<std::path::PathBuf> = (1..=5)
            .rev()
            .map(|n| dir.join(format!("audit.log.{n}")))
            .filter(|file| file.exists())
            .collect();
        files.push(log.clone());
        let calls = files
            .iter()
            .filter_map(|file| std::fs::read_to_string(file).ok())
            .map(|text| text.matches("\"method\"").count())
            .sum::<usize>();
        (calls == CALLS).then_some(files)
    };
    let files = wait::until("every call's audit line", TEST_DEADLINE, calls_written);
    assert!(files.len() >= 3, "rotated at least twice: {files:?}");
    for (n, file) in files.iter().enumerate() {
        let text = std::fs::read_to_string(file).expect("a log file");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(file)
                .expect("metadata")
                .permissions()
                .mode();
            assert_eq!(
                mode & 0o777,
                0o600,
                "{} is the owner's only",
                file.display()
            );
        }
        assert!(text.len() <= 4096, "{} is within the size", file.display());
        let first: Value = serde_json::from_str(text.lines().next().unwrap_or("")).expect("JSON");
        // The oldest file starts with the first call, each newer one with a rotation line.
        assert_eq!(
            first.get("rotated").is_some(),
            n > 0,
            "{}: {first}",
            file.display()
        );
    }
    // The files oldest first: one chain, every call and each rotation line in it.
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let mut args = vec!["audit", "verify"];
    args.extend(names.iter().map(String::as_str));
    let run = switchboard(&args);
    assert_eq!(
        run.stdout.trim_end(),
        format!("{} lines, chain intact", CALLS + files.len() - 1),
        "{}",
        run.stderr
    );
    assert_eq!(run.code, 0);
    // The newest file alone is told intact from its rotation on.
    let newest = switchboard(&["audit", "verify", &names[names.len() - 1]]);
    let said = newest.stdout.trim_end();
    let counted = said.trim_start_matches(|c: char| c.is_ascii_digit());
    expect_test::expect![
        "exit 0: N lines, chain intact (it continues a rotated file not given here)"
    ]
    .assert_eq(&format!("exit {}: N{counted}", newest.code));
}
