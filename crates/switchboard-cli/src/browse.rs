//! The verbs beyond tools: `prompts`, `prompt`, `resources` and `read`, and the full view of
//! one tool (`tools SERVER TOOL`).

use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Map, Value, json};
use switchboard_config::ServerEntry;
use switchboard_protocol::{ContentBlock, Prompt, Resource, ResourceTemplate};
use switchboard_session::SessionError;

use crate::connect::{ConnectedServer, LoadedConfig};
use crate::render::{SUMMARY_CHARS, summary};
use crate::terminal::{self, JsonLayout, say};
use crate::{EXIT_SERVER, Failure, Output, futures_join_all, pick_server};

/// What every browsing verb is asked: which servers, how to print, the request deadline.
pub(crate) struct Browse<'a> {
    pub(crate) loaded: &'a LoadedConfig,
    pub(crate) only: Option<&'a str>,
    pub(crate) output: Output,
    pub(crate) timeout: Option<Duration>,
}

impl Browse<'_> {
    /// The servers asked for: one by name, or every enabled one (definitions that cannot
    /// be used are said and skipped).
    pub(crate) fn entries(&self) -> Result<Vec<&ServerEntry>, Failure> {
        let file = &self.loaded.file;
        let entries: Vec<&ServerEntry> = match self.only {
            Some(name) => vec![pick_server(file, name)?],
            None => {
                for error in file.errors() {
                    say(format_args!("switchboard: skipping {error}"));
                }
                file.entries().filter(|e| e.enabled).collect()
            }
        };
        if entries.is_empty() {
            return Err(Failure::Usage(format!(
                "no enabled servers in {}",
                file.path.display()
            )));
        }
        Ok(entries)
    }
}

/// One server's prompts, or why there are none.
pub(crate) struct ListedPrompts {
    prompts: Option<Vec<Prompt>>,
}

/// `switchboard prompts [SERVER]`.
pub(crate) async fn prompts(browse: &Browse<'_>) -> Result<u8, Failure> {
    let entries = browse.entries()?;
    let listings = futures_join_all(entries.iter().map(|entry| async {
        let server = ConnectedServer::connect(entry, browse.timeout).await?;
        let listed = listed_prompts(&server).await;
        server.close().await;
        listed
    }))
    .await;
    Ok(show_prompts(
        browse.output,
        entries.iter().map(|e| e.name.as_str()).zip(listings),
    ))
}

/// The prompts of a connected server (none asked for when it offers none).
pub(crate) async fn listed_prompts(
    server: &ConnectedServer,
) -> Result<ListedPrompts, SessionError> {
    if server.session.negotiated().capabilities.prompts.is_none() {
        return Ok(ListedPrompts { prompts: None });
    }
    let listing = server.session.list_prompts().await?;
    Ok(ListedPrompts {
        prompts: Some(listing.items),
    })
}

/// Prints each server's prompts; the exit code is 3 when any listing failed.
pub(crate) fn show_prompts<'a>(
    output: Output,
    listings: impl Iterator<Item = (&'a str, Result<ListedPrompts, SessionError>)>,
) -> u8 {
    let shown = listings.map(|(name, listing)| {
        let listing = listing.map(|listed| Shown {
            json: json!({"prompts": listed.prompts}),
            text: prompts_text(name, &listed),
        });
        (name, listing)
    });
    print_listings(output, shown)
}

/// One server's listing, both ways.
pub(crate) struct Shown {
    pub(crate) json: Value,
    pub(crate) text: String,
}

