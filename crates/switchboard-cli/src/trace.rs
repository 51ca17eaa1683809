//! `--trace` and `SWITCHBOARD_TRACE=FILE`: every JSON-RPC frame both ways, one NDJSON line
//! each, `{"ts", "dir": "send"|"recv", "server", "frame"}`, to stderr (through `terminal`)
//! or appended to FILE. Every command that talks to servers traces them: the verbs through
//! `connect.rs`, `check` through its `ServerSpec::tap` (its raw HTTP requests are no
//! frames), `serve` through the runtime's connection hooks. `serve` on stdio traces its own
//! client's frames too, with `"client": "stdio"` in place of `"server"` (`send` is what the
//! gateway sent it).
//!
//! The connection's frame tap ([`FrameTap`], made by [`tap_for`] and [`client_tap`]) only
//! copies the frame (at most [`MAX_TRACED_FRAME_BYTES`]) and hands it to a bounded channel
//! without waiting: when the writer thread falls behind, frames are dropped and counted,
//! and one line says how many. The writer parses each frame, replaces the secret values
//! wherever they occur (keys, strings, numbers, text that is not JSON) and writes the line:
//! a server's frames lose its entry's secrets, the gateway client's frames those of every
//! server traced so far (what the client hears comes from them). Headers never reach a
//! frame (they are the HTTP transport's).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, SystemTime};

use serde_json::{Map, Value, json};
use switchboard_config::ServerEntry;
use switchboard_gateway::audit::rfc3339_millis;
use switchboard_text::redact::{MIN_SECRET_LEN, Secrets};
use switchboard_wire::{Direction, FrameTap};

use crate::terminal::{self, JsonLayout};

/// The environment variable naming a file to append the trace to.
pub(crate) const TRACE_FILE_VAR: &str = "SWITCHBOARD_TRACE";

/// A frame longer than this is cut to it, and the line says so.
pub(crate) const MAX_TRACED_FRAME_BYTES: usize = 64 * 1024;

/// Frames waiting for the writer; beyond this they are dropped and counted.
const QUEUED_FRAMES: usize = 256;

/// How long the end of the program waits for the writer to write what is queued.
const FINISH_WAIT: Duration = Duration::from_secs(2);

/// Where the trace goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TraceDestination {
    /// Stderr (`--trace`), through the terminal's sanitising writer.
    Stderr,
    /// Appended to this file (`SWITCHBOARD_TRACE=FILE`).
    File(PathBuf),
}

/// The one trace of this process, once [`start`] set it up.
static SINK: OnceLock<Arc<TraceSink>> = OnceLock::new();

/// The channel to the writer thread, the count of frames it could not take, and the
/// secrets of every entry traced so far (for the gateway client's frames).
struct TraceSink {
    queue: Mutex<Option<SyncSender<TracedFrame>>>,
    dropped: Arc<AtomicU64>,
    every_entry: Mutex<Arc<EntrySecrets>>,
}

