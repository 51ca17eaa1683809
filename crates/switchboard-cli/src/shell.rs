//! `switchboard shell [SERVER]`: an interactive session that keeps its servers connected
//! between commands. The commands run the one-shot verbs' own functions (`tools`, `call`,
//! `prompts`, …) on the sessions already open, so they print exactly what the verbs print.
//!
//! Lines come from a reader thread: on a terminal the line editor (`terminal::LineEditor`:
//! history, completion of commands, server names, tool names and the argument keys of the
//! tool being called), else plain lines from stdin (capped), with no prompt and no escape
//! codes. Ctrl-C while a command runs cancels that command (its call's cancellation token);
//! at the prompt it only clears the line. A server that dies fails its commands with the
//! error; `reconnect SERVER` starts it again. An HTTP server's session that closed (the
//! server restarted, or was down) is opened again by the next `call` on it. A call a
//! server restart interrupted is sent again once when that is safe (the tool's annotations
//! say read-only or idempotent) and the server answers at once; otherwise the shell says
//! the server restarted and the call was not retried.
//!
//! The shell's exit status is the last command's, as the one-shot verb would have exited
//! (0 when no command ran), so that a script piped into it can tell whether its end went well.
//!
//! The history (`$XDG_STATE_HOME/switchboard/history`, else `~/.local/state/…`; only on a
//! terminal) is private: written whole through `switchboard_config::atomic` (a new file
//! renamed over the old one), `0600`, its folder made `0700` when the shell makes it. It keeps
//! no secret typed as an argument: in a `key=value` word or a JSON object (at any depth),
//! a value whose key names a secret — a part of the key, split at `_`, `-`, `.` and case
//! changes, that is `token`, `password`, `passwd`, `secret`, `key`, `auth`, `credential`,
//! `cookie`, `session` and the like ([`SECRET_KEY_PARTS`]), so `github_token` and `apiKey`
//! but not `keyboard` — is kept as `<not kept>` ([`NOT_KEPT`]), in memory and in the file,
//! so Up shows the line with the value to type again (a command that still holds the
//! placeholder is refused rather than sent). A line that cannot be split into words (an
//! open quote) is not kept at all. Lines read back from an older history are cleaned the same
//! way, so the next write drops what an earlier version kept.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError, mpsc as sync_mpsc};
use std::time::Duration;

use serde_json::Value;
use switchboard_config::ServerEntry;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::arguments::Checked;
use crate::connect::ConnectedServer;
use crate::terminal::{self, say};
use crate::{
    CallRequest, Common, EXIT_SERVER, Failure, Output, arguments, browse, futures_join_all, render,
};

/// The commands, for `help` and completion.
const COMMANDS: &[(&str, &str, &str)] = &[
    (
        "tools",
        "tools [SERVER [TOOL]]",
        "list tools; one tool whole",
    ),
    (
        "call",
        "call [--no-check] [--no-tool-lock] [SERVER] TOOL [key=value ...]",
        "call a tool (or one JSON object, @FILE)",
    ),
    ("prompts", "prompts [SERVER]", "list prompts"),
    (
        "prompt",
        "prompt [SERVER] NAME [ARG=VALUE ...]",
        "get a prompt",
    ),
    (
        "resources",
        "resources [SERVER]",
        "list resources and templates",
    ),
    (
        "read",
        "read [SERVER] URI [--out FILE]",
        "read a resource (to a file)",
    ),
    (
        "reconnect",
        "reconnect SERVER",
        "stop a server and start it again",
    ),
    ("help", "help", "this list"),
    ("exit", "exit, quit or Ctrl-D", "stop the servers and leave"),
    ("quit", "", ""),
];

/// How long a cancelled command may take to stop before the shell stops waiting for it.
const CANCEL_GRACE: Duration = Duration::from_secs(5);

/// One server of the session.
struct Slot {
    entry: ServerEntry,
    connected: Option<ConnectedServer>,
}

/// What completion knows: the connected servers' tools and their argument keys.
#[derive(Debug, Default)]
pub(crate) struct Catalog {
    servers: Vec<(String, Vec<ToolKeys>)>,
}

/// A tool's name and the keys of its input schema's properties.
type ToolKeys = (String, Vec<String>);

/// The catalog shared between the shell and the line editor's completer.
pub(crate) type SharedCatalog = Arc<Mutex<Catalog>>;

impl Catalog {
    fn set(&mut self, server: &str, tools: Vec<ToolKeys>) {
        match self.servers.iter_mut().find(|(name, _)| name == server) {
            Some((_, known)) => *known = tools,
            None => self.servers.push((server.to_owned(), tools)),
        }
    }

    /// The servers that offer a tool named `tool`.
    fn servers_with_tool(&self, tool: &str) -> Vec<&str> {
        self.servers
            .iter()
            .filter(|(_, tools)| tools.iter().any(|(name, _)| name == tool))
            .map(|(server, _)| server.as_str())
            .collect()
    }

    fn tools(&self, server: &str) -> impl Iterator<Item = &ToolKeys> {
        self.servers
            .iter()
            .filter(move |(name, _)| name == server)
            .flat_map(|(_, tools)| tools)
    }

