//! The only place the `switchboard` command writes to stdout and stderr (the testkit's tidy
//! test keeps every other file of the CLI free of print macros and stdout/stderr handles).
//!
//! Everything written for a person — results, check reports, errors, log lines, login
//! prompts — goes through [`Writer`]: control, C1, bidi and invisible characters become
//! visible escapes (`\u{1b}`, by `switchboard_text::peer_text`, the one rule), bytes that
//! are not UTF-8 become `\xNN`, and a character split across writes is joined first. On
//! stderr (errors and logs) the loaded configuration's secret values are replaced too
//! ([`hide_secrets`]), except in the one line a person must use as it is (login's
//! authorization address, [`say_usable_address`]); stdout carries results, the servers'
//! answers as asked for (`check` reports come redacted by the checker itself).
//! JSON goes out through [`print_json`]: the same value, with those characters written as
//! `\uXXXX` escapes. Our own terminal control (the progress line of `check`) is written by
//! [`status_line`] around sanitised text, and a call's progress bar is drawn by indicatif
//! ([`progress_bar`]) with text sanitised by [`shown_on_stderr`]. Colour is ours only and
//! added after sanitising: the level word of a log line, at the start of the event's
//! first line where no server text can be ([`Colouring`]: on a terminal, honouring
//! `NO_COLOR` and `CLICOLOR_FORCE`); the sanitiser lets no escape sequence of the text
//! through. Generated text of our own that a program reads (shell completion scripts)
//! goes out as it is through [`print_generated`]; the answer to a Tab is the shell's and
//! clap_complete writes it itself (`completions.rs` offers no name that needs escaping).
//!
//! `switchboard serve`'s stdout is the protocol channel and is not written here
//! (`switchboard_wire::stdio::own_stdio` owns it); its startup report goes to stderr here.

use std::fmt;
use std::io::{self, IsTerminal, Write};
use std::sync::{LazyLock, PoisonError, RwLock};

use serde_json::Value;
use serde_json::ser::{CharEscape, Formatter};
use switchboard_text::peer_text::{needs_escape, neutralize};
use switchboard_text::redact::Secrets;

/// Whether our own styling goes to stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Colouring {
    /// Colour (a terminal without `NO_COLOR`, or `CLICOLOR_FORCE` set).
    Styled,
    /// No escape codes at all.
    Plain,
}

/// Decided once, by anstream's rules: `CLICOLOR_FORCE` forces colour, `NO_COLOR`,
/// `CLICOLOR=0` and `TERM=dumb` turn it off, and otherwise colour only on a terminal.
static STDERR_COLOURING: LazyLock<Colouring> =
    LazyLock::new(|| match anstream::AutoStream::choice(&io::stderr()) {
        anstream::ColorChoice::Never => Colouring::Plain,
        _ => Colouring::Styled,
    });

/// Whether our own styling goes to stderr.
pub(crate) fn stderr_colouring() -> Colouring {
    *STDERR_COLOURING
}

/// Secret values of the loaded configuration, hidden on stderr.
static SECRETS: LazyLock<RwLock<Secrets>> = LazyLock::new(|| RwLock::new(Secrets::default()));

/// Adds secret values to hide from everything written to stderr from now on.
pub(crate) fn hide_secrets(values: Vec<String>) {
    SECRETS
        .write()
        .unwrap_or_else(PoisonError::into_inner)
        .extend(values);
}

/// `text` with the loaded configuration's secrets replaced, for a message that goes to
/// stdout (where results are shown as they are), such as `--json`'s error object.
pub(crate) fn without_secrets(text: &str) -> String {
    SECRETS
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .redact(text)
        .into_owned()
}

/// Which standard stream a [`Writer`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stream {
    /// Results.
    Stdout,
    /// Errors, logs, reports about the run.
    Stderr,
}

/// Whether a [`Sanitizer`] replaces the configuration's secret values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Secrecy {
    /// Replace them (errors and logs).
    HideKnown,
    /// Leave them (results, and an address a person must be able to use).
    ShowAsIs,
}

/// Text held back waiting for its line's end is written out once it reaches this size.
const MAX_PENDING_BYTES: usize = 64 * 1024;

