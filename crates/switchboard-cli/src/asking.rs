//! What the command line answers a server that asks back during a request: the client side
//! of `elicitation/create`, `roots/list` and `sampling/createMessage` for `call`, `shell`
//! and every other verb ([`CommandLineClient`]).
//!
//! - **Elicitation** (form mode): on a terminal (stdin and stderr both), the server's
//!   message is shown and each field of its requested schema is asked for in turn (its
//!   type, choices, default and whether it is required said beside it); `!decline` or
//!   `!cancel` at any field answers so, as does the end of input. Off a terminal nobody can
//!   answer: the question is declined and stderr says so, naming the server (so is a form
//!   of more than [`MAX_FIELDS`] fields). One question is asked at a time; a person gets
//!   [`ANSWER_DEADLINE`] to answer; the call's own deadline still runs. A server's message
//!   is shown up to [`MAX_MESSAGE_CHARS`] characters, a field's label and its choices up
//!   to [`MAX_LABEL_CHARS`].
//! - **Roots**: the folders given with `--root DIR` (the shell: the current folder when
//!   none is given), declared only then. A server may offer tools only to a client with
//!   roots (server-everything's `get-roots-list`).
//! - **Sampling** is refused: the command line has no model. The error the server gets,
//!   and stderr, say so and that `switchboard serve` passes the question to its client.
//!
//! Elicitation and sampling are declared as `serve` declares them (so every verb sees the
//! tools `serve` serves, see [`crate::connect`]). Server text (the message, field names
//! and descriptions) reaches the terminal only through [`crate::terminal`], neutralised.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{Map, Value, json};
use switchboard_protocol::Root;
use switchboard_session::{ClientHandler, HandlerFuture};
use switchboard_wire::ErrorObject;

use crate::terminal::{self, say};

/// How long a person has to answer a server's question.
pub(crate) const ANSWER_DEADLINE: Duration = Duration::from_secs(300);
/// Tries at one field before the question is cancelled.
const TRIES_PER_FIELD: usize = 3;
/// The error code of a refused sampling request (the user, or here the client, said no).
const REFUSED: i64 = -1;
/// Most fields one question may ask for; a longer form is declined.
const MAX_FIELDS: usize = 64;
/// Most characters of a server's message shown.
const MAX_MESSAGE_CHARS: usize = 2000;

/// Most characters of a field's label, or of its list of choices, shown.
const MAX_LABEL_CHARS: usize = 300;