    /// What to offer for the word being typed, given the words before it.
    pub(crate) fn candidates(&self, before: &[&str], current: &str) -> Vec<String> {
        // `call --no-check …` (and `--no-tool-lock`) completes as `call …` does.
        let before: Vec<&str> = match before {
            ["call", rest @ ..] => ["call"]
                .iter()
                .chain(
                    rest.iter()
                        .skip_while(|word| matches!(**word, "--no-check" | "--no-tool-lock")),
                )
                .copied()
                .collect(),
            _ => before.to_vec(),
        };
        let before = before.as_slice();
        let servers: Vec<&str> = self.servers.iter().map(|(n, _)| n.as_str()).collect();
        let only = match servers.as_slice() {
            [only] => Some(*only),
            _ => None,
        };
        let words = |names: Vec<&str>, suffix: &str| -> Vec<String> {
            names
                .into_iter()
                .filter(|n| n.starts_with(current) && terminal::shown_as_is(n))
                .map(|n| format!("{n}{suffix}"))
                .collect()
        };
        let tool_names = |server: &str| -> Vec<&str> {
            self.tools(server).map(|(name, _)| name.as_str()).collect()
        };
        match before {
            [] => words(COMMANDS.iter().map(|(c, _, _)| *c).collect(), " "),
            // SERVER, or a tool of any server (`call` finds the one server that offers it).
            [command] if matches!(*command, "tools" | "call") => {
                let mut names = servers.clone();
                let mut tools: Vec<&str> = servers.iter().flat_map(|s| tool_names(s)).collect();
                tools.sort_unstable();
                tools.dedup();
                names.extend(tools.into_iter().filter(|tool| !servers.contains(tool)));
                words(names, " ")
            }
            [command] if is_command_with_server(command) => words(servers, " "),
            ["tools" | "call", server] if servers.contains(server) => {
                words(tool_names(server), " ")
            }
            ["call", rest @ ..] => {
                let (server, tool, given) = match rest {
                    [server, tool, given @ ..] if servers.contains(server) => {
                        (*server, *tool, given)
                    }
                    [tool, given @ ..] => {
                        let offering = self.servers_with_tool(tool);
                        match (only, offering.as_slice()) {
                            (Some(server), _) | (None, &[server]) => (server, *tool, given),
                            _ => return Vec::new(),
                        }
                    }
                    [] => return Vec::new(),
                };
                let given: Vec<&str> = given
                    .iter()
                    .filter_map(|w| w.split_once('='))
                    .map(|(k, _)| k)
                    .collect();
                let keys: Vec<&str> = self
                    .tools(server)
                    .filter(|(name, _)| name == tool)
                    .flat_map(|(_, keys)| keys)
                    .map(String::as_str)
                    .filter(|k| !given.contains(k))
                    .collect();
                words(keys, "=")
            }
            _ => Vec::new(),
        }
    }
}

fn is_command_with_server(command: &str) -> bool {
    matches!(
        command,
        "prompts" | "prompt" | "resources" | "read" | "reconnect"
    )
}

/// A line from the reader thread.
#[derive(Debug)]
pub(crate) enum Input {
    /// A line (without its end).
    Line(String),
    /// A line over the cap, left out.
    TooLong,
    /// Ctrl-C at the prompt.
    Interrupted,
    /// Ctrl-D, or the end of stdin, or the terminal failed.
    End,
}

/// The interactive session.
struct Shell {
    slots: Vec<Slot>,
    output: Output,
    timeout: Option<Duration>,
    catalog: SharedCatalog,
    /// The tool lock beside the config file, as `call` applies it.
    lock: Option<crate::held::LockBeside>,
}

