//! A whole MCP server: one typed tool, served on stdin/stdout in both protocol eras.
//! Run it with `cargo run -p switchboard-server --example hello`.

use schemars::JsonSchema;
use serde::Deserialize;
use switchboard_server::author::{RequestContext, Server, Tool, ToolError};

/// Whom to greet.
#[derive(Deserialize, JsonSchema)]
struct Greet {
    /// The name of the one to greet.
    name: String,
}

async fn greet(input: Greet, _context: RequestContext) -> Result<String, ToolError> {
    if input.name.trim().is_empty() {
        return Err(ToolError::new("`name` is empty; say whom to greet"));
    }
    Ok(format!("Hello, {}!", input.name))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::builder("hello", "0.1.0")
        .instructions("Greets people by name.")
        .tool(Tool::new("greet", "Greets someone by name.", greet).read_only())
        .build()?;
    server.serve_stdio().await;
    Ok(())
}