/// Turns the bytes written into text safe to show, a line at a time (and on `flush`, and
/// at the end), so that a secret is found whole within its line; a character split across
/// `write` calls is held back until it is complete.
struct Sanitizer {
    secrets: Secrecy,
    pending: Vec<u8>,
}

impl Sanitizer {
    /// The safe text of what is complete after adding `bytes`.
    fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = match self.pending.iter().rposition(|b| *b == b'\n') {
            Some(newline) => self.take(newline + 1),
            None => String::new(),
        };
        if self.pending.len() > MAX_PENDING_BYTES {
            out.push_str(&self.take(complete_prefix(&self.pending)));
        }
        out
    }

    /// The safe text of everything pending but an incomplete character.
    fn flush(&mut self) -> String {
        self.take(complete_prefix(&self.pending))
    }

    /// The safe text of everything pending (an incomplete character as `\xNN` bytes).
    fn finish(&mut self) -> String {
        self.take(self.pending.len())
    }

    fn take(&mut self, end: usize) -> String {
        if end == 0 {
            return String::new();
        }
        let chunk: Vec<u8> = self.pending.drain(..end).collect();
        let mut text = decode(&chunk);
        if self.secrets == Secrecy::HideKnown {
            let secrets = SECRETS.read().unwrap_or_else(PoisonError::into_inner);
            text = secrets.redact(&text).into_owned();
        }
        neutralize(&text).into_owned()
    }
}

/// Whether a [`Writer`] styles the level word of the log event it writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LevelStyle {
    /// Not (yet) written: its first output is styled.
    Pending,
    /// Written, or not a log event, or no colour.
    Off,
}

/// A sanitising writer to stdout or stderr (see [`Sanitizer`]).
pub(crate) struct Writer {
    stream: Stream,
    sanitizer: Sanitizer,
    level_style: LevelStyle,
}

impl Writer {
    /// Stdout shows results as they are; stderr hides the configuration's secrets.
    fn new(stream: Stream) -> Writer {
        let secrets = match stream {
            Stream::Stdout => Secrecy::ShowAsIs,
            Stream::Stderr => Secrecy::HideKnown,
        };
        Writer {
            stream,
            sanitizer: Sanitizer {
                secrets,
                pending: Vec::new(),
            },
            level_style: LevelStyle::Off,
        }
    }

    fn write_out(&mut self, text: &str) -> io::Result<()> {
        if text.is_empty() {
            return Ok(());
        }
        if self.level_style == LevelStyle::Pending {
            self.level_style = LevelStyle::Off;
            return self.write_raw(&style_level(text));
        }
        self.write_raw(text)
    }

    fn write_raw(&self, text: &str) -> io::Result<()> {
        match self.stream {
            Stream::Stdout => io::stdout().lock().write_all(text.as_bytes()),
            Stream::Stderr => io::stderr().lock().write_all(text.as_bytes()),
        }
    }

    fn flush_stream(&self) -> io::Result<()> {
        match self.stream {
            Stream::Stdout => io::stdout().lock().flush(),
            Stream::Stderr => io::stderr().lock().flush(),
        }
    }
}

impl Write for Writer {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let ready = self.sanitizer.push(buf);
        self.write_out(&ready)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        let ready = self.sanitizer.flush();
        self.write_out(&ready)?;
        self.flush_stream()
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let rest = self.sanitizer.finish();
        let _ = self.write_out(&rest);
        let _ = self.flush_stream();
    }
}

/// `text` (sanitised, a log event's first output) with its level word coloured: the
/// formatter writes the timestamp, spaces, then the level, before any text of the event.
fn style_level(text: &str) -> String {
    let Some((timestamp, rest)) = text.split_once(' ') else {
        return text.to_owned();
    };
    let after_padding = rest.trim_start_matches(' ');
    let padding = &rest[..rest.len() - after_padding.len()];
    let level = after_padding.split([' ', '\n']).next().unwrap_or_default();
    let colour = match level {
        "ERROR" => anstyle::AnsiColor::Red,
        "WARN" => anstyle::AnsiColor::Yellow,
        "INFO" => anstyle::AnsiColor::Green,
        "DEBUG" => anstyle::AnsiColor::Blue,
        "TRACE" => anstyle::AnsiColor::Magenta,
        _ => return text.to_owned(),
    };
    let style = anstyle::Style::new().fg_color(Some(colour.into())).bold();
    let tail = &after_padding[level.len()..];
    format!("{timestamp} {padding}{style}{level}{style:#}{tail}")
}