/// `switchboard shell [SERVER]`.
pub(crate) async fn run(common: &Common, server: Option<String>) -> Result<u8, Failure> {
    let mut words = common.words(server);
    let only = words.optional();
    words.no_more()?;
    let loaded = common.load()?;
    let browse = common.browse(&loaded, only.as_deref())?;
    let entries: Vec<ServerEntry> = browse.entries()?.into_iter().cloned().collect();
    let mut shell = Shell {
        slots: Vec::new(),
        output: common.output(),
        timeout: browse.timeout,
        catalog: SharedCatalog::default(),
        lock: crate::held::LockBeside::of(&loaded.file.path)
            .filter(crate::held::LockBeside::is_there),
    };
    let connections = futures_join_all(
        entries
            .iter()
            .map(|entry| ConnectedServer::connect(entry, shell.timeout)),
    )
    .await;
    for (entry, connection) in entries.into_iter().zip(connections) {
        let slot = shell.slots.len();
        shell.slots.push(Slot {
            entry,
            connected: None,
        });
        shell.started(slot, connection).await;
    }
    let mut interrupts = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .map_err(|e| Failure::Server(format!("could not listen for Ctrl-C: {e}")))?;
    let (lines, mut inputs) = mpsc::channel::<Input>(1);
    let (next, wanted) = sync_mpsc::sync_channel::<()>(1);
    let interactive = terminal::stdin_is_terminal();
    if interactive {
        say(format_args!(
            "switchboard: type `help` for the commands, Tab to complete, Ctrl-D to leave"
        ));
    }
    let catalog = Arc::clone(&shell.catalog);
    let reader = std::thread::spawn(move || match interactive {
        true => read_edited(catalog, &lines, &wanted),
        false => read_piped(&lines, &wanted),
    });
    let mut status = 0;
    while let Some(input) = inputs.recv().await {
        let line = match input {
            Input::Line(line) => line,
            Input::TooLong => {
                say(format_args!(
                    "switchboard: a line over {MAX_LINE_BYTES} bytes was left out"
                ));
                let _ = next.send(());
                continue;
            }
            Input::Interrupted => {
                let _ = next.send(());
                continue;
            }
            Input::End => break,
        };
        // A Ctrl-C that came while no command ran is not this command's.
        let _ = tokio::time::timeout(Duration::ZERO, interrupts.recv()).await;
        let cancel = CancellationToken::new();
        let outcome = {
            let mut command = std::pin::pin!(shell.execute(&line, &cancel));
            tokio::select! {
                outcome = &mut command => outcome,
                _ = interrupts.recv() => {
                    cancel.cancel();
                    match tokio::time::timeout(CANCEL_GRACE, &mut command).await {
                        Ok(outcome) => outcome,
                        Err(_) => Err(Failure::Server(format!(
                            "cancelled; the command did not stop within {CANCEL_GRACE:?} and was left"
                        ))),
                    }
                }
            }
        };
        match outcome {
            Ok(Step::Next(code)) => status = code,
            Ok(Step::Leave) => break,
            Err(failure) => {
                status = failure.exit_code();
                say(format_args!("switchboard: {}", failure.message()));
            }
        }
        shell.say_which_closed().await;
        if next.send(()).is_err() {
            break;
        }
    }
    drop(next);
    drop(inputs);
    let _ = tokio::task::spawn_blocking(move || reader.join()).await;
    futures_join_all(
        shell
            .slots
            .into_iter()
            .filter_map(|slot| slot.connected)
            .map(ConnectedServer::close),
    )
    .await;
    Ok(status)
}

/// What the shell does after a command.
enum Step {
    /// Read the next command; this one ended with this exit status.
    Next(u8),
    Leave,
}

impl Shell {
    /// Keeps a new connection (or says why there is none) and learns its tools.
    async fn started(
        &mut self,
        slot: usize,
        connection: Result<ConnectedServer, switchboard_session::SessionError>,
    ) {
        let name = self.slots[slot].entry.name.clone();
        match connection {
            Ok(server) => {
                let listed = crate::listed_tools(&server, &self.slots[slot].entry).await;
                match &listed {
                    Ok(listed) => {
                        self.learn(&name, listed);
                        say(format_args!(
                            "switchboard: `{name}` is ready: {} tool(s)",
                            listed.listing.items.len()
                        ));
                    }
                    Err(error) => say(format_args!(
                        "switchboard: `{name}` is ready, but its tools could not be listed: {error}"
                    )),
                }
                self.slots[slot].connected = Some(server);
            }
            Err(error) => say(format_args!(
                "switchboard: `{name}` failed to start: {error}; `reconnect {name}` tries again"
            )),
        }
    }

    /// Says once of each server whose connection closed (it exited, or its transport
    /// ended) how to start it again, and forgets the connection.
    async fn say_which_closed(&mut self) {
        for slot in &mut self.slots {
            if slot
                .connected
                .as_ref()
                .is_some_and(|server| server.session.close_reason().is_some())
            {
                if let Some(closed) = slot.connected.take() {
                    closed.close().await;
                }
                say(format_args!(
                    "switchboard: `{name}` is not connected any more; `reconnect {name}` starts it again",
                    name = slot.entry.name
                ));
            }
        }
    }

    /// Remembers a server's tools and their argument keys for completion.
    fn learn(&self, server: &str, listed: &render::ListedTools) {
        let tools = listed
            .listing
            .items
            .iter()
            .map(|tool| {
                let keys = tool
                    .input_schema
                    .get("properties")
                    .and_then(Value::as_object)
                    .map(|properties| properties.keys().cloned().collect())
                    .unwrap_or_default();
                (tool.name.clone(), keys)
            })
            .collect();
        self.catalog
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .set(server, tools);
    }

    fn names(&self) -> Vec<&str> {
        self.slots.iter().map(|s| s.entry.name.as_str()).collect()
    }

    /// The server a command names first, or the only one when it names none.
    fn server_word(&self, words: &mut VecDeque<String>) -> Result<usize, Failure> {
        if let Some(at) = words
            .front()
            .and_then(|word| self.slots.iter().position(|s| &s.entry.name == word))
        {
            words.pop_front();
            return Ok(at);
        }
        match self.slots.len() {
            1 => Ok(0),
            _ => Err(Failure::Usage(format!(
                "name the server first: one of {}",
                self.names().join(", ")
            ))),
        }
    }

