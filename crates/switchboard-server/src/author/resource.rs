//! Resources: a URI, a name, a MIME type, and what reading it gives: fixed text
//! ([`Resource::text`]) or whatever a read handler returns at the time
//! ([`Resource::dynamic`]). Resource templates and subscriptions are not offered.

use std::future::Future;
use std::sync::Arc;

use switchboard_protocol::ReadResourceResult;

use super::error::ToolError;
use crate::core::{RequestContext, ServiceFuture};

/// What reading a resource gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceContents {
    /// Text.
    Text(String),
    /// Binary data, base64-encoded.
    Base64(String),
}

pub(crate) type ErasedRead =
    Arc<dyn Fn(RequestContext) -> ServiceFuture<Result<ResourceContents, ToolError>> + Send + Sync>;

/// One resource, ready to register with [`super::ServerBuilder::resource`].
pub struct Resource {
    /// The `resources/list` entry.
    pub(crate) definition: switchboard_protocol::Resource,
    pub(crate) read: ErasedRead,
}

impl std::fmt::Debug for Resource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resource")
            .field("uri", &self.definition.uri)
            .finish_non_exhaustive()
    }
}

impl Resource {
    /// A resource whose contents are fixed text (`text/plain` unless
    /// [`Resource::mime_type`] says otherwise).
    pub fn text(
        uri: impl Into<String>,
        name: impl Into<String>,
        text: impl Into<String>,
    ) -> Resource {
        let text: Arc<str> = Arc::from(text.into());
        Resource::dynamic(uri, name, move |_| {
            let text = text.clone();
            async move { Ok(ResourceContents::Text(text.to_string())) }
        })
        .mime_type("text/plain")
    }

    /// A resource read by `read` each time a client asks.
    pub fn dynamic<F, Fut>(uri: impl Into<String>, name: impl Into<String>, read: F) -> Resource
    where
        F: Fn(RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ResourceContents, ToolError>> + Send + 'static,
    {
        let definition = switchboard_protocol::Resource {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
        };
        Resource {
            definition,
            read: Arc::new(move |context| Box::pin(read(context))),
        }
    }

    /// A human-readable name for displays.
    pub fn title(mut self, title: impl Into<String>) -> Resource {
        self.definition.title = Some(title.into());
        self
    }

    /// What the resource is, for the model.
    pub fn description(mut self, description: impl Into<String>) -> Resource {
        self.definition.description = Some(description.into());
        self
    }

    /// The contents' MIME type.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Resource {
        self.definition.mime_type = Some(mime_type.into());
        self
    }

    /// The `resources/read` result.
    pub(crate) fn contents(&self, contents: ResourceContents) -> ReadResourceResult {
        let (text, blob) = match contents {
            ResourceContents::Text(text) => (Some(text), None),
            ResourceContents::Base64(blob) => (None, Some(blob)),
        };
        let entry = switchboard_protocol::ResourceContents {
            uri: self.definition.uri.clone(),
            mime_type: self.definition.mime_type.clone(),
            text,
            blob,
        };
        ReadResourceResult {
            contents: vec![entry],
        }
    }
}
