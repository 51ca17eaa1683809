//! An example agent host: two built-in tools and the runtime's MCP tools in one registry.
//!
//! It goes through enable → call a bridged tool → a child task calls the same tool → reload
//! with a changed config → disable → shutdown, printing one JSON line per step: the step,
//! the published tool names, the snapshot version, and how many server processes the
//! runtime owns. Run it with `cargo run -p switchboard-runtime --example agent_host`.

#![allow(clippy::print_stdout)]

use std::sync::Arc;

use serde_json::{Value, json};
use switchboard_runtime::sources::{ConfigScopes, ServerSource};
use switchboard_runtime::{
    ChildAccess, Runtime, RuntimeOptions, Tool, ToolContext, ToolFuture, ToolOutput,
};

/// A built-in tool: the host's own, behind the same boundary as bridged ones.
struct Clock;

impl Tool for Clock {
    fn name(&self) -> &str {
        "clock"
    }
    fn description(&self) -> &str {
        "Seconds since the Unix epoch."
    }
    fn input_schema(&self) -> &Value {
        static SCHEMA: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
        SCHEMA.get_or_init(|| json!({"type": "object", "properties": {}}))
    }
    fn call(&self, _arguments: Value, _context: ToolContext) -> ToolFuture {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Box::pin(async move { ToolOutput::text(now.to_string()) })
    }
}

/// A second built-in tool.
struct Shout;

impl Tool for Shout {
    fn name(&self) -> &str {
        "shout"
    }
    fn description(&self) -> &str {
        "Upper-cases text."
    }
    fn input_schema(&self) -> &Value {
        static SCHEMA: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
        SCHEMA.get_or_init(|| json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}))
    }
    fn call(&self, arguments: Value, _context: ToolContext) -> ToolFuture {
        let text = arguments
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_uppercase();
        Box::pin(async move { ToolOutput::text(text) })
    }
}

/// The host's registry: built-ins plus whatever the runtime publishes now.
fn registry(builtins: &[Arc<dyn Tool>], runtime: &Runtime) -> Vec<Arc<dyn Tool>> {
    let mut tools: Vec<Arc<dyn Tool>> = builtins.to_vec();
    for tool in runtime.snapshot().tools.iter() {
        tools.push(Arc::new(tool.clone()));
    }
    tools
}

fn step(name: &str, runtime: &Runtime, builtins: &[Arc<dyn Tool>], extra: Value) {
    let names: Vec<String> = registry(builtins, runtime)
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    let mut line = json!({
        "step": name,
        "tools": names,
        "snapshot_version": runtime.snapshot().version,
        "live_server_processes": runtime.live_processes(),
    });
    if let (Value::Object(line), Value::Object(extra)) = (&mut line, extra) {
        line.extend(extra);
    }
    println!("{line}");
}

fn write_config(path: &std::path::Path, fixture: &str, second_era: &str) -> std::io::Result<()> {
    let config = json!({"mcpServers": {
        "notes": {"command": fixture, "args": ["--name", "notes"]},
        "calc": {"command": fixture, "args": ["--name", "calc", "--era", second_era]},
    }});
    std::fs::write(
        path,
        serde_json::to_string_pretty(&config).unwrap_or_default(),
    )
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    // The host owns its servers' descendants, daemons included: orphans are re-parented to
    // it and reaped, and killed when the guard goes.
    let _orphans = switchboard_runtime::adopt_orphans()?;
    let fixture = switchboard_testkit::locate::fixture_bin()
        .display()
        .to_string();
    let dir = std::env::temp_dir().join(format!("switchboard-agent-host-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let config = dir.join("mcp.json");
    write_config(&config, &fixture, "legacy")?;

    let builtins: Vec<Arc<dyn Tool>> = vec![Arc::new(Clock), Arc::new(Shout)];
    let scopes = ConfigScopes {
        explicit: Some(config.clone()),
        project_dir: None,
        user_dir: None,
    };
    let runtime = Runtime::new(RuntimeOptions::new(ServerSource::Files(scopes)));
    step("created", &runtime, &builtins, json!({}));

    let report = runtime.enable().await?;
    step(
        "enable",
        &runtime,
        &builtins,
        json!({"servers": report.servers.iter().map(|s| json!({"name": s.name, "state": s.state.to_string()})).collect::<Vec<_>>()}),
    );

    let echo = runtime
        .snapshot()
        .tool("notes__echo")
        .cloned()
        .ok_or_else(|| anyhow::anyhow!("notes__echo was not published"))?;
    let output = echo
        .call(
            json!({"text": "hello from the host"}),
            ToolContext::default(),
        )
        .await;
    step(
        "call",
        &runtime,
        &builtins,
        json!({"result": output.text_content(), "is_error": output.is_error}),
    );

    let child = runtime.child(ChildAccess::ParentServers);
    let proxy = child
        .tool("notes__echo")
        .ok_or_else(|| anyhow::anyhow!("the child sees no notes__echo"))?;
    let output = proxy
        .call(
            json!({"text": "hello from a child task"}),
            ToolContext::default(),
        )
        .await;
    step(
        "child_call",
        &runtime,
        &builtins,
        json!({"result": output.text_content(), "child_tools": child.tools().len()}),
    );

    write_config(&config, &fixture, "modern")?;
    let reload = runtime.reload().await?;
    step(
        "reload",
        &runtime,
        &builtins,
        json!({"kept": reload.kept, "restarted": reload.restarted, "added": reload.added, "removed": reload.removed}),
    );

    runtime.disable().await?;
    step(
        "disable",
        &runtime,
        &builtins,
        json!({"child_tools": child.tools().len()}),
    );

    runtime.dispose().await;
    step("shutdown", &runtime, &builtins, json!({}));
    let _ = std::fs::remove_dir_all(dir);
    Ok(())
}