/// The length of `bytes` without an incomplete UTF-8 sequence at its end.
fn complete_prefix(bytes: &[u8]) -> usize {
    let tail_start = bytes.len().saturating_sub(3);
    for at in (tail_start..bytes.len()).rev() {
        let byte = bytes[at];
        if byte & 0xC0 == 0x80 {
            continue;
        }
        let needed = match byte {
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => 1,
        };
        return if bytes.len() - at < needed {
            at
        } else {
            bytes.len()
        };
    }
    bytes.len()
}

/// UTF-8 text of `bytes`; each byte that is not part of valid UTF-8 shown as `\xNN`.
fn decode(mut bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    loop {
        match std::str::from_utf8(bytes) {
            Ok(text) => {
                out.push_str(text);
                return out;
            }
            Err(error) => {
                let (valid, rest) = bytes.split_at(error.valid_up_to());
                out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                let bad = error.error_len().unwrap_or(rest.len());
                for byte in &rest[..bad] {
                    out.push_str(&format!("\\x{byte:02x}"));
                }
                bytes = &rest[bad..];
            }
        }
    }
}

/// Writes results to stdout.
pub(crate) fn print(text: &str) {
    let mut out = Writer::new(Stream::Stdout);
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// Writes text this program generated from its own definitions, and that another program
/// reads, to stdout as it is (a shell completion script: no server's or user's text is in
/// it, and the shell needs its tabs and quoting byte for byte).
pub(crate) fn print_generated(text: &[u8]) {
    let mut out = io::stdout().lock();
    let _ = out.write_all(text);
    let _ = out.flush();
}

/// Writes bytes as they are to stdout when it is a pipe or a file (binary contents a user
/// redirected); nothing when it is a terminal, which never gets raw bytes.
pub(crate) fn write_bytes_to_pipe(bytes: &[u8]) {
    let mut out = io::stdout().lock();
    if out.is_terminal() {
        return;
    }
    let _ = out.write_all(bytes);
    let _ = out.flush();
}

/// Writes one line (a newline is added) to stderr.
pub(crate) fn say(line: fmt::Arguments<'_>) {
    let mut err = Writer::new(Stream::Stderr);
    let _ = writeln!(err, "{line}");
    let _ = err.flush();
}

/// Writes one line to stderr sanitised but with secrets left in: only for an address a
/// person must open as it is (the authorization address `login` prints, which the browser
/// is sent to anyway).
pub(crate) fn say_usable_address(line: fmt::Arguments<'_>) {
    let mut err = Writer::new(Stream::Stderr);
    err.sanitizer.secrets = Secrecy::ShowAsIs;
    let _ = writeln!(err, "{line}");
    let _ = err.flush();
}

/// Writes a prompt (no newline) to stderr.
pub(crate) fn prompt(text: &str) {
    let mut err = Writer::new(Stream::Stderr);
    let _ = err.write_all(text.as_bytes());
    let _ = err.flush();
}

/// True when stdin is a terminal (the shell edits lines there, else reads them plain).
pub(crate) fn stdin_is_terminal() -> bool {
    io::stdin().is_terminal()
}

/// True when `text` shows as it is (nothing in it the sanitiser would escape): the line
/// editor offers only such words, since it draws its candidates itself.
pub(crate) fn shown_as_is(text: &str) -> bool {
    neutralize(text) == text
}

/// What the line editor completes: the start of the word being typed in the text before
/// the cursor, and the words that may replace it.
pub(crate) trait Complete {
    fn complete(&self, before_cursor: &str) -> (usize, Vec<String>);
}

/// What the line editor read.
#[derive(Debug)]
pub(crate) enum EditedLine {
    Line(String),
    /// Ctrl-C.
    Interrupted,
    /// Ctrl-D, or the terminal failed.
    End,
}

/// The shell's line editor (rustyline) on the terminal: it draws our prompt and the
/// user's own line, and completion candidates only as [`shown_as_is`] lets them through
/// (each candidate is checked again here), so no server text reaches the terminal raw.
pub(crate) struct LineEditor<C: Complete> {
    editor: rustyline::Editor<Helped<C>, rustyline::history::MemHistory>,
}

impl<C: Complete> LineEditor<C> {
    /// An editor completing with `complete`, keeping at most `history` lines.
    pub(crate) fn new(complete: C, history: usize) -> Result<LineEditor<C>, String> {
        let config = rustyline::Config::builder()
            .max_history_size(history)
            .map_err(|e| e.to_string())?
            .completion_type(rustyline::CompletionType::List)
            .auto_add_history(false)
            .build();
        let mut editor =
            rustyline::Editor::with_history(config, rustyline::history::MemHistory::new())
                .map_err(|e| e.to_string())?;
        editor.set_helper(Some(Helped(complete)));
        Ok(LineEditor { editor })
    }

    /// Reads one line after `prompt` (sanitised).
    pub(crate) fn read(&mut self, prompt: &str) -> EditedLine {
        match self.editor.readline(neutralize(prompt).as_ref()) {
            Ok(line) => EditedLine::Line(line),
            Err(rustyline::error::ReadlineError::Interrupted) => EditedLine::Interrupted,
            Err(_) => EditedLine::End,
        }
    }

    /// Adds a line to the history.
    pub(crate) fn add_history(&mut self, line: &str) {
        let _ = self.editor.add_history_entry(line);
    }

    /// The history, oldest first.
    pub(crate) fn history(&self) -> Vec<String> {
        use rustyline::history::{History as _, SearchDirection};
        let history = self.editor.history();
        (0..history.len())
            .filter_map(|at| history.get(at, SearchDirection::Forward).ok().flatten())
            .map(|found| found.entry.into_owned())
            .collect()
    }
}

/// Our [`Complete`] as rustyline's helper (no hints, highlighting or validation).
struct Helped<C>(C);

impl<C: Complete> rustyline::completion::Completer for Helped<C> {
    type Candidate = String;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        let before = line.get(..pos).unwrap_or(line);
        let (start, mut candidates) = self.0.complete(before);
        candidates.retain(|c| shown_as_is(c));
        Ok((start, candidates))
    }
}

