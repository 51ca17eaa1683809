//! An example agent host: two built-in tools and the runtime's MCP tools in one registry.
//!
//! It goes through enable → call a bridged tool → a child task calls the same tool → ask a
//! server for its log messages → subscribe to a resource and hear it change → restart one
//! server → reload with a changed config → disable → shutdown, printing one JSON line per
//! step: the step, the published tool names, the snapshot version, how many server
//! processes the runtime owns, and what the host heard from the runtime since the last
//! step (server states with their reasons, publications that changed a server's lists or
//! instructions, the servers' log messages and resource updates). Run it with
//! `cargo run -p switchboard-runtime --example agent_host`.

#![allow(clippy::print_stdout)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_runtime::sources::{ConfigScopes, ServerSource};
use switchboard_runtime::{
    ChildAccess, LogLevel, NoticeKind, Runtime, RuntimeOptions, ServerNotice, Tool, ToolContext,
    ToolFuture, ToolOutput,
};
use tokio::sync::broadcast;

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

/// What the host heard from the runtime and has not shown yet, one line per notice.
#[derive(Clone, Default)]
struct Heard(Arc<Mutex<Vec<String>>>);

impl Heard {
    /// Follows the runtime's notices until the feed closes (the task's owner, `main`,
    /// aborts it at the end).
    fn follow(
        &self,
        mut notices: broadcast::Receiver<ServerNotice>,
    ) -> tokio::task::JoinHandle<()> {
        let heard = self.clone();
        tokio::spawn(async move {
            loop {
                let line = match notices.recv().await {
                    // Debug quoting escapes whatever control characters a server wrote.
                    Ok(notice) => format!("{}: {:?}", notice.server, notice.kind),
                    Err(broadcast::error::RecvError::Lagged(missed)) => {
                        format!("(missed {missed} notices)")
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                };
                heard.lock().push(line);
            }
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Everything heard since the last call.
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.lock())
    }

    /// Waits (at most 5 s) until a notice `pick` accepts arrives.
    async fn wait_for(
        &self,
        mut notices: broadcast::Receiver<ServerNotice>,
        pick: impl Fn(&NoticeKind) -> bool,
    ) {
        let _ = tokio::time::timeout(Duration::from_secs(5), async {
            while let Ok(notice) = notices.recv().await {
                if pick(&notice.kind) {
                    return;
                }
            }
        })
        .await;
        // Let the follower take it in too.
        tokio::task::yield_now().await;
    }
}

async fn step(
    name: &str,
    runtime: &Runtime,
    builtins: &[Arc<dyn Tool>],
    heard: &Heard,
    extra: Value,
) {
    // The follower runs on this thread: let it take in what was sent so far.
    for _ in 0..8 {
        tokio::task::yield_now().await;
    }
    let names: Vec<String> = registry(builtins, runtime)
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    let mut line = json!({
        "step": name,
        "tools": names,
        "snapshot_version": runtime.snapshot().version,
        "live_server_processes": runtime.live_processes(),
        "heard": heard.take(),
    });
    if let (Value::Object(line), Value::Object(extra)) = (&mut line, extra) {
        line.extend(extra);
    }
    println!("{line}");
}

fn write_config(path: &std::path::Path, fixture: &str, second_era: &str) -> std::io::Result<()> {
    let config = json!({"mcpServers": {
        "notes": {"command": fixture, "args": ["--name", "notes", "--logging"]},
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
    let heard = Heard::default();
    let follower = heard.follow(runtime.notices());
    step("created", &runtime, &builtins, &heard, json!({})).await;

    let report = runtime.enable().await?;
    step(
        "enable",
        &runtime,
        &builtins,
        &heard,
        json!({"servers": report.servers.iter().map(|s| json!({"name": s.name, "state": s.state.to_string()})).collect::<Vec<_>>()}),
    )
    .await;

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
        &heard,
        json!({"result": output.text_content(), "is_error": output.is_error}),
    )
    .await;

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
        &heard,
        json!({"result": output.text_content(), "child_tools": child.tools().len()}),
    )
    .await;

    // Log messages at `notice` and above; the choice is applied again if `notes` restarts.
    let level_set = runtime
        .server("notes")
        .set_log_level(LogLevel::Notice)
        .await?;
    let logged = runtime.notices();
    echo.call(json!({"text": "now with logs"}), ToolContext::default())
        .await;
    heard
        .wait_for(logged, |kind| matches!(kind, NoticeKind::Log { .. }))
        .await;
    step(
        "log_level",
        &runtime,
        &builtins,
        &heard,
        json!({"level_set": format!("{level_set:?}")}),
    )
    .await;

    // A resource subscription: reading it makes the fixture announce an update.
    let subscribed = runtime
        .server("notes")
        .subscribe_resource("fixture://readme")
        .await?;
    let updates = runtime.notices();
    runtime
        .server("notes")
        .read_resource("fixture://readme")
        .await?;
    heard
        .wait_for(updates, |kind| {
            matches!(kind, NoticeKind::ResourceUpdated { .. })
        })
        .await;
    step(
        "subscribe",
        &runtime,
        &builtins,
        &heard,
        json!({"subscribed": subscribed}),
    )
    .await;

    // One server restarted from its definition; the other keeps its connection.
    let restarted = runtime.server("calc").restart().await?;
    step(
        "restart",
        &runtime,
        &builtins,
        &heard,
        json!({"calc": restarted.state.to_string()}),
    )
    .await;

    write_config(&config, &fixture, "modern")?;
    let reload = runtime.reload().await?;
    step(
        "reload",
        &runtime,
        &builtins,
        &heard,
        json!({"kept": reload.kept, "restarted": reload.restarted, "added": reload.added, "removed": reload.removed}),
    )
    .await;

    runtime.disable().await?;
    step(
        "disable",
        &runtime,
        &builtins,
        &heard,
        json!({"child_tools": child.tools().len()}),
    )
    .await;

    runtime.dispose().await;
    step("shutdown", &runtime, &builtins, &heard, json!({})).await;
    follower.abort();
    let _ = std::fs::remove_dir_all(dir);
    Ok(())
}