/// Prints each server's listing (text, or one JSON object by server, a failed server's
/// entry `{"error": {"kind": "server", "message"}}`) and says each failure; the exit code
/// is 3 when any failed.
pub(crate) fn print_listings<'a>(
    output: Output,
    listings: impl Iterator<Item = (&'a str, Result<Shown, SessionError>)>,
) -> u8 {
    let mut json_out = Map::new();
    let mut failed = false;
    for (server, listing) in listings {
        match listing {
            Ok(shown) if output == Output::Json => {
                json_out.insert(server.to_owned(), shown.json);
            }
            Ok(shown) => terminal::print(&shown.text),
            Err(error) => {
                failed = true;
                if output == Output::Json {
                    // The failure in the JSON too, where a program reads it.
                    json_out.insert(
                        server.to_owned(),
                        json!({"error": {
                            "kind": "server",
                            "message": terminal::without_secrets(&error.to_string()),
                        }}),
                    );
                }
                say(format_args!("switchboard: {error}"));
            }
        }
    }
    if output == Output::Json {
        terminal::print_json(&Value::Object(json_out), JsonLayout::Compact);
    }
    if failed { EXIT_SERVER } else { 0 }
}

fn prompts_text(server: &str, listed: &ListedPrompts) -> String {
    let Some(prompts) = &listed.prompts else {
        return format!("{server}: no prompts (the server offers none)\n");
    };
    let mut out = format!("{server}: {}\n", count(prompts.len(), "prompt"));
    for prompt in prompts {
        let arguments: Vec<String> = prompt
            .arguments
            .iter()
            .map(|a| {
                let optional = if a.required { "" } else { "?" };
                format!("{}{optional}", a.name)
            })
            .collect();
        out.push_str(&format!("  {}({})", prompt.name, arguments.join(", ")));
        if let Some(description) = prompt.description.as_deref().or(prompt.title.as_deref()) {
            out.push_str(&format!("  {}", summary(description, SUMMARY_CHARS)));
        }
        out.push('\n');
    }
    out
}

/// `switchboard prompt SERVER NAME [ARG=VALUE...]`.
pub(crate) async fn prompt(
    browse: &Browse<'_>,
    name: &str,
    words: &[String],
) -> Result<u8, Failure> {
    let entry = browse.entries()?[0];
    let arguments = prompt_arguments(words)?;
    let server = ConnectedServer::connect(entry, browse.timeout)
        .await
        .map_err(|e| Failure::Server(e.to_string()))?;
    let outcome = prompt_on(&server, name, arguments, browse.output).await;
    server.close().await;
    outcome
}

/// A prompt's NAME=VALUE words as its arguments.
pub(crate) fn prompt_arguments(words: &[String]) -> Result<Map<String, Value>, Failure> {
    let mut arguments = Map::new();
    for word in words {
        let Some((key, value)) = word.split_once('=') else {
            return Err(Failure::Usage(format!(
                "`{word}` is not a prompt argument: give NAME=VALUE pairs"
            )));
        };
        arguments.insert(key.to_owned(), Value::String(value.to_owned()));
    }
    Ok(arguments)
}

/// Gets a prompt of a connected server and prints it.
pub(crate) async fn prompt_on(
    server: &ConnectedServer,
    name: &str,
    arguments: Map<String, Value>,
    output: Output,
) -> Result<u8, Failure> {
    let result = get_prompt(server, name, arguments).await?;
    if output == Output::Json {
        terminal::print_json(&result, JsonLayout::Compact);
    } else {
        terminal::print(&prompt_text(&result));
    }
    Ok(0)
}