    /// `call`'s SERVER: the word when it names a server, else the one server there is, or
    /// the one server that offers the tool the word names (the word stays: it is the tool).
    fn call_server_word(&self, words: &mut VecDeque<String>) -> Result<usize, Failure> {
        let named = words
            .front()
            .is_some_and(|word| self.slots.iter().any(|s| &s.entry.name == word));
        if named || self.slots.len() == 1 {
            return self.server_word(words);
        }
        let Some(tool) = words.front() else {
            return self.server_word(words);
        };
        let catalog = self.catalog.lock().unwrap_or_else(PoisonError::into_inner);
        let offering = catalog.servers_with_tool(tool);
        match offering.as_slice() {
            [only] => Ok(self
                .slots
                .iter()
                .position(|s| s.entry.name == *only)
                .unwrap_or_default()),
            [] => Err(Failure::Usage(format!(
                "no server offers a tool `{tool}`; name the server first: one of {}",
                self.names().join(", ")
            ))),
            several => Err(Failure::Usage(format!(
                "`{tool}` is offered by {}: name the server first",
                several.join(", ")
            ))),
        }
    }

    /// The named server, whose session must be open.
    fn connected(&self, slot: usize) -> Result<&ConnectedServer, Failure> {
        let slot = &self.slots[slot];
        slot.connected.as_ref().ok_or_else(|| {
            Failure::Server(format!(
                "`{name}` is not connected; `reconnect {name}` starts it",
                name = slot.entry.name
            ))
        })
    }

    /// Every server, or the one named; for listings.
    fn chosen(&self, words: &mut VecDeque<String>) -> Result<Vec<usize>, Failure> {
        match words.front() {
            None => Ok((0..self.slots.len()).collect()),
            Some(_) => Ok(vec![self.server_word(words)?]),
        }
    }

    async fn execute(&mut self, line: &str, cancel: &CancellationToken) -> Result<Step, Failure> {
        if line.contains(NOT_KEPT) {
            return Err(Failure::Usage(format!(
                "{NOT_KEPT} stands for a secret the history did not keep: type its value"
            )));
        }
        let mut words: VecDeque<String> = split_words(line).map_err(Failure::Usage)?.into();
        let Some(command) = words.pop_front() else {
            return Ok(Step::Next(0));
        };
        let outcome = match command.as_str() {
            "exit" | "quit" => return Ok(Step::Leave),
            "help" => {
                let mut text = help_lines();
                text.push_str(&format!("servers: {}\n", self.names().join(", ")));
                text.push_str(&format!(
                    "history: arguments whose key names a secret (token, password, key, auth,\n  …) are kept as {NOT_KEPT}\n"
                ));
                terminal::print(&text);
                Ok(0)
            }
            "tools" => self.tools(words).await,
            "call" => self.call(words, cancel).await,
            "prompts" => {
                let chosen = self.chosen(&mut words)?;
                no_more(&words)?;
                let servers = self.open(&chosen);
                let listings =
                    futures_join_all(servers.iter().map(|(_, s)| browse::listed_prompts(s))).await;
                let names = servers.iter().map(|(entry, _)| entry.name.as_str());
                browse::show_prompts(self.output, names.zip(listings));
                Ok(0)
            }
            "resources" => {
                let chosen = self.chosen(&mut words)?;
                no_more(&words)?;
                let servers = self.open(&chosen);
                let listings =
                    futures_join_all(servers.iter().map(|(_, s)| browse::list_resources(s))).await;
                let names = servers.iter().map(|(entry, _)| entry.name.as_str());
                browse::show_resources(self.output, names.zip(listings));
                Ok(0)
            }
            "prompt" => {
                let slot = self.server_word(&mut words)?;
                let name = words
                    .pop_front()
                    .ok_or_else(|| Failure::Usage("give the prompt's NAME".into()))?;
                let arguments = browse::prompt_arguments(&Vec::from(words))?;
                browse::prompt_on(self.connected(slot)?, &name, arguments, self.output).await
            }
            "read" => {
                let out = take_option_value(&mut words, "--out")?.map(std::path::PathBuf::from);
                let slot = self.server_word(&mut words)?;
                let uri = words
                    .pop_front()
                    .ok_or_else(|| Failure::Usage("give the resource's URI".into()))?;
                no_more(&words)?;
                let server = self.connected(slot)?;
                let target = match &out {
                    Some(path) => browse::ReadTarget::File(path),
                    None => browse::ReadTarget::Stdout,
                };
                browse::read_on(
                    server,
                    &self.slots[slot].entry.name,
                    &uri,
                    target,
                    self.output,
                )
                .await
            }
            "reconnect" => {
                let slot = match words.front() {
                    Some(_) => self.server_word(&mut words)?,
                    None => return Err(Failure::Usage("give the SERVER to reconnect".into())),
                };
                no_more(&words)?;
                if let Some(old) = self.slots[slot].connected.take() {
                    old.close().await;
                }
                let connection =
                    ConnectedServer::connect(&self.slots[slot].entry, self.timeout).await;
                self.started(slot, connection).await;
                match self.slots[slot].connected {
                    Some(_) => Ok(0),
                    None => Ok(EXIT_SERVER),
                }
            }
            other => Err(Failure::Usage(format!(
                "no command `{other}`; `help` lists them"
            ))),
        };
        outcome.map(Step::Next)
    }