/// Whose frames a line carries.
#[derive(Clone)]
enum Peer {
    /// A server's, by its name (`"server"`).
    Server(Arc<str>),
    /// The gateway's own client's (`"client"`: how it is connected).
    Client(&'static str),
}

/// One frame as the tap saw it.
struct TracedFrame {
    at: SystemTime,
    direction: Direction,
    peer: Peer,
    secrets: Arc<EntrySecrets>,
    /// At most [`MAX_TRACED_FRAME_BYTES`] of the frame.
    bytes: Vec<u8>,
    /// The frame's whole length.
    len: usize,
}

/// An entry's secret values: the set that replaces them, and the values themselves to
/// find a secret's beginning at the end of a cut frame.
struct EntrySecrets {
    set: Secrets,
    values: Vec<String>,
}

impl EntrySecrets {
    /// The values long enough to be told apart from ordinary text.
    fn of(values: impl IntoIterator<Item = String>) -> EntrySecrets {
        let values: Vec<String> = values
            .into_iter()
            .filter(|v| v.chars().count() >= MIN_SECRET_LEN)
            .collect();
        EntrySecrets {
            set: Secrets::new(values.clone()),
            values,
        }
    }
}

/// Ends the trace when dropped: what is queued is written (within [`FINISH_WAIT`]).
#[derive(Debug)]
pub(crate) struct TraceGuard {
    finished: Receiver<()>,
}

impl Drop for TraceGuard {
    fn drop(&mut self) {
        if let Some(sink) = SINK.get() {
            sink.queue
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
        }
        let _ = self.finished.recv_timeout(FINISH_WAIT);
    }
}

/// Starts tracing to `requested` (the `--trace` flag), or else to the file
/// `SWITCHBOARD_TRACE` names; `None` when neither asks for it. Fails when the file cannot
/// be opened.
pub(crate) fn start(requested: Option<TraceDestination>) -> Result<Option<TraceGuard>, String> {
    let destination = match requested {
        Some(destination) => destination,
        None => match std::env::var_os(TRACE_FILE_VAR) {
            Some(path) if !path.is_empty() => TraceDestination::File(PathBuf::from(path)),
            _ => return Ok(None),
        },
    };
    let mut output = match &destination {
        TraceDestination::Stderr => TraceOutput::Stderr,
        TraceDestination::File(path) => TraceOutput::File(
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| format!("{TRACE_FILE_VAR}: cannot open {}: {e}", path.display()))?,
        ),
    };
    let (queue, frames) = mpsc::sync_channel(QUEUED_FRAMES);
    let (finish, finished) = mpsc::channel();
    let dropped = Arc::new(AtomicU64::new(0));
    let sink = Arc::new(TraceSink {
        queue: Mutex::new(Some(queue)),
        dropped: dropped.clone(),
        every_entry: Mutex::new(Arc::new(EntrySecrets::of([]))),
    });
    if SINK.set(sink).is_err() {
        return Err("the trace was started twice".to_owned());
    }
    std::thread::Builder::new()
        .name("switchboard-trace".to_owned())
        .spawn(move || {
            write_frames(&frames, &dropped, &mut output);
            let _ = finish.send(());
        })
        .map_err(|e| format!("cannot start the trace writer: {e}"))?;
    Ok(Some(TraceGuard { finished }))
}

/// The tap for `entry`'s connection, when a trace is on. Its secrets are added to those
/// the gateway client's frames lose.
pub(crate) fn tap_for(entry: &ServerEntry) -> Option<Arc<dyn FrameTap>> {
    let sink = SINK.get()?;
    let secrets = Arc::new(EntrySecrets::of(entry.secret_values()));
    {
        let mut every = sink
            .every_entry
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let new: Vec<&String> = secrets
            .values
            .iter()
            .filter(|v| !every.values.contains(v))
            .collect();
        if !new.is_empty() {
            let values = every.values.iter().chain(new).cloned();
            *every = Arc::new(EntrySecrets::of(values.collect::<Vec<_>>()));
        }
    }
    Some(Arc::new(PeerTap {
        peer: Peer::Server(Arc::from(entry.name.as_str())),
        secrets: Secrecy::Entry(secrets),
        sink: sink.clone(),
    }))
}

/// The tap for the gateway's own client connection (`how`: `stdio`), when a trace is on.
pub(crate) fn client_tap(how: &'static str) -> Option<Arc<dyn FrameTap>> {
    let sink = SINK.get()?;
    Some(Arc::new(PeerTap {
        peer: Peer::Client(how),
        secrets: Secrecy::EveryEntry,
        sink: sink.clone(),
    }))
}

/// Which secrets a tap's frames lose.
enum Secrecy {
    /// Its server's entry's.
    Entry(Arc<EntrySecrets>),
    /// Every traced entry's, as they are when the frame is seen.
    EveryEntry,
}

/// One peer's frames into the trace.
struct PeerTap {
    peer: Peer,
    secrets: Secrecy,
    sink: Arc<TraceSink>,
}

