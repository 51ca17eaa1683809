//! What a person sees: a long call's progress drawn on a real terminal (a tmux pane, its
//! screen read with `capture-pane`), coloured unless `NO_COLOR`; and on a pipe neither
//! progress nor escape codes unless `CLICOLOR_FORCE` asks for colour.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use switchboard_testkit::locate::workspace_root;
use switchboard_testkit::wait;

use crate::{config, empty_home, fixture_entry, switchboard_with_env};

/// How long a screen may take to show what a test waits for.
const SCREEN_DEADLINE: Duration = Duration::from_secs(30);

fn fixture_config() -> String {
    let path = config(serde_json::json!({ "fx": fixture_entry(&[]) }));
    path.to_str().expect("utf-8 path").to_owned()
}

/// The tmux to drive: `scripts/peers.sh`'s unpacked one, else the system's.
fn tmux_bin() -> PathBuf {
    let unpacked = workspace_root().join("target/peers/debian/bin/tmux");
    if unpacked.exists() {
        return unpacked;
    }
    let system = PathBuf::from("tmux");
    let found = Command::new(&system)
        .arg("-V")
        .output()
        .is_ok_and(|out| out.status.success());
    assert!(
        found,
        "tmux is missing: run scripts/peers.sh (scripts/test.sh does)"
    );
    system
}

static SESSIONS: AtomicUsize = AtomicUsize::new(0);

/// A tmux server of our own (its own socket), one pane running a shell command; killed
/// when dropped.
struct Pane {
    tmux: PathBuf,
    socket: String,
}

/// Whether a capture shows the escape sequences of the text's attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Capture {
    Text,
    WithEscapes,
}

impl Pane {
    fn run(command: &str) -> Pane {
        let n = SESSIONS.fetch_add(1, Ordering::Relaxed);
        let pane = Pane {
            tmux: tmux_bin(),
            socket: format!("switchboard-test-{}-{n}", std::process::id()),
        };
        let started = pane.tmux(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-x",
            "150",
            "-y",
            "40",
            command,
        ]);
        assert!(
            started.status.success(),
            "tmux new-session: {}",
            String::from_utf8_lossy(&started.stderr)
        );
        pane
    }

    fn tmux(&self, args: &[&str]) -> Output {
        Command::new(&self.tmux)
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("run tmux")
    }

    fn capture(&self, capture: Capture) -> String {
        let mut args = vec!["capture-pane", "-p"];
        if capture == Capture::WithEscapes {
            args.push("-e");
        }
        String::from_utf8_lossy(&self.tmux(&args).stdout).into_owned()
    }

    /// Types `keys` into the pane (tmux key names: `Enter`, `Tab`, `C-c`; other words as
    /// text).
    fn send(&self, keys: &[&str]) {
        let mut args = vec!["send-keys"];
        args.extend_from_slice(keys);
        let sent = self.tmux(&args);
        assert!(
            sent.status.success(),
            "tmux send-keys: {}",
            String::from_utf8_lossy(&sent.stderr)
        );
    }

    /// The screen once `shown` holds for it; panics with the screen after the deadline.
    fn wait_for(&self, what: &str, shown: impl Fn(&str) -> bool) -> String {
        wait::try_until(SCREEN_DEADLINE, || {
            let screen = self.capture(Capture::Text);
            shown(&screen).then_some(screen)
        })
        .unwrap_or_else(|_| {
            panic!(
                "the screen never showed {what}:\n{}",
                self.capture(Capture::Text)
            )
        })
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
    }
}

/// The shell command for the pane: `switchboard ARGS` in a clean environment plus `env`,
/// then its exit code, then a pause that keeps the pane's screen.
fn pane_command(args: &str, env: &str) -> String {
    format!(
        "env -u NO_COLOR -u CLICOLOR_FORCE -u CLICOLOR -u SWITCHBOARD_CONFIG -u XDG_CONFIG_HOME \
         -u SWITCHBOARD_LOG -u SWITCHBOARD_TRACE SWITCHBOARD_ERA_MEMO=off HOME={home} {env} {bin} {args}; echo EXIT=$?; sleep 120",
        home = empty_home().display(),
        bin = env!("CARGO_BIN_EXE_switchboard"),
    )
}

const SLOW_CALL: &str = "call fx slow duration_ms=6000 steps=6";

