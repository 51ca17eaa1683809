//! Shell completion, by clap_complete's dynamic engine. `switchboard completions SHELL`
//! prints the shell's registration script; on every Tab the script runs
//! `COMPLETE=SHELL switchboard -- WORDS…`, which `main` answers before anything else
//! ([`answer_if_asked`]): the verbs, flags and flag values from the command's own
//! definition, files for `--config` and the other paths, and for every SERVER position
//! the names of the servers the configuration discovery finds ([`server_names`]).
//!
//! A Tab never starts a server and never waits long: the names come from reading the
//! config files only (`$SWITCHBOARD_CONFIG`, the project's, the user's: discovery's
//! places, `--config` on the line is not seen), on a thread given [`NAMES_WAIT`], after
//! which no names are offered. Nothing is written to stderr, and a name a terminal would
//! not show as it is (control or bidi characters: a project file comes with whatever
//! repository holds it) is not offered.

use std::ffi::OsString;
use std::sync::mpsc;
use std::time::Duration;

use clap_complete::env::{Bash, Elvish, EnvCompleter, Fish, Powershell, Zsh};
use clap_complete::{CompleteEnv, CompletionCandidate, Shell};
use switchboard_config::ProcessEnv;
use switchboard_config::discover::{self, Places};

/// The variable the registration scripts set to ask for completions.
const COMPLETE_VAR: &str = "COMPLETE";

/// Longest a Tab waits for the config files to be read.
pub(crate) const NAMES_WAIT: Duration = Duration::from_millis(1500);

/// Answers the shell and exits when it asks for completions (`COMPLETE` set); returns
/// otherwise. Runs before anything is written.
pub(crate) fn answer_if_asked(command: fn() -> clap::Command) {
    CompleteEnv::with_factory(command)
        .var(COMPLETE_VAR)
        .complete();
}

/// The registration script for `shell`: the completion function, which calls this program
/// (as it was called now: by name through `PATH`, or by its path) on every Tab.
pub(crate) fn script(shell: Shell, command: &clap::Command) -> Result<Vec<u8>, String> {
    let completer: &dyn EnvCompleter = match shell {
        Shell::Bash => &Bash,
        Shell::Elvish => &Elvish,
        Shell::Fish => &Fish,
        Shell::PowerShell => &Powershell,
        Shell::Zsh => &Zsh,
        // A shell clap_complete names that its dynamic engine does not serve (yet).
        other => return Err(format!("no completion for {other} yet")),
    };
    let name = command.get_name();
    let mut script = Vec::new();
    completer
        .write_registration(
            COMPLETE_VAR,
            name,
            name,
            &this_program().to_string_lossy(),
            &mut script,
        )
        .map_err(|e| format!("cannot write the {shell} completion script: {e}"))?;
    Ok(script)
}

/// This program as it was called: a bare name stays one (found through `PATH` at each
/// Tab), a relative path is made absolute.
fn this_program() -> OsString {
    let called = std::env::args_os()
        .next()
        .unwrap_or_else(|| "switchboard".into());
    let path = std::path::Path::new(&called);
    if path.components().count() > 1
        && path.is_relative()
        && let Ok(dir) = std::env::current_dir()
    {
        return dir.join(path).into_os_string();
    }
    called
}

/// The names of the servers discovery finds, for a SERVER position; none when the files
/// are not read within [`NAMES_WAIT`].
pub(crate) fn server_names() -> Vec<CompletionCandidate> {
    let (found, names) = mpsc::channel();
    // The thread is left behind if it hangs (a FIFO named as the config): the completion
    // process exits right after answering.
    let started = std::thread::Builder::new()
        .name("switchboard-complete".to_owned())
        .spawn(move || {
            let _ = found.send(discovered_names());
        });
    if started.is_err() {
        return Vec::new();
    }
    names
        .recv_timeout(NAMES_WAIT)
        .unwrap_or_default()
        .into_iter()
        .map(CompletionCandidate::new)
        .collect()
}

/// Every server name the discovered files define (usable or not, trusted or not: `config
/// trust NAME` and `config show NAME` take those too), first definition first.
fn discovered_names() -> Vec<String> {
    let Ok(cwd) = std::env::current_dir() else {
        return Vec::new();
    };
    let places = Places::from_vars(&cwd, &ProcessEnv);
    discover::discover(&places, &ProcessEnv)
        .servers
        .iter()
        .map(|found| found.name().to_owned())
        .filter(|name| !name.chars().any(switchboard_text::peer_text::needs_escape))
        .collect()
}
