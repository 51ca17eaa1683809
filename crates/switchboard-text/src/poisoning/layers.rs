//! The layers of one text a model may read: the text as a model sees it once the disguises
//! are taken off ([`clean`]), and the texts hidden inside it ([`hidden_layers`]): Unicode tag
//! characters, variation selectors after a visible character, zero-width characters used as
//! bits, and base64, hex or reversed runs.
//!
//! [`clean`] takes off, in order: ANSI escape sequences, HTML character references, runs of
//! percent-encoded bytes, compatibility forms (NFKC: fullwidth and mathematical letters),
//! format characters (soft hyphens, zero-width joiners, bidirectional controls), and letters
//! of another script that pass for Latin ones (Cyrillic `е`, Greek `ο`: TR39 skeletons, taken
//! only where they give a Latin letter); every kind of space becomes a plain space.

use std::sync::LazyLock;

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use regex::Regex;
use unicode_normalization::UnicodeNormalization;

/// Where a layer of text was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layer {
    /// The text itself, as a model reads it.
    Shown,
    /// Unicode tag characters (U+E0020–U+E007E), which no screen shows.
    TagCharacters,
    /// Variation selectors after a visible character, one byte each.
    VariationSelectors,
    /// Zero-width spaces and non-joiners used as bits.
    ZeroWidthBits,
    /// A base64 run.
    Base64,
    /// A run of hex digits.
    Hex,
    /// The text read backwards.
    Reversed,
}

impl Layer {
    /// How a finding names the layer, after its excerpt (empty for [`Layer::Shown`]).
    pub fn describe(self) -> &'static str {
        match self {
            Layer::Shown => "",
            Layer::TagCharacters => " (hidden in Unicode tag characters)",
            Layer::VariationSelectors => " (hidden in variation selectors)",
            Layer::ZeroWidthBits => " (hidden in zero-width characters)",
            Layer::Base64 => " (decoded from base64)",
            Layer::Hex => " (decoded from hex)",
            Layer::Reversed => " (read backwards)",
        }
    }
}

/// Hidden text shorter than this is not a layer of its own.
const MIN_LAYER_CHARS: usize = 8;

/// At most this many decoded runs per text.
const MAX_DECODED_RUNS: usize = 8;

/// The text a model effectively reads: disguises taken off, case kept.
pub(crate) fn clean(text: &str) -> String {
    let text = strip_ansi(text);
    let text = decode_entities(&text);
    let text = decode_percent_runs(&text);
    let mut out = String::with_capacity(text.len());
    let mut chars = text.nfkc().peekable();
    while let Some(c) = chars.next() {
        if c == '\n' {
            // A line broken inside a sentence (before a lower-case word) is one line.
            let inside = out.ends_with(|before: char| before.is_alphanumeric() || before == ',')
                && chars.peek().is_some_and(|next| next.is_lowercase());
            out.push(if inside { ' ' } else { '\n' });
        } else if is_space(c) {
            if !out.ends_with(' ') {
                out.push(' ');
            }
        } else if is_format(c) || c.is_control() {
            // Soft hyphens, zero-width and bidirectional marks, tag characters and
            // variation selectors join the letters around them.
        } else if c.is_ascii() {
            out.push(c);
        } else {
            match latin_skeleton(c) {
                Some(latin) => out.push(latin),
                None => out.push(c),
            }
        }
    }
    out
}