#[test]
fn a_long_call_shows_the_servers_progress_on_a_terminal_in_colour() {
    let path = fixture_config();
    let pane = Pane::run(&pane_command(&format!("{SLOW_CALL} --config {path}"), ""));
    let screen = pane.wait_for("a progress line", |s| {
        s.contains("slow: ") && s.contains("/6 step")
    });
    assert!(
        screen
            .lines()
            .any(|l| l.contains("slow: ") && l.contains("/6 step"))
    );
    let styled = pane.capture(Capture::WithEscapes);
    assert!(
        styled.contains("\u{1b}["),
        "the bar is coloured:\n{styled:?}"
    );
    let done = pane.wait_for("the result", |s| s.contains("EXIT=0"));
    assert!(done.contains("done"), "{done}");
    assert!(
        !done.contains("/6 step"),
        "the progress line is cleared:\n{done}"
    );
}

#[test]
fn a_question_during_a_call_is_asked_field_by_field_on_a_terminal() {
    let path = config(serde_json::json!({ "fx": fixture_entry(&["--era", "modern"]) }));
    let path = path.to_str().expect("utf-8 path");
    let pane = Pane::run(&pane_command(
        &format!("call fx confirm 'question=Proceed?' --config {path}"),
        "",
    ));
    pane.wait_for("the question", |s| {
        s.contains("asks: Proceed?") && s.contains("ok [yes or no; required]:")
    });
    pane.send(&["maybe", "Enter"]);
    pane.wait_for("the hint", |s| s.contains("`maybe`: answer yes or no"));
    pane.send(&["yes", "Enter"]);
    let done = pane.wait_for("the result", |s| s.contains("EXIT="));
    assert!(
        done.contains(r#"answer: {"action":"accept","content":{"ok":true}}"#),
        "{done}"
    );
    assert!(done.contains("EXIT=0"), "{done}");
}

/// A text resource that does not end its last line gets one on a terminal (so what follows
/// starts a line of its own) and exactly its bytes on a pipe.
#[test]
fn read_ends_the_text_with_a_newline_on_a_terminal_only() {
    let path = fixture_config();
    let pane = Pane::run(&pane_command(
        &format!("read fx fixture://readme --config {path}"),
        "",
    ));
    let done = pane.wait_for("the exit", |s| s.contains("EXIT="));
    assert!(
        done.lines().any(|line| line.trim_end() == "EXIT=0"),
        "the next output starts a line of its own:\n{done}"
    );
    let piped = crate::switchboard(&["read", "--config", &path, "fx", "fixture://readme"]);
    assert_eq!(piped.code, 0, "{}", piped.stderr);
    assert!(!piped.stdout.ends_with('\n'), "{:?}", piped.stdout);
}

#[test]
fn no_color_keeps_every_escape_code_off_the_terminal() {
    let path = fixture_config();
    let pane = Pane::run(&pane_command(
        &format!("{SLOW_CALL} --config {path}"),
        "NO_COLOR=1 SWITCHBOARD_LOG=debug",
    ));
    pane.wait_for("a progress line", |s| s.contains("/6 step"));
    assert_plain("during the call", &pane.capture(Capture::WithEscapes));
    pane.wait_for("the result", |s| s.contains("EXIT=0"));
    let after = pane.capture(Capture::WithEscapes);
    assert!(
        after.contains("DEBUG"),
        "the debug logs are shown:\n{after}"
    );
    assert_plain("after the call", &after);
}

/// A screen (captured with its escapes) with no escape code on it.
fn assert_plain(when: &str, screen: &str) {
    assert!(
        !screen.contains('\u{1b}'),
        "escape codes {when} with NO_COLOR:\n{screen:?}"
    );
}

#[test]
fn piped_stderr_gets_neither_progress_nor_colour_unless_forced() {
    let path = fixture_config();
    let call = [
        "call",
        "fx",
        "slow",
        "duration_ms=300",
        "steps=3",
        "--config",
        &path,
    ];
    let quiet = switchboard_with_env(&call, &[]);
    assert_eq!(quiet.code, 0, "{}", quiet.stderr);
    assert_eq!(quiet.stderr, "", "no progress on a pipe");
    let logged = switchboard_with_env(&call, &[("SWITCHBOARD_LOG", "debug")]);
    assert!(logged.stderr.contains("DEBUG"), "{}", logged.stderr);
    assert!(!logged.stderr.contains('\u{1b}'), "{:?}", logged.stderr);
    let forced = switchboard_with_env(
        &call,
        &[("SWITCHBOARD_LOG", "debug"), ("CLICOLOR_FORCE", "1")],
    );
    assert!(
        forced.stderr.contains("\u{1b}[34mDEBUG\u{1b}[0m"),
        "CLICOLOR_FORCE colours the level: {:?}",
        forced.stderr
    );
    assert!(
        !forced.stderr.contains("/3 step"),
        "still no progress on a pipe"
    );
}

/// The screen's lines, trailing blanks trimmed.
fn lines(screen: &str) -> Vec<&str> {
    screen.lines().map(str::trim_end).collect()
}

#[test]
fn the_shell_keeps_the_server_and_completes_tool_names_and_keys() {
    let path = fixture_config();
    let state = workspace_root().join("target/cli-tests/shell-state");
    let pane = Pane::run(&pane_command(
        &format!("shell --config {path}"),
        &format!("XDG_STATE_HOME={}", state.display()),
    ));
    pane.wait_for("the server ready and the prompt", |s| {
        s.contains("`fx` is ready: 6 tool(s)") && s.contains("switchboard>")
    });
    pane.send(&["tools", "Enter"]);
    pane.wait_for("the tools", |s| {
        s.contains("fx: 6 tools") && s.contains("change_tools")
    });
    pane.send(&["call fx add a=2 b=3", "Enter"]);
    pane.wait_for("the sum", |s| lines(s).contains(&"5"));
    pane.send(&["call fx ec", "Tab"]);
    pane.wait_for("the tool name completed", |s| {
        s.contains("switchboard> call fx echo")
    });
    pane.send(&["te", "Tab"]);
    pane.wait_for("the argument key completed", |s| {
        s.contains("switchboard> call fx echo text=")
    });
    pane.send(&["hi", "Enter"]);
    pane.wait_for("the echo", |s| lines(s).contains(&"hi"));
    pane.send(&["call fx slow duration_ms=60000 steps=60", "Enter"]);
    pane.wait_for("the slow call's progress", |s| s.contains("/60 step"));
    pane.send(&["C-c"]);
    pane.wait_for("the call cancelled and a new prompt", |s| {
        s.contains("`tools/call` on server `fx` was cancelled")
            && lines(s).last_non_blank() == Some("switchboard>")
    });
    pane.send(&["call fx add a=1 b=1", "Enter"]);
    pane.wait_for("the server still there after Ctrl-C", |s| {
        lines(s).contains(&"2")
    });
    pane.send(&["exit", "Enter"]);
    let done = pane.wait_for("the shell ended", |s| s.contains("EXIT=0"));
    assert!(!done.contains("panicked"), "{done}");
    let history = std::fs::read_to_string(state.join("switchboard/history")).expect("history file");
    assert!(history.contains("call fx add a=2 b=3\n"), "{history}");
}

/// The last line of a screen that is not blank.
trait LastNonBlank<'a> {
    fn last_non_blank(&self) -> Option<&'a str>;
}