/// Checks the arguments against the prompt's listed ones (unknown or missing ones are the
/// caller's mistake, said before asking), then gets it.
async fn get_prompt(
    server: &ConnectedServer,
    name: &str,
    arguments: Map<String, Value>,
) -> Result<Value, Failure> {
    let session = &server.session;
    let server_name = session.server_name().to_owned();
    if session.negotiated().capabilities.prompts.is_none() {
        return Err(Failure::Usage(format!(
            "server `{server_name}` offers no prompts"
        )));
    }
    let listed = session
        .list_prompts()
        .await
        .map_err(|e| Failure::Server(e.to_string()))?;
    let Some(prompt) = listed.items.iter().find(|p| p.name == name) else {
        let names: Vec<&str> = listed.items.iter().map(|p| p.name.as_str()).collect();
        return Err(Failure::Usage(format!(
            "server `{server_name}` has no prompt `{name}`; its prompts: {}",
            none_if_empty(&names)
        )));
    };
    let known: Vec<&str> = prompt.arguments.iter().map(|a| a.name.as_str()).collect();
    if let Some(unknown) = arguments.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(Failure::Usage(format!(
            "prompt `{name}` has no argument `{unknown}`; its arguments: {}",
            none_if_empty(&known)
        )));
    }
    let missing: Vec<&str> = prompt
        .arguments
        .iter()
        .filter(|a| a.required && !arguments.contains_key(&a.name))
        .map(|a| a.name.as_str())
        .collect();
    if !missing.is_empty() {
        let named: Vec<String> = missing.iter().map(|m| format!("`{m}`")).collect();
        let example: Vec<String> = missing.iter().map(|m| format!("{m}=VALUE")).collect();
        let them = if missing.len() == 1 { "it" } else { "them" };
        return Err(Failure::Usage(format!(
            "prompt `{name}` needs {}: give {them} as {}",
            named.join(", "),
            example.join(" ")
        )));
    }
    let arguments = (!arguments.is_empty()).then_some(Value::Object(arguments));
    session
        .get_prompt(name, arguments)
        .await
        .map_err(|e| request_failure(&e))
}

/// A server's answer to a request that it refused with a JSON-RPC error is the request's
/// failure (exit 3) with the server's words; so is every other failure.
fn request_failure(error: &SessionError) -> Failure {
    Failure::Server(error.to_string())
}

fn prompt_text(result: &Value) -> String {
    let mut out = String::new();
    if let Some(description) = result.get("description").and_then(Value::as_str) {
        out.push_str(&format!("{description}\n\n"));
    }
    let messages = result
        .get("messages")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for message in messages {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("?");
        let blocks: Vec<Value> = match message.get("content") {
            Some(Value::Array(blocks)) => blocks.clone(),
            Some(block) => vec![block.clone()],
            None => Vec::new(),
        };
        for block in blocks {
            out.push_str(&format!(
                "[{role}] {}\n",
                block_text(ContentBlock::from_json(block))
            ));
        }
    }
    out
}

/// A content block as a line: text as it is, the rest summarised.
fn block_text(block: ContentBlock) -> String {
    match block {
        ContentBlock::Text { text } => text,
        ContentBlock::Image { data, mime_type } => {
            format!("(image {mime_type}, {} bytes base64)", data.len())
        }
        ContentBlock::Audio { data, mime_type } => {
            format!("(audio {mime_type}, {} bytes base64)", data.len())
        }
        ContentBlock::ResourceLink { uri, name, .. } => format!("(resource link {name}: {uri})"),
        ContentBlock::Resource { resource } => match resource.get("text").and_then(Value::as_str) {
            Some(text) => text.to_owned(),
            None => format!(
                "(embedded resource {})",
                resource.get("uri").and_then(Value::as_str).unwrap_or("?")
            ),
        },
        ContentBlock::Unknown { kind, .. } => format!("(content of unknown type {kind:?})"),
    }
}

/// One server's resources and templates, or why there are none.
pub(crate) struct ListedResources {
    offered: Option<(Vec<Resource>, Vec<ResourceTemplate>)>,
    problems: Vec<String>,
}

/// `switchboard resources [SERVER]`.
pub(crate) async fn resources(browse: &Browse<'_>) -> Result<u8, Failure> {
    let entries = browse.entries()?;
    let listings = futures_join_all(entries.iter().map(|entry| async {
        let server = ConnectedServer::connect(entry, browse.timeout).await?;
        let listed = list_resources(&server).await;
        server.close().await;
        listed
    }))
    .await;
    Ok(show_resources(
        browse.output,
        entries.iter().map(|e| e.name.as_str()).zip(listings),
    ))
}