    /// The open sessions among `slots` (those not open are said and left out).
    fn open(&self, slots: &[usize]) -> Vec<(&ServerEntry, &ConnectedServer)> {
        slots
            .iter()
            .filter_map(|at| {
                let slot = &self.slots[*at];
                match &slot.connected {
                    Some(server) => Some((&slot.entry, server)),
                    None => {
                        say(format_args!(
                            "switchboard: `{name}` is not connected; `reconnect {name}` starts it",
                            name = slot.entry.name
                        ));
                        None
                    }
                }
            })
            .collect()
    }

    /// `tools [SERVER [TOOL]]`.
    async fn tools(&self, mut words: VecDeque<String>) -> Result<u8, Failure> {
        let chosen = self.chosen(&mut words)?;
        let tool = words.pop_front();
        no_more(&words)?;
        let servers = self.open(&chosen);
        let listings = futures_join_all(
            servers
                .iter()
                .map(|(entry, server)| crate::listed_tools(server, entry)),
        )
        .await;
        for ((entry, _), listed) in servers.iter().zip(&listings) {
            if let Ok(listed) = listed {
                self.learn(&entry.name, listed);
            }
        }
        let names = servers.iter().map(|(entry, _)| entry.name.as_str());
        match tool {
            Some(tool) => {
                let Some((name, listed)) = names.zip(listings).next() else {
                    return Ok(EXIT_SERVER);
                };
                let listed = listed.map_err(|e| Failure::Server(e.to_string()))?;
                crate::show_one_tool(name, &listed, &tool, self.output)
            }
            None => {
                crate::show_tools(self.output, names.zip(listings));
                Ok(0)
            }
        }
    }

    /// `call [--no-check] [--no-tool-lock] [SERVER] TOOL [ARGUMENTS...]`: typed, checked
    /// and held back by the tool lock as the `call` verb does.
    async fn call(
        &mut self,
        mut words: VecDeque<String>,
        cancel: &CancellationToken,
    ) -> Result<u8, Failure> {
        let mut checked = Checked::AgainstSchema;
        let mut locked = true;
        while let Some(flag) = words.front() {
            match flag.as_str() {
                "--no-check" => checked = Checked::AsGiven,
                "--no-tool-lock" => locked = false,
                _ => break,
            }
            words.pop_front();
        }
        let slot = self.call_server_word(&mut words)?;
        self.reopen_closed_http(slot).await;
        let lock = self.lock.as_ref().filter(|_| locked);
        let tool = words
            .pop_front()
            .ok_or_else(|| Failure::Usage("give the TOOL to call".into()))?;
        let words = Vec::from(words);
        if words.first().is_some_and(|w| w == "-") {
            return Err(Failure::Usage(
                "the shell reads its commands from stdin: give the JSON inline or as @FILE".into(),
            ));
        }
        let arguments = arguments::ArgumentSource::from_words(&words).map_err(Failure::Usage)?;
        let request = CallRequest {
            tool: &tool,
            arguments,
            checked,
            timeout: self.timeout,
            output: self.output,
            cancel: Some(cancel.clone()),
            lock,
        };
        let server = self.connected(slot)?;
        crate::call_on(server, &self.slots[slot].entry, &request).await
    }

    /// An HTTP server whose session closed (it restarted, or was down for a while) is
    /// connected again before the next call: nothing of it runs here to restart.
    async fn reopen_closed_http(&mut self, slot: usize) {
        let entry = &self.slots[slot].entry;
        let http = matches!(
            entry.transport,
            switchboard_config::TransportEntry::Http { .. }
        );
        let closed = self.slots[slot]
            .connected
            .as_ref()
            .is_some_and(|server| server.session.close_reason().is_some());
        if !(http && closed) {
            return;
        }
        if let Some(old) = self.slots[slot].connected.take() {
            old.close().await;
        }
        let connection = ConnectedServer::connect(&self.slots[slot].entry, self.timeout).await;
        self.started(slot, connection).await;
    }
}

/// The width `help` keeps within (an 80-column terminal).
const HELP_WIDTH: usize = 80;
/// Where `help`'s descriptions start.
const HELP_COLUMN: usize = 40;

/// `help`'s list, within [`HELP_WIDTH`] columns: a usage too long for the column has its
/// description on the next line.
fn help_lines() -> String {
    let mut text = String::new();
    for (_, usage, what) in COMMANDS.iter().filter(|(_, u, _)| !u.is_empty()) {
        let usage = format!("  {usage}");
        let fits = usage.chars().count() + 1 < HELP_COLUMN
            && HELP_COLUMN + what.chars().count() <= HELP_WIDTH;
        if fits {
            text.push_str(&format!("{usage:<HELP_COLUMN$}{what}\n"));
        } else {
            text.push_str(&format!("{usage}\n{:HELP_COLUMN$}{what}\n", ""));
        }
    }
    text
}

/// The longest line read from a piped stdin; a longer one is left out whole.
const MAX_LINE_BYTES: usize = 64 * 1024;

/// The most lines of history kept, in memory and in the history file.
const MAX_HISTORY: usize = 1000;

/// The most of the history file read back.
const MAX_HISTORY_FILE_BYTES: u64 = 256 * 1024;

/// The prompt on a terminal.
const PROMPT: &str = "switchboard> ";

