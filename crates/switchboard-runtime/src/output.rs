//! The result boundary: one type for what any tool returns to the agent loop, built-in or
//! bridged, with a bound on its size.
//!
//! Every content kind is kept (text, image, audio, resource link, embedded resource,
//! structured content, unknown kinds as raw JSON). Text over the byte limit is cut in the
//! middle with a marker saying how much was cut; the full result can be spilled to a file
//! first. Binary blocks over the limit are replaced by a placeholder naming their size.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use switchboard_protocol::{CallToolResult, ContentBlock};

/// What a tool call produced, as the model will see it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// Content blocks in order.
    pub content: Vec<ContentBlock>,
    /// Structured result, if any.
    pub structured_content: Option<Value>,
    /// The tool (or the bridge) reports a failure the model should see.
    pub is_error: bool,
    /// Set when the output was cut to fit the limit.
    pub truncation: Option<Truncation>,
}

/// How an output was cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truncation {
    /// Size before cutting, in bytes (text and binary data).
    pub original_bytes: usize,
    /// Bytes removed.
    pub removed_bytes: usize,
    /// Where the full output was written, if spilling is configured.
    pub spilled_to: Option<PathBuf>,
}

/// Limits for one output.
#[derive(Debug, Clone)]
pub struct OutputLimit {
    /// Maximum bytes of text plus binary data kept.
    pub max_bytes: usize,
    /// Folder to write the full output to when it is cut (`None`: no spill).
    pub spill_dir: Option<PathBuf>,
}

impl Default for OutputLimit {
    /// 100 KiB, no spill.
    fn default() -> Self {
        OutputLimit {
            max_bytes: 100 * 1024,
            spill_dir: None,
        }
    }
}

impl ToolOutput {
    /// A text output.
    pub fn text(text: impl Into<String>) -> ToolOutput {
        ToolOutput {
            content: vec![ContentBlock::Text { text: text.into() }],
            structured_content: None,
            is_error: false,
            truncation: None,
        }
    }

    /// An error output with a message for the model.
    pub fn error(message: impl Into<String>) -> ToolOutput {
        ToolOutput {
            is_error: true,
            ..ToolOutput::text(message)
        }
    }

    /// From an MCP tool result, keeping everything.
    pub fn from_call_result(result: CallToolResult) -> ToolOutput {
        ToolOutput {
            content: result.content,
            structured_content: result.structured_content,
            is_error: result.is_error,
            truncation: None,
        }
    }

    /// All text blocks joined by newlines.
    pub fn text_content(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        texts.join("\n")
    }

    /// The output as JSON in the MCP result shape (for logs, spill files, hosts).
    pub fn to_json(&self) -> Value {
        let mut out = json!({
            "content": self.content.iter().map(ContentBlock::to_json).collect::<Vec<_>>(),
            "isError": self.is_error,
        });
        if let Some(structured) = &self.structured_content {
            out["structuredContent"] = structured.clone();
        }
        out
    }

    /// Bytes counted against the limit: text, binary data, structured content.
    pub fn size(&self) -> usize {
        self.content.iter().map(block_size).sum::<usize>()
            + self
                .structured_content
                .as_ref()
                .map_or(0, |v| v.to_string().len())
    }

    /// Cuts the output to `limit`, spilling the full output first if configured. A spill
    /// that fails is noted in the marker; the cut happens anyway.
    pub fn bounded(mut self, limit: &OutputLimit, spill_name: &str) -> ToolOutput {
        let original = self.size();
        if original <= limit.max_bytes {
            return self;
        }
        let spilled_to = limit
            .spill_dir
            .as_deref()
            .and_then(|dir| spill(dir, spill_name, &self.to_json()));
        let mut budget = limit.max_bytes;
        let mut removed = 0;
        let structured_size = self
            .structured_content
            .as_ref()
            .map_or(0, |v| v.to_string().len());
        if structured_size > budget / 2 {
            self.structured_content = None;
            removed += structured_size;
        } else {
            budget -= structured_size;
        }
        let text_total: usize = self
            .content
            .iter()
            .map(|b| match b {
                ContentBlock::Text { text } => text.len(),
                _ => 0,
            })
            .sum();
        let other_total: usize = self.content.iter().map(block_size).sum::<usize>() - text_total;
        // Binary blocks go first when they do not fit: text is what the model reads best.
        if other_total > budget / 2 {
            for block in &mut self.content {
                if let ContentBlock::Image { data, mime_type }
                | ContentBlock::Audio { data, mime_type } = block
                {
                    removed += data.len();
                    *block = ContentBlock::Text {
                        text: format!(
                            "[{mime_type} content of {} bytes omitted: over the size limit]",
                            data.len()
                        ),
                    };
                }
            }
        }
        let kept_other: usize = self
            .content
            .iter()
            .map(|b| match b {
                ContentBlock::Text { .. } => 0,
                other => block_size(other),
            })
            .sum();
        let text_budget = budget.saturating_sub(kept_other);
        if text_total > text_budget {
            let mut to_cut = text_total - text_budget;
            for block in self.content.iter_mut().rev() {
                if to_cut == 0 {
                    break;
                }
                if let ContentBlock::Text { text } = block {
                    let keep = text.len() - to_cut.min(text.len());
                    let (cut_text, cut_bytes) = cut_middle(text, keep);
                    *text = cut_text;
                    removed += cut_bytes;
                    to_cut = to_cut.saturating_sub(cut_bytes);
                }
            }
        }
        let marker = match &spilled_to {
            Some(path) => format!(
                "[output truncated: {removed} of {original} bytes cut; the full output is in {}]",
                path.display()
            ),
            None => format!("[output truncated: {removed} of {original} bytes cut]"),
        };
        self.content.push(ContentBlock::Text { text: marker });
        self.truncation = Some(Truncation {
            original_bytes: original,
            removed_bytes: removed,
            spilled_to,
        });
        self
    }
}

