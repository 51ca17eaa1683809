//! The audit log's file: one JSON line per call that crosses the gateway
//! (`switchboard_gateway::audit::AuditRecord`), hash-chained. [`AuditLog`] is the gateway's
//! `AuditSink`; the file I/O is here, in the CLI, because the server crates read and write
//! no files.
//!
//! [`AuditLog::open`] opens (or continues) the file and starts its writer, a thread that
//! owns the file. The gateway hands it one [`AuditRecord`] per `tools/call`, `prompts/get`
//! and `resources/read` it answers, with `try_send` on a channel of [`QUEUE_LINES`]: a call
//! never waits for the disk. A record that does not fit is counted; the count is written as
//! its own line (`{"dropped": N}`) in the chain when the writer next writes, and the run's
//! total is in [`AuditEnd`], which [`AuditLog::finish`] returns after a bounded wait.
//!
//! Each line is a JSON object with `seq` (counting from 1 across files), `prev` (the previous
//! line's `hash`; [`GENESIS`] for a log's first line) and `hash`: `sha256:` and the hex
//! SHA-256 of the line's canonical JSON without `hash` (keys sorted, no spaces). Arguments
//! are only digested ([`arguments_digest`]): no argument value is ever written, nor a
//! resource URI (it may carry what the client asked for), nor any token.
//!
//! The file is created 0600 and opened for appending; [`open_to_others`] names what of an
//! existing log (the file, its rotated files, its folder) others could read or replace, for
//! `serve` to warn about at start. When the next line would take it
//! past `max_bytes`, it is renamed `FILE.1` (`FILE.1` to `FILE.2`…, [`KEEP_ROTATED`] kept)
//! and the new file starts with a `{"rotated": true}` line whose `prev` is the last hash of
//! the old file, so the chain continues. A log that exists is continued from its last line;
//! one whose last line cannot be read is an error ([`AuditError::Unreadable`]): the gateway
//! does not start a second chain in it.
//!
//! [`verify`] reads files in order (oldest first), each line at most [`MAX_LINE_BYTES`],
//! and names the first line that is not JSON, was edited (its hash does not match), or
//! does not follow its predecessor (a line removed or reordered).

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use serde_json::{Map, Value, json};
use switchboard_gateway::audit::{AuditRecord, AuditSink, canonical, rfc3339_millis, sha256_text};
use tokio::sync::{mpsc, oneshot};

pub(crate) const QUEUE_LINES: usize = 4096;
/// Rotated files kept (`FILE.1` … `FILE.5`).
pub(crate) const KEEP_ROTATED: usize = 5;
/// The longest line [`verify`] reads (and the most of a log's end read to continue it).
pub(crate) const MAX_LINE_BYTES: usize = 1024 * 1024;
/// The default size at which the file is rotated: 64 MiB.
pub(crate) const DEFAULT_MAX_BYTES: u64 = 64 * 1024 * 1024;
/// `prev` of a log's very first line.
pub(crate) const GENESIS: &str =
    "sha256:0000000000000000000000000000000000000000000000000000000000000000";

/// What went wrong opening or writing the log.
#[derive(Debug)]
pub(crate) enum AuditError {
    /// The file could not be opened or created.
    Open {
        path: PathBuf,
        error: std::io::Error,
    },
    /// The file exists but its last line cannot be read as a line of this log.
    Unreadable { path: PathBuf, detail: String },
}

impl fmt::Display for AuditError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AuditError::Open { path, error } => {
                write!(
                    f,
                    "the audit log {} cannot be opened: {error}",
                    path.display()
                )
            }
            AuditError::Unreadable { path, detail } => write!(
                f,
                "the audit log {} exists but cannot be continued: {detail} (move it aside, or check it with `switchboard audit verify`)",
                path.display()
            ),
        }
    }
}

impl std::error::Error for AuditError {}

/// Where the log goes and when it rotates.
#[derive(Debug, Clone)]
pub(crate) struct AuditSettings {
    /// The log file.
    pub(crate) path: PathBuf,
    /// Rotate when the next line would take the file past this many bytes.
    pub(crate) max_bytes: u64,
}

