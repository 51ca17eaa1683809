//! [`Server`]: tools, prompts and resources registered with a [`ServerBuilder`], served as
//! a [`Service`] (so in both eras, on every transport of this crate).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use serde_json::{Map, Value};
use switchboard_protocol::error_codes::RESOURCE_NOT_FOUND_LEGACY;
use switchboard_protocol::{
    ArgumentCheck, CallToolResult, Implementation, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, ResourceNotFoundData, to_json,
};
use switchboard_text::peer_text::PeerText;
use switchboard_wire::ErrorObject;
use switchboard_wire::codes::{INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND};
use tokio::sync::broadcast;

use super::error::{BuildError, ToolError};
use super::guard::{self, Ended};
use super::prompt::{self, Prompt};
use super::resource::Resource;
use super::schema;
use super::tool::{self, Erased, Tool};
use crate::core::{
    Answer, CacheHints, CallTool, Capabilities, GetPrompt, Page, ReadResource, RequestContext,
    ServerInfo, Service, ServiceEvent, ServiceFuture, ServiceRequest,
};
use crate::http::{HttpServeError, HttpServeOptions, HttpServer};
use crate::stdio::{ServeEnd, StdioOptions};

/// The result cap unless [`ServerBuilder::max_result_bytes`] sets another: 1 MiB of JSON.
pub const DEFAULT_MAX_RESULT_BYTES: usize = 1024 * 1024;

/// Names an error message lists at most (an unknown tool's answer names the tools there
/// are).
const MAX_NAMES_IN_ERRORS: usize = 16;

/// Collects what a [`Server`] offers; [`ServerBuilder::build`] checks it.
#[derive(Debug)]
pub struct ServerBuilder {
    name: String,
    version: String,
    title: Option<String>,
    instructions: Option<String>,
    tools: Vec<Tool>,
    prompts: Vec<Prompt>,
    resources: Vec<Resource>,
    max_result_bytes: usize,
}

impl ServerBuilder {
    /// A human-readable name (`serverInfo.title`).
    pub fn title(mut self, title: impl Into<String>) -> ServerBuilder {
        self.title = Some(title.into());
        self
    }

    /// Instructions for the model (`instructions` of `initialize` and `server/discover`).
    pub fn instructions(mut self, instructions: impl Into<String>) -> ServerBuilder {
        self.instructions = Some(instructions.into());
        self
    }

    /// Adds a tool; `tools/list` lists tools in the order they were added.
    pub fn tool(mut self, tool: Tool) -> ServerBuilder {
        self.tools.push(tool);
        self
    }

    /// Adds a prompt; `prompts/list` lists prompts in the order they were added.
    pub fn prompt(mut self, prompt: Prompt) -> ServerBuilder {
        self.prompts.push(prompt);
        self
    }

    /// Adds a resource; `resources/list` lists resources in the order they were added.
    pub fn resource(mut self, resource: Resource) -> ServerBuilder {
        self.resources.push(resource);
        self
    }

    /// The largest result a handler may return, in bytes of JSON (default
    /// [`DEFAULT_MAX_RESULT_BYTES`]). A larger one is not cut: the client gets an error
    /// that says the size and the cap.
    pub fn max_result_bytes(mut self, bytes: usize) -> ServerBuilder {
        self.max_result_bytes = bytes;
        self
    }

