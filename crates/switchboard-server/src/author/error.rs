//! The authoring kit's errors: [`ToolError`], what a handler returns when it does not
//! succeed, and [`BuildError`], what [`super::ServerBuilder::build`] refuses.

use std::fmt;

use switchboard_wire::ErrorObject;
use switchboard_wire::codes::INVALID_PARAMS;

/// A handler's failure.
///
/// Most failures are for the model: [`ToolError::new`] becomes a tool result with
/// `isError: true` carrying the message, which the model reads and can act on (say what
/// went wrong and what to do instead: "no city named `Pariss`; did you mean `Paris`?").
/// A failure of the request itself ([`ToolError::protocol`], [`ToolError::invalid_params`])
/// becomes a JSON-RPC error, which the client handles and the model usually never sees.
///
/// Prompts and resources have no error results: there a message error is a JSON-RPC
/// internal error (-32603) with the message.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolError {
    kind: Kind,
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    ForModel(String),
    Protocol(ErrorObject),
}

impl ToolError {
    /// A failure the model should see: a result with `isError: true` and this text.
    pub fn new(message: impl Into<String>) -> ToolError {
        ToolError {
            kind: Kind::ForModel(message.into()),
        }
    }

    /// A JSON-RPC error instead of a result.
    pub fn protocol(error: ErrorObject) -> ToolError {
        ToolError {
            kind: Kind::Protocol(error),
        }
    }

    /// A JSON-RPC -32602 (invalid params) with this message.
    pub fn invalid_params(message: impl Into<String>) -> ToolError {
        ToolError::protocol(ErrorObject::new(INVALID_PARAMS, message))
    }

    /// Whether this becomes a JSON-RPC error (not an `isError` result).
    pub fn is_protocol(&self) -> bool {
        matches!(self.kind, Kind::Protocol(_))
    }

    /// The message (for the model, or the JSON-RPC error's).
    pub fn message(&self) -> &str {
        match &self.kind {
            Kind::ForModel(message) => message,
            Kind::Protocol(error) => &error.message,
        }
    }

    /// The JSON-RPC error this is, if it is one.
    pub(crate) fn as_protocol(&self) -> Option<&ErrorObject> {
        match &self.kind {
            Kind::Protocol(error) => Some(error),
            Kind::ForModel(_) => None,
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for ToolError {}

/// A question the client could not answer is a failure for the model to read (it says
/// why: the client cannot be asked, refused, or did not answer in time), so `?` on
/// [`RequestContext::ask_client`](crate::core::RequestContext::ask_client) reads well in a
/// handler.
impl From<crate::core::AskError> for ToolError {
    fn from(error: crate::core::AskError) -> ToolError {
        ToolError::new(error.to_string())
    }
}

/// Why a server could not be built: a name used twice or not allowed, or a type whose
/// schema cannot describe a tool's arguments or result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildError {
    problem: Problem,
    /// What the problem is about (`tool \`echo\``, `resource \`file:///a\``).
    subject: String,
    detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Problem {
    Duplicate,
    InvalidName,
    Schema,
}

impl BuildError {
    pub(crate) fn duplicate(subject: String) -> BuildError {
        BuildError {
            problem: Problem::Duplicate,
            subject,
            detail: "is registered twice".into(),
        }
    }

    pub(crate) fn invalid_name(subject: String, detail: impl Into<String>) -> BuildError {
        BuildError {
            problem: Problem::InvalidName,
            subject,
            detail: detail.into(),
        }
    }

    pub(crate) fn schema(subject: String, detail: impl Into<String>) -> BuildError {
        BuildError {
            problem: Problem::Schema,
            subject,
            detail: detail.into(),
        }
    }

    /// Two tools (prompts, resources) share a name (URI).
    pub fn is_duplicate(&self) -> bool {
        self.problem == Problem::Duplicate
    }

    /// A name clients may refuse (tools: 1–128 of `A–Z a–z 0–9 _ - .`).
    pub fn is_invalid_name(&self) -> bool {
        self.problem == Problem::InvalidName
    }

    /// A schema that cannot be used (not an object at the root, not valid JSON Schema,
    /// prompt arguments that are not strings).
    pub fn is_schema(&self) -> bool {
        self.problem == Problem::Schema
    }
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.subject, self.detail)
    }
}

impl std::error::Error for BuildError {}