impl<'a> LastNonBlank<'a> for Vec<&'a str> {
    fn last_non_blank(&self) -> Option<&'a str> {
        self.iter().rev().find(|l| !l.is_empty()).copied()
    }
}

#[test]
fn the_shells_history_is_private_and_keeps_no_secret_argument() {
    use std::os::unix::fs::PermissionsExt;
    let path = fixture_config();
    let state = workspace_root().join(format!(
        "target/cli-tests/shell-history-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&state);
    let pane = Pane::run(&pane_command(
        &format!("shell --config {path}"),
        &format!("XDG_STATE_HOME={}", state.display()),
    ));
    pane.wait_for("the server ready and the prompt", |s| {
        s.contains("`fx` is ready: 6 tool(s)") && s.contains("switchboard>")
    });
    pane.send(&["call --no-check fx echo text=one api_key=sekrit-1", "Enter"]);
    // The fixture refuses the extra argument: the line is in the history all the same.
    pane.wait_for("the first call refused", |s| {
        s.contains("unknown field `api_key`")
    });
    pane.send(&[
        r#"call --no-check fx echo '{"text": "two", "githubToken": "sekrit-2", "nested": {"password": "sekrit-3"}}'"#,
        "Enter",
    ]);
    pane.wait_for("the second call refused", |s| {
        s.contains("unknown field `githubToken`")
    });
    pane.send(&["call fx echo text=keyboard-is-no-key", "Enter"]);
    pane.wait_for("the third echo", |s| {
        lines(s).contains(&"keyboard-is-no-key")
    });
    pane.send(&["exit", "Enter"]);
    pane.wait_for("the shell ended", |s| s.contains("EXIT=0"));
    let folder = state.join("switchboard");
    let file = folder.join("history");
    let history = std::fs::read_to_string(&file).expect("history file");
    let mode =
        |p: &std::path::Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
    expect_test::expect![[r#"
        call --no-check fx echo text=one 'api_key=<not kept>'
        call --no-check fx echo '{"text":"two","githubToken":"<not kept>","nested":{"password":"<not kept>"}}'
        call fx echo text=keyboard-is-no-key
        exit
        --- modes: folder 700, file 600
    "#]]
    .assert_eq(&format!(
        "{history}--- modes: folder {:o}, file {:o}\n",
        mode(&folder),
        mode(&file)
    ));
    let _ = std::fs::remove_dir_all(&state);
}