    /// The server, or the first registration that cannot be served: a name used twice, a
    /// tool name clients refuse, or an input or output type whose schema is not an object.
    pub fn build(self) -> Result<Server, BuildError> {
        let mut tools = Registry::default();
        let mut tool_definitions = Vec::new();
        for tool in self.tools {
            let definition = &tool.definition;
            let subject = format!("tool `{}`", definition.name);
            tool::check_tool_name(&definition.name)
                .map_err(|detail| BuildError::invalid_name(subject.clone(), detail))?;
            let input = format!("the input type of tool `{}`", definition.name);
            schema::require_object_root(&definition.input_schema)
                .map_err(|detail| BuildError::schema(input.clone(), detail))?;
            let arguments = compile(&definition.input_schema)
                .map_err(|detail| BuildError::schema(input, detail))?;
            if let Some(output) = &definition.output_schema {
                let subject = format!("the output type of tool `{}`", definition.name);
                schema::require_object_root(output)
                    .and_then(|()| compile(output).map(drop))
                    .map_err(|detail| BuildError::schema(subject, detail))?;
            }
            tool_definitions.push(definition.clone());
            let key = definition.name.clone();
            tools.add(key, (tool, arguments), subject)?;
        }
        tools.listed = to_json(&ListToolsResult {
            tools: tool_definitions,
            next_cursor: None,
        });
        let mut prompts = Registry::default();
        let mut prompt_definitions = Vec::new();
        for prompt in self.prompts {
            let subject = format!("prompt `{}`", prompt.name);
            let definition = prompt
                .definition()
                .map_err(|detail| BuildError::schema(subject.clone(), detail))?;
            let arguments = compile(&prompt.arguments_schema)
                .map_err(|detail| BuildError::schema(subject.clone(), detail))?;
            prompt_definitions.push(definition);
            let key = prompt.name.clone();
            prompts.add(key, (prompt, arguments), subject)?;
        }
        prompts.listed = to_json(&ListPromptsResult {
            prompts: prompt_definitions,
            next_cursor: None,
        });
        let mut resources = Registry::default();
        let mut resource_definitions = Vec::new();
        for resource in self.resources {
            let subject = format!("resource `{}`", resource.definition.uri);
            resource_definitions.push(resource.definition.clone());
            let key = resource.definition.uri.clone();
            resources.add(key, resource, subject)?;
        }
        resources.listed = to_json(&ListResourcesResult {
            resources: resource_definitions,
            next_cursor: None,
        });
        let templates_listed = to_json(&ListResourceTemplatesResult {
            resource_templates: Vec::new(),
            next_cursor: None,
        });
        let capabilities = Capabilities {
            tools: !tools.entries.is_empty(),
            prompts: !prompts.entries.is_empty(),
            resources: !resources.entries.is_empty(),
            resource_subscriptions: false,
            completions: false,
            // Every handler can log through its context.
            logging: true,
            list_changes: false,
        };
        let (events, _) = broadcast::channel(1);
        Ok(Server {
            inner: Arc::new(Inner {
                info: ServerInfo {
                    implementation: Implementation {
                        name: self.name,
                        version: self.version,
                        title: self.title,
                        description: None,
                        website_url: None,
                    },
                    capabilities,
                    cache: CacheHints::default(),
                },
                instructions: self.instructions,
                tools,
                prompts,
                resources,
                templates_listed,
                max_result_bytes: self.max_result_bytes,
                events,
            }),
        })
    }
}

/// An input schema compiled for checking arguments, or why it cannot be.
fn compile(schema: &Value) -> Result<ArgumentCheck, String> {
    ArgumentCheck::new(schema).map_err(|invalid| {
        format!(
            "has a schema that is not valid JSON Schema: {}",
            invalid.detail
        )
    })
}

/// What a kind of entry (tools, prompts, resources) holds: the entries and their keys in
/// order, by key, and the list answer made once.
struct Registry<T> {
    entries: Vec<T>,
    keys: Vec<String>,
    by_key: HashMap<String, usize>,
    listed: Value,
}

impl<T> Default for Registry<T> {
    fn default() -> Registry<T> {
        Registry {
            entries: Vec::new(),
            keys: Vec::new(),
            by_key: HashMap::new(),
            listed: Value::Object(Map::new()),
        }
    }
}

impl<T> Registry<T> {
    fn add(&mut self, key: String, entry: T, subject: String) -> Result<(), BuildError> {
        if self.by_key.contains_key(&key) {
            return Err(BuildError::duplicate(subject));
        }
        self.by_key.insert(key.clone(), self.entries.len());
        self.keys.push(key);
        self.entries.push(entry);
        Ok(())
    }

    fn get(&self, key: &str) -> Option<&T> {
        self.by_key.get(key).map(|&index| &self.entries[index])
    }

    /// The list answer.
    fn list(&self, page: &Page) -> Answer {
        one_page(&self.listed, page)
    }

    /// The first keys, for an error message.
    fn some_keys(&self) -> String {
        let mut names: Vec<&str> = self
            .keys
            .iter()
            .map(String::as_str)
            .take(MAX_NAMES_IN_ERRORS)
            .collect();
        if self.keys.len() > MAX_NAMES_IN_ERRORS {
            names.push("…");
        }
        names.join(", ")
    }
}

/// A list answer: everything on one page (no `nextCursor`); a cursor is one this server
/// never issued.
fn one_page(listed: &Value, page: &Page) -> Answer {
    match &page.cursor {
        None => Ok(listed.clone()),
        Some(cursor) => Err(ErrorObject::new(
            INVALID_PARAMS,
            format!(
                "invalid cursor `{}`: this server lists everything on one page and issues \
                 no cursors",
                PeerText(cursor)
            ),
        )),
    }
}