/// Reads lines from the terminal's line editor until Ctrl-D or the shell stops wanting
/// them (`wanted` closed); the history is read from and written back to its file.
fn read_edited(
    catalog: SharedCatalog,
    lines: &mpsc::Sender<Input>,
    wanted: &sync_mpsc::Receiver<()>,
) {
    let mut editor = match terminal::LineEditor::new(Completion { catalog }, MAX_HISTORY) {
        Ok(editor) => editor,
        Err(error) => {
            say(format_args!(
                "switchboard: the line editor cannot start: {error}"
            ));
            let _ = lines.blocking_send(Input::End);
            return;
        }
    };
    let file = history_file();
    if let Some(path) = &file {
        for line in read_history(path).iter().filter_map(|l| history_line(l)) {
            editor.add_history(&line);
        }
    }
    loop {
        let input = match editor.read(PROMPT) {
            terminal::EditedLine::Line(line) => {
                if let Some(kept) = history_line(&line).filter(|l| !l.trim().is_empty()) {
                    editor.add_history(&kept);
                }
                Input::Line(line)
            }
            terminal::EditedLine::Interrupted => Input::Interrupted,
            terminal::EditedLine::End => Input::End,
        };
        let end = matches!(input, Input::End);
        if end || lines.blocking_send(input).is_err() || wanted.recv().is_err() {
            break;
        }
    }
    if let Some(path) = &file {
        write_history(path, &editor.history());
    }
}

/// Reads plain lines from stdin (no prompt, no editing) until its end or until the shell
/// stops wanting them.
fn read_piped(lines: &mpsc::Sender<Input>, wanted: &sync_mpsc::Receiver<()>) {
    use std::io::{BufRead, Read};
    let stdin = std::io::stdin();
    let mut stdin = stdin.lock();
    loop {
        let mut line = Vec::new();
        let input = match (&mut stdin)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)
        {
            Ok(0) | Err(_) => Input::End,
            Ok(_) if line.len() > MAX_LINE_BYTES => {
                // The rest of the line, a capped chunk at a time.
                loop {
                    line.clear();
                    match (&mut stdin)
                        .take(MAX_LINE_BYTES as u64)
                        .read_until(b'\n', &mut line)
                    {
                        Ok(0) | Err(_) => break,
                        Ok(_) if line.ends_with(b"\n") => break,
                        Ok(_) => {}
                    }
                }
                Input::TooLong
            }
            Ok(_) => {
                let text = String::from_utf8_lossy(&line);
                Input::Line(text.trim_end_matches(['\n', '\r']).to_owned())
            }
        };
        let end = matches!(input, Input::End);
        if lines.blocking_send(input).is_err() || end || wanted.recv().is_err() {
            break;
        }
    }
}

/// `$XDG_STATE_HOME/switchboard/history`, or `~/.local/state/switchboard/history`.
fn history_file() -> Option<std::path::PathBuf> {
    let state = std::env::var_os("XDG_STATE_HOME")
        .map(std::path::PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME").map(|home| std::path::PathBuf::from(home).join(".local/state"))
        })?;
    Some(state.join("switchboard").join("history"))
}

/// The last lines of the history file (none when there is none).
fn read_history(path: &std::path::Path) -> Vec<String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    let Ok(file) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let size = file.metadata().map(|m| m.len()).unwrap_or_default();
    let mut file = file;
    if size > MAX_HISTORY_FILE_BYTES {
        use std::io::Seek;
        let _ = file.seek(std::io::SeekFrom::Start(size - MAX_HISTORY_FILE_BYTES));
    }
    if file
        .take(MAX_HISTORY_FILE_BYTES)
        .read_to_end(&mut bytes)
        .is_err()
    {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect();
    let skip = lines.len().saturating_sub(MAX_HISTORY);
    lines.into_iter().skip(skip).collect()
}

/// Writes the last lines of the history back (a failure only costs the history).
fn write_history(path: &std::path::Path, history: &[String]) {
    let skip = history.len().saturating_sub(MAX_HISTORY);
    let mut text = String::new();
    for line in history.iter().skip(skip) {
        text.push_str(line);
        text.push('\n');
    }
    let written = switchboard_config::atomic::replace_file(
        path,
        text.as_bytes(),
        switchboard_config::atomic::Permissions::OwnerOnly,
    );
    if let Err(error) = written {
        tracing::debug!(%error, path = %path.display(), "the shell's history was not saved");
    }
}

/// What the history keeps of a secret argument's value.
pub(crate) const NOT_KEPT: &str = "<not kept>";

/// Parts of an argument's key (split at `_`, `-`, `.` and case changes, compared without
/// case) that name a secret; also a few spelt as one word.
const SECRET_KEY_PARTS: &[&str] = &[
    "token",
    "tokens",
    "password",
    "passwords",
    "passwd",
    "pwd",
    "passphrase",
    "secret",
    "secrets",
    "key",
    "keys",
    "apikey",
    "auth",
    "authorization",
    "bearer",
    "credential",
    "credentials",
    "cookie",
    "cookies",
    "session",
    "sessionid",
    "accesstoken",
    "authtoken",
    "privatekey",
    "clientsecret",
    "jwt",
    "otp",
];