/// `text` cut to `chars` characters, with `…` where it was cut.
fn at_most(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// One question on the terminal at a time: a second waits for the first to be answered.
static ONE_QUESTION_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The folders given with `--root`, set once before any server is connected.
static ROOTS: OnceLock<Vec<PathBuf>> = OnceLock::new();

/// Declares `folders` as the client's roots for every server connected from now on (an
/// empty list declares none). Only the first call counts.
pub(crate) fn declare_roots(folders: Vec<PathBuf>) {
    let _ = ROOTS.set(folders);
}

/// The command line as an MCP client that can be asked: see the module docs.
#[derive(Debug, Default)]
pub(crate) struct CommandLineClient;

impl ClientHandler for CommandLineClient {
    fn roots(&self) -> Option<Vec<Root>> {
        let folders = ROOTS.get().filter(|folders| !folders.is_empty())?;
        Some(
            folders
                .iter()
                .map(|folder| Root {
                    uri: url::Url::from_directory_path(folder)
                        .map_or_else(|()| format!("file://{}", folder.display()), String::from),
                    name: folder
                        .file_name()
                        .map(|name| name.to_string_lossy().into_owned()),
                })
                .collect(),
        )
    }

    fn supports_elicitation(&self) -> bool {
        true
    }

    fn elicit(&self, server: &str, params: Value) -> HandlerFuture {
        let server = server.to_owned();
        Box::pin(async move {
            let form = Form::from_params(&params);
            let declined = if !(terminal::stdin_is_terminal() && terminal::stderr_is_terminal()) {
                Some("answering needs a terminal (run the command on one to answer)".to_owned())
            } else if form.fields.len() > MAX_FIELDS {
                Some(format!(
                    "it asks for {} fields, more than the {MAX_FIELDS} the command line asks for",
                    form.fields.len()
                ))
            } else {
                None
            };
            if let Some(why) = declined {
                say(format_args!(
                    "switchboard: server `{server}` asked: {}\nswitchboard: declined: {why}",
                    form.message
                ));
                return Ok(json!({"action": "decline"}));
            }
            let _turn = ONE_QUESTION_AT_A_TIME.lock().await;
            let asked = tokio::task::spawn_blocking(move || form.ask(&server));
            let answer = match tokio::time::timeout(ANSWER_DEADLINE, asked).await {
                Ok(Ok(answer)) => answer,
                Ok(Err(_)) => Answer::Cancel,
                Err(_) => {
                    say(format_args!(
                        "\nswitchboard: no answer within {} s; the question is cancelled",
                        ANSWER_DEADLINE.as_secs()
                    ));
                    Answer::Cancel
                }
            };
            Ok(answer.to_json())
        })
    }

    fn supports_sampling(&self) -> bool {
        true
    }

    fn sample(&self, server: &str, _params: Value) -> HandlerFuture {
        say(format_args!(
            "switchboard: server `{server}` asked for a model's answer (sampling); refused: \
             the command line has no model (behind `switchboard serve`, its client is asked)"
        ));
        Box::pin(async {
            Err(ErrorObject::new(
                REFUSED,
                "refused: switchboard's command line has no model to sample with (behind \
                 `switchboard serve`, the question goes to its client)",
            ))
        })
    }
}

/// A server's question: its message and the fields of its requested schema, in order.
struct Form {
    message: String,
    fields: Vec<Field>,
}

/// One field of the requested schema (a flat object of primitive values).
struct Field {
    name: String,
    /// `title` and `description`, as given.
    label: Option<String>,
    kind: FieldKind,
    default: Option<Value>,
    required: bool,
}

enum FieldKind {
    Text,
    Integer,
    Number,
    Boolean,
    /// One of these values.
    Choice(Vec<String>),
}

/// What the person answered.
enum Answer {
    Accept(Map<String, Value>),
    Decline,
    Cancel,
}

impl Answer {
    fn to_json(&self) -> Value {
        match self {
            Answer::Accept(content) => json!({"action": "accept", "content": content}),
            Answer::Decline => json!({"action": "decline"}),
            Answer::Cancel => json!({"action": "cancel"}),
        }
    }
}

/// What one line typed at a field means.
enum Typed {
    Value(Value),
    /// Nothing typed: the default, or the field left out.
    Nothing,
    Refused(Answer),
    /// Not a value of the field's kind: why.
    Invalid(String),
}

impl Form {
    fn from_params(params: &Value) -> Form {
        let message = params
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("(no message)");
        let message = at_most(message, MAX_MESSAGE_CHARS);
        let schema = params.get("requestedSchema");
        let required: Vec<&str> = schema
            .and_then(|s| s.get("required"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let fields = schema
            .and_then(|s| s.get("properties"))
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(name, property)| Field::from_property(name, property, &required))
            .collect();
        Form { message, fields }
    }

    /// Asks each field on the terminal (blocking: run off the async threads).
    fn ask(self, server: &str) -> Answer {
        say(format_args!(
            "switchboard: server `{server}` asks: {}",
            self.message
        ));
        say(format_args!(
            "  (answer each field; !decline or !cancel to refuse; Enter keeps a default)"
        ));
        let mut content = Map::new();
        for field in &self.fields {
            match field.ask() {
                Ok(Some(value)) => {
                    content.insert(field.name.clone(), value);
                }
                Ok(None) => {}
                Err(refused) => return refused,
            }
        }
        Answer::Accept(content)
    }
}

impl Field {
    fn from_property(name: &str, property: &Value, required: &[&str]) -> Field {
        let text = |key: &str| property.get(key).and_then(Value::as_str);
        let choices: Option<Vec<String>> =
            property
                .get("enum")
                .and_then(Value::as_array)
                .map(|values| {
                    values
                        .iter()
                        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                        .collect()
                });
        let kind = match (choices, text("type")) {
            (Some(choices), _) => FieldKind::Choice(choices),
            (None, Some("integer")) => FieldKind::Integer,
            (None, Some("number")) => FieldKind::Number,
            (None, Some("boolean")) => FieldKind::Boolean,
            (None, _) => FieldKind::Text,
        };
        let label = match (text("title"), text("description")) {
            (Some(title), Some(description)) => Some(format!("{title}: {description}")),
            (one, other) => one.or(other).map(str::to_owned),
        }
        .map(|label| at_most(&label, MAX_LABEL_CHARS));
        Field {
            name: name.to_owned(),
            label,
            kind,
            default: property.get("default").cloned(),
            required: required.contains(&name),
        }
    }

    /// The prompt: name, label, and what is expected.
    fn prompt(&self) -> String {
        let mut expected = vec![match &self.kind {
            FieldKind::Text => "text".to_owned(),
            FieldKind::Integer => "a whole number".to_owned(),
            FieldKind::Number => "a number".to_owned(),
            FieldKind::Boolean => "yes or no".to_owned(),
            FieldKind::Choice(choices) => {
                at_most(&format!("one of: {}", choices.join(", ")), MAX_LABEL_CHARS)
            }
        }];
        if let Some(default) = &self.default {
            expected.push(format!(
                "default {}",
                default
                    .as_str()
                    .map_or_else(|| default.to_string(), str::to_owned)
            ));
        }
        if self.required {
            expected.push("required".to_owned());
        }
        let label = self
            .label
            .as_deref()
            .map(|label| format!(" ({label})"))
            .unwrap_or_default();
        format!("  {}{label} [{}]: ", self.name, expected.join("; "))
    }

    /// Asks until a usable answer: `Ok(None)` leaves the field out.
    fn ask(&self) -> Result<Option<Value>, Answer> {
        for _ in 0..TRIES_PER_FIELD {
            terminal::prompt(&self.prompt());
            let mut line = String::new();
            match std::io::stdin().read_line(&mut line) {
                Ok(0) | Err(_) => return Err(Answer::Cancel),
                Ok(_) => {}
            }
            match self.read(line.trim()) {
                Typed::Value(value) => return Ok(Some(value)),
                Typed::Nothing => match (&self.default, self.required) {
                    (Some(default), _) => return Ok(Some(default.clone())),
                    (None, false) => return Ok(None),
                    (None, true) => say(format_args!("  `{}` is required", self.name)),
                },
                Typed::Refused(answer) => return Err(answer),
                Typed::Invalid(why) => say(format_args!("  {why}")),
            }
        }
        say(format_args!(
            "switchboard: no usable answer for `{}`; the question is cancelled",
            self.name
        ));
        Err(Answer::Cancel)
    }

    /// What `typed` means for this field.
    fn read(&self, typed: &str) -> Typed {
        match typed {
            "" => return Typed::Nothing,
            "!decline" => return Typed::Refused(Answer::Decline),
            "!cancel" => return Typed::Refused(Answer::Cancel),
            _ => {}
        }
        match &self.kind {
            FieldKind::Text => Typed::Value(json!(typed)),
            FieldKind::Integer => typed.parse::<i64>().map_or_else(
                |_| Typed::Invalid(format!("`{typed}` is not a whole number")),
                |n| Typed::Value(json!(n)),
            ),
            FieldKind::Number => match typed.parse::<f64>() {
                Ok(n) if n.is_finite() => Typed::Value(json!(n)),
                _ => Typed::Invalid(format!("`{typed}` is not a number")),
            },
            FieldKind::Boolean => match typed.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" => Typed::Value(json!(true)),
                "n" | "no" | "false" => Typed::Value(json!(false)),
                _ => Typed::Invalid(format!("`{typed}`: answer yes or no")),
            },
            FieldKind::Choice(choices) => match choices.iter().find(|c| c.as_str() == typed) {
                Some(choice) => Typed::Value(json!(choice)),
                None => Typed::Invalid(format!(
                    "`{typed}` is not {}",
                    at_most(&format!("one of: {}", choices.join(", ")), MAX_LABEL_CHARS)
                )),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server's long text is cut on a character, saying so.
    #[test]
    fn long_server_text_is_cut_with_an_ellipsis() {
        assert_eq!(
            (at_most("ééééé", 3), at_most("abc", 3)),
            ("ééé…".to_owned(), "abc".to_owned())
        );
    }

    /// The form built from server-everything's kind of schema, and what typed lines mean.
    #[test]
    fn fields_are_read_by_their_kind() {
        let form = Form::from_params(&json!({
            "message": "Tell me",
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "title": "Name", "description": "yours"},
                    "age": {"type": "integer", "default": 30},
                    "ok": {"type": "boolean"},
                    "colour": {"type": "string", "enum": ["red", "blue"]},
                },
                "required": ["name", "ok"],
            },
        }));
        let prompts: Vec<String> = form.fields.iter().map(Field::prompt).collect();
        expect_test::expect![[r#"
            [
                "  name (Name: yours) [text; required]: ",
                "  age [a whole number; default 30]: ",
                "  ok [yes or no; required]: ",
                "  colour [one of: red, blue]: ",
            ]
        "#]]
        .assert_debug_eq(&prompts);
        let shown = |field: usize, typed: &str| match form.fields[field].read(typed) {
            Typed::Value(value) => value.to_string(),
            Typed::Nothing => "nothing".into(),
            Typed::Refused(answer) => answer.to_json().to_string(),
            Typed::Invalid(why) => why,
        };
        let read: Vec<String> = [
            (1, "41"),
            (1, "old"),
            (2, "Yes"),
            (2, "maybe"),
            (3, "blue"),
            (3, "green"),
            (0, ""),
            (0, "!decline"),
            (0, "!cancel"),
        ]
        .into_iter()
        .map(|(field, typed)| shown(field, typed))
        .collect();
        expect_test::expect![[r#"
            [
                "41",
                "`old` is not a whole number",
                "true",
                "`maybe`: answer yes or no",
                "\"blue\"",
                "`green` is not one of: red, blue",
                "nothing",
                "{\"action\":\"decline\"}",
                "{\"action\":\"cancel\"}",
            ]
        "#]]
        .assert_debug_eq(&read);
    }
}