fn block_size(block: &ContentBlock) -> usize {
    match block {
        ContentBlock::Text { text } => text.len(),
        ContentBlock::Image { data, .. } | ContentBlock::Audio { data, .. } => data.len(),
        ContentBlock::ResourceLink { raw, .. } | ContentBlock::Unknown { raw, .. } => {
            raw.to_string().len()
        }
        ContentBlock::Resource { resource } => resource.to_string().len(),
    }
}

/// Keeps about `keep` bytes of `text`: the head and the tail, with a marker in the middle.
/// Returns the new text and how many bytes were removed.
fn cut_middle(text: &str, keep: usize) -> (String, usize) {
    let head_len = floor_char_boundary(text, keep / 2);
    let tail_start = ceil_char_boundary(text, text.len() - (keep - keep / 2));
    let removed = tail_start.saturating_sub(head_len);
    (
        format!(
            "{}\n[… {removed} bytes cut …]\n{}",
            &text[..head_len],
            &text[tail_start..]
        ),
        removed,
    )
}

fn floor_char_boundary(text: &str, mut index: usize) -> usize {
    index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

fn ceil_char_boundary(text: &str, mut index: usize) -> usize {
    index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index += 1;
    }
    index
}

/// Writes the full output as JSON; returns the path, or `None` (logged) on failure.
fn spill(dir: &Path, name: &str, output: &Value) -> Option<PathBuf> {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let path = dir.join(format!("{safe}-{nanos}.json"));
    let written =
        std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&path, output.to_string()));
    match written {
        Ok(()) => Some(path),
        Err(error) => {
            tracing::warn!(path = %path.display(), %error, "could not spill a large tool output");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;

    #[test]
    fn small_outputs_are_untouched() {
        let output = ToolOutput::text("hello").bounded(&OutputLimit::default(), "t");
        assert_eq!(output.truncation, None);
        assert_eq!(output.text_content(), "hello");
    }

    #[test]
    fn long_text_is_cut_in_the_middle_with_a_marker() {
        let text = format!("{}{}{}", "a".repeat(50), "é".repeat(100), "z".repeat(50));
        let limit = OutputLimit {
            max_bytes: 60,
            spill_dir: None,
        };
        let output = ToolOutput::text(text).bounded(&limit, "t");
        expect![[r#"
            aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
            [… 240 bytes cut …]
            zzzzzzzzzzzzzzzzzzzzzzzzzzzzzz
            [output truncated: 240 of 300 bytes cut]"#]]
        .assert_eq(&output.text_content());
        assert_eq!(output.truncation.map(|t| t.original_bytes), Some(300));
    }

    #[test]
    fn big_images_become_placeholders_and_spill_keeps_everything() {
        let dir = std::env::temp_dir().join(format!("switchboard-spill-{}", std::process::id()));
        let output = ToolOutput {
            content: vec![
                ContentBlock::Image {
                    data: "A".repeat(5000),
                    mime_type: "image/png".into(),
                },
                ContentBlock::Text {
                    text: "caption".into(),
                },
            ],
            structured_content: None,
            is_error: false,
            truncation: None,
        };
        let limit = OutputLimit {
            max_bytes: 1000,
            spill_dir: Some(dir.clone()),
        };
        let bounded = output.bounded(&limit, "srv__image");
        let spilled = bounded
            .truncation
            .as_ref()
            .and_then(|t| t.spilled_to.clone())
            .expect("spilled");
        let full: Value =
            serde_json::from_str(&std::fs::read_to_string(&spilled).expect("spill file"))
                .expect("json");
        assert_eq!(
            full["content"][0]["data"].as_str().map(str::len),
            Some(5000)
        );
        assert!(bounded.text_content().starts_with("[image/png content of 5000 bytes omitted: over the size limit]\ncaption\n[output truncated:"), "{}", bounded.text_content());
        let _ = std::fs::remove_dir_all(dir);
    }
}