/// An MCP server made of typed tools, prompts and resources: a [`Service`], so
/// the transports of this crate ([`crate::stdio`], [`crate::http`]) serve it in both eras.
#[derive(Clone)]
pub struct Server {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.inner.info.implementation.name)
            .field("tools", &self.inner.tools.entries.len())
            .field("prompts", &self.inner.prompts.entries.len())
            .field("resources", &self.inner.resources.entries.len())
            .finish()
    }
}

impl Server {
    /// A builder for a server that calls itself `name`, at `version` (`serverInfo`).
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ServerBuilder {
        ServerBuilder {
            name: name.into(),
            version: version.into(),
            title: None,
            instructions: None,
            tools: Vec::new(),
            prompts: Vec::new(),
            resources: Vec::new(),
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
        }
    }

    /// The server as the service the transports take.
    pub fn into_service(self) -> Arc<dyn Service> {
        Arc::new(self)
    }

    /// Binds a Streamable HTTP endpoint for the server at `http://ADDR/mcp` (port 0: any
    /// free port, see [`HttpServer::local_addr`]); [`HttpServer::serve`] then serves every
    /// client that connects, in both eras, until its shutdown token is cancelled.
    pub async fn bind_http(
        self,
        addr: SocketAddr,
        options: HttpServeOptions,
    ) -> Result<HttpServer, HttpServeError> {
        HttpServer::bind(addr, self.into_service(), options).await
    }

    /// Serves one client on this process's stdin and stdout (as an MCP client starts a
    /// stdio server) until stdin closes; then the calls in flight get the close grace of
    /// [`StdioOptions::default`] to finish. For other streams or options, give
    /// [`Server::into_service`] to [`crate::stdio::serve`].
    pub async fn serve_stdio(self) -> ServeEnd {
        let (stdin, stdout) = switchboard_wire::stdio::own_stdio();
        crate::stdio::serve(self.into_service(), stdin, stdout, StdioOptions::default()).await
    }
}

struct Inner {
    info: ServerInfo,
    instructions: Option<String>,
    tools: Registry<(Tool, ArgumentCheck)>,
    prompts: Registry<(Prompt, ArgumentCheck)>,
    resources: Registry<Resource>,
    /// The (empty) `resources/templates/list` answer.
    templates_listed: Value,
    max_result_bytes: usize,
    /// Kept so that every client's receiver stays open; a static server sends nothing.
    events: broadcast::Sender<ServiceEvent>,
}

impl Service for Server {
    fn info(&self) -> &ServerInfo {
        &self.inner.info
    }

    fn instructions(&self) -> ServiceFuture<Option<String>> {
        let instructions = self.inner.instructions.clone();
        Box::pin(async move { instructions })
    }

    fn handle(&self, request: ServiceRequest, context: RequestContext) -> ServiceFuture<Answer> {
        let inner = self.inner.clone();
        Box::pin(async move { inner.answer(request, context).await })
    }

    fn events(&self) -> broadcast::Receiver<ServiceEvent> {
        self.inner.events.subscribe()
    }
}

/// -32602 for a tool or prompt this server does not have, naming those it has.
fn unknown<T>(kind: &str, name: &str, registry: &Registry<T>) -> ErrorObject {
    ErrorObject::new(
        INVALID_PARAMS,
        format!(
            "unknown {kind} `{}`; the {kind}s are: {}",
            PeerText(name),
            registry.some_keys()
        ),
    )
}

/// Checks the arguments and starts the handler, or says what is wrong with them.
fn start<T>(
    handler: &Erased<T>,
    schema: &ArgumentCheck,
    arguments: Value,
    context: &RequestContext,
) -> Result<ServiceFuture<Result<T, ToolError>>, String> {
    schema
        .check(&arguments)
        .map_err(|problems| problems.to_string())?;
    handler(arguments, context.clone())
}

fn cancelled() -> ErrorObject {
    // The transport drops the answer to a cancelled request; this is for its records.
    ErrorObject::new(INTERNAL_ERROR, "the request was cancelled")
}

fn panicked(subject: &str, message: &str) -> String {
    format!(
        "{subject} failed: its handler panicked ({}); this is a bug in the server, not in \
         the request",
        PeerText(message)
    )
}