/// Texts hidden in `text`, each with where it was found.
pub(crate) fn hidden_layers(text: &str, cleaned: &str) -> Vec<(Layer, String)> {
    let mut layers = Vec::new();
    let tags: String = text
        .chars()
        .filter_map(|c| match u32::from(c) {
            code @ 0xE0020..=0xE007E => char::from_u32(code - 0xE0000),
            _ => None,
        })
        .collect();
    if tags.chars().count() >= MIN_LAYER_CHARS {
        layers.push((Layer::TagCharacters, tags));
    }
    let selected: Vec<u8> = text.chars().filter_map(variation_byte).collect();
    if selected.len() >= MIN_LAYER_CHARS {
        layers.push((
            Layer::VariationSelectors,
            String::from_utf8_lossy(&selected).into_owned(),
        ));
    }
    if let Some(bits) = zero_width_bits(text) {
        layers.push((Layer::ZeroWidthBits, bits));
    }
    static BASE64_RUN: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"[A-Za-z0-9+/]{16,}={0,2}").expect("a valid pattern"));
    static HEX_RUN: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\b(?:[0-9A-Fa-f]{2}){8,}\b").expect("a valid pattern"));
    const LENIENT: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new()
            .with_decode_padding_mode(DecodePaddingMode::Indifferent)
            .with_decode_allow_trailing_bits(true),
    );
    for run in BASE64_RUN.find_iter(cleaned).take(MAX_DECODED_RUNS) {
        if let Ok(bytes) = LENIENT.decode(run.as_str())
            && let Some(text) = readable(&bytes)
        {
            layers.push((Layer::Base64, text));
        }
    }
    for run in HEX_RUN.find_iter(cleaned).take(MAX_DECODED_RUNS) {
        let bytes: Option<Vec<u8>> = run
            .as_str()
            .as_bytes()
            .chunks(2)
            .map(|pair| {
                std::str::from_utf8(pair)
                    .ok()
                    .and_then(|digits| u8::from_str_radix(digits, 16).ok())
            })
            .collect();
        if let Some(text) = bytes.as_deref().and_then(readable) {
            layers.push((Layer::Hex, text));
        }
    }
    if cleaned.to_lowercase().contains("revers") {
        layers.push((Layer::Reversed, cleaned.chars().rev().collect()));
    }
    layers
}

/// Decoded bytes that read as text: UTF-8, mostly letters and spaces, with a space.
fn readable(bytes: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(bytes).ok()?;
    let total = text.chars().count();
    let plain = text
        .chars()
        .filter(|c| c.is_alphanumeric() || c.is_ascii_punctuation() || *c == ' ')
        .count();
    (total >= MIN_LAYER_CHARS && text.contains(' ') && plain * 10 >= total * 9)
        .then(|| text.to_owned())
}

/// The byte a variation selector stands for (U+FE00–FE0F: 0–15, U+E0100–E01EF: 16–255).
fn variation_byte(c: char) -> Option<u8> {
    match u32::from(c) {
        code @ 0xFE00..=0xFE0F => u8::try_from(code - 0xFE00).ok(),
        code @ 0xE0100..=0xE01EF => u8::try_from(code - 0xE0100 + 16).ok(),
        _ => None,
    }
}

/// Text spelled in bits by a run of zero-width spaces and non-joiners (either may be the
/// one), when one reading gives text.
fn zero_width_bits(text: &str) -> Option<String> {
    let bits: Vec<bool> = text
        .chars()
        .filter_map(|c| match c {
            '\u{200B}' => Some(false),
            '\u{200C}' => Some(true),
            _ => None,
        })
        .collect();
    if bits.len() < 8 * MIN_LAYER_CHARS {
        return None;
    }
    [false, true].into_iter().find_map(|flip| {
        let bytes: Vec<u8> = bits
            .chunks_exact(8)
            .map(|byte| {
                byte.iter()
                    .fold(0u8, |acc, bit| (acc << 1) | u8::from(*bit != flip))
            })
            .collect();
        readable(&bytes)
    })
}

