//! `switchboard shell` without a terminal: commands piped on stdin are run one after the
//! other on one connection (no prompt, no escape codes), the server is stopped at the end
//! of stdin, a server that dies is said and started again by `reconnect`, and the shell
//! exits with its last command's status.

use std::io::{Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Instant;

use switchboard_testkit::wait::{self, TEST_DEADLINE};

use crate::descendants::{running_named, unique_name};
use crate::{config, fixture_entry, isolated_switchboard};

/// `switchboard shell --config PATH` fed `commands`, its stdin then closed (bounded).
pub(crate) fn piped(config: &std::path::Path, commands: &str) -> crate::Run {
    let mut shell = PipedShell::start(config);
    shell.send(commands);
    let ended = shell.end();
    crate::Run {
        code: ended.code.unwrap_or(-1),
        stdout: ended.stdout,
        stderr: ended.stderr,
    }
}

/// A `switchboard shell --config PATH` whose stdin is a pipe the test writes commands to.
pub(crate) struct PipedShell {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: mpsc::Receiver<Vec<u8>>,
    seen: Vec<u8>,
}

/// What the shell printed and how it ended.
pub(crate) struct Ended {
    pub(crate) code: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl PipedShell {
    pub(crate) fn start(config: &std::path::Path) -> PipedShell {
        PipedShell::start_with_env(config, &[])
    }

    /// The shell with extra environment variables.
    pub(crate) fn start_with_env(config: &std::path::Path, env: &[(&str, &str)]) -> PipedShell {
        let mut child = isolated_switchboard()
            .args(["shell", "--config", config.to_str().expect("utf-8 path")])
            .envs(env.iter().copied())
            .env_remove("SWITCHBOARD_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn switchboard shell");
        let mut out = child.stdout.take().expect("stdout");
        let (chunks, stdout) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(read @ 1..) = out.read(&mut buffer) {
                if chunks.send(buffer[..read].to_vec()).is_err() {
                    break;
                }
            }
        });
        PipedShell {
            stdin: child.stdin.take(),
            child,
            stdout,
            seen: Vec::new(),
        }
    }

    pub(crate) fn send(&mut self, commands: &str) {
        self.stdin
            .as_mut()
            .expect("stdin still open")
            .write_all(commands.as_bytes())
            .expect("write the commands");
    }

    /// Waits (bounded) until stdout has printed `text` since the start.
    pub(crate) fn wait_for(&mut self, text: &str) {
        let deadline = Instant::now() + TEST_DEADLINE;
        while !String::from_utf8_lossy(&self.seen).contains(text) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stdout.recv_timeout(left) {
                Ok(chunk) => self.seen.extend(chunk),
                Err(_) => {
                    let _ = self.child.kill();
                    panic!(
                        "the shell did not print {text:?}; it printed {:?}",
                        String::from_utf8_lossy(&self.seen)
                    );
                }
            }
        }
    }

    /// Closes stdin and waits (bounded) for the shell to end.
    pub(crate) fn end(mut self) -> Ended {
        drop(self.stdin.take());
        let status = wait::exited(
            "the shell to end at the end of its stdin",
            TEST_DEADLINE,
            &mut self.child,
        );
        // The reader thread ends with the pipe: what is left is a bounded drain.
        while let Ok(chunk) = self.stdout.recv_timeout(TEST_DEADLINE) {
            self.seen.extend(chunk);
        }
        let mut stderr = Vec::new();
        if let Some(mut pipe) = self.child.stderr.take() {
            pipe.read_to_end(&mut stderr).expect("read stderr");
        }
        let ended = Ended {
            code: status.code(),
            stdout: String::from_utf8_lossy(&self.seen).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        };
        assert!(
            !ended.stdout.contains('\u{1b}') && !ended.stderr.contains('\u{1b}'),
            "no escape codes without a terminal"
        );
        ended
    }
}

