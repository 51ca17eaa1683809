//! Tool poisoning in text a model reads: what a server shows a model (tool names, titles,
//! descriptions, schemas, prompts, resources, instructions) or returns to it (results),
//! judged sentence by sentence.
//!
//! A text is judged in every layer ([`layers`]): as a model reads it once disguises are taken
//! off (entities, percent-encoding, fullwidth and look-alike letters, soft hyphens and
//! zero-width joiners), and each text hidden inside it (tag characters, variation selectors,
//! zero-width bits, base64, hex, reversed). Each sentence of a layer is then judged for:
//!
//! - a **secret source** (credential files and stores, keys, tokens, environment variables,
//!   the system prompt, the conversation) named together with a **data-flow verb** addressed
//!   to the model (`read`, `include`, `send`, `put … here`), or, in a parameter's text, asked
//!   for as the value;
//! - data sent **out**: remote images (rendering one calls its host), URLs with a slot for
//!   data, mail addresses, chat channels;
//! - orders about **other tools** (any tool, every other server, a tool of the session) and
//!   **preference manipulation** (use only this one, the others are wrong);
//! - **concealment** (do not tell the user) and **fake consent** (the user already agreed);
//! - orders to **decode** text and follow it, and markers addressed to the model
//!   (`<IMPORTANT>`, "ignore the user").
//!
//! Plain descriptions of what a tool does (third person: "Reads the file", "Sends a
//! message") are not orders: a verb counts as one in its base form where an order stands
//! (a sentence's start, after `you`, `must`, `please`, `then`, …). Each [`Sign`] names the
//! sentence (as cleaned, cut to [`EXCERPT_CHARS`]), the layer, and the reason in words a
//! server's author can act on.

mod layers;
mod rules;
mod walk;

pub use layers::Layer;
pub use walk::{PlacedText, tool_texts};

/// What a sentence does to a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SignKind {
    /// Invisible characters, text in another layer, or letters of another script passing
    /// for Latin ones.
    HiddenCharacters,
    /// An order to the model: read a secret, decode and follow, ignore the user.
    Order,
    /// Data sent out: to a URL, a remote image, an address, a channel, or a parameter.
    Exfiltration,
    /// An order about how other tools are used.
    CrossTool,
    /// Steering the model to this tool and away from others.
    Preference,
    /// Hiding what the model does from the user, or claiming the user's consent.
    Concealment,
}

/// What a text is, which decides how it is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextRole {
    /// Prose: a description, a title, instructions, a result.
    Prose,
    /// The description of a parameter a model fills in: a secret asked for as the value
    /// counts without a verb.
    Parameter,
    /// A value a model may copy into a call: `default`, `enum`, `examples`, `const`,
    /// `pattern`.
    Value,
    /// A name: a tool's, a parameter's, a prompt's (`snake_case`, `kebab-case` and
    /// `camelCase` read as words).
    Identifier,
    /// What a tool returned, a prompt's messages, a resource's text: data that may name a
    /// secret store (a file listing) or carry invisible characters (emoji sequences, terminal
    /// colours) without harm, so only orders count — what a hidden layer says included.
    Result,
}

/// One reason to distrust a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sign {
    /// What the sentence does.
    pub kind: SignKind,
    /// The sentence, cleaned and cut to [`EXCERPT_CHARS`] (for characters, the text as it
    /// is, escaped).
    pub excerpt: String,
    /// Where the sentence was found.
    pub layer: Layer,
    /// Why, in words an author can act on.
    pub reason: String,
}

/// Excerpts are cut to this many characters.
pub const EXCERPT_CHARS: usize = 120;

/// Only this much of a text is judged (a result can be large); the rest is not read.
pub const MAX_JUDGED_BYTES: usize = 256 * 1024;

/// At most this many signs per text: judging stops there.
const MAX_SIGNS: usize = 16;

/// The signs of poisoning in `text`, read as `role`.
pub fn judge(text: &str, role: TextRole) -> Vec<Sign> {
    let text = cut(text, MAX_JUDGED_BYTES);
    let mut signs = Vec::new();
    if role != TextRole::Result {
        rules::hidden_characters(text, &mut signs);
    }
    let cleaned = layers::clean(text);
    let mut views = vec![(Layer::Shown, cleaned.clone())];
    views.extend(layers::hidden_layers(text, &cleaned));
    for (layer, view) in &views {
        let view = match role {
            TextRole::Identifier | TextRole::Value if !view.contains(' ') => words_of(view),
            _ => view.clone(),
        };
        rules::judge_layer(&view, *layer, role, &mut signs);
        if signs.len() >= MAX_SIGNS {
            break;
        }
    }
    rules::decode_order(text, &views, &mut signs);
    if views.len() > 1 {
        rules::hidden_layer_signs(&views, &mut signs);
    }
    signs.truncate(MAX_SIGNS);
    signs
}

/// A name read as words: `read_the-GITHUB_TOKEN` → `read the GITHUB TOKEN`,
/// `sendItQuietly` → `send It Quietly`.
fn words_of(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 8);
    let mut previous: Option<char> = None;
    for c in name.chars() {
        match c {
            '_' | '-' => out.push(' '),
            _ if c.is_uppercase() && previous.is_some_and(char::is_lowercase) => {
                out.push(' ');
                out.push(c);
            }
            _ => out.push(c),
        }
        previous = Some(c);
    }
    out
}

/// `text` cut to at most `limit` bytes, on a character boundary.
fn cut(text: &str, limit: usize) -> &str {
    if text.len() <= limit {
        return text;
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests;
