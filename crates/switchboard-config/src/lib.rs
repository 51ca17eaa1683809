//! Server configuration: reads `mcp.json` files into [`ServerEntry`] values.
//!
//! A file is read whole, but each server entry is validated on its own: one bad entry
//! becomes an [`EntryError`] (with file, line and what to do) and never stops the others.
//! `${VAR}` and `${VAR:-default}` are expanded in every string (also written VS Code's way,
//! `${env:VAR}`); an unset variable without a default fails that entry by name. VS Code's
//! `${input:ID}`, a value VS Code prompts for, is read from `SWITCHBOARD_INPUT_ID`
//! ([`input_variable`]); unset, it fails the entry naming the input and its description
//! from the file's `inputs`. Folders are named the clients' way (`${workspaceFolder}`,
//! `${userHome}`, Claude Code's `${CLAUDE_PROJECT_DIR}`: `variables::FileFolders` says
//! what each means in which file); they are paths, not secrets. A remote entry may name
//! the client metadata document Switchboard presents as its id and a workload identity
//! ([`OAuthSettings`]). Environment values, headers, URL credentials and query
//! values, and every value a `${VAR}` expansion put anywhere are secrets: the `Debug`
//! output, [`ServerEntry::redacted`] and [`ServerEntry::display_url`] never show them
//! (fields with an expansion are shown as written), and [`ServerEntry::secrets`] lists
//! them for hiding wherever else they might turn up (errors, stderr tails, reports).
//!
//! Accepted shapes: `{"mcpServers": {...}}` (Claude, Cursor, Gemini and most clients),
//! `{"servers": {...}}` (VS Code) and, for a `.toml` file, Codex's `[mcp_servers.NAME]`.
//! An entry's tool filter ([`ToolFilter`], in `filter`) is `enabledTools`/`disabledTools`
//! everywhere, also Gemini's `includeTools`/`excludeTools` in JSON and Codex's
//! `enabled_tools`/`disabled_tools` in TOML.
//!
//! # Map
//!
//! `mcp.json` reading: the entry and its redacted displays (`entry.rs`); a whole file read
//! in its syntax and layout (`reading.rs`); each entry's fields checked on their own in the
//! file's dialect (`fields.rs`); `${VAR}` expansion and where variables come from
//! (`variables.rs`); the line of each entry's name, for errors (`lines.rs`); each client's
//! file layout (`layout.rs`: syntax — JSON, JSON with comments, TOML —, the server map's
//! key path, the dialect mapped to the common spelling);
//! discovery (`discover.rs`: `$SWITCHBOARD_CONFIG`, the project's files, the user's files
//! of each client, first definition wins, every place reported; home and project directory
//! come from `Places`); format-keeping edits (`edit/`: in JSON only the bytes of the member
//! added or cut change, with its comma and its line — comments, indentation, CRLF kept —
//! `json.rs`; `toml_edit` for TOML, `toml.rs`; the entry written in the file's dialect);
//! `atomic.rs`, the one writer of every file Switchboard keeps (temp file in the same
//! folder, fsync, rename, folder fsync; new files 0600 in 0700 folders); VS Code's
//! `${env:VAR}` and `${input:ID}` (read from `SWITCHBOARD_INPUT_ID`, else an entry error
//! naming the input from `inputs`); the entry's per-tool filter (`filter.rs`: `ToolFilter`,
//! allow and deny lists of `*`/`?` patterns, deny wins), which the runtime applies where a
//! server's tools enter the snapshot and the CLI where it lists and calls. Its own crate
//! because the CLI, the runtime and the checker all read configuration and none should
//! depend on another for it.

pub mod atomic;
pub mod discover;
pub mod edit;
mod entry;
mod fields;
mod filter;
mod layout;
mod lines;
mod reading;
pub mod team;
mod variables;