/// Prints each server's resources and templates; the exit code is 3 when any failed.
pub(crate) fn show_resources<'a>(
    output: Output,
    listings: impl Iterator<Item = (&'a str, Result<ListedResources, SessionError>)>,
) -> u8 {
    let shown = listings.map(|(name, listing)| {
        let listing = listing.map(|listed| {
            let text = resources_text(name, &listed);
            let (resources, templates) = listed.offered.unzip();
            Shown {
                json: json!({"resources": resources, "resourceTemplates": templates, "problems": listed.problems}),
                text,
            }
        });
        (name, listing)
    });
    print_listings(output, shown)
}

/// Resources, then templates: a failed template listing is a problem, not a failure.
pub(crate) async fn list_resources(
    server: &ConnectedServer,
) -> Result<ListedResources, SessionError> {
    let session = &server.session;
    if session.negotiated().capabilities.resources.is_none() {
        return Ok(ListedResources {
            offered: None,
            problems: Vec::new(),
        });
    }
    let resources = session.list_resources().await?;
    let mut problems: Vec<String> = resources
        .problems
        .iter()
        .map(|p| format!("resources/list page {}: {}", p.page, p.detail))
        .collect();
    let templates = match session.list_resource_templates().await {
        Ok(listing) => listing.items,
        Err(error) => {
            problems.push(format!("resources/templates/list failed: {error}"));
            Vec::new()
        }
    };
    Ok(ListedResources {
        offered: Some((resources.items, templates)),
        problems,
    })
}

fn resources_text(server: &str, listed: &ListedResources) -> String {
    let Some((resources, templates)) = &listed.offered else {
        return format!("{server}: no resources (the server offers none)\n");
    };
    let mut out = format!(
        "{server}: {}, {}\n",
        count(resources.len(), "resource"),
        count(templates.len(), "template")
    );
    for resource in resources {
        out.push_str(&format!("  {}  {}", resource.uri, resource.name));
        if let Some(mime) = &resource.mime_type {
            out.push_str(&format!(" ({mime})"));
        }
        if let Some(description) = &resource.description {
            out.push_str(&format!("  {}", summary(description, SUMMARY_CHARS)));
        }
        out.push('\n');
    }
    for template in templates {
        out.push_str(&format!(
            "  template {}  {}",
            template.uri_template, template.name
        ));
        if let Some(mime) = &template.mime_type {
            out.push_str(&format!(" ({mime})"));
        }
        if let Some(description) = &template.description {
            out.push_str(&format!("  {}", summary(description, SUMMARY_CHARS)));
        }
        out.push('\n');
    }
    for problem in &listed.problems {
        out.push_str(&format!("  warning: {problem}\n"));
    }
    out
}

/// Where `read` puts a resource's contents.
pub(crate) enum ReadTarget<'a> {
    /// Stdout: text always; binary contents only when stdout is not a terminal.
    Stdout,
    /// This file (created or replaced).
    File(&'a Path),
}

/// `switchboard read SERVER URI [--out FILE]`.
pub(crate) async fn read(
    browse: &Browse<'_>,
    uri: &str,
    target: ReadTarget<'_>,
) -> Result<u8, Failure> {
    let entry = browse.entries()?[0];
    let server = ConnectedServer::connect(entry, browse.timeout)
        .await
        .map_err(|e| Failure::Server(e.to_string()))?;
    let outcome = read_on(&server, &entry.name, uri, target, browse.output).await;
    server.close().await;
    outcome
}