/// What the writer did over its run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct AuditEnd {
    /// Lines written (records, dropped counts, rotation lines).
    pub(crate) written: u64,
    /// Records dropped because the queue was full or the file could not be written.
    pub(crate) dropped: u64,
    /// Whether the writer finished within the wait.
    pub(crate) finished: bool,
}

enum Message {
    Record(Box<AuditRecord>),
    Close,
}

/// The sending side of the audit log (cheap to clone); [`AuditLog::finish`] ends it.
#[derive(Clone)]
pub(crate) struct AuditLog {
    queue: mpsc::Sender<Message>,
    pending_drops: Arc<AtomicU64>,
    total_drops: Arc<AtomicU64>,
    done: Arc<std::sync::Mutex<Option<oneshot::Receiver<u64>>>>,
}

impl fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuditLog")
            .field("dropped", &self.total_drops.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl AuditLog {
    /// Opens (or continues) the log and starts its writer thread.
    pub(crate) fn open(settings: AuditSettings) -> Result<AuditLog, AuditError> {
        let chain = continue_chain(&settings.path)?;
        let file = open_append(&settings.path)?;
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        let (queue, receiver) = mpsc::channel(QUEUE_LINES);
        let (done_tx, done_rx) = oneshot::channel();
        let pending_drops = Arc::new(AtomicU64::new(0));
        let total_drops = Arc::new(AtomicU64::new(0));
        let mut writer = Writer {
            settings,
            file,
            size,
            chain,
            pending_drops: pending_drops.clone(),
            total_drops: total_drops.clone(),
            written: 0,
        };
        std::thread::Builder::new()
            .name("audit-writer".into())
            .spawn(move || {
                writer.run(receiver);
                let _ = done_tx.send(writer.written);
            })
            .map_err(|error| AuditError::Open {
                path: PathBuf::from("(writer thread)"),
                error,
            })?;
        Ok(AuditLog {
            queue,
            pending_drops,
            total_drops,
            done: Arc::new(std::sync::Mutex::new(Some(done_rx))),
        })
    }

    /// Queues `record` without waiting; a full queue drops it (counted).
    pub(crate) fn record(&self, record: AuditRecord) {
        if self
            .queue
            .try_send(Message::Record(Box::new(record)))
            .is_err()
        {
            self.pending_drops.fetch_add(1, Ordering::Relaxed);
            self.total_drops.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Ends the writer: the lines queued before are written and the file synced, waiting
    /// at most `wait`.
    pub(crate) async fn finish(&self, wait: Duration) -> AuditEnd {
        let done = self
            .done
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let deadline = tokio::time::Instant::now() + wait;
        let sent = tokio::time::timeout_at(deadline, self.queue.send(Message::Close)).await;
        let written = match (sent, done) {
            (Ok(Ok(())), Some(done)) => tokio::time::timeout_at(deadline, done)
                .await
                .ok()
                .and_then(Result::ok),
            _ => None,
        };
        AuditEnd {
            written: written.unwrap_or(0),
            dropped: self.total_drops.load(Ordering::Relaxed),
            finished: written.is_some(),
        }
    }
}

/// Where the chain stands: the next `seq` and the last hash.
struct Chain {
    seq: u64,
    last_hash: String,
}

struct Writer {
    settings: AuditSettings,
    file: File,
    size: u64,
    chain: Chain,
    pending_drops: Arc<AtomicU64>,
    total_drops: Arc<AtomicU64>,
    written: u64,
}

impl Writer {
    fn run(&mut self, mut receiver: mpsc::Receiver<Message>) {
        while let Some(message) = receiver.blocking_recv() {
            self.write_drops();
            match message {
                Message::Record(record) => self.write_line(record.fields()),
                Message::Close => break,
            }
        }
        self.write_drops();
        let _ = self.file.flush();
        let _ = self.file.sync_all();
    }

    fn write_drops(&mut self) {
        let dropped = self.pending_drops.swap(0, Ordering::Relaxed);
        if dropped > 0 {
            let mut fields = Map::new();
            fields.insert("time".into(), rfc3339_millis(SystemTime::now()).into());
            fields.insert("dropped".into(), dropped.into());
            self.write_line(fields);
        }
    }

    /// Chains `fields` and appends the line, rotating first when it would not fit.
    fn write_line(&mut self, fields: Map<String, Value>) {
        let (line, _) = self.render(fields.clone());
        let full = self.size > 0 && self.size + line.len() as u64 > self.settings.max_bytes;
        if full && let Err(error) = self.rotate() {
            tracing::warn!(%error, path = %self.settings.path.display(), "the audit log could not be rotated");
        }
        let line = self.chained(fields);
        self.append(line);
    }

    /// The line of `fields` as the next in the chain, and its hash (the chain unchanged).
    fn render(&self, mut fields: Map<String, Value>) -> (String, String) {
        fields.insert("seq".into(), self.chain.seq.into());
        fields.insert("prev".into(), self.chain.last_hash.clone().into());
        let hash = sha256_text(canonical(&Value::Object(fields.clone())).as_bytes());
        fields.insert("hash".into(), hash.clone().into());
        let mut line = Value::Object(fields).to_string();
        line.push('\n');
        (line, hash)
    }

    /// The line of `fields`, now the chain's last.
    fn chained(&mut self, fields: Map<String, Value>) -> String {
        let (line, hash) = self.render(fields);
        self.chain.seq += 1;
        self.chain.last_hash = hash;
        line
    }

    fn append(&mut self, line: String) {
        match self.file.write_all(line.as_bytes()) {
            Ok(()) => {
                self.size += line.len() as u64;
                self.written += 1;
            }
            Err(error) => {
                tracing::warn!(%error, path = %self.settings.path.display(), "an audit line could not be written");
                self.total_drops.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// `FILE` becomes `FILE.1` (the older ones move up, the oldest beyond
    /// [`KEEP_ROTATED`] goes), and a new `FILE` starts with a `rotated` line.
    fn rotate(&mut self) -> std::io::Result<()> {
        self.file.sync_all()?;
        let path = &self.settings.path;
        let numbered = |n: usize| rotated_path(path, n);
        for n in (1..KEEP_ROTATED).rev() {
            let from = numbered(n);
            if from.exists() {
                std::fs::rename(&from, numbered(n + 1))?;
            }
        }
        std::fs::rename(path, numbered(1))?;
        self.file = open_append(path).map_err(|error| match error {
            AuditError::Open { error, .. } => error,
            AuditError::Unreadable { detail, .. } => std::io::Error::other(detail),
        })?;
        self.size = 0;
        let mut fields = Map::new();
        fields.insert("time".into(), rfc3339_millis(SystemTime::now()).into());
        fields.insert("rotated".into(), true.into());
        let line = self.chained(fields);
        self.append(line);
        Ok(())
    }
}

/// `FILE.n`, the `n`th rotated file of the log `FILE`.
fn rotated_path(path: &Path, n: usize) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{n}"));
    PathBuf::from(name)
}

/// What is open to others about a log that exists, each with the `chmod` that closes it:
/// the log or a rotated file readable or writable by others than its owner (a log is
/// created 0600, but one that existed keeps its mode), and the folder writable by others
/// (they could remove or replace the log and its rotated files). A folder others may only
/// read and enter (0755) is the norm and holds nothing they can read. Nothing when the
/// log does not exist yet.
pub(crate) fn open_to_others(path: &Path) -> Vec<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |path: &Path| {
            std::fs::metadata(path)
                .ok()
                .map(|meta| meta.permissions().mode() & 0o777)
        };
        let mut said = Vec::new();
        let files = std::iter::once(path.to_owned())
            .chain((1..=KEEP_ROTATED).map(|n| rotated_path(path, n)));
        for file in files {
            if let Some(bits) = mode(&file).filter(|bits| bits & 0o077 != 0) {
                let file = file.display();
                said.push(format!(
                    "the audit log {file} is open to others (mode {bits:o}); run `chmod 600 {file}`"
                ));
            }
        }
        let folder = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        if let Some(bits) = mode(folder).filter(|bits| bits & 0o022 != 0) {
            let folder = folder.display();
            said.push(format!(
                "the audit log's folder {folder} is writable by others (mode {bits:o}), who could remove or replace the log; run `chmod go-w {folder}`"
            ));
        }
        said
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        Vec::new()
    }
}

fn open_append(path: &Path) -> Result<File, AuditError> {
    let mut options = OpenOptions::new();
    options.append(true).create(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path).map_err(|error| AuditError::Open {
        path: path.to_owned(),
        error,
    })
}

/// The chain's state from the log's last line; a new chain when there is no log or it is
/// empty.
fn continue_chain(path: &Path) -> Result<Chain, AuditError> {
    let unreadable = |detail: String| AuditError::Unreadable {
        path: path.to_owned(),
        detail,
    };
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Chain {
                seq: 1,
                last_hash: GENESIS.to_owned(),
            });
        }
        Err(error) => return Err(unreadable(error.to_string())),
    };
    let len = file
        .metadata()
        .map_err(|e| unreadable(e.to_string()))?
        .len();
    if len == 0 {
        return Ok(Chain {
            seq: 1,
            last_hash: GENESIS.to_owned(),
        });
    }
    let tail_len = len.min(MAX_LINE_BYTES as u64 + 1);
    file.seek(SeekFrom::Start(len - tail_len))
        .map_err(|e| unreadable(e.to_string()))?;
    let mut tail = Vec::new();
    file.take(tail_len)
        .read_to_end(&mut tail)
        .map_err(|e| unreadable(e.to_string()))?;
    if tail.last() != Some(&b'\n') {
        return Err(unreadable("it ends in a partial line".into()));
    }
    let body = &tail[..tail.len() - 1];
    let start = body.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    if start == 0 && len > tail_len {
        return Err(unreadable("its last line is too long".into()));
    }
    let last: Value = serde_json::from_slice(&body[start..])
        .map_err(|_| unreadable("its last line is not JSON".into()))?;
    match (last["seq"].as_u64(), last["hash"].as_str()) {
        (Some(seq), Some(hash)) => Ok(Chain {
            seq: seq + 1,
            last_hash: hash.to_owned(),
        }),
        _ => Err(unreadable("its last line has no `seq` and `hash`".into())),
    }
}

