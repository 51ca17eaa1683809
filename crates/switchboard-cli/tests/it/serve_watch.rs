//! `switchboard serve --watch`: editing the config file reaches the running gateway's
//! client as `list_changed` and new tools; a broken edit is reported and changes nothing.
//! Without `--config`, the files discovery reads are followed: a user file's edit, a project
//! file that appears (its server once trusted), and not a file that defines no server.

use std::path::{Path, PathBuf};

use expect_test::expect;
use serde_json::{Value, json};
use switchboard_wire::stdio::ShutdownStep;

use crate::fixture_entry;
use crate::serve::{
    GRACE, children_of, follow_tool_changes, gateway_discovering, gateway_for, tools_list_changed,
};
use crate::support::{stderr_with, tool_names};

/// A folder of its own (so the watched folder holds only this test's file) with `mcp.json`.
pub(crate) fn config_folder(name: &str) -> PathBuf {
    let dir = crate::workspace_root()
        .join("target")
        .join("cli-tests")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("mkdir");
    dir.join("mcp.json")
}

fn servers_text(servers: &Value) -> String {
    serde_json::to_string_pretty(&json!({ "mcpServers": servers })).expect("json")
}

/// Writes the file the way editors do: a new file beside it, renamed over it.
pub(crate) fn replace(path: &Path, text: &str) {
    let fresh = path.with_extension("json.tmp");
    std::fs::write(&fresh, text).expect("write the new file");
    std::fs::rename(&fresh, path).expect("rename it over the config");
}

/// The stderr lines that mention reloading, the config path spelled `<config>`.
fn reload_lines(stderr: &str, path: &Path) -> String {
    stderr
        .lines()
        .filter(|line| line.contains("reload") || line.contains("server `"))
        .map(|line| line.replace(&path.display().to_string(), "<config>") + "\n")
        .collect()
}