/// Reads a resource of a connected server and puts its contents where `target` says.
pub(crate) async fn read_on(
    server: &ConnectedServer,
    name: &str,
    uri: &str,
    target: ReadTarget<'_>,
    output: Output,
) -> Result<u8, Failure> {
    let result = if server.session.negotiated().capabilities.resources.is_none() {
        Err(Failure::Usage(format!(
            "server `{name}` offers no resources"
        )))
    } else {
        server
            .session
            .read_resource(uri)
            .await
            .map_err(|e| request_failure(&e))
    }?;
    if output == Output::Json {
        terminal::print_json(&result, JsonLayout::Compact);
        return Ok(0);
    }
    let contents = read_contents(&result)?;
    match target {
        ReadTarget::File(path) => {
            let bytes: Vec<u8> = contents.iter().flat_map(|c| c.bytes.clone()).collect();
            std::fs::write(path, &bytes)
                .map_err(|e| Failure::Usage(format!("could not write {}: {e}", path.display())))?;
            say(format_args!(
                "switchboard: wrote {} bytes of {uri} to {}",
                bytes.len(),
                path.display()
            ));
        }
        ReadTarget::Stdout => {
            let binary = contents.iter().any(|c| c.binary);
            if binary && terminal::stdout_is_terminal() {
                let sizes: Vec<String> = contents
                    .iter()
                    .map(|c| format!("{} bytes of {}", c.bytes.len(), c.mime_type))
                    .collect();
                return Err(Failure::Usage(format!(
                    "{uri} is binary ({}); write it to a file with --out FILE, or redirect stdout",
                    sizes.join(", ")
                )));
            }
            for content in &contents {
                if content.binary {
                    terminal::write_bytes_to_pipe(&content.bytes);
                } else {
                    terminal::print(&String::from_utf8_lossy(&content.bytes));
                }
            }
            // A terminal's prompt starts on a line of its own; a pipe gets the bytes only.
            let ends_open = contents.last().is_some_and(|c| !c.bytes.ends_with(b"\n"));
            if ends_open && terminal::stdout_is_terminal() {
                terminal::print("\n");
            }
        }
    }
    Ok(0)
}

/// One item of a `resources/read` result, decoded.
struct ReadContent {
    mime_type: String,
    bytes: Vec<u8>,
    binary: bool,
}

fn read_contents(result: &Value) -> Result<Vec<ReadContent>, Failure> {
    let items = result
        .get("contents")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut contents = Vec::new();
    for item in items {
        let mime_type = item
            .get("mimeType")
            .and_then(Value::as_str)
            .unwrap_or("application/octet-stream")
            .to_owned();
        if let Some(text) = item.get("text").and_then(Value::as_str) {
            contents.push(ReadContent {
                mime_type,
                bytes: text.as_bytes().to_vec(),
                binary: false,
            });
        } else if let Some(blob) = item.get("blob").and_then(Value::as_str) {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(blob)
                .map_err(|e| {
                    Failure::Server(format!("the server sent a blob that is not base64: {e}"))
                })?;
            contents.push(ReadContent {
                mime_type,
                bytes,
                binary: true,
            });
        }
    }
    Ok(contents)
}

fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

fn none_if_empty(names: &[&str]) -> String {
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_and_resources_read_as_text() {
        let prompt = json!({
            "description": "Greets someone.",
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "Say hello to Ada."}},
                {"role": "assistant", "content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]},
            ],
        });
        let listed = ListedResources {
            offered: Some((
                vec![Resource {
                    uri: "fixture://readme".into(),
                    name: "readme".into(),
                    title: None,
                    description: Some("What this is.\nMore.".into()),
                    mime_type: Some("text/plain".into()),
                }],
                vec![ResourceTemplate {
                    uri_template: "fixture://items/{id}".into(),
                    name: "item".into(),
                    description: None,
                    mime_type: None,
                }],
            )),
            problems: vec!["resources/templates/list failed: nope".into()],
        };
        let shown = format!(
            "{}---\n{}---\n{}",
            prompt_text(&prompt),
            resources_text("fx", &listed),
            resources_text(
                "bare",
                &ListedResources {
                    offered: None,
                    problems: Vec::new()
                }
            )
        );
        expect_test::expect![[r#"
            Greets someone.

            [user] Say hello to Ada.
            [assistant] (image image/png, 4 bytes base64)
            ---
            fx: 1 resource, 1 template
              fixture://readme  readme (text/plain)  What this is.
              template fixture://items/{id}  item
              warning: resources/templates/list failed: nope
            ---
            bare: no resources (the server offers none)
        "#]]
        .assert_eq(&shown);
    }
}