/// What [`verify`] found wrong, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BrokenLine {
    /// The file.
    pub(crate) file: PathBuf,
    /// Its line number, from 1.
    pub(crate) line: u64,
    /// What is wrong.
    pub(crate) problem: String,
}

impl fmt::Display for BrokenLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} line {}: {}",
            self.file.display(),
            self.line,
            self.problem
        )
    }
}

/// What a chain that verified holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VerifiedChain {
    /// Lines read.
    pub(crate) lines: u64,
    /// Whether the first file starts after a rotation (its earlier files not given).
    pub(crate) continues_earlier: bool,
}

/// Checks the chain through `files`, oldest first (`FILE.2 FILE.1 FILE`).
pub(crate) fn verify(files: &[PathBuf]) -> Result<VerifiedChain, BrokenLine> {
    let mut previous: Option<(u64, String)> = None;
    let mut lines = 0;
    let mut continues_earlier = false;
    for path in files {
        let broken = |line: u64, problem: String| BrokenLine {
            file: path.clone(),
            line,
            problem,
        };
        let file = File::open(path).map_err(|e| broken(0, format!("cannot be read: {e}")))?;
        let mut reader = BufReader::new(file);
        let mut number = 0;
        loop {
            let mut line = Vec::new();
            let read = (&mut reader)
                .take(MAX_LINE_BYTES as u64 + 1)
                .read_until(b'\n', &mut line)
                .map_err(|e| broken(number + 1, format!("cannot be read: {e}")))?;
            if read == 0 {
                break;
            }
            number += 1;
            lines += 1;
            if line.last() != Some(&b'\n') {
                let problem = if line.len() > MAX_LINE_BYTES {
                    "longer than 1 MiB"
                } else {
                    "a partial line (no newline at its end)"
                };
                return Err(broken(number, problem.into()));
            }
            line.pop();
            let Ok(Value::Object(mut fields)) = serde_json::from_slice::<Value>(&line) else {
                return Err(broken(number, "not a JSON object".into()));
            };
            let Some(Value::String(hash)) = fields.remove("hash") else {
                return Err(broken(number, "has no `hash`".into()));
            };
            let content = Value::Object(fields);
            if sha256_text(canonical(&content).as_bytes()) != hash {
                return Err(broken(
                    number,
                    "edited: its hash does not match its content".into(),
                ));
            }
            let (Some(seq), Some(prev)) = (content["seq"].as_u64(), content["prev"].as_str())
            else {
                return Err(broken(number, "has no `seq` or `prev`".into()));
            };
            match &previous {
                Some((last_seq, last_hash)) => {
                    if prev != last_hash || seq != last_seq + 1 {
                        return Err(broken(
                            number,
                            format!(
                                "does not follow the line before it (seq {seq} after {last_seq}): a line was removed or the lines were reordered"
                            ),
                        ));
                    }
                }
                None if prev == GENESIS && seq == 1 => {}
                None if content["rotated"] == json!(true) => continues_earlier = true,
                None => {
                    return Err(broken(
                        number,
                        format!(
                            "the chain does not start here (seq {seq}): the lines before it were removed"
                        ),
                    ));
                }
            }
            previous = Some((seq, hash));
        }
    }
    Ok(VerifiedChain {
        lines,
        continues_earlier,
    })
}