impl<C> rustyline::hint::Hinter for Helped<C> {
    type Hint = String;
}

impl<C> rustyline::highlight::Highlighter for Helped<C> {}

impl<C> rustyline::validate::Validator for Helped<C> {}

impl<C: Complete> rustyline::Helper for Helped<C> {}

/// How JSON is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JsonLayout {
    /// One line.
    Compact,
    /// Indented by two spaces.
    Pretty,
}

/// `value` as JSON text: the same value, with the characters the terminal sanitiser
/// escapes (C1, DEL, bidi, invisible; serde_json already escapes C0) written as `\uXXXX`.
pub(crate) fn json_text(value: &Value, layout: JsonLayout) -> String {
    let mut out = Vec::new();
    let written = match layout {
        JsonLayout::Compact => {
            let formatter = SafeJson(serde_json::ser::CompactFormatter);
            serde::Serialize::serialize(
                value,
                &mut serde_json::Serializer::with_formatter(&mut out, formatter),
            )
        }
        JsonLayout::Pretty => {
            let formatter = SafeJson(serde_json::ser::PrettyFormatter::new());
            serde::Serialize::serialize(
                value,
                &mut serde_json::Serializer::with_formatter(&mut out, formatter),
            )
        }
    };
    match written {
        // Formatting into memory fails only if serialisation itself does, which a `Value`
        // never does; the text is ASCII-safe JSON either way.
        Ok(()) => String::from_utf8_lossy(&out).into_owned(),
        Err(error) => format!("{{\"error\": \"could not write JSON: {error}\"}}"),
    }
}

