//! What the runtime tells a host as it happens ([`Runtime::notices`](crate::Runtime::notices)):
//! the servers' own notifications (log messages, resource updates, anything else they
//! send), each server's state changes with the reason, and which publication carries a
//! server's changed lists or instructions.
//!
//! Every notice is bounded: a server controls the text, so strings and JSON values are cut
//! to [`NOTICE_TEXT_LIMIT`] bytes with a note saying how much was cut; with at most
//! `NOTICE_BUFFER` notices queued per host, the feed's memory is bounded too. A host that
//! falls behind is told how many it missed (the receiver's `Lagged`), and a server whose
//! notifications the runtime itself missed is reported as [`NoticeKind::Missed`].

use serde_json::Value;
use switchboard_protocol::methods;

use crate::server::ServerState;

/// The most bytes of server-controlled text (a string, or a JSON value's text) a notice
/// carries; longer text is cut, with a note saying how much.
pub const NOTICE_TEXT_LIMIT: usize = 16 * 1024;

/// The most bytes of a name a notice carries (a method, a logger, a level).
const NOTICE_NAME_LIMIT: usize = 256;

/// Something a server did or said that a host may want to pass on or show.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerNotice {
    /// The server's configured name.
    pub server: String,
    /// What happened.
    pub kind: NoticeKind,
}

/// What a [`ServerNotice`] says.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum NoticeKind {
    /// `notifications/message`: a log message at the level the server named it.
    Log {
        /// `debug` … `emergency`, as the server wrote it.
        level: String,
        /// The server's logger name, if any.
        logger: Option<String>,
        /// The message.
        data: Value,
    },
    /// `notifications/resources/updated` for a resource the host subscribed to.
    ResourceUpdated {
        /// The resource.
        uri: String,
    },
    /// Any other notification the runtime has no use of its own for (progress that names
    /// no call in flight, an extension's notification, a log message without a level).
    Other {
        /// Its method.
        method: String,
        /// Its parameters (`null` when it had none).
        params: Value,
    },
    /// The server moved to another state: connecting, ready, failed with a retry
    /// scheduled or stopped by the circuit breaker (each failure with its reason), stopped.
    State(ServerState),
    /// The snapshot of `version` is the first to carry this server's changed lists
    /// (re-listed after a change notification, reconnected with other lists, reloaded,
    /// gone at disable).
    ListsChanged {
        /// The snapshot's version.
        version: u64,
        /// Which lists changed.
        lists: Vec<ListKind>,
    },
    /// The snapshot of `version` is the first to carry this server's changed instructions
    /// (its part of the system-prompt section changed).
    InstructionsChanged {
        /// The snapshot's version.
        version: u64,
    },
    /// The runtime fell behind the server and missed this many of its notifications (a
    /// list change among them is caught up by re-listing).
    Missed {
        /// How many.
        notifications: u64,
    },
    /// A frame from the server that was no usable message (not JSON-RPC, or an answer
    /// nobody asked for).
    Unusable {
        /// What was wrong, with the server's text escaped and bounded.
        detail: String,
    },
}

/// One of a server's published lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ListKind {
    /// Its tools (those its entry's filter lets through).
    Tools,
    /// Its prompts.
    Prompts,
    /// Its resources and resource templates.
    Resources,
}

impl NoticeKind {
    /// The notice a server notification carries, bounded.
    pub(crate) fn of(method: &str, params: Option<&Value>) -> NoticeKind {
        let known = params.and_then(|params| match method {
            methods::LOG_MESSAGE => Some(NoticeKind::Log {
                level: bounded_text(params.get("level")?.as_str()?, NOTICE_NAME_LIMIT),
                logger: params
                    .get("logger")
                    .and_then(Value::as_str)
                    .map(|logger| bounded_text(logger, NOTICE_NAME_LIMIT)),
                data: bounded_json(params.get("data").unwrap_or(&Value::Null)),
            }),
            methods::RESOURCES_UPDATED => Some(NoticeKind::ResourceUpdated {
                uri: bounded_text(params.get("uri")?.as_str()?, NOTICE_TEXT_LIMIT),
            }),
            _ => None,
        });
        known.unwrap_or_else(|| NoticeKind::Other {
            method: bounded_text(method, NOTICE_NAME_LIMIT),
            params: params.map_or(Value::Null, bounded_json),
        })
    }
}

