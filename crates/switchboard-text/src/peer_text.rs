//! Text a peer controls, made safe to show: the one place that decides which characters a
//! terminal (or a reader) must never receive raw.
//!
//! A server controls tool names, descriptions, results, error messages, its `serverInfo`
//! and everything it writes to stderr. Written to a terminal as they are, control
//! characters run: `ESC [2J` clears the screen, `OSC 52` writes the clipboard, `OSC 8`
//! hides a link behind other text, `\r` overwrites what was printed before, U+009B is a
//! one-character CSI on terminals that honour C1 controls, and bidirectional overrides
//! (U+202E) make text read differently from what it is. Every such character is shown as
//! visible text instead (`\u{1b}`), so the reader sees what was sent and the terminal runs
//! nothing.
//!
//! [`PeerText`] keeps newlines and tabs (multi-line text such as a stderr tail stays
//! readable); [`PeerLine`] also escapes them, for excerpts and values inside one line.
//! [`needs_escape`] is the rule both use; the CLI's output writer and its JSON formatter use
//! it too.

use std::borrow::Cow;
use std::fmt::{self, Write as _};

/// True for a character that must not reach a terminal or a reader raw: C0 controls other
/// than `\n` and `\t` (so ESC, BEL, `\r`, backspace), DEL, C1 controls (U+0080–U+009F), the
/// bidirectional marks, embeddings, overrides and isolates (U+061C, U+200E/F, U+202A–U+202E,
/// U+2066–U+2069), the line and paragraph separators (U+2028/9), and the invisible ones:
/// zero-width characters (U+200B–U+200D, U+2060–U+2064, U+FEFF), interlinear annotation
/// marks (U+FFF9–U+FFFB) and tag characters (U+E0000–U+E007F).
pub fn needs_escape(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{8}'
        | '\u{b}'..='\u{1f}'
        | '\u{7f}'..='\u{9f}'
        | '\u{61c}'
        | '\u{200b}'..='\u{200f}'
        | '\u{2028}'..='\u{202e}'
        | '\u{2060}'..='\u{2064}'
        | '\u{2066}'..='\u{2069}'
        | '\u{feff}'
        | '\u{fff9}'..='\u{fffb}'
        | '\u{e0000}'..='\u{e007f}')
}

/// `text` with every character [`needs_escape`] names shown as `\u{…}`; newlines and tabs
/// are kept. Borrows when nothing needed escaping.
pub fn neutralize(text: &str) -> Cow<'_, str> {
    if text.chars().any(needs_escape) {
        Cow::Owned(PeerText(text).to_string())
    } else {
        Cow::Borrowed(text)
    }
}

/// Displays peer text safely: characters [`needs_escape`] names appear as `\u{…}`;
/// newlines and tabs are kept.
#[derive(Debug, Clone, Copy)]
pub struct PeerText<'a>(pub &'a str);

impl fmt::Display for PeerText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        while let Some((at, c)) = rest.char_indices().find(|(_, c)| needs_escape(*c)) {
            f.write_str(&rest[..at])?;
            write!(f, "{}", c.escape_unicode())?;
            rest = &rest[at + c.len_utf8()..];
        }
        f.write_str(rest)
    }
}

/// Displays peer text safely on one line: like [`PeerText`], and `\n`, `\r`, `\t`, NUL and
/// the backslash are written as Rust escapes (`\n`, `\r`, `\t`, `\0`, `\\`), so the result
/// is unambiguous.
#[derive(Debug, Clone, Copy)]
pub struct PeerLine<'a>(pub &'a str);

impl fmt::Display for PeerLine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let special = |c: char| matches!(c, '\n' | '\t' | '\\') || needs_escape(c);
        let mut rest = self.0;
        while let Some((at, c)) = rest.char_indices().find(|(_, c)| special(*c)) {
            f.write_str(&rest[..at])?;
            match c {
                '\n' => f.write_str("\\n")?,
                '\r' => f.write_str("\\r")?,
                '\t' => f.write_str("\\t")?,
                '\0' => f.write_str("\\0")?,
                '\\' => f.write_str("\\\\")?,
                c => {
                    for escaped in c.escape_unicode() {
                        f.write_char(escaped)?;
                    }
                }
            }
            rest = &rest[at + c.len_utf8()..];
        }
        f.write_str(rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One of each kind of hostile sequence a server might send.
    const HOSTILE: &str = "a\u{1b}[2J b\u{1b}]52;c;aGk=\u{7} c\u{1b}]8;;https://x\u{1b}\\l\u{1b}]8;;\u{1b}\\ \r d\u{9b}31m e\u{202e}f\u{2067} g\u{200b}\u{e0041}\u{7f}\n\th";

    #[test]
    fn every_dangerous_character_is_shown_not_run() {
        expect_test::expect![[r#"a\u{1b}[2J b\u{1b}]52;c;aGk=\u{7} c\u{1b}]8;;https://x\u{1b}\l\u{1b}]8;;\u{1b}\ \u{d} d\u{9b}31m e\u{202e}f\u{2067} g\u{200b}\u{e0041}\u{7f}
	h"#]]
        .assert_eq(&neutralize(HOSTILE));
        expect_test::expect![[r#"a\u{1b}[2J b\u{1b}]52;c;aGk=\u{7} c\u{1b}]8;;https://x\u{1b}\\l\u{1b}]8;;\u{1b}\\ \r d\u{9b}31m e\u{202e}f\u{2067} g\u{200b}\u{e0041}\u{7f}\n\th"#]]
        .assert_eq(&PeerLine(HOSTILE).to_string());
    }

    #[test]
    fn ordinary_text_is_borrowed_unchanged() {
        let text = "Grüße, 世界 — a\tb\nc \\ d 😀";
        assert!(matches!(neutralize(text), Cow::Borrowed(t) if t == text));
        assert_eq!(PeerText(text).to_string(), text);
    }

    #[test]
    fn the_rule_covers_every_control_character() {
        for c in (0..=0x10ffff).filter_map(char::from_u32) {
            if c.is_control() && c != '\n' && c != '\t' {
                assert!(needs_escape(c), "{:?}", c);
            }
        }
        for bidi in ['\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}', '\u{202e}'] {
            assert!(needs_escape(bidi));
        }
        for isolate in ['\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}'] {
            assert!(needs_escape(isolate));
        }
    }
}