/// Writes `value` as JSON (and a newline) to stdout.
pub(crate) fn print_json(value: &Value, layout: JsonLayout) {
    print(&format!("{}\n", json_text(value, layout)));
}

/// True when stdout is a terminal.
pub(crate) fn stdout_is_terminal() -> bool {
    io::stdout().is_terminal()
}

/// True when stderr is a terminal.
pub(crate) fn stderr_is_terminal() -> bool {
    io::stderr().is_terminal()
}

/// Rewrites the current stderr line with `text` (sanitised): the carriage return and
/// erase-line sequence are ours, the text cannot carry any.
pub(crate) fn status_line(text: &str) {
    clear_status_line();
    prompt(text);
}

/// `text` as it may be drawn on stderr inside our own terminal control (a progress
/// bar's message): secrets replaced, controls made visible, on one line.
pub(crate) fn shown_on_stderr(text: &str) -> String {
    let mut sanitizer = Sanitizer {
        secrets: Secrecy::HideKnown,
        pending: Vec::new(),
    };
    let mut shown = sanitizer.push(text.as_bytes());
    shown.push_str(&sanitizer.finish());
    shown.replace('\n', " ")
}

/// A progress bar drawn on stderr (indicatif hides it when stderr is not a terminal);
/// its template is ours and its messages come through [`shown_on_stderr`].
pub(crate) fn progress_bar(style: indicatif::ProgressStyle) -> indicatif::ProgressBar {
    indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr())
        .with_style(style)
}

/// Erases the current stderr line.
pub(crate) fn clear_status_line() {
    let mut stderr = io::stderr().lock();
    let _ = stderr.write_all(b"\r\x1b[2K");
    let _ = stderr.flush();
}

/// The tracing subscriber's writer: each event through a sanitising stderr [`Writer`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LogOutput;

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogOutput {
    type Writer = Writer;

    fn make_writer(&'a self) -> Writer {
        let mut writer = Writer::new(Stream::Stderr);
        if stderr_colouring() == Colouring::Styled {
            writer.level_style = LevelStyle::Pending;
        }
        writer
    }
}

/// A JSON formatter that writes what [`needs_escape`] names as `\uXXXX` and otherwise does
/// what the formatter it wraps does.
struct SafeJson<F>(F);

/// Delegates formatter methods that take only the writer and plain values.
macro_rules! delegate {
    ($($name:ident($($arg:ident: $ty:ty),*);)*) => {
        $(
            fn $name<W: ?Sized + io::Write>(&mut self, writer: &mut W $(, $arg: $ty)*) -> io::Result<()> {
                self.0.$name(writer $(, $arg)*)
            }
        )*
    };
}

