//! `switchboard completions SHELL`: a script for each shell, on stdout as generated.

use crate::switchboard;

#[test]
fn each_shell_gets_its_completion_script() {
    for shell in ["bash", "zsh", "fish", "powershell"] {
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
    }
    let bash = switchboard(&["completions", "bash"]);
    for verb in ["tools", "call", "--trace", "--config"] {
        assert!(bash.stdout.contains(verb), "bash completes {verb}");
    }
    let unknown = switchboard(&["completions", "tcsh"]);
    assert_eq!(unknown.code, 2, "{}", unknown.stderr);
}