#[tokio::test]
async fn an_edited_config_reaches_the_client_and_a_broken_one_changes_nothing() {
    let path = config_folder("watch");
    let alpha = fixture_entry(&[]);
    std::fs::write(&path, servers_text(&json!({ "alpha": alpha }))).expect("write config");
    let session = gateway_for(&path, &["--watch"]).await;
    let before = tool_names(&session).await;
    assert_eq!(before.len(), 6, "alpha's tools: {before:?}");
    let pid = session.pid().expect("a stdio gateway has a pid");
    let first = children_of(pid);
    assert_eq!(first.len(), 1, "one fixture server runs: {first:?}");

    // A second server, written as editors do (new file, renamed over the old).
    let mut events = session.events();
    let _stream = follow_tool_changes(&session).await;
    replace(
        &path,
        &servers_text(&json!({ "alpha": alpha, "beta": fixture_entry(&[]) })),
    );
    tools_list_changed(&mut events).await;
    let after = tool_names(&session).await;
    assert!(before.iter().all(|t| after.contains(t)), "{after:?}");
    let added: Vec<&String> = after.iter().filter(|t| !before.contains(t)).collect();
    expect![[r#"
        [
            "beta__add",
            "beta__change_tools",
            "beta__echo",
            "beta__fail",
            "beta__image",
            "beta__slow",
        ]
    "#]]
    .assert_debug_eq(&added);

    let both = children_of(pid);
    assert!(
        both.len() == 2 && both.contains(&first[0]),
        "alpha kept running beside the new beta: {first:?} then {both:?}"
    );

    // A file that no longer parses (written in place): reported with file and line, and
    // both servers are still served.
    std::fs::write(&path, "{\n  \"mcpServers\": {\n    \"alpha\": [\n").expect("write");
    stderr_with(&session, "is not reloaded", 1).await;
    // A bad entry is reported with its line too, and the running set stays.
    replace(
        &path,
        &servers_text(&json!({ "alpha": alpha, "gamma": {"command": 7} })),
    );
    let stderr = stderr_with(&session, "is not reloaded", 2).await;
    expect![[r#"
        switchboard serve: config reloaded: added beta; removed none; restarted none; kept alpha
        switchboard serve: <config>:4:1: invalid JSON: EOF while parsing a list at line 4 column 0; the config is not reloaded, the running servers stay
        switchboard serve: <config>:7: server `gamma`: `command` must be a string
        switchboard serve: the config is not reloaded, the running servers stay
    "#]].assert_eq(&reload_lines(&stderr, &path));
    assert_eq!(
        tool_names(&session).await.len(),
        12,
        "both servers are still served"
    );
    assert_eq!(children_of(pid), both, "and neither was restarted");

    // The watcher ends with the gateway: stdin EOF still stops it promptly.
    let report = session.shutdown(GRACE).await;
    let report = report.expect("a stdio gateway has a process");
    assert_eq!(
        (&report.step, report.descendants_killed),
        (&ShutdownStep::StdinClosed, 0),
        "the gateway exits on stdin EOF and leaves nothing behind: {report:?}"
    );
}

#[tokio::test]
async fn without_config_the_discovered_files_are_followed_and_trust_lets_a_project_server_in() {
    let dir = crate::scratch_dir("watch-discovered");
    let (home, project) = (dir.join("home"), dir.join("project"));
    let user_file = home.join(".config/switchboard/mcp.json");
    std::fs::create_dir_all(user_file.parent().expect("a folder")).expect("mkdir");
    std::fs::create_dir_all(&project).expect("mkdir");
    let alpha = fixture_entry(&[]);
    std::fs::write(&user_file, servers_text(&json!({ "alpha": alpha }))).expect("write");
    let home_text = home.to_str().expect("utf-8 path");
    let session = gateway_discovering(&project, &["--watch"], &[("HOME", home_text)]).await;
    assert_eq!(tool_names(&session).await.len(), 6, "alpha's tools");
    let mut events = session.events();
    let _stream = follow_tool_changes(&session).await;

    // Another program's file that defines no server changes nothing; the user's file gains
    // a server.
    std::fs::write(home.join(".claude.json"), r#"{"numStartups": 3}"#).expect("write");
    replace(
        &user_file,
        &servers_text(&json!({ "alpha": alpha, "beta": fixture_entry(&[]) })),
    );
    tools_list_changed(&mut events).await;
    assert_eq!(tool_names(&session).await.len(), 12, "alpha's and beta's");

    // A project file appears: its server waits for trust, then starts.
    replace(
        &project.join(".mcp.json"),
        &servers_text(&json!({ "gamma": fixture_entry(&[]) })),
    );
    stderr_with(&session, "`gamma` is left out", 1).await;
    let mut trust = std::process::Command::new(env!("CARGO_BIN_EXE_switchboard"));
    trust
        .args(["config", "trust", "gamma"])
        .current_dir(&project)
        .env("HOME", &home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("SWITCHBOARD_CONFIG");
    let trusted = crate::run_bounded(trust, "switchboard config trust gamma");
    assert_eq!(trusted.code, 0, "{}", trusted.stderr);
    tools_list_changed(&mut events).await;
    let names = tool_names(&session).await;
    assert!(names.contains(&"gamma__echo".to_owned()), "{names:?}");

    // A user file that no longer parses changes nothing.
    std::fs::write(&user_file, "{\n  \"mcpServers\": {\n").expect("write");
    let stderr = stderr_with(&session, "is not reloaded", 1).await;
    assert_eq!(
        tool_names(&session).await.len(),
        18,
        "all three still served"
    );
    let shown: String = stderr
        .lines()
        .filter(|line| line.contains("reload") || line.contains("left out"))
        .map(|line| {
            let line = line.replace(&home.display().to_string(), "~");
            line.replace(&project.display().to_string(), ".") + "\n"
        })
        .collect();
    expect![[r#"
        switchboard serve: config reloaded: added beta; removed none; restarted none; kept alpha
        switchboard serve: `gamma` is left out: defined in a project file and not trusted yet; run `switchboard config trust gamma` to let it start
        switchboard serve: config reloaded: added gamma; removed none; restarted none; kept alpha, beta
        switchboard serve: ~/.config/switchboard/mcp.json:3:1: invalid JSON: EOF while parsing an object at line 3 column 0; the config is not reloaded, the running servers stay
    "#]]
    .assert_eq(&shown);
    let report = session.shutdown(GRACE).await;
    assert!(report.is_some(), "a stdio gateway has a process");
}