impl FrameTap for PeerTap {
    fn frame(&self, direction: Direction, bytes: &[u8]) {
        let queue = self
            .sink
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let Some(queue) = queue.as_ref() else {
            return;
        };
        let secrets = match &self.secrets {
            Secrecy::Entry(secrets) => secrets.clone(),
            Secrecy::EveryEntry => self
                .sink
                .every_entry
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
        };
        let frame = TracedFrame {
            at: SystemTime::now(),
            direction,
            peer: self.peer.clone(),
            secrets,
            bytes: bytes[..bytes.len().min(MAX_TRACED_FRAME_BYTES)].to_vec(),
            len: bytes.len(),
        };
        match queue.try_send(frame) {
            Ok(()) | Err(TrySendError::Disconnected(_)) => {}
            Err(TrySendError::Full(_)) => {
                self.sink.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// Where the writer thread writes.
enum TraceOutput {
    Stderr,
    File(File),
}

impl TraceOutput {
    fn write_line(&mut self, line: &str) {
        match self {
            TraceOutput::Stderr => terminal::say(format_args!("{line}")),
            TraceOutput::File(file) => {
                let _ = file.write_all(format!("{line}\n").as_bytes());
            }
        }
    }
}

/// The writer thread: each frame as a line, and after it a line for frames dropped
/// meanwhile; ends when the queue is closed.
fn write_frames(frames: &Receiver<TracedFrame>, dropped: &AtomicU64, output: &mut TraceOutput) {
    loop {
        match frames.recv_timeout(Duration::from_millis(200)) {
            Ok(frame) => output.write_line(&trace_line(&frame)),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        note_dropped(dropped, output);
    }
    note_dropped(dropped, output);
}

fn note_dropped(dropped: &AtomicU64, output: &mut TraceOutput) {
    let count = dropped.swap(0, Ordering::Relaxed);
    if count > 0 {
        let line = json!({
            "ts": rfc3339_millis(SystemTime::now()),
            "dropped": count,
            "note": format!("{count} frame(s) dropped: the trace writer fell behind"),
        });
        output.write_line(&terminal::json_text(&line, JsonLayout::Compact));
    }
}

/// The NDJSON line of one frame, secrets replaced.
fn trace_line(frame: &TracedFrame) -> String {
    let text = String::from_utf8_lossy(&frame.bytes);
    let cut = frame.len > frame.bytes.len();
    let traced = if cut {
        Value::String(without_secret_start(
            &frame.secrets.set.redact(&text),
            &frame.secrets.values,
        ))
    } else {
        match serde_json::from_str::<Value>(&text) {
            Ok(mut value) => {
                frame.secrets.set.redact_json(&mut value);
                value
            }
            Err(_) => Value::String(frame.secrets.set.redact(&text).into_owned()),
        }
    };
    let mut line = Map::new();
    line.insert("ts".into(), rfc3339_millis(frame.at).into());
    let direction = match frame.direction {
        Direction::Outbound => "send",
        Direction::Inbound => "recv",
    };
    line.insert("dir".into(), direction.into());
    match &frame.peer {
        Peer::Server(name) => line.insert("server".into(), name.as_ref().into()),
        Peer::Client(how) => line.insert("client".into(), (*how).into()),
    };
    line.insert("frame".into(), traced);
    if cut {
        line.insert(
            "cut".into(),
            format!(
                "the frame has {} bytes; its first {} are shown",
                frame.len,
                frame.bytes.len()
            )
            .into(),
        );
    }
    terminal::json_text(&Value::Object(line), JsonLayout::Compact)
}

/// `text` without a trailing beginning of a secret (a cut frame may end inside one).
fn without_secret_start(text: &str, secrets: &[String]) -> String {
    let mut end = text.len();
    for secret in secrets {
        let longest_start = secret
            .char_indices()
            .map(|(at, _)| at)
            .filter(|&at| at > 0 && text[..end].ends_with(&secret[..at]))
            .max();
        if let Some(start_len) = longest_start {
            end -= start_len;
        }
    }
    text[..end].to_owned()
}

#[cfg(test)]
mod tests {
    use std::time::UNIX_EPOCH;

    use super::*;

    fn secrets() -> Arc<EntrySecrets> {
        Arc::new(EntrySecrets::of([
            "s3cret-value".to_owned(),
            "12345678".to_owned(),
        ]))
    }

    fn frame(bytes: &[u8], len: usize) -> TracedFrame {
        TracedFrame {
            at: UNIX_EPOCH + Duration::from_millis(1_700_000_000_250),
            direction: Direction::Inbound,
            peer: Peer::Server(Arc::from("fx")),
            secrets: secrets(),
            bytes: bytes.to_vec(),
            len,
        }
    }

    #[test]
    fn a_full_queue_drops_frames_and_one_line_counts_them() {
        let (queue, frames) = mpsc::sync_channel(1);
        let dropped = Arc::new(AtomicU64::new(0));
        let tap = PeerTap {
            peer: Peer::Server(Arc::from("fx")),
            secrets: Secrecy::Entry(secrets()),
            sink: Arc::new(TraceSink {
                queue: Mutex::new(Some(queue)),
                dropped: dropped.clone(),
                every_entry: Mutex::new(secrets()),
            }),
        };
        for _ in 0..3 {
            tap.frame(Direction::Outbound, br#"{"jsonrpc":"2.0","method":"ping"}"#);
        }
        assert_eq!(dropped.load(Ordering::Relaxed), 2, "the tap never waits");
        tap.sink
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let path = std::env::temp_dir().join(format!("switchboard-trace-{}", std::process::id()));
        let file = File::create(&path).expect("create a trace file");
        write_frames(&frames, &dropped, &mut TraceOutput::File(file));
        let written = std::fs::read_to_string(&path).expect("read the trace file");
        let _ = std::fs::remove_file(&path);
        let lines: Vec<Value> = written
            .lines()
            .map(|line| serde_json::from_str(line).expect("JSON lines"))
            .collect();
        assert_eq!(lines.len(), 2, "{written}");
        assert_eq!(lines[0]["dir"], "send");
        assert_eq!(lines[1]["dropped"], 2, "{written}");
    }

    #[test]
    fn timestamps_are_rfc3339_with_milliseconds() {
        let at = |millis: u64| rfc3339_millis(UNIX_EPOCH + Duration::from_millis(millis));
        assert_eq!(at(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400_007), "2000-02-29T00:00:00.007Z");
        assert_eq!(at(1_700_000_000_250), "2023-11-14T22:13:20.250Z");
        assert_eq!(at(4_107_542_399_999), "2100-02-28T23:59:59.999Z");
    }

    #[test]
    fn lines_carry_the_frame_with_secrets_replaced_everywhere() {
        let message = br#"{"jsonrpc":"2.0","id":1,"result":{"s3cret-value":12345678,"text":"x s3cret-value"}}"#;
        expect_test::expect![[r#"{"ts":"2023-11-14T22:13:20.250Z","dir":"recv","server":"fx","frame":{"jsonrpc":"2.0","id":1,"result":{"<redacted>":"<redacted>","text":"x <redacted>"}}}"#]]
            .assert_eq(&trace_line(&frame(message, message.len())));
        let not_json = b"oops s3cret-value \x1b[2J";
        expect_test::expect![[r#"{"ts":"2023-11-14T22:13:20.250Z","dir":"recv","server":"fx","frame":"oops <redacted> \u001b[2J"}"#]]
            .assert_eq(&trace_line(&frame(not_json, not_json.len())));
    }

    #[test]
    fn the_gateway_clients_lines_say_so_and_lose_every_traced_entrys_secrets() {
        let (queue, frames) = mpsc::sync_channel(4);
        let sink = Arc::new(TraceSink {
            queue: Mutex::new(Some(queue)),
            dropped: Arc::new(AtomicU64::new(0)),
            every_entry: Mutex::new(secrets()),
        });
        let tap = PeerTap {
            peer: Peer::Client("stdio"),
            secrets: Secrecy::EveryEntry,
            sink,
        };
        tap.frame(
            Direction::Outbound,
            br#"{"jsonrpc":"2.0","id":1,"result":{"text":"s3cret-value"}}"#,
        );
        let mut frame = frames.try_recv().expect("the frame is queued");
        frame.at = UNIX_EPOCH + Duration::from_millis(1_700_000_000_250);
        expect_test::expect![[r#"{"ts":"2023-11-14T22:13:20.250Z","dir":"send","client":"stdio","frame":{"jsonrpc":"2.0","id":1,"result":{"text":"<redacted>"}}}"#]]
            .assert_eq(&trace_line(&frame));
    }

    #[test]
    fn a_cut_frame_says_so_and_keeps_no_beginning_of_a_secret() {
        let cut = br#"{"text":"s3cret-value and s3cr"#;
        expect_test::expect![[r#"{"ts":"2023-11-14T22:13:20.250Z","dir":"recv","server":"fx","frame":"{\"text\":\"<redacted> and ","cut":"the frame has 100000 bytes; its first 30 are shown"}"#]]
            .assert_eq(&trace_line(&frame(cut, 100_000)));
    }
}