impl Inner {
    async fn answer(&self, request: ServiceRequest, context: RequestContext) -> Answer {
        match request {
            ServiceRequest::ListTools(page) => self.tools.list(&page),
            ServiceRequest::CallTool(call) => self.call_tool(call, context).await,
            ServiceRequest::ListPrompts(page) => self.prompts.list(&page),
            ServiceRequest::GetPrompt(get) => self.get_prompt(get, context).await,
            ServiceRequest::ListResources(page) => self.resources.list(&page),
            ServiceRequest::ListResourceTemplates(page) => one_page(&self.templates_listed, &page),
            ServiceRequest::ReadResource(read) => self.read_resource(read, context).await,
            other @ (ServiceRequest::Complete(_)
            | ServiceRequest::Subscribe { .. }
            | ServiceRequest::Unsubscribe { .. }) => Err(ErrorObject::new(
                METHOD_NOT_FOUND,
                format!("method `{}` is not offered by this server", other.method()),
            )),
        }
    }

    /// A result within the cap, or the error that says it is not.
    fn bounded(&self, subject: &str, result: Value) -> Result<Value, String> {
        let size = guard::json_size(&result);
        if size > self.max_result_bytes {
            Err(format!(
                "{subject} produced a result of {size} bytes, over this server's limit of {} \
                 bytes; ask for less (a narrower request, or part of it)",
                self.max_result_bytes
            ))
        } else {
            Ok(result)
        }
    }

    async fn call_tool(&self, call: CallTool, context: RequestContext) -> Answer {
        let Some((tool, arguments)) = self.tools.get(&call.name) else {
            return Err(unknown("tool", &call.name, &self.tools));
        };
        let subject = format!("tool `{}`", tool.definition.name);
        let error_result = |message: String| to_json(&CallToolResult::error_text(message));
        let values = Value::Object(call.arguments);
        let running = match start(&tool.handler, arguments, values, &context) {
            Ok(running) => running,
            Err(problem) => {
                return Ok(error_result(format!(
                    "invalid arguments for {subject}: {problem}"
                )));
            }
        };
        let result = match guard::run(running, &context.cancel).await {
            Ended::Returned(Ok(result)) => to_json(&result.into_call_result()),
            Ended::Returned(Err(error)) => match error.as_protocol() {
                Some(error) => return Err(error.clone()),
                None => error_result(error.message().to_owned()),
            },
            Ended::Panicked(message) => return Ok(error_result(panicked(&subject, &message))),
            Ended::Cancelled => return Err(cancelled()),
        };
        Ok(self.bounded(&subject, result).unwrap_or_else(error_result))
    }

    async fn get_prompt(&self, get: GetPrompt, context: RequestContext) -> Answer {
        let Some((prompt, arguments)) = self.prompts.get(&get.name) else {
            return Err(unknown("prompt", &get.name, &self.prompts));
        };
        let subject = format!("prompt `{}`", prompt.name);
        let values = Value::Object(get.arguments.unwrap_or_default());
        let running = start(&prompt.handler, arguments, values, &context).map_err(|problem| {
            ErrorObject::new(
                INVALID_PARAMS,
                format!("invalid arguments for {subject}: {problem}"),
            )
        })?;
        let messages = ended(&subject, guard::run(running, &context.cancel).await)?;
        let result = to_json(&prompt::result(&prompt.description, messages));
        self.bounded(&subject, result)
            .map_err(|message| ErrorObject::new(INTERNAL_ERROR, message))
    }

    async fn read_resource(&self, read: ReadResource, context: RequestContext) -> Answer {
        let Some(resource) = self.resources.get(&read.uri) else {
            return Err(ErrorObject {
                code: RESOURCE_NOT_FOUND_LEGACY,
                message: format!(
                    "no resource `{}`; the resources are: {}",
                    PeerText(&read.uri),
                    self.resources.some_keys()
                ),
                data: Some(to_json(&ResourceNotFoundData { uri: read.uri })),
            });
        };
        let subject = format!("resource `{}`", resource.definition.uri);
        let running = (resource.read)(context.clone());
        let contents = ended(&subject, guard::run(running, &context.cancel).await)?;
        self.bounded(&subject, to_json(&resource.contents(contents)))
            .map_err(|message| ErrorObject::new(INTERNAL_ERROR, message))
    }
}

fn internal(error: &ToolError) -> ErrorObject {
    ErrorObject::new(INTERNAL_ERROR, error.message())
}

/// A prompt's or resource's handler's end as the value or the JSON-RPC error (these
/// have no error results).
fn ended<T>(subject: &str, ended: Ended<T>) -> Result<T, ErrorObject> {
    match ended {
        Ended::Returned(Ok(value)) => Ok(value),
        Ended::Returned(Err(error)) => Err(error
            .as_protocol()
            .cloned()
            .unwrap_or_else(|| internal(&error))),
        Ended::Panicked(message) => Err(ErrorObject::new(
            INTERNAL_ERROR,
            panicked(subject, &message),
        )),
        Ended::Cancelled => Err(cancelled()),
    }
}
