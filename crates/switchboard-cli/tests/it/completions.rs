//! `switchboard completions SHELL`: a registration script for each shell, on stdout as
//! generated; bash running it completes verbs, flags, files and the discovered servers'
//! names, and a config that cannot be read in time leaves out only the names.

use std::path::Path;
use std::process::Command;

use serde_json::json;

use crate::{run_bounded, switchboard};

#[test]
fn each_shell_gets_its_completion_script() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let run = switchboard(&["completions", shell]);
        assert_eq!(run.code, 0, "{shell}: {}", run.stderr);
        assert_eq!(run.stderr, "", "{shell}");
        assert!(
            run.stdout.len() > 200,
            "{shell}: a script, not {:?}",
            run.stdout
        );
        assert!(
            !run.stdout.contains("\\u{"),
            "{shell}: the script is not sanitised"
        );
        assert!(
            run.stdout.contains(env!("CARGO_BIN_EXE_switchboard")),
            "{shell}: the script calls this program back"
        );
    }
    let unknown = switchboard(&["completions", "tcsh"]);
    assert_eq!(unknown.code, 2, "{}", unknown.stderr);
}

/// A home whose Switchboard config defines `alpha` and `beta`, and a project folder
/// defining `gamma` and a name a terminal would not show as it is.
fn configured_places(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = crate::scratch_dir(&format!("completions-{name}"));
    let home = dir.join("home");
    let user_file = home.join(".config/switchboard/mcp.json");
    std::fs::create_dir_all(user_file.parent().expect("a folder")).expect("mkdir");
    let user = json!({"mcpServers": {"alpha": {"command": "a"}, "beta": {"url": "http://127.0.0.1:9/mcp"}}});
    std::fs::write(&user_file, user.to_string()).expect("write the user's config");
    let project = dir.join("project");
    std::fs::create_dir_all(&project).expect("mkdir");
    let shared =
        json!({"mcpServers": {"gamma": {"command": "g"}, "evil\u{1b}[2J": {"command": "e"}}});
    std::fs::write(project.join(".mcp.json"), shared.to_string()).expect("write .mcp.json");
    (home, project)
}

/// What bash offers for `words` (the last one being completed), with the script
/// `switchboard completions bash` printed loaded, run in `cwd` with `HOME=home`.
fn bash_offers(home: &Path, cwd: &Path, env: &[(&str, &str)], words: &[&str]) -> Vec<String> {
    let script = switchboard(&["completions", "bash"]);
    assert_eq!(script.code, 0, "{}", script.stderr);
    let script_file = home.join("switchboard.bash");
    std::fs::write(&script_file, &script.stdout).expect("write the script");
    let quoted: Vec<String> = words
        .iter()
        .map(|word| format!("'{}'", word.replace('\'', "'\\''")))
        .collect();
    let current = quoted.last().cloned().unwrap_or_default();
    let previous = quoted
        .len()
        .checked_sub(2)
        .map(|at| quoted[at].clone())
        .unwrap_or_default();
    // As bash calls a completion function: COMP_WORDS, COMP_CWORD, then the command, the
    // word completed and the word before it.
    let program = format!(
        "source {script}\nCOMP_WORDS=({words})\nCOMP_CWORD={cword}\n\
         _clap_complete_switchboard switchboard {current} {previous}\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        script = script_file.display(),
        words = quoted.join(" "),
        cword = words.len() - 1,
    );
    let mut bash = Command::new("bash");
    bash.args(["--norc", "--noprofile", "-c", &program])
        .current_dir(cwd)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env(crate::NO_ERA_MEMO.0, crate::NO_ERA_MEMO.1)
        .envs(env.iter().copied());
    let run = run_bounded(bash, &format!("bash completing {words:?}"));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stderr, "", "a Tab writes nothing on the terminal");
    run.stdout
        .lines()
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn bash_completes_verbs_flags_files_and_the_discovered_servers() {
    let (home, project) = configured_places("bash");
    let offers = |words: &[&str]| bash_offers(&home, &project, &[], words).join(" ");
    let lines = [
        ("switchboard to", offers(&["switchboard", "to"])),
        (
            "switchboard tools ''",
            offers(&["switchboard", "tools", ""]),
        ),
        ("switchboard call b", offers(&["switchboard", "call", "b"])),
        (
            "switchboard serve --server ''",
            offers(&["switchboard", "serve", "--server", ""]),
        ),
        (
            "switchboard check --config .m",
            offers(&["switchboard", "check", "--config", ".m"]),
        ),
        ("switchboard --tr", offers(&["switchboard", "--tr"])),
        (
            "switchboard completions z",
            offers(&["switchboard", "completions", "z"]),
        ),
    ];
    let shown: Vec<String> = lines
        .iter()
        .map(|(typed, offered)| format!("{typed} -> {offered}"))
        .collect();
    expect_test::expect![[r#"
        switchboard to -> tools
        switchboard tools '' -> gamma alpha beta --config --trace --timeout --sandbox --json --url --env --header --help
        switchboard call b -> beta
        switchboard serve --server '' -> gamma alpha beta
        switchboard check --config .m -> .mcp.json
        switchboard --tr -> --trace
        switchboard completions z -> zsh"#]]
    .assert_eq(&shown.join("\n"));
}

#[test]
fn a_config_that_cannot_be_read_in_time_leaves_out_only_the_names() {
    let (home, project) = configured_places("fifo");
    // A FIFO nobody writes to: reading it never ends.
    let fifo = home.join("config.fifo");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("run mkfifo");
    assert!(made.success(), "mkfifo");
    let fifo = fifo.to_str().expect("utf-8 path");
    let offered = bash_offers(
        &home,
        &project,
        &[("SWITCHBOARD_CONFIG", fifo)],
        &["switchboard", "tools", ""],
    );
    assert!(
        !offered.iter().any(|o| o == "alpha"),
        "no names: {offered:?}"
    );
    assert!(
        offered.iter().any(|o| o == "--config"),
        "the flags still: {offered:?}"
    );
}
