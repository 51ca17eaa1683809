//! Method names.

/// Legacy handshake request.
pub const INITIALIZE: &str = "initialize";
/// Legacy handshake completion notification.
pub const INITIALIZED: &str = "notifications/initialized";
/// Modern discovery request.
pub const SERVER_DISCOVER: &str = "server/discover";
/// Liveness check (legacy).
pub const PING: &str = "ping";
/// List tools.
pub const TOOLS_LIST: &str = "tools/list";
/// Call a tool.
pub const TOOLS_CALL: &str = "tools/call";
/// List prompts.
pub const PROMPTS_LIST: &str = "prompts/list";
/// Get a prompt.
pub const PROMPTS_GET: &str = "prompts/get";
/// List resources.
pub const RESOURCES_LIST: &str = "resources/list";
/// List resource templates.
pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
/// Read a resource.
pub const RESOURCES_READ: &str = "resources/read";
/// List the skills a server serves (skills extension, SEP-2640).
pub const SKILLS_LIST: &str = "skills/list";
/// Get one skill's entry by its URI (skills extension, SEP-2640).
pub const SKILLS_GET: &str = "skills/get";
/// Argument completion.
pub const COMPLETION_COMPLETE: &str = "completion/complete";
/// Modern notification stream.
pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
/// Server asks for the client's roots.
pub const ROOTS_LIST: &str = "roots/list";
/// Server asks for an LLM sample.
pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
/// Server asks the user for input.
pub const ELICITATION_CREATE: &str = "elicitation/create";
/// Cancellation notification.
pub const CANCELLED: &str = "notifications/cancelled";
/// Progress notification.
pub const PROGRESS: &str = "notifications/progress";
/// Log message notification.
pub const LOG_MESSAGE: &str = "notifications/message";
/// Tool list changed.
pub const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
/// Prompt list changed.
pub const PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
/// Resource list changed.
pub const RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
/// A subscribed resource changed.
pub const RESOURCES_UPDATED: &str = "notifications/resources/updated";
/// Modern subscription acknowledgement.
pub const SUBSCRIPTIONS_ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";
/// Sets the session's log level (legacy era).
pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
/// Subscribes to a resource's updates (legacy era).
pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
/// Ends a resource subscription (legacy era).
pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
