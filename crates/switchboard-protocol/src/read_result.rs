//! A `resources/read` result read straight from its JSON text into typed contents (and
//! written from them).

use serde::{Deserialize, Serialize};

use crate::ResultType;
use crate::ShapeError;
use crate::call_result::ResultTypeField;

/// One item of a `resources/read` result's `contents`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceContents {
    /// The URI the content is for.
    pub uri: String,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Text content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Binary content, base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
}

/// A `resources/read` result as typed data: its `contents`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReadResourceResult {
    /// The contents.
    pub contents: Vec<ResourceContents>,
}

impl ReadResourceResult {
    /// Reads a result from its JSON text, without a tree, with its `resultType` (read as
    /// [`ResultType::of`] reads it): a complete result must have `contents`.
    pub fn from_json_text(text: &str) -> (ResultType, Result<ReadResourceResult, ShapeError>) {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Fields {
            #[serde(default)]
            contents: Option<Vec<ResourceContents>>,
            #[serde(default)]
            result_type: Option<ResultTypeField>,
        }
        match serde_json::from_str::<Fields>(text) {
            Ok(fields) => {
                let kind = fields
                    .result_type
                    .map_or(ResultType::Complete, |field| field.0);
                let contents = fields
                    .contents
                    .map(|contents| ReadResourceResult { contents })
                    .ok_or_else(|| ShapeError::new("the result has no `contents` array"));
                (kind, contents)
            }
            Err(e) => (
                ResultType::Complete,
                Err(format!("the result cannot be read: {e}").into()),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;

    #[test]
    fn read_results_are_typed_with_their_result_type() {
        let shown: Vec<String> = [
            r#"{"contents":[{"uri":"u","mimeType":"text/markdown","text":"t"},{"uri":"v","blob":"AA=="}]}"#,
            r#"{"resultType":"input_required","inputRequests":{}}"#,
            r#"{"resultType":"complete"}"#,
            r#"{"contents":{}}"#,
        ]
        .iter()
        .map(|text| format!("{:?}", ReadResourceResult::from_json_text(text)))
        .collect();
        expect![[r#"
            (Complete, Ok(ReadResourceResult { contents: [ResourceContents { uri: "u", mime_type: Some("text/markdown"), text: Some("t"), blob: None }, ResourceContents { uri: "v", mime_type: None, text: None, blob: Some("AA==") }] }))
            (InputRequired, Err(ShapeError { what: "the result has no `contents` array" }))
            (Complete, Err(ShapeError { what: "the result has no `contents` array" }))
            (Complete, Err(ShapeError { what: "the result cannot be read: invalid type: map, expected a sequence at line 1 column 12" }))"#]]
        .assert_eq(&shown.join("\n"));
    }
}