impl<F: Formatter> Formatter for SafeJson<F> {
    delegate! {
        write_null();
        write_bool(value: bool);
        write_i8(value: i8);
        write_i16(value: i16);
        write_i32(value: i32);
        write_i64(value: i64);
        write_i128(value: i128);
        write_u8(value: u8);
        write_u16(value: u16);
        write_u32(value: u32);
        write_u64(value: u64);
        write_u128(value: u128);
        write_f32(value: f32);
        write_f64(value: f64);
        write_number_str(value: &str);
        begin_string();
        end_string();
        write_char_escape(char_escape: CharEscape);
        write_byte_array(value: &[u8]);
        begin_array();
        end_array();
        begin_array_value(first: bool);
        end_array_value();
        begin_object();
        end_object();
        begin_object_key(first: bool);
        end_object_key();
        begin_object_value();
        end_object_value();
        write_raw_fragment(fragment: &str);
    }

    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut rest = fragment;
        while let Some((at, c)) = rest.char_indices().find(|(_, c)| needs_escape(*c)) {
            self.0.write_string_fragment(writer, &rest[..at])?;
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                write!(writer, "\\u{unit:04x}")?;
            }
            rest = &rest[at + c.len_utf8()..];
        }
        self.0.write_string_fragment(writer, rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOSTILE: &str = "a\u{1b}[2J\u{7}\r\u{9b}31m\u{202e}\u{200b}\u{e0041}\u{7f} é\n";

    #[test]
    fn json_keeps_the_value_and_escapes_what_the_terminal_would_run() {
        let value = serde_json::json!({HOSTILE: [HOSTILE, 1, 2.5, null, true], "plain": "é 世界"});
        for layout in [JsonLayout::Compact, JsonLayout::Pretty] {
            let text = json_text(&value, layout);
            assert!(!text.chars().any(needs_escape), "{text}");
            let back: Value = serde_json::from_str(&text).expect("valid JSON");
            assert_eq!(back, value);
        }
        expect_test::expect![[r#"{"a\u001b[2J\u0007\r\u009b31m\u202e\u200b\udb40\udc41\u007f é\n":["a\u001b[2J\u0007\r\u009b31m\u202e\u200b\udb40\udc41\u007f é\n",1,2.5,null,true],"plain":"é 世界"}"#]]
            .assert_eq(&json_text(&value, JsonLayout::Compact));
        assert_eq!(
            json_text(&value, JsonLayout::Pretty).lines().count(),
            serde_json::to_string_pretty(&value)
                .expect("json")
                .lines()
                .count()
        );
    }

    #[test]
    fn text_split_across_writes_is_joined_before_it_is_judged() {
        hide_secrets(vec!["s3cret-value".to_owned()]);
        let mut sanitizer = Sanitizer {
            secrets: Secrecy::HideKnown,
            pending: Vec::new(),
        };
        let written = "x s3cret-value \u{1b}[2J é\n\u{9b}tail".as_bytes();
        let mut out = String::new();
        for byte in written {
            out.push_str(&sanitizer.push(std::slice::from_ref(byte)));
        }
        assert_eq!(out, "x <redacted> \\u{1b}[2J é\n", "one line at a time");
        out.push_str(&sanitizer.flush());
        assert_eq!(out, "x <redacted> \\u{1b}[2J é\n\\u{9b}tail");
        assert_eq!(
            sanitizer.push("\u{e9}".as_bytes().get(..1).unwrap_or_default()),
            ""
        );
        assert_eq!(sanitizer.flush(), "", "half a character waits");
        assert_eq!(
            sanitizer.finish(),
            "\\xc3",
            "and is shown as a byte at the end"
        );

        let mut results = Sanitizer {
            secrets: Secrecy::ShowAsIs,
            pending: Vec::new(),
        };
        assert_eq!(results.push(b"s3cret-value\r\n"), "s3cret-value\\u{d}\n");
    }

    #[test]
    fn only_the_level_word_of_a_log_line_is_coloured() {
        expect_test::expect![[r#"
            "2026-01-01T00:00:00.000000Z  \u{1b}[1m\u{1b}[33mWARN\u{1b}[0m switchboard: x WARN y\n"
            "2026-01-01T00:00:00.000000Z \u{1b}[1m\u{1b}[31mERROR\u{1b}[0m\n"
            "not a log line\n"
        "#]]
        .assert_eq(&format!(
            "{:?}\n{:?}\n{:?}\n",
            style_level("2026-01-01T00:00:00.000000Z  WARN switchboard: x WARN y\n"),
            style_level("2026-01-01T00:00:00.000000Z ERROR\n"),
            style_level("not a log line\n"),
        ));
    }

    #[test]
    fn text_for_our_own_drawing_is_one_safe_line() {
        assert_eq!(
            shown_on_stderr("step \u{1b}[31m1\nof 2"),
            "step \\u{1b}[31m1 of 2"
        );
    }

    #[test]
    fn bytes_are_decoded_across_writes_and_invalid_ones_shown() {
        let text = "é世😀";
        let bytes = text.as_bytes();
        for cut in 0..=bytes.len() {
            let prefix = complete_prefix(&bytes[..cut]);
            assert!(std::str::from_utf8(&bytes[..prefix]).is_ok(), "cut {cut}");
            assert!(cut - prefix < 4, "cut {cut}");
        }
        assert_eq!(complete_prefix(&bytes[..1]), 0);
        assert_eq!(decode(b"a\x9bb\xff\xe2\x80"), "a\\x9bb\\xff\\xe2\\x80");
        assert_eq!(decode("é".as_bytes()), "é");
    }
}