/// Text without ANSI escape sequences (CSI, OSC and two-character escapes).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                Some('[') => {
                    for next in chars.by_ref() {
                        if ('@'..='~').contains(&next) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    while let Some(next) = chars.next() {
                        if next == '\u{7}'
                            || (next == '\u{1b}' && chars.next_if_eq(&'\\').is_some())
                        {
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\u{9b}' => {
                for next in chars.by_ref() {
                    if ('@'..='~').contains(&next) {
                        break;
                    }
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// Text with HTML character references decoded (numeric ones and the common names).
fn decode_entities(text: &str) -> String {
    static ENTITY: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"&(?:#([0-9]{1,7})|#[xX]([0-9A-Fa-f]{1,6})|(amp|lt|gt|quot|apos|nbsp));")
            .expect("a valid pattern")
    });
    if !text.contains('&') {
        return text.to_owned();
    }
    ENTITY
        .replace_all(text, |found: &regex::Captures<'_>| {
            let code = if let Some(decimal) = found.get(1) {
                decimal.as_str().parse::<u32>().ok()
            } else if let Some(hex) = found.get(2) {
                u32::from_str_radix(hex.as_str(), 16).ok()
            } else {
                match found.get(3).map(|name| name.as_str()) {
                    Some("amp") => Some(u32::from('&')),
                    Some("lt") => Some(u32::from('<')),
                    Some("gt") => Some(u32::from('>')),
                    Some("quot") => Some(u32::from('"')),
                    Some("apos") => Some(u32::from('\'')),
                    _ => Some(u32::from(' ')),
                }
            };
            code.and_then(char::from_u32)
                .map_or_else(|| found[0].to_owned(), String::from)
        })
        .into_owned()
}

/// Text with runs of three or more percent-encoded bytes decoded.
fn decode_percent_runs(text: &str) -> String {
    static RUN: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?:%[0-9A-Fa-f]{2}){3,}").expect("a valid pattern"));
    if !text.contains('%') {
        return text.to_owned();
    }
    RUN.replace_all(text, |found: &regex::Captures<'_>| {
        percent_encoding::percent_decode_str(&found[0])
            .decode_utf8_lossy()
            .into_owned()
    })
    .into_owned()
}

/// Spaces of every kind, and the Hangul fillers that show as blanks.
fn is_space(c: char) -> bool {
    (c.is_whitespace() && c != '\n')
        || matches!(
            c,
            '\u{3164}' | '\u{115F}' | '\u{1160}' | '\u{FFA0}' | '\u{2800}'
        )
}

/// Format characters (Unicode's Cf) and variation selectors: nothing a reader sees.
fn is_format(c: char) -> bool {
    matches!(c,
        '\u{AD}' | '\u{34F}' | '\u{61C}' | '\u{180B}'..='\u{180F}'
        | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{206F}'
        | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}' | '\u{FFF9}'..='\u{FFFB}'
        | '\u{E0000}'..='\u{E007F}' | '\u{E0100}'..='\u{E01EF}')
}

/// The Latin letter a letter of another script passes for (TR39 skeleton), if any. A
/// capital whose skeleton is `l` is taken for `I` (Greek `Ι`, Cyrillic `І`).
fn latin_skeleton(c: char) -> Option<char> {
    if !c.is_alphabetic() {
        return None;
    }
    let letter = c.to_string();
    let mut skeleton = unicode_security::skeleton(&letter);
    let latin = skeleton.next()?;
    if skeleton.next().is_some() || !latin.is_ascii_alphabetic() {
        return None;
    }
    Some(if c.is_uppercase() && latin == 'l' {
        'I'
    } else if c.is_uppercase() {
        latin.to_ascii_uppercase()
    } else {
        latin
    })
}

/// Words that mix Latin letters with letters of another script (`Bеfore` with a Cyrillic
/// `е`): at most `limit`, each with the foreign letters' code points.
pub(crate) fn mixed_script_words(text: &str, limit: usize) -> Vec<String> {
    use unicode_security::MixedScript as _;
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| word.chars().any(|c| c.is_ascii_alphabetic()))
        .filter(|word| !word.is_ascii() && !word.is_single_script())
        .take(limit)
        .map(|word| {
            let foreign: Vec<String> = word
                .chars()
                .filter(|c| !c.is_ascii())
                .take(3)
                .map(|c| format!("U+{:04X}", u32::from(c)))
                .collect();
            foreign.join(", ")
        })
        .collect()
}