/// `text`, or its first `limit` bytes (on a character boundary) and a note of what was cut.
pub(crate) fn bounded_text(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_owned();
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} more bytes cut]", &text[..end], text.len() - end)
}

/// `value` itself when its JSON text fits [`NOTICE_TEXT_LIMIT`]; otherwise a string of its
/// text's beginning and a note of what was cut. The text is measured as it is written,
/// keeping no more than the limit.
fn bounded_json(value: &Value) -> Value {
    match value {
        Value::String(text) => Value::String(bounded_text(text, NOTICE_TEXT_LIMIT)),
        Value::Null | Value::Bool(_) | Value::Number(_) => value.clone(),
        Value::Array(_) | Value::Object(_) => {
            let mut text = CappedText::default();
            if serde_json::to_writer(&mut text, value).is_err() || text.total <= NOTICE_TEXT_LIMIT {
                return value.clone();
            }
            // The kept bytes are JSON text cut at the limit: valid UTF-8 up to the last
            // whole character.
            let whole = match std::str::from_utf8(&text.kept) {
                Ok(kept) => kept,
                Err(cut) => std::str::from_utf8(&text.kept[..cut.valid_up_to()]).unwrap_or(""),
            };
            Value::String(format!(
                "{whole}… [{} more bytes cut]",
                text.total - whole.len()
            ))
        }
    }
}

/// A writer that keeps the first [`NOTICE_TEXT_LIMIT`] bytes written and counts them all.
#[derive(Default)]
struct CappedText {
    kept: Vec<u8>,
    total: usize,
}

impl std::io::Write for CappedText {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let room = NOTICE_TEXT_LIMIT.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&bytes[..bytes.len().min(room)]);
        self.total += bytes.len();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn notices_carry_bounded_text_and_keep_what_they_do_not_know() {
        let long = "é".repeat(NOTICE_TEXT_LIMIT);
        let cases = [
            (
                methods::LOG_MESSAGE,
                Some(json!({"level": "info", "logger": "x".repeat(300), "data": {"big": long}})),
            ),
            (methods::LOG_MESSAGE, Some(json!({"data": "no level"}))),
            (
                methods::RESOURCES_UPDATED,
                Some(json!({"uri": "file:///a"})),
            ),
            (
                methods::PROGRESS,
                Some(json!({"progressToken": 7, "progress": 1})),
            ),
            ("vendor/ping", None),
        ];
        let shown: Vec<String> = cases
            .iter()
            .map(|(method, params)| {
                let notice = format!("{:?}", NoticeKind::of(method, params.as_ref()));
                let chars: Vec<char> = notice.chars().collect();
                if chars.len() > 200 {
                    let head: String = chars[..80].iter().collect();
                    let tail: String = chars[chars.len() - 60..].iter().collect();
                    format!("{head}…{tail} ({} chars)", chars.len())
                } else {
                    notice
                }
            })
            .collect();
        expect_test::expect![[r#"
            Log { level: "info", logger: Some("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…éééééééééééééééééééééééééééééééé… [16394 more bytes cut]") } (8557 chars)
            Other { method: "notifications/message", params: Object {"data": String("no level")} }
            ResourceUpdated { uri: "file:///a" }
            Other { method: "notifications/progress", params: Object {"progressToken": Number(7), "progress": Number(1)} }
            Other { method: "vendor/ping", params: Null }"#]].assert_eq(&shown.join("\n"));
    }
}