/// Whether an argument's key names a secret (`github_token`, `apiKey`, `X-Api-Key`; not
/// `keyboard`).
pub(crate) fn is_secret_key(key: &str) -> bool {
    let mut parts: Vec<String> = Vec::new();
    let mut part = String::new();
    let mut previous_lower = false;
    for c in key.chars() {
        if !c.is_alphanumeric() {
            parts.extend((!part.is_empty()).then(|| std::mem::take(&mut part)));
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower {
            parts.push(std::mem::take(&mut part));
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        part.extend(c.to_lowercase());
    }
    parts.extend((!part.is_empty()).then_some(part));
    parts
        .iter()
        .any(|part| SECRET_KEY_PARTS.contains(&part.as_str()))
}

/// The line as the history keeps it: secret arguments' values replaced by [`NOT_KEPT`]
/// (the line as typed when there is none); `None` when it is not kept at all (it cannot be
/// split into words, or holds a JSON argument that does not parse).
pub(crate) fn history_line(line: &str) -> Option<String> {
    let words = split_words(line).ok()?;
    let mut changed = false;
    let mut kept = Vec::with_capacity(words.len());
    for word in words {
        if word.trim_start().starts_with('{') {
            let mut value: Value = serde_json::from_str(&word).ok()?;
            if hide_secret_values(&mut value) {
                changed = true;
                kept.push(value.to_string());
                continue;
            }
        } else if let Some((key, _)) = word.split_once('=')
            && is_secret_key(key)
        {
            changed = true;
            kept.push(format!("{key}={NOT_KEPT}"));
            continue;
        }
        kept.push(word);
    }
    if !changed {
        return Some(line.to_owned());
    }
    Some(kept.iter().map(|w| quoted(w)).collect::<Vec<_>>().join(" "))
}

/// Replaces the value of every member whose key names a secret, at any depth; whether any
/// was.
fn hide_secret_values(value: &mut Value) -> bool {
    match value {
        Value::Object(members) => {
            let mut hidden = false;
            for (key, member) in members.iter_mut() {
                if is_secret_key(key) {
                    *member = Value::String(NOT_KEPT.to_owned());
                    hidden = true;
                } else {
                    hidden |= hide_secret_values(member);
                }
            }
            hidden
        }
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |hidden, item| hide_secret_values(item) | hidden),
        _ => false,
    }
}

/// A word as [`split_words`] reads it back: as it is when it has no blank or quote, else in
/// single quotes (a `'` written `'\''`).
fn quoted(word: &str) -> String {
    let plain = !word.is_empty()
        && !word
            .chars()
            .any(|c| c.is_whitespace() || matches!(c, '\'' | '"' | '\\'));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The line editor's completion: commands, server names, tool names, argument keys.
struct Completion {
    catalog: SharedCatalog,
}

impl terminal::Complete for Completion {
    fn complete(&self, before_cursor: &str) -> (usize, Vec<String>) {
        let start = before_cursor
            .rfind(char::is_whitespace)
            .map(|at| at + before_cursor[at..].chars().next().map_or(1, char::len_utf8))
            .unwrap_or(0);
        let before: Vec<&str> = before_cursor[..start].split_whitespace().collect();
        let catalog = self.catalog.lock().unwrap_or_else(PoisonError::into_inner);
        (start, catalog.candidates(&before, &before_cursor[start..]))
    }
}

/// Takes `option VALUE` out of the words, wherever it stands.
fn take_option_value(
    words: &mut VecDeque<String>,
    option: &str,
) -> Result<Option<String>, Failure> {
    let Some(at) = words.iter().position(|word| word == option) else {
        return Ok(None);
    };
    words.remove(at);
    words
        .remove(at)
        .map(Some)
        .ok_or_else(|| Failure::Usage(format!("`{option}` needs a value")))
}

fn no_more(words: &VecDeque<String>) -> Result<(), Failure> {
    match words.front() {
        None => Ok(()),
        Some(extra) => Err(Failure::Usage(format!("unexpected `{extra}`"))),
    }
}

/// A command line's words: split at blanks, with '…' and "…" quoting and `\` escaping
/// the next character (outside single quotes).
pub(crate) fn split_words(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => words.extend(word.take()),
            '\'' => {
                let text = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => text.push(c),
                        None => return Err("a ' quote is not closed".into()),
                    }
                }
            }
            '"' => {
                let text = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c) => text.push(c),
                            None => return Err("a \" quote is not closed".into()),
                        },
                        Some(c) => text.push(c),
                        None => return Err("a \" quote is not closed".into()),
                    }
                }
            }
            '\\' => {
                let text = word.get_or_insert_with(String::new);
                if let Some(c) = chars.next() {
                    text.push(c);
                }
            }
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