pub use entry::{
    EntryError, EraSetting, ListLimits, OAuthSettings, Origin, Provenance, ServerEntry,
    TransportEntry, WorkloadIdentitySource,
};
pub use fields::{DurationError, parse_duration};
pub use filter::{ToolFilter, ToolFilterError, ToolPattern};
pub use layout::{
    EntryDialect, Layout, MissingMap, Syntax, codex_form, common_form, dialect_form, strip_jsonc,
};
pub use reading::{ConfigError, ConfigFile, ReadFile, load, load_as, parse, parse_as};
pub use switchboard_sandbox::{DefaultSandbox, SandboxChoice, SandboxPolicy};
pub use variables::{ProcessEnv, UnsetVariable, Variables, expand_vars, input_variable};

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::Path;
    use std::time::Duration;

    use expect_test::{Expect, expect};

    use super::*;

    fn check(text: &str, expect: Expect) {
        let vars: BTreeMap<String, String> = [
            ("TOKEN".to_owned(), "s3cret".to_owned()),
            ("HOME".to_owned(), "/home/u".to_owned()),
        ]
        .into();
        let actual = match parse(text, Path::new("/p/mcp.json"), &vars) {
            Err(e) => format!("error: {e}"),
            Ok(file) => file
                .servers
                .iter()
                .map(|s| match s {
                    Ok(entry) => {
                        format!("ok {} {} at {}", entry.name, entry.redacted(), entry.origin)
                    }
                    Err(e) => format!("err {e}"),
                })
                .collect::<Vec<_>>()
                .join("\n"),
        };
        expect.assert_eq(&actual);
    }

    #[test]
    fn entries_are_validated_one_by_one() {
        check(
            r#"{
  "mcpServers": {
    "fs": { "command": "npx", "args": ["-y", "server-fs", "${HOME}"], "env": { "API_KEY": "${TOKEN}" } },
    "broken": { "command": "x", "env": { "K": "${MISSING}" } },
    "remote": { "type": "http", "url": "https://example.test/mcp", "headers": { "Authorization": "Bearer ${TOKEN}" } },
    "neither": { "args": [] },
    "off": { "command": "y", "cwd": "sub", "disabled": true, "timeout": "1.5s" },
    "defaulted": { "command": "${CMD:-node}" }
  }
}"#,
            expect![[r#"
                ok fs {"type":"stdio","command":"npx","args":["-y","server-fs","${HOME}"],"env":{"API_KEY":"<redacted>"},"enabled":true} at /p/mcp.json:3
                err /p/mcp.json:4: server `broken`: `env.K` uses ${MISSING}, which is not set; set it, or write ${MISSING:-default}
                ok remote {"type":"http","url":"https://example.test/mcp","headers":{"Authorization":"<redacted>"},"enabled":true} at /p/mcp.json:5
                err /p/mcp.json:6: server `neither`: needs `command` (a local server) or `url` (a remote server)
                ok off {"type":"stdio","command":"y","args":[],"env":{},"cwd":"/p/sub","enabled":false} at /p/mcp.json:7
                ok defaulted {"type":"stdio","command":"${CMD:-node}","args":[],"env":{},"enabled":true} at /p/mcp.json:8"#]],
        );
    }

    #[test]
    fn listing_caps_are_positive_whole_numbers() {
        let vars = BTreeMap::new();
        let text = r#"{"mcpServers": {
            "big": { "command": "x", "maxListItems": 50000, "maxListBytes": 100000000, "maxListPages": 500 },
            "plain": { "command": "x" },
            "zero": { "command": "x", "maxListItems": 0 },
            "text": { "command": "x", "maxListPages": "9" },
            "fraction": { "command": "x", "maxListBytes": 1.5 }
        }}"#;
        let file = parse(text, Path::new("/p/mcp.json"), &vars).expect("parses");
        let shown: Vec<String> = file
            .servers
            .iter()
            .map(|s| match s {
                Ok(entry) => format!("{} {:?}", entry.name, entry.list_limits),
                Err(e) => format!("err {e}"),
            })
            .collect();
        expect![[r#"
            [
                "big ListLimits { pages: Some(500), items: Some(50000), bytes: Some(100000000) }",
                "plain ListLimits { pages: None, items: None, bytes: None }",
                "err /p/mcp.json:4: server `zero`: `maxListItems` must be a positive whole number",
                "err /p/mcp.json:5: server `text`: `maxListPages` must be a positive whole number",
                "err /p/mcp.json:6: server `fraction`: `maxListBytes` must be a positive whole number",
            ]
        "#]]
        .assert_debug_eq(&shown);
        let mut caps = (100, 10_000, 1 << 25);
        file.servers[0]
            .as_ref()
            .expect("big")
            .list_limits
            .apply_to([&mut caps.0, &mut caps.1, &mut caps.2]);
        assert_eq!(caps, (500, 50_000, 100_000_000));
    }

    #[test]
    fn file_level_errors_have_positions() {
        check(
            "{\n  \"mcpServers\": {\n    \"a\": { \"command\": \"x\" },\n  }\n}",
            expect![[r#"error: /p/mcp.json:4:3: invalid JSON: trailing comma at line 4 column 3"#]],
        );
        check(
            r#"{"servers": {"v": {"type": "stdio", "command": "c"}}}"#,
            expect![[
                r#"ok v {"type":"stdio","command":"c","args":[],"env":{},"enabled":true} at /p/mcp.json:1"#
            ]],
        );
        check(
            r#"{"other": 1}"#,
            expect![[
                r#"error: /p/mcp.json: no `mcpServers` map found (expected `{"mcpServers": {"name": {"command": …}}}`)"#
            ]],
        );
    }

    #[test]
    fn codex_toml_dialect() {
        let vars: BTreeMap<String, String> = [("TOKEN".to_owned(), "s3cret".to_owned())].into();
        let text = "model = \"x\"\n\n[mcp_servers.docs]\ncommand = \"npx\"\nargs = [\"-y\", \"docs-server\"]\nenv = { API_KEY = \"${TOKEN}\" }\nstartup_timeout_sec = 20\ntool_timeout_sec = 90\n\n[mcp_servers.remote]\nurl = \"https://example.test/mcp\"\nhttp_headers = { Authorization = \"Bearer ${TOKEN}\" }\nenabled = false\n";
        let file = parse(text, Path::new("/h/.codex/config.toml"), &vars).expect("parse");
        let rendered: Vec<String> = file
            .servers
            .iter()
            .map(|s| match s {
                Ok(entry) => format!(
                    "{} {} at {} timeout={:?} startup={:?}",
                    entry.name,
                    entry.redacted(),
                    entry.origin,
                    entry.timeout,
                    entry.startup_timeout
                ),
                Err(e) => format!("err {e}"),
            })
            .collect();
        expect![[r#"
            docs {"type":"stdio","command":"npx","args":["-y","docs-server"],"env":{"API_KEY":"<redacted>"},"enabled":true} at /h/.codex/config.toml:3 timeout=Some(90s) startup=Some(20s)
            remote {"type":"http","url":"https://example.test/mcp","headers":{"Authorization":"<redacted>"},"enabled":false} at /h/.codex/config.toml:10 timeout=None startup=None"#]].assert_eq(&rendered.join("\n"));
        let broken =
            parse("[mcp_servers.x]\ncommand = ", Path::new("c.toml"), &vars).expect_err("syntax");
        expect!["c.toml:2:11: invalid TOML: string values must be quoted, expected literal string"]
            .assert_eq(&broken.to_string());
    }

    #[test]
    fn a_misspelt_key_is_named_with_the_key_meant_and_other_clients_keys_are_left_alone() {
        check(
            r#"{"mcpServers": {
    "a": { "comand": "x" },
    "b": { "command": "x", "agrs": ["--port", "9"] },
    "c": { "command": "x", "Env": { "K": "v" } },
    "d": { "url": "https://example.test/mcp", "header": { "K": "v" } },
    "e": { "command": "x", "startuptimeout": "5s" },
    "f": { "command": "x", "alwaysAllow": ["read"], "envFile": ".env", "autoApprove": [], "trust": true }
}}"#,
            expect![[r#"
                err /p/mcp.json:2: server `a`: unknown key `comand` (did you mean `command`?)
                err /p/mcp.json:3: server `b`: unknown key `agrs` (did you mean `args`?)
                err /p/mcp.json:4: server `c`: unknown key `Env` (did you mean `env`?)
                err /p/mcp.json:5: server `d`: unknown key `header` (did you mean `headers`?)
                err /p/mcp.json:6: server `e`: unknown key `startuptimeout` (did you mean `startupTimeout`?)
                ok f {"type":"stdio","command":"x","args":[],"env":{},"enabled":true} at /p/mcp.json:7"#]],
        );
        let vars = BTreeMap::new();
        let codex = parse(
            "[mcp_servers.x]\ncomand = \"y\"\n",
            Path::new("c.toml"),
            &vars,
        )
        .expect("parse");
        let shown: Vec<String> = codex
            .servers
            .iter()
            .map(|s| match s {
                Ok(entry) => entry.name.clone(),
                Err(e) => e.to_string(),
            })
            .collect();
        expect!["c.toml:1: server `x`: unknown key `comand` (did you mean `command`?)"]
            .assert_eq(&shown.join("\n"));
    }

    #[test]
    fn entry_lines_are_found_however_names_are_written() {
        // A name written with escapes had no line (found by fuzzing), and a server named
        // like a field of an earlier entry got that field's line.
        check(
            "{\"mcpServers\": {\n  \"a\": {\"command\": \"x\", \"env\": {}},\n  \"env\": {\"url\": 1},\n  \"c\\u0041\": {}\n}}",
            expect![[r#"
                ok a {"type":"stdio","command":"x","args":[],"env":{},"enabled":true} at /p/mcp.json:2
                err /p/mcp.json:3: server `env`: `url` must be a string
                err /p/mcp.json:4: server `cA`: needs `command` (a local server) or `url` (a remote server)"#]],
        );
        let vars = BTreeMap::new();
        let text = "[mcp_servers]\ninline = { url = 3 }\ndotted.command = \"x\"\n";
        let file = parse(text, Path::new("c.toml"), &vars).expect("parse");
        let origins: Vec<String> = file
            .servers
            .iter()
            .map(|s| match s {
                Ok(entry) => format!("{} at {}", entry.name, entry.origin),
                Err(e) => e.to_string(),
            })
            .collect();
        expect![[r#"
            dotted at c.toml:3
            c.toml:2: server `inline`: `url` must be a string"#]]
        .assert_eq(&origins.join("\n"));
    }

    #[test]
    fn era_is_read_as_a_setting_and_auto_when_absent() {
        let text = r#"{"mcpServers": {
            "a": {"command": "x"},
            "b": {"command": "x", "era": "auto"},
            "c": {"command": "x", "era": "legacy"},
            "d": {"command": "x", "era": "modern"}
        }}"#;
        let vars = BTreeMap::new();
        let file = parse(text, Path::new("/p/mcp.json"), &vars).expect("a valid file");
        let eras: Vec<EraSetting> = file.entries().map(|entry| entry.era).collect();
        use EraSetting::{Auto, Legacy, Modern};
        assert_eq!(eras, [Auto, Auto, Legacy, Modern]);
    }

    #[test]
    fn errors_show_fields_with_expansions_as_written() {
        // Found by fuzzing: an unknown `type` or `era` was shown with the variable's value.
        check(
            r#"{"mcpServers": {"a": {"command": "x", "era": "${TOKEN}"}, "b": {"type": "${TOKEN}", "url": "u"}}}"#,
            expect![[r#"
                err /p/mcp.json:1: server `a`: `era` must be "auto", "legacy" or "modern", not "${TOKEN}"
                err /p/mcp.json:1: server `b`: unknown `type` "${TOKEN}"; use "stdio" or "http""#]],
        );
        check(
            "{\"mcpServers\": {\"a\": 1,\n",
            expect![
                "error: /p/mcp.json:2:1: invalid JSON: EOF while parsing a value at line 2 column 0"
            ],
        );
    }

    #[test]
    fn secrets_never_show_in_debug() {
        let vars: BTreeMap<String, String> = [("TOKEN".to_owned(), "s3cret".to_owned())].into();
        let file = parse(
            r#"{"mcpServers":{"a":{"command":"c","env":{"K":"${TOKEN}"}}}}"#,
            Path::new("m.json"),
            &vars,
        );
        let shown = format!("{file:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
    }

    #[test]
    fn expansions_are_secret_wherever_they_land() {
        let vars: BTreeMap<String, String> =
            [("TOKEN".to_owned(), "s3cret-t0ken".to_owned())].into();
        let file = parse(
            r#"{"mcpServers":{
                "web":{"url":"https://user:${TOKEN}@h.example/mcp/${TOKEN}?key=${TOKEN}&plain=visible-value","headers":{"X-Key":"${TOKEN}"}},
                "local":{"command":"run-${TOKEN}","args":["--token=${TOKEN}","--plain"],"cwd":"d-${TOKEN}"}
            }}"#,
            Path::new("/p/mcp.json"),
            &vars,
        )
        .expect("parse");
        let mut shown = Vec::new();
        for entry in file.entries() {
            shown.push(format!("{entry:?}"));
            shown.push(format!("{:?}", entry.transport));
            shown.push(format!("{:?}", entry.display_url()));
            let secrets = entry.secrets();
            assert!(
                entry.secret_values().contains(&"s3cret-t0ken".to_owned()),
                "{}",
                entry.name
            );
            assert_eq!(secrets.redact("x s3cret-t0ken y"), "x <redacted> y");
        }
        let shown = shown.join("\n");
        assert!(!shown.contains("s3cret"), "{shown}");
        expect![[r#"
            ServerEntry { name: "web", config: Object {"type": String("http"), "url": String("https://***@h.example/mcp/${TOKEN}?key=***&plain=***"), "headers": Object {"X-Key": String("<redacted>")}, "enabled": Bool(true)}, origin: Origin { file: "/p/mcp.json", line: Some(2) } }
            Http { url: "https://***@h.example/…", header_names: ["X-Key"] }
            Some("https://***@h.example/mcp/${TOKEN}?key=***&plain=***")
            ServerEntry { name: "local", config: Object {"type": String("stdio"), "command": String("run-${TOKEN}"), "args": Array [String("--token=${TOKEN}"), String("--plain")], "env": Object {}, "cwd": String("d-${TOKEN}"), "enabled": Bool(true)}, origin: Origin { file: "/p/mcp.json", line: Some(3) } }
            Stdio { arg_count: 2, env_names: [], .. }
            None"#]].assert_eq(&shown);
    }

    /// Each entry's filter as `name allow=[..] deny=[..]`, or its error.
    fn filters(text: &str, path: &str) -> String {
        let vars: BTreeMap<String, String> = [("PREFIX".to_owned(), "read".to_owned())].into();
        let file = parse(text, Path::new(path), &vars).expect("parses");
        let shown: Vec<String> = file
            .servers
            .iter()
            .map(|s| match s {
                Ok(entry) => {
                    let list = |l: &[ToolPattern]| {
                        l.iter()
                            .map(ToolPattern::as_str)
                            .collect::<Vec<_>>()
                            .join(",")
                    };
                    let allow = entry.tool_filter.enabled().map(list);
                    let deny = list(entry.tool_filter.disabled());
                    format!("ok {} allow={allow:?} deny=[{deny}]", entry.name)
                }
                Err(e) => format!("err {e}"),
            })
            .collect();
        shown.join("\n")
    }

    #[test]
    fn tool_filters_in_each_dialect() {
        let json = r#"{"mcpServers": {
            "common": { "command": "x", "enabledTools": ["read_*", "list"], "disabledTools": ["*_secret"] },
            "gemini": { "command": "x", "includeTools": ["${PREFIX}_*"], "excludeTools": ["delete?"] },
            "none": { "command": "x", "enabledTools": [] },
            "codex": { "command": "x", "disabled_tools": ["rm"] }
        }}"#;
        expect![[r#"
            ok common allow=Some("read_*,list") deny=[*_secret]
            ok gemini allow=Some("read_*") deny=[delete?]
            ok none allow=Some("") deny=[]
            err /p/mcp.json:5: server `codex`: `disabled_tools` is Codex's spelling (its config.toml); here write `disabledTools`"#]]
        .assert_eq(&filters(json, "/p/mcp.json"));
        let toml = "[mcp_servers.codex]\ncommand = \"x\"\nenabled_tools = [\"read_*\"]\ndisabled_tools = [\"read_secret\"]\n\n[mcp_servers.common]\ncommand = \"x\"\ndisabledTools = [\"rm\"]\n\n[mcp_servers.gemini]\ncommand = \"x\"\nexcludeTools = [\"rm\"]\n";
        expect![[r#"
            ok codex allow=Some("read_*") deny=[read_secret]
            ok common allow=None deny=[rm]
            err /h/config.toml:10: server `gemini`: `excludeTools` is Gemini's spelling (its JSON settings); here write `disabled_tools`"#]]
        .assert_eq(&filters(toml, "/h/config.toml"));
        let vars: BTreeMap<String, String> = [("PREFIX".to_owned(), "read".to_owned())].into();
        let mut file = parse(json, Path::new("/p/mcp.json"), &vars).expect("parses");
        let gemini = file.servers.remove(1).expect("gemini");
        // Shown in the common spelling, the pattern from a variable as written.
        expect![[r#"{"type":"stdio","command":"x","args":[],"env":{},"enabled":true,"enabledTools":["${PREFIX}_*"],"disabledTools":["delete?"]}"#]]
            .assert_eq(&gemini.redacted().to_string());
        let common = file.servers.remove(0).expect("common");
        let passed: Vec<&str> = ["read_file", "read_secret", "list", "write"]
            .into_iter()
            .filter(|tool| common.tool_filter.allows(tool))
            .collect();
        assert_eq!(passed, ["read_file", "list"], "deny wins over allow");
        expect![[r#"{"type":"stdio","command":"x","args":[],"env":{},"enabled":true,"enabledTools":["read_*","list"],"disabledTools":["*_secret"]}"#]]
            .assert_eq(&common.redacted().to_string());
    }

    #[test]
    fn tool_filter_errors_name_the_entry_and_its_line() {
        let long = "x".repeat(ToolPattern::MAX_LEN + 1);
        let many = vec!["\"t\""; ToolFilter::MAX_PATTERNS + 1].join(",");
        let text = format!(
            r#"{{"mcpServers": {{
            "text": {{ "command": "x", "enabledTools": "read_*" }},
            "number": {{ "command": "x", "disabledTools": ["ok", 7] }},
            "empty": {{ "command": "x", "disabledTools": [""] }},
            "long": {{ "command": "x", "enabledTools": ["{long}"] }},
            "many": {{ "command": "x", "excludeTools": [{many}] }},
            "twice": {{ "command": "x", "enabledTools": ["a"], "includeTools": ["b"] }},
            "unset": {{ "command": "x", "excludeTools": ["${{NOPE}}"] }},
            "null": {{ "command": "x", "enabledTools": null }}
        }}}}"#
        );
        expect![[r#"
            err /p/mcp.json:2: server `text`: `enabledTools` must be a list of tool names or patterns
            err /p/mcp.json:3: server `number`: `disabledTools[1]` must be a string
            err /p/mcp.json:4: server `empty`: `disabledTools[0]` is empty
            err /p/mcp.json:5: server `long`: `enabledTools[0]`: a tool pattern is 257 bytes long; at most 256 are allowed
            err /p/mcp.json:6: server `many`: `excludeTools` has 1001 patterns; at most 1000 are allowed
            err /p/mcp.json:7: server `twice`: `enabledTools` and `includeTools` are the same list; keep one
            err /p/mcp.json:8: server `unset`: `excludeTools[0]` uses ${NOPE}, which is not set; set it, or write ${NOPE:-default}
            ok null allow=None deny=[]"#]]
        .assert_eq(&filters(&text, "/p/mcp.json"));
    }

    #[test]
    fn vscode_inputs_and_env_references() {
        let text = r#"{
  "inputs": [
    { "type": "promptString", "id": "perplexity-key", "description": "Perplexity API Key", "password": true }
  ],
  "servers": {
    "asked": { "command": "npx", "env": { "PERPLEXITY_API_KEY": "${input:perplexity-key}" } },
    "undeclared": { "url": "https://h.example/mcp", "headers": { "X-Key": "${input:other}" } },
    "env": { "command": "npx", "args": ["--token", "${env:TOKEN}"], "env": { "K": "${env:NOPE:-fallback}" } },
    "unset": { "command": "npx", "env": { "K": "${env:NOPE}" } }
  }
}"#;
        let path = Path::new("/p/.vscode/mcp.json");
        let show = |vars: &BTreeMap<String, String>| {
            let file = parse_as(text, path, &Layout::vscode(), vars).expect("parses");
            let lines: Vec<String> = file
                .file
                .servers
                .iter()
                .map(|s| match s {
                    Ok(entry) => format!("ok {} {}", entry.name, entry.redacted()),
                    Err(e) => format!("err {e}"),
                })
                .collect();
            lines.join("\n")
        };
        let mut vars: BTreeMap<String, String> = [("TOKEN".to_owned(), "s3cret".to_owned())].into();
        expect![[r#"
            err /p/.vscode/mcp.json:6: server `asked`: `env.PERPLEXITY_API_KEY` uses ${input:perplexity-key} ("Perplexity API Key" in the file's `inputs`), a value VS Code asks for; Switchboard reads it from $SWITCHBOARD_INPUT_PERPLEXITY_KEY, which is not set: set it, or write the value in the entry as ${env:VAR}
            err /p/.vscode/mcp.json:7: server `undeclared`: `headers.X-Key` uses ${input:other} (no such id in the file's `inputs`), a value VS Code asks for; Switchboard reads it from $SWITCHBOARD_INPUT_OTHER, which is not set: set it, or write the value in the entry as ${env:VAR}
            ok env {"type":"stdio","command":"npx","args":["--token","${env:TOKEN}"],"env":{"K":"<redacted>"},"enabled":true}
            err /p/.vscode/mcp.json:9: server `unset`: `env.K` uses ${env:NOPE}, which is not set; set it, or write ${env:NOPE:-default}"#]]
        .assert_eq(&show(&vars));
        vars.insert(
            "SWITCHBOARD_INPUT_PERPLEXITY_KEY".into(),
            "pplx-s3cret".into(),
        );
        let file = parse_as(text, path, &Layout::vscode(), &vars).expect("parses");
        let asked = file.file.servers[0].as_ref().expect("asked");
        assert_eq!(
            asked.transport,
            TransportEntry::Stdio {
                command: "npx".into(),
                args: Vec::new(),
                env: vec![("PERPLEXITY_API_KEY".into(), "pplx-s3cret".into())],
                cwd: None,
            }
        );
        assert!(asked.secret_values().contains(&"pplx-s3cret".to_owned()));
        let env = file.file.servers[2].as_ref().expect("env");
        assert!(env.secret_values().contains(&"s3cret".to_owned()));
        assert!(!format!("{env:?}").contains("s3cret"));
        assert_eq!(
            expand_vars("${input:a-b}", &vars).map_err(|unset| unset.to_string()),
            Err("input:a-b".to_owned())
        );
        assert_eq!(input_variable("my.key-2"), "SWITCHBOARD_INPUT_MY_KEY_2");
    }

    /// Each file's folder variables, as its entries' `args` and `cwd` show them.
    fn folders_in(path: &str, text: &str, vars: &BTreeMap<String, String>) -> String {
        let layout = match path.ends_with(".claude.json") {
            true => Layout::claude_code_project("/work/app"),
            false => Layout::for_path(Path::new(path)),
        };
        match parse_as(text, Path::new(path), &layout, vars) {
            Err(e) => format!("error: {e}"),
            Ok(read) => read
                .file
                .servers
                .iter()
                .map(|s| match s {
                    Ok(ServerEntry {
                        name,
                        transport: TransportEntry::Stdio { args, cwd, .. },
                        provenance,
                        ..
                    }) => format!(
                        "{name}: {args:?} cwd {cwd:?} secrets {:?}",
                        provenance.expanded_values()
                    ),
                    Ok(other) => format!("{}: remote", other.name),
                    Err(e) => format!("err {}", e.detail),
                })
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }

    #[test]
    fn folder_variables_name_the_project_of_each_file_and_are_not_secrets() {
        let vars: BTreeMap<String, String> = [("HOME".to_owned(), "/home/u".to_owned())].into();
        let text = r#"{"mcpServers": {
            "a": { "command": "x", "args": ["${workspaceFolder}/s.js", "${workspaceFolderBasename}", "${userHome}${pathSeparator}d"], "cwd": "${workspaceFolder}" },
            "b": { "command": "x", "args": ["${CLAUDE_PROJECT_DIR}/tool"] }
        }}"#;
        let vscode = r#"{"servers": {
            "a": { "command": "x", "args": ["${workspaceFolder}", "${env:workspaceFolder:-none}"] },
            "b": { "command": "x", "args": ["${CLAUDE_PROJECT_DIR}"] }
        }}"#;
        let claude = r#"{"projects": {"/work/app": {"mcpServers": {
            "a": { "command": "x", "args": ["${CLAUDE_PROJECT_DIR}", "${workspaceFolder}"] }
        }}}}"#;
        let mut claude_env = vars.clone();
        claude_env.insert("CLAUDE_PROJECT_DIR".into(), "/from/claude".into());
        let here = std::env::current_dir().expect("cwd").display().to_string();
        let shown = [
            folders_in("/work/app/.mcp.json", text, &vars),
            folders_in("/work/app/.vscode/mcp.json", vscode, &vars),
            folders_in("/home/u/.cursor/mcp.json", vscode, &vars),
            folders_in("/home/u/.claude.json", claude, &vars),
            folders_in("/work/app/.mcp.json", text, &claude_env),
        ]
        .join("\n")
        .replace(&here, "<cwd>");
        expect![[r#"
            a: ["/work/app/s.js", "app", "/home/u/d"] cwd Some("/work/app") secrets []
            b: ["/work/app/tool"] cwd None secrets []
            a: ["/work/app", "none"] cwd None secrets []
            err `args[0]` uses ${CLAUDE_PROJECT_DIR}, which Claude Code sets for the servers of its own files (`.mcp.json`, `~/.claude.json`); here write ${workspaceFolder} for the project folder, or set it
            a: ["<cwd>", "none"] cwd None secrets []
            err `args[0]` uses ${CLAUDE_PROJECT_DIR}, which Claude Code sets for the servers of its own files (`.mcp.json`, `~/.claude.json`); here write ${workspaceFolder} for the project folder, or set it
            a: ["/work/app", "/work/app"] cwd None secrets []
            a: ["/work/app/s.js", "app", "/home/u/d"] cwd Some("/work/app") secrets []
            b: ["/from/claude/tool"] cwd None secrets []"#]].assert_eq(&shown);
    }

    #[test]
    fn remote_entries_name_their_client_metadata_document_and_workload_identity() {
        let vars: BTreeMap<String, String> =
            [("WL".to_owned(), "wl-s3cret-token".to_owned())].into();
        let text = r#"{"mcpServers": {
            "doc": { "url": "https://mcp.example/mcp", "clientMetadataUrl": "https://me.example/switchboard/client.json" },
            "file": { "url": "https://mcp.example/mcp", "workloadIdentity": { "tokenFile": "tokens/mcp" } },
            "value": { "url": "https://mcp.example/mcp", "workloadIdentity": { "token": "${WL}" } },
            "plain": { "url": "http://mcp.example/mcp", "clientMetadataUrl": "http://me.example/client.json" },
            "bare": { "url": "https://mcp.example/mcp", "clientMetadataUrl": "https://me.example" },
            "both": { "url": "https://mcp.example/mcp", "workloadIdentity": { "token": "a", "tokenFile": "b" } },
            "odd": { "url": "https://mcp.example/mcp", "workloadIdentity": { "path": "b" } },
            "local": { "command": "x", "workloadIdentity": { "tokenFile": "b" } }
        }}"#;
        let file = parse(text, Path::new("/p/mcp.json"), &vars).expect("parses");
        let shown: Vec<String> = file
            .servers
            .iter()
            .map(|s| match s {
                Ok(entry) => format!("{} {:?} {}", entry.name, entry.oauth, entry.redacted()),
                Err(e) => format!("err {e}"),
            })
            .collect();
        expect![[r#"
            doc OAuthSettings { client_metadata_url: Some("https://me.example/switchboard/client.json"), workload_identity: None } {"type":"http","url":"https://mcp.example/mcp","headers":{},"enabled":true,"clientMetadataUrl":"https://me.example/switchboard/client.json"}
            file OAuthSettings { client_metadata_url: None, workload_identity: Some(File("/p/tokens/mcp")) } {"type":"http","url":"https://mcp.example/mcp","headers":{},"enabled":true,"workloadIdentity":{"tokenFile":"/p/tokens/mcp"}}
            value OAuthSettings { client_metadata_url: None, workload_identity: Some(Value(<redacted>)) } {"type":"http","url":"https://mcp.example/mcp","headers":{},"enabled":true,"workloadIdentity":{"token":"<redacted>"}}
            err /p/mcp.json:5: server `plain`: `clientMetadataUrl` "http://me.example/client.json" must be an https:// URL with a path, where the client's metadata document is served (e.g. "https://example.com/switchboard/client.json")
            err /p/mcp.json:6: server `bare`: `clientMetadataUrl` "https://me.example" must be an https:// URL with a path, where the client's metadata document is served (e.g. "https://example.com/switchboard/client.json")
            err /p/mcp.json:7: server `both`: `workloadIdentity` must be {"tokenFile": PATH} (a file the platform keeps the token in) or {"token": "${VAR}"}
            err /p/mcp.json:8: server `odd`: unknown key `workloadIdentity.path`; `workloadIdentity` must be {"tokenFile": PATH} (a file the platform keeps the token in) or {"token": "${VAR}"}
            err /p/mcp.json:9: server `local`: `workloadIdentity` is for a remote server's authorization (an entry with `url`); a local server takes its credentials from `env`"#]]
        .assert_eq(&shown.join("\n"));
        let value = file.servers[2].as_ref().expect("value");
        assert!(
            value
                .secret_values()
                .contains(&"wl-s3cret-token".to_owned())
        );
        assert!(!format!("{value:?}").contains("wl-s3cret-token"));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("30"), Ok(Duration::from_secs(30)));
        let refused: Vec<String> = ["soon", "5x", "0", "8d"]
            .into_iter()
            .map(|text| match parse_duration(text) {
                Err(DurationError::NotADuration { .. }) => format!("not a duration: {text}"),
                Err(error) => error.to_string(),
                Ok(duration) => format!("{duration:?}"),
            })
            .collect();
        expect![[r#"
            not a duration: soon
            unknown unit `x` in `5x`; use ms, s, m or h
            `0` is out of range
            unknown unit `d` in `8d`; use ms, s, m or h"#]]
        .assert_eq(&refused.join("\n"));
        assert_eq!(
            parse_duration("soon").map_err(|e| e.to_string()),
            Err("`soon` is not a duration like 30s, 500ms or 2m".to_owned())
        );
        assert_eq!(
            expand_vars("a$$b$c", &BTreeMap::new()),
            Ok("a$b$c".to_owned())
        );
    }
}