impl AuditSink for AuditLog {
    fn record(&self, record: AuditRecord) {
        AuditLog::record(self, record);
    }
}

#[cfg(test)]
mod tests {
    use std::time::UNIX_EPOCH;

    use switchboard_gateway::audit::{AuditOutcome, AuditWho, arguments_digest};
    use switchboard_server::core::ClientIdentity;

    use super::*;

    fn record(n: u64) -> AuditRecord {
        AuditRecord {
            at: UNIX_EPOCH + Duration::from_secs(1_800_000_000 + n),
            who: AuditWho::of(&ClientIdentity::Local),
            method: "tools/call",
            server: Some("fx".into()),
            name: Some("fx__add".into()),
            arguments_digest: arguments_digest(&json!({ "b": n, "a": 1 })),
            outcome: AuditOutcome::Ok,
            duration: Duration::from_millis(n),
        }
    }

    #[tokio::test]
    async fn rotation_continues_the_chain_and_a_restart_continues_the_file() {
        let dir = std::env::temp_dir().join(format!("audit-rotation-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("mkdir");
        let path = dir.join("audit.log");
        let settings = AuditSettings {
            path: path.clone(),
            max_bytes: 2000,
        };
        for _ in 0..2 {
            let log = AuditLog::open(settings.clone()).expect("open");
            for n in 0..6 {
                log.record(record(n));
            }
            let end = log.finish(Duration::from_secs(10)).await;
            assert!(end.finished && end.dropped == 0, "{end:?}");
        }
        let rotated = |n: usize| dir.join(format!("audit.log.{n}"));
        let mut files: Vec<PathBuf> = (1..=KEEP_ROTATED)
            .rev()
            .map(rotated)
            .filter(|p| p.exists())
            .collect();
        assert!(files.len() >= 2, "rotated: {files:?}");
        files.push(path.clone());
        let lines: u64 = files
            .iter()
            .map(|f| std::fs::read_to_string(f).expect("read").lines().count() as u64)
            .sum();
        // The oldest file may be gone beyond KEEP_ROTATED; here none is.
        assert_eq!(
            verify(&files),
            Ok(VerifiedChain {
                lines,
                continues_earlier: false
            })
        );
        let newest = verify(std::slice::from_ref(&path)).expect("the newest file alone");
        assert!(newest.continues_earlier);
        // Without the middle file, the chain breaks at the newest file's first line.
        let gap = [files[0].clone(), path.clone()];
        let broken = verify(&gap).expect_err("a file left out");
        assert_eq!(broken.line, 1, "{broken}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
