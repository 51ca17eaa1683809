//! The config loader ([`switchboard_config::parse`]): both dialects, `${VAR}` expansion.
//!
//! Input: one byte choosing the dialect (JSON `mcp.json` or Codex TOML), then the text
//! (invalid UTF-8 replaced). Invariants: nothing panics; a syntax error names the file and a
//! line and column inside the text; every entry names the file and the line of its name;
//! no value a variable holds appears in an error, a `Debug` or a redacted display.

use std::collections::BTreeMap;
use std::path::Path;

use switchboard_config::{ConfigError, ConfigFile, parse};

use crate::input::Input;

/// A variable's value that must never be shown; no seed or dictionary word contains it.
pub const SECRET: &str = "Zq9vSecretValue";

/// Words of config files, for the mutator.
pub const WORDS: &[&[u8]] = &[
    b"{\"mcpServers\":{",
    b"{\"servers\":{",
    b"\"command\":",
    b"\"args\":[",
    b"\"env\":{",
    b"\"cwd\":",
    b"\"url\":",
    b"\"headers\":{",
    b"\"type\":",
    b"\"enabled\":false",
    b"\"disabled\":true",
    b"\"timeout\":",
    b"\"startupTimeout\":",
    b"\"era\":",
    b"\"protocolVersion\":",
    b"\"enabledTools\":[",
    b"\"disabledTools\":[",
    b"\"includeTools\":[",
    b"\"excludeTools\":[",
    b"enabled_tools = [",
    b"disabled_tools = [",
    b"\"*\"",
    b"\"?\"",
    b"\"30s\"",
    b"\"500ms\"",
    b"1e308",
    b"${TOKEN}",
    b"${EMPTY}",
    b"${NESTED}",
    b"${UNSET}",
    b"${UNSET:-fallback}",
    b"${",
    b"$$",
    b":-",
    b"}",
    b"\\u0041",
    b"[mcp_servers.",
    b"[mcp_servers.\"a b\"]\n",
    b"mcp_servers.x.command = ",
    b"command = \"",
    b"args = [",
    b"http_headers = {",
    b"startup_timeout_sec = ",
    b"tool_timeout_sec = ",
    b"enabled = false\n",
    b"\"\"\"",
    b"'''",
    b"\n",
    b"\r\n",
];

/// Runs one input.
pub fn run(data: &[u8]) {
    let mut input = Input::new(data);
    let toml = input.byte() % 2 == 1;
    let text = String::from_utf8_lossy(input.rest());
    let path = Path::new(if toml {
        "/cfg/config.toml"
    } else {
        "/cfg/mcp.json"
    });
    let vars: BTreeMap<String, String> = [
        ("TOKEN", SECRET),
        ("EMPTY", ""),
        ("NESTED", "${TOKEN}"),
        ("HOME", "/home/u"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    match parse(&text, path, &vars) {
        Err(error) => check_error(&error, &text, path),
        Ok(file) => check_file(&file, &text, path),
    }
}

fn check_error(error: &ConfigError, text: &str, path: &Path) {
    let shown = format!("{error} {error:?}");
    assert!(
        !shown.contains(SECRET),
        "a file error shows a variable's value: {shown}"
    );
    match error {
        ConfigError::Syntax {
            path: named,
            line,
            column,
            ..
        } => {
            assert_eq!(named, path, "a syntax error names another file");
            let lines = text.split('\n').count();
            assert!(
                (1..=lines).contains(line),
                "a syntax error on line {line} of a {lines}-line text"
            );
            assert!(*column >= 1, "a syntax error in column {column}");
        }
        ConfigError::Shape { path: named, .. } | ConfigError::Read { path: named, .. } => {
            assert_eq!(named, path, "a file error names another file");
        }
    }
}

fn check_file(file: &ConfigFile, text: &str, path: &Path) {
    let lines = text.split('\n').count();
    for server in &file.servers {
        let (origin, shown) = match server {
            Ok(entry) => (
                &entry.origin,
                format!("{entry:?} {} {:?}", entry.redacted(), entry.display_url()),
            ),
            Err(error) => (&error.origin, format!("{error} {error:?}")),
        };
        assert!(
            !shown.contains(SECRET),
            "an entry's error or display shows a variable's value: {shown}"
        );
        assert_eq!(
            origin.file,
            path.display().to_string(),
            "an entry names another file"
        );
        match origin.line {
            Some(line) => assert!(
                (1..=lines).contains(&line),
                "an entry on line {line} of a {lines}-line text"
            ),
            None => panic!("an entry without a line: {shown}"),
        }
    }
}