#[cfg(test)]
mod tests {
    #[test]
    fn help_fits_an_80_column_terminal() {
        let help = super::help_lines();
        let widest = help.lines().map(|l| l.chars().count()).max().unwrap_or(0);
        assert!(widest <= super::HELP_WIDTH, "{help}");
        // Each line behind `|`, so that its leading spaces show.
        let shown: Vec<String> = help.lines().map(|line| format!("|{line}")).collect();
        expect_test::expect![[r#"
            |  tools [SERVER [TOOL]]                 list tools; one tool whole
            |  call [--no-check] [--no-tool-lock] [SERVER] TOOL [key=value ...]
            |                                        call a tool (or one JSON object, @FILE)
            |  prompts [SERVER]                      list prompts
            |  prompt [SERVER] NAME [ARG=VALUE ...]  get a prompt
            |  resources [SERVER]                    list resources and templates
            |  read [SERVER] URI [--out FILE]        read a resource (to a file)
            |  reconnect SERVER                      stop a server and start it again
            |  help                                  this list
            |  exit, quit or Ctrl-D                  stop the servers and leave"#]]
        .assert_eq(&shown.join("\n"));
    }

    use super::*;

    #[test]
    fn secret_keys_are_found_by_their_parts() {
        let keys = [
            "token",
            "github_token",
            "apiKey",
            "API_KEY",
            "X-Api-Key",
            "apikey",
            "PASSWORD",
            "db.passwd",
            "clientSecret",
            "authorization",
            "sessionId",
            "cookie",
            "keyboard",
            "monkey",
            "text",
            "author",
            "tokenizer",
            "count",
        ];
        let secret: Vec<&str> = keys.into_iter().filter(|k| is_secret_key(k)).collect();
        expect_test::expect![[r#"
            [
                "token",
                "github_token",
                "apiKey",
                "API_KEY",
                "X-Api-Key",
                "apikey",
                "PASSWORD",
                "db.passwd",
                "clientSecret",
                "authorization",
                "sessionId",
                "cookie",
            ]
        "#]]
        .assert_debug_eq(&secret);
    }

    #[test]
    fn the_history_keeps_no_secret_value() {
        let lines = [
            "call fx echo text=hi",
            "call fx echo text=\"two words\" github_token=ghp_x",
            r#"call fx echo '{"a": {"apiKey": "k", "list": [{"password": "p"}]}, "b": 1}'"#,
            r#"call fx echo '{"broken": '"#,
            "call fx echo 'open",
            "prompt greet name=it\\'s session=abc",
        ];
        let kept: Vec<Option<String>> = lines.into_iter().map(history_line).collect();
        expect_test::expect![[r#"
            [
                Some(
                    "call fx echo text=hi",
                ),
                Some(
                    "call fx echo 'text=two words' 'github_token=<not kept>'",
                ),
                Some(
                    "call fx echo '{\"a\":{\"apiKey\":\"<not kept>\",\"list\":[{\"password\":\"<not kept>\"}]},\"b\":1}'",
                ),
                None,
                None,
                Some(
                    "prompt greet 'name=it'\\''s' 'session=<not kept>'",
                ),
            ]
        "#]]
        .assert_debug_eq(&kept);
        // What is kept reads back as the same words, the secrets replaced.
        let read_back = split_words(kept[5].as_deref().unwrap_or_default());
        assert_eq!(
            read_back,
            Ok(vec![
                "prompt".to_owned(),
                "greet".to_owned(),
                "name=it's".to_owned(),
                format!("session={NOT_KEPT}"),
            ])
        );
    }

    #[test]
    fn words_split_at_blanks_with_quotes() {
        expect_test::expect![[r#"
            Ok(["call", "fx", "echo", "text=hello world", "{\"a\": 1}", "it's"])
            Err("a ' quote is not closed")
        "#]]
        .assert_eq(&format!(
            "{:?}\n{:?}\n",
            split_words(r#"  call fx echo text="hello world" '{"a": 1}' it\'s "#),
            split_words("call 'open"),
        ));
    }

    #[test]
    fn with_several_servers_call_completes_any_servers_tools_and_the_keys_of_the_one_that_offers_it()
     {
        let mut catalog = Catalog::default();
        catalog.set("fx", vec![("add".into(), vec!["a".into(), "b".into()])]);
        catalog.set(
            "gx",
            vec![
                ("echo".into(), vec!["text".into()]),
                ("add".into(), vec!["x".into()]),
            ],
        );
        let shown = [
            catalog.candidates(&["call"], ""),
            catalog.candidates(&["call", "echo"], ""),
            catalog.candidates(&["call", "add"], ""),
        ];
        expect_test::expect![[r#"
            [["fx ", "gx ", "add ", "echo "], ["text="], []]
        "#]]
        .assert_eq(&format!("{shown:?}\n"));
    }

    #[test]
    fn completion_offers_commands_servers_tools_and_keys() {
        let mut catalog = Catalog::default();
        catalog.set(
            "fx",
            vec![
                ("add".into(), vec!["a".into(), "b".into()]),
                ("echo".into(), vec!["text".into()]),
                ("evil\u{1b}[2J".into(), Vec::new()),
            ],
        );
        let shown = [
            catalog.candidates(&[], "re"),
            catalog.candidates(&["call"], "e"),
            catalog.candidates(&["call", "fx"], "a"),
            catalog.candidates(&["call", "fx", "add", "a=1"], ""),
            catalog.candidates(&["call", "add"], ""),
            catalog.candidates(&["read"], ""),
        ];
        expect_test::expect![[r#"
            [["resources ", "read ", "reconnect "], ["echo "], ["add "], ["b="], ["a=", "b="], ["fx "]]
        "#]]
        .assert_eq(&format!("{shown:?}\n"));
    }
}
