//! `switchboard shell` without a terminal: commands piped on stdin are run one after the
//! other on one connection (no prompt, no escape codes), and the server is stopped at the
//! end of stdin.

use std::io::Write;
use std::process::{Command, Stdio};

use switchboard_testkit::wait::TEST_DEADLINE;

use crate::descendants::{running_named, unique_name};
use crate::{config, empty_home, fixture_entry};

#[test]
fn piped_commands_run_on_one_connection_and_the_server_is_stopped_at_the_end() {
    let name = unique_name("shell");
    let path = config(serde_json::json!({ "fx": fixture_entry(&["--name", &name]) }));
    let mut child = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["shell", "--config", path.to_str().expect("utf-8 path")])
        .env("HOME", empty_home())
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("SWITCHBOARD_CONFIG")
        .env_remove("SWITCHBOARD_LOG")
        .env("SWITCHBOARD_ERA_MEMO", "off")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn switchboard shell");
    let commands = "tools add\n\
                    call fx add a=2 b=3\n\
                    call add a=4 b=5\n\
                    call fx add a=1 b=two\n\
                    call fx nope\n\
                    prompt greet name=Ada\n\
                    \n\
                    frobnicate\n\
                    call fx echo text=\"two words\"\n";
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(commands.as_bytes())
        .expect("write the commands");
    let started = std::time::Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > TEST_DEADLINE {
            let _ = child.kill();
            panic!("the shell did not end at the end of its stdin");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let output = child.wait_with_output().expect("output");
    let stdout = String::from_utf8_lossy(&output.stdout).replace(&name, "$NAME");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!stdout.contains('\u{1b}') && !stderr.contains('\u{1b}'));
    expect_test::expect![[r#"
        fx / add
          Adds two integers.
        annotations: readOnlyHint: true
        input:
          a: integer (required) — First addend.
          b: integer (required) — Second addend.
        output:
          sum: integer (required)
        5
        9
        Greets someone by name.

        [user] Hello, Ada!
        two words
    "#]]
    .assert_eq(&stdout);
    expect_test::expect![[r#"
        switchboard: `fx` is ready: 6 tool(s)
        switchboard: tool `add`: `b` expects an integer, got `two`
        switchboard: server `fx` has no tool `nope`; its tools: echo, add, slow, fail, image, change_tools
        switchboard: no command `frobnicate`; `help` lists them
    "#]].assert_eq(&stderr);
    assert_eq!(running_named(&name), Vec::new(), "the server is gone");
}