#[test]
fn piped_commands_run_on_one_connection_and_the_server_is_stopped_at_the_end() {
    let name = unique_name("shell");
    let path = config(serde_json::json!({ "fx": fixture_entry(&["--name", &name]) }));
    let mut shell = PipedShell::start(&path);
    shell.send(
        "tools add\n\
         call fx add a=2 b=3\n\
         call add a=4 b=5\n\
         call fx add a=1 b=two\n\
         call fx nope\n\
         prompt greet name=Ada\n\
         \n\
         frobnicate\n\
         call fx echo text=\"two words\"\n",
    );
    let ended = shell.end();
    let (stdout, stderr) = (ended.stdout.replace(&name, "$NAME"), ended.stderr);
    assert_eq!(ended.code, Some(0), "the last command went well: {stderr}");
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

#[test]
fn a_server_that_dies_is_said_and_reconnect_starts_it_again() {
    let name = unique_name("shell-dies");
    let path = config(serde_json::json!({ "fx": fixture_entry(&["--name", &name]) }));
    let out = switchboard_testkit::locate::workspace_root().join(format!(
        "target/cli-tests/shell-read-{}.txt",
        std::process::id()
    ));
    let mut shell = PipedShell::start(&path);
    shell.send("call fx add a=2 b=3\n");
    shell.wait_for("5\n");
    let pids: Vec<u32> = running_named(&name)
        .into_iter()
        .map(|(pid, _)| pid)
        .collect();
    assert_eq!(pids.len(), 1, "one server process: {pids:?}");
    for pid in &pids {
        let killed = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .expect("run kill");
        assert!(killed.success());
    }
    // The process table, not the shell, says when the server is gone.
    wait::until(
        "the killed server to leave the process table",
        TEST_DEADLINE,
        || running_named(&name).is_empty(),
    );
    shell.send(&format!(
        "call fx add a=1 b=1\n\
         reconnect fx\n\
         call --no-check fx add a=1 b=2\n\
         read fixture://readme --out {out}\n\
         call fx fail\n",
        out = out.display()
    ));
    let ended = shell.end();
    let written = std::fs::read_to_string(&out).expect("read --out wrote the file");
    let _ = std::fs::remove_file(&out);
    assert_eq!(written, "This is the Switchboard fixture server.");
    assert_eq!(
        ended.code,
        Some(1),
        "the last call's tool error: {}",
        ended.stderr
    );
    let stderr = ended.stderr.replace(&out.display().to_string(), "OUT");
    expect_test::expect![[r#"
        5
        3
        this tool always fails
    "#]]
    .assert_eq(&ended.stdout);
    expect_test::expect![[r#"
        switchboard: `fx` is ready: 6 tool(s)
        switchboard: server `fx`: the server process exited (signal: 9 (SIGKILL))
        switchboard: `fx` is not connected any more; `reconnect fx` starts it again
        switchboard: `fx` is ready: 6 tool(s)
        switchboard: --no-check: the arguments go as given; nothing is checked against the tool's schema
        switchboard: wrote 39 bytes of fixture://readme to OUT
        switchboard: tool `fail` on server `fx` reported an error
    "#]]
    .assert_eq(&stderr);
    assert_eq!(running_named(&name), Vec::new(), "the server is gone");
}

#[test]
fn call_finds_the_one_server_that_offers_the_tool() {
    let path = config(serde_json::json!({
        "fx": fixture_entry(&[]),
        "gx": fixture_entry(&["--mode", "sandbox-probe"]),
    }));
    let ended = piped(
        &path,
        "call sandbox_probe probe=read target=/dev/null\ncall echo text=hi\ncall nope\ncall gx echo text=named\n",
    );
    expect_test::expect![[r#"
        read /dev/null: allowed
        named
        --- stderr
        switchboard: `echo` is offered by fx, gx: name the server first
        switchboard: no server offers a tool `nope`; name the server first: one of fx, gx
    "#]]
    .assert_eq(&format!(
        "{}--- stderr\n{}",
        ended.stdout,
        ended
            .stderr
            .lines()
            .filter(|line| !line.contains("is ready"))
            .map(|line| format!("{line}\n"))
            .collect::<String>()
    ));
}
