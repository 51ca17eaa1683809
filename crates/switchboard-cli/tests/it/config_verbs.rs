//! `switchboard config` and discovery, run as the real binary in a sandbox: a fake home
//! and a project directory (the current directory), so no test reads the real home.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use expect_test::expect;
use switchboard_testkit::locate::{fixture_bin, workspace_root};

/// The secret every test's `${TOKEN}` expands to: it must never be printed.
const TOKEN: &str = "tok-5ecret-value";

struct Sandbox {
    root: PathBuf,
    home: PathBuf,
    project: PathBuf,
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Sandbox {
    fn new(test: &str) -> Sandbox {
        let root = workspace_root()
            .join("target/cli-tests")
            .join(format!("config-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let sandbox = Sandbox {
            home: root.join("home"),
            project: root.join("project"),
            root,
        };
        std::fs::create_dir_all(&sandbox.home).expect("mkdir home");
        std::fs::create_dir_all(&sandbox.project).expect("mkdir project");
        sandbox
    }

    fn write(&self, path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    /// Runs `switchboard ARGS` in the project directory with the fake home.
    fn run(&self, args: &[&str]) -> Run {
        self.run_with(args, &[])
    }

    /// [`Sandbox::run`] with more environment variables.
    fn run_with(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        self.run_in(&self.project, args, env)
    }

    /// `switchboard ARGS` in `dir` with the fake home and more environment variables.
    fn run_in(&self, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
        let output = Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .args(args)
            .current_dir(dir)
            .env("HOME", &self.home)
            .env("TOKEN", TOKEN)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("SWITCHBOARD_CONFIG")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .expect("run switchboard");
        let clean = |bytes: &[u8]| {
            String::from_utf8_lossy(bytes)
                .replace(&self.root.display().to_string(), "$ROOT")
                .replace(&fixture_bin().display().to_string(), "$FIXTURE")
        };
        let run = Run {
            code: output.status.code().unwrap_or(-1),
            stdout: clean(&output.stdout),
            stderr: clean(&output.stderr),
        };
        assert!(
            !run.stdout.contains(TOKEN) && !run.stderr.contains(TOKEN),
            "a secret was shown: {}{}",
            run.stdout,
            run.stderr
        );
        run
    }

    fn read(&self, path: &Path) -> String {
        std::fs::read_to_string(path).expect("read")
    }
}

/// A project `.mcp.json`, a VS Code file with comments, and the user's Claude Code, Codex
/// and Gemini files; `shared` is defined twice.
fn populated(test: &str) -> Sandbox {
    let sandbox = Sandbox::new(test);
    let fixture = fixture_bin().display().to_string();
    sandbox.write(
        &sandbox.project.join(".mcp.json"),
        &format!(
            r#"{{
  "mcpServers": {{
    "local": {{ "command": "{fixture}", "env": {{ "API_KEY": "${{TOKEN}}" }} }},
    "shared": {{ "command": "from-project" }}
  }}
}}
"#
        ),
    );
    sandbox.write(
        &sandbox.project.join(".vscode/mcp.json"),
        "{\n  // the team's servers\n  \"servers\": {\n    \"code\": { \"type\": \"stdio\", \"command\": \"code-server\", },\n  },\n}\n",
    );
    let claude = serde_json::json!({
        "numStartups": 4,
        "mcpServers": {
            "shared": {"command": "from-user"},
            "remote": {"type": "http", "url": "https://me:${TOKEN}@api.example/mcp?key=${TOKEN}", "headers": {"Authorization": "Bearer ${TOKEN}"}}
        },
        "projects": {
            sandbox.project.display().to_string(): {"mcpServers": {"here-only": {"command": "here"}}}
        }
    });
    sandbox.write(
        &sandbox.home.join(".claude.json"),
        &serde_json::to_string_pretty(&claude).expect("json"),
    );
    sandbox.write(
        &sandbox.home.join(".codex/config.toml"),
        "model = \"o3\"\n\n# docs for the agent\n[mcp_servers.docs]\ncommand = \"docs\"\nenabled = false\n",
    );
    sandbox.write(
        &sandbox.home.join(".gemini/settings.json"),
        r#"{"mcpServers": {"gem": {"httpUrl": "https://g.example/mcp"}}}"#,
    );
    sandbox
}

#[test]
fn list_and_show_say_where_each_server_comes_from() {
    let sandbox = populated("list");
    let list = sandbox.run(&["config", "list"]);
    assert_eq!(list.code, 0, "{}", list.stderr);
    expect![[r#"
        NAME       SOURCE                     STATE      TRANSPORT
        local      ./.mcp.json:3              untrusted  $FIXTURE
        shared     ./.mcp.json:4              untrusted  from-project
        code       ./.vscode/mcp.json:4       untrusted  code-server
        here-only  ~/.claude.json:18          enabled    here
        remote     ~/.claude.json:7           enabled    https://***@api.example/mcp?key=***
        docs       ~/.codex/config.toml:4     disabled   docs
        gem        ~/.gemini/settings.json:1  enabled    https://g.example/mcp
        (`shared` at ~/.claude.json:4 is ignored: an earlier file defines it)
    "#]]
    .assert_eq(&list.stdout);
    let json = sandbox.run(&["config", "list", "--json"]);
    let value: serde_json::Value = serde_json::from_str(&json.stdout).expect("json");
    expect![[r#"
        {
          "name": "here-only",
          "scope": "user",
          "client": "claude-code",
          "trusted": true,
          "source": {
            "file": "~/.claude.json",
            "line": 18
          },
          "enabled": true,
          "transport": {
            "type": "stdio",
            "command": "here"
          }
        }"#]]
    .assert_eq(&serde_json::to_string_pretty(&value["servers"][3]).expect("json"));
    let show = sandbox.run(&["config", "show", "remote"]);
    assert_eq!(show.code, 0, "{}", show.stderr);
    expect![[r#"
        remote: ~/.claude.json:7 (claude-code user, trusted)
        {
          "type": "http",
          "url": "https://***@api.example/mcp?key=***",
          "headers": {
            "Authorization": "<redacted>"
          },
          "enabled": true
        }
    "#]]
    .assert_eq(&show.stdout);
    let local = sandbox.run(&["config", "show", "local", "--json"]);
    expect![[r#"
        {"name":"local","scope":"project","client":"claude-code","trusted":false,"source":{"file":"./.mcp.json","line":3},"enabled":true,"transport":{"type":"stdio","command":"$FIXTURE"},"entry":{"type":"stdio","command":"$FIXTURE","args":[],"env":{"API_KEY":"<redacted>"},"enabled":true}}
    "#]]
    .assert_eq(&local.stdout);
    let missing = sandbox.run(&["config", "show", "nope"]);
    assert_eq!(missing.code, 2);
    expect![[r#"
        switchboard: no server named `nope`; configured: local, shared, code, here-only, remote, docs, gem
    "#]]
    .assert_eq(&missing.stderr);
}

#[test]
fn project_servers_start_only_once_trusted() {
    let sandbox = populated("trust");
    let untrusted = sandbox.run(&["call", "local", "echo", r#"{"text":"hi"}"#]);
    assert_eq!(untrusted.code, 2, "{}", untrusted.stderr);
    expect![[r#"
        switchboard: $ROOT/project/.mcp.json:3: server `local`: defined in a project file and not trusted yet; run `switchboard config trust local` to let it start
    "#]]
    .assert_eq(&untrusted.stderr);
    let trust = sandbox.run(&["config", "trust", "local"]);
    assert_eq!(trust.code, 0, "{}", trust.stderr);
    expect![[r#"
        trusted `local` as defined in ./.mcp.json, in this project only; a changed definition needs trust again
    "#]]
    .assert_eq(&trust.stdout);
    let call = sandbox.run(&["call", "local", "echo", r#"{"text":"hi"}"#]);
    assert_eq!(
        (call.code, call.stdout.as_str()),
        (0, "hi\n"),
        "{}",
        call.stderr
    );
    // A changed definition needs trust again.
    let changed = sandbox
        .read(&sandbox.project.join(".mcp.json"))
        .replace("API_KEY", "OTHER_KEY");
    sandbox.write(&sandbox.project.join(".mcp.json"), &changed);
    let again = sandbox.run(&["call", "local", "echo", r#"{"text":"hi"}"#]);
    assert_eq!(again.code, 2, "{}", again.stderr);
}

#[test]
fn trust_is_bound_to_the_project_file_it_was_given_in() {
    let sandbox = populated("trust-place");
    let call = ["call", "local", "echo", r#"{"text":"hi"}"#];
    let trust = sandbox.run(&["config", "trust", "local"]);
    assert_eq!(trust.code, 0, "{}", trust.stderr);
    assert_eq!(sandbox.run(&call).code, 0);
    // The same definition in another project is another definition: not trusted there.
    let other = sandbox.root.join("other-project");
    sandbox.write(
        &other.join(".mcp.json"),
        &sandbox.read(&sandbox.project.join(".mcp.json")),
    );
    let elsewhere = sandbox.run_in(&other, &call, &[]);
    let listed_elsewhere = sandbox.run_in(&other, &["config", "trust", "--list"], &[]);
    let listed = sandbox.run(&["config", "trust", "--list"]);
    // A changed definition is told apart from one never trusted.
    let changed = sandbox
        .read(&sandbox.project.join(".mcp.json"))
        .replace("API_KEY", "OTHER_KEY");
    sandbox.write(&sandbox.project.join(".mcp.json"), &changed);
    let after_change = sandbox.run(&call);
    let listed_after_change = sandbox.run(&["config", "trust", "--list"]);
    let untrust = sandbox.run(&["config", "untrust", "local"]);
    let untrust_again = sandbox.run(&["config", "untrust", "local"]);
    let listed_after_untrust = sandbox.run(&["config", "trust", "--list"]);
    // A store from the version that trusted a definition in every folder trusts nothing.
    sandbox.write(
        &sandbox.home.join(".config/switchboard/trust.json"),
        r#"{"format":"switchboard-trust/1","trusted":[{"server":"local","key":"0123"}]}"#,
    );
    let older = sandbox.run(&call);
    let shown: Vec<String> = [
        ("another project", &elsewhere),
        ("--list in another project", &listed_elsewhere),
        ("--list", &listed),
        ("after a change", &after_change),
        ("--list after a change", &listed_after_change),
        ("untrust", &untrust),
        ("untrust again", &untrust_again),
        ("--list after untrust", &listed_after_untrust),
        ("an older trust store", &older),
    ]
    .iter()
    .map(|(what, run)| format!("{what}: exit {}\n{}{}", run.code, run.stdout, run.stderr))
    .collect();
    expect![[r#"
        another project: exit 2
        switchboard: $ROOT/other-project/.mcp.json:3: server `local`: defined in a project file and not trusted yet; run `switchboard config trust local` to let it start

        --list in another project: exit 0
        local  $ROOT/project/.mcp.json  not in this project

        --list: exit 0
        local  ./.mcp.json  as trusted

        after a change: exit 2
        switchboard: $ROOT/project/.mcp.json:3: server `local`: defined in a project file and changed since it was trusted; look at it (`switchboard config show local`), then run `switchboard config trust local` to let it start

        --list after a change: exit 0
        local  ./.mcp.json  changed since trusted

        untrust: exit 0
        `local` in ./.mcp.json is no longer trusted: it will not start until trusted again

        untrust again: exit 0
        `local` in ./.mcp.json was not trusted

        --list after untrust: exit 0
        nothing is trusted

        an older trust store: exit 2
        switchboard: the trust store $ROOT/home/.config/switchboard/trust.json was written by an older Switchboard, whose trust held in every folder; trust is now bound to the project file, so no project server is trusted until you trust it again (`switchboard config trust NAME` in its project)
        switchboard: $ROOT/project/.mcp.json:3: server `local`: defined in a project file and not trusted yet; run `switchboard config trust local` to let it start
    "#]]
    .assert_eq(&shown.join("\n"));
}

#[test]
fn add_remove_and_import_keep_the_file_as_it_was() {
    let sandbox = populated("edit");
    let user_file = sandbox.home.join(".config/switchboard/mcp.json");
    let original =
        "{\n  // mine\n  \"mcpServers\": {\n    \"gem\": { \"command\": \"my-gem\" }\n  }\n}\n";
    sandbox.write(&user_file, original);
    let add = sandbox.run(&["config", "add", "new", "--", "npx", "-y", "pkg"]);
    assert_eq!(add.code, 0, "{}", add.stderr);
    let url = sandbox.run(&[
        "config",
        "add",
        "web",
        "--url",
        "https://w.example/mcp",
        "--json",
    ]);
    expect![[r#"
        {"added":"web","file":"~/.config/switchboard/mcp.json","scope":"user"}
    "#]]
    .assert_eq(&url.stdout);
    expect![[r#"
        {
          // mine
          "mcpServers": {
            "gem": { "command": "my-gem" },
            "new": {
              "command": "npx",
              "args": [
                "-y",
                "pkg"
              ]
            },
            "web": {
              "type": "http",
              "url": "https://w.example/mcp"
            }
          }
        }
    "#]]
    .assert_eq(&sandbox.read(&user_file));
    let taken = sandbox.run(&["config", "add", "new", "--", "other"]);
    assert_eq!(taken.code, 2);
    expect![[r#"
        switchboard: $ROOT/home/.config/switchboard/mcp.json: a server named `new` already exists
    "#]]
    .assert_eq(&taken.stderr);
    for name in ["web", "new"] {
        let remove = sandbox.run(&["config", "remove", name]);
        assert_eq!(remove.code, 0, "{}", remove.stderr);
    }
    assert_eq!(
        sandbox.read(&user_file),
        original,
        "add then remove is the identity"
    );
    let import = sandbox.run(&["config", "import", "--from", "claude"]);
    assert_eq!(import.code, 0, "{}", import.stderr);
    expect![[r#"
        imported from claude into ~/.config/switchboard/mcp.json:
          here-only (from ~/.claude.json)
          shared (from ~/.claude.json)
          remote (from ~/.claude.json)
    "#]]
    .assert_eq(&import.stdout);
    let codex = sandbox.run(&["config", "import", "--from", "codex", "--scope", "project"]);
    expect![[r#"
        imported from codex into ./.mcp.json:
          docs (from ~/.codex/config.toml)
    "#]]
    .assert_eq(&codex.stdout);
    assert!(
        sandbox
            .read(&sandbox.project.join(".mcp.json"))
            .contains("\"docs\": {\n      \"command\": \"docs\",\n      \"enabled\": false\n    }"),
        "{}",
        sandbox.read(&sandbox.project.join(".mcp.json"))
    );
    let gemini = sandbox.run(&["config", "import", "--from", "gemini"]);
    expect![[r#"
        nothing imported from gemini into ~/.config/switchboard/mcp.json
        skipped:
          gem (from ~/.gemini/settings.json): the name exists
    "#]]
    .assert_eq(&gemini.stdout);
    let neither = sandbox.run(&["config", "add", "x"]);
    assert_eq!(neither.code, 2);
    expect![[r#"
        switchboard: say how to reach it: `config add NAME -- CMD ARGS...` or `config add NAME --url URL`
    "#]]
    .assert_eq(&neither.stderr);
}

/// The permission bits of a file or folder.
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).expect("stat").permissions().mode() & 0o777
}

#[test]
fn files_written_with_secrets_are_private_and_a_rewrite_keeps_the_mode_chosen() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let sandbox = populated("modes");
    // A literal secret in the source file, which its user keeps private.
    let claude = sandbox.home.join(".claude.json");
    sandbox.write(
        &claude,
        &sandbox
            .read(&claude)
            .replace("Bearer ${TOKEN}", "Bearer literal-5ecret"),
    );
    std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let import = sandbox.run(&["config", "import", "--from", "claude"]);
    assert_eq!(import.code, 0, "{}", import.stderr);
    let user_file = sandbox.home.join(".config/switchboard/mcp.json");
    assert!(sandbox.read(&user_file).contains("literal-5ecret"));
    let trust = sandbox.run(&["config", "trust", "local"]);
    assert_eq!(trust.code, 0, "{}", trust.stderr);
    let trust_file = sandbox.home.join(".config/switchboard/trust.json");
    let trusted_once = std::fs::metadata(&trust_file)
        .expect("the trust store")
        .ino();
    let again = sandbox.run(&["config", "trust", "shared"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    let trusted_twice = std::fs::metadata(&trust_file)
        .expect("the trust store")
        .ino();
    let modes = |paths: &[&Path]| {
        paths
            .iter()
            .map(|p| {
                format!(
                    "{:o} {}\n",
                    mode(p),
                    p.strip_prefix(&sandbox.home).expect("in home").display()
                )
            })
            .collect::<String>()
    };
    expect![[r#"
        700 .config
        700 .config/switchboard
        600 .config/switchboard/mcp.json
        600 .config/switchboard/trust.json
    "#]]
    .assert_eq(&modes(&[
        &sandbox.home.join(".config"),
        &sandbox.home.join(".config/switchboard"),
        &user_file,
        &trust_file,
    ]));
    assert_ne!(
        trusted_once, trusted_twice,
        "the trust store is replaced whole, not rewritten in place"
    );
    // A file that exists keeps the mode its user gave it.
    std::fs::set_permissions(&user_file, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    let add = sandbox.run(&["config", "add", "new", "--", "npx", "-y", "pkg"]);
    assert_eq!(add.code, 0, "{}", add.stderr);
    assert_eq!(mode(&user_file), 0o640);
}

#[test]
fn add_takes_env_and_headers_and_shows_only_their_names() {
    let sandbox = Sandbox::new("secrets");
    let user_file = sandbox.home.join(".config/switchboard/mcp.json");
    let env_value = format!("API_KEY={TOKEN}");
    let local = sandbox.run(&[
        "config",
        "add",
        "api",
        "--env",
        &env_value,
        "--env",
        "REGION=eu",
        "--",
        "npx",
        "-y",
        "pkg",
    ]);
    assert_eq!(local.code, 0, "{}", local.stderr);
    expect![[r#"
        added `api` to ~/.config/switchboard/mcp.json; env: API_KEY, REGION (values hidden)
    "#]]
    .assert_eq(&local.stdout);
    let header = format!("Authorization: Bearer {TOKEN}");
    let remote = sandbox.run(&[
        "config",
        "add",
        "web",
        "--url",
        "https://w.example/mcp",
        "--header",
        &header,
        "--json",
    ]);
    expect![[r#"
        {"added":"web","file":"~/.config/switchboard/mcp.json","scope":"user","headers":["Authorization"]}
    "#]]
    .assert_eq(&remote.stdout);
    // The values are in the file (where the user put them) and nowhere else.
    let written = sandbox.read(&user_file).replace(TOKEN, "$TOKEN");
    expect![[r#"
        {
          "mcpServers": {
            "api": {
              "command": "npx",
              "args": [
                "-y",
                "pkg"
              ],
              "env": {
                "API_KEY": "$TOKEN",
                "REGION": "eu"
              }
            },
            "web": {
              "type": "http",
              "url": "https://w.example/mcp",
              "headers": {
                "Authorization": "Bearer $TOKEN"
              }
            }
          }
        }
    "#]]
    .assert_eq(&written);
    let show = sandbox.run(&["config", "show", "api"]);
    expect![[r#"
        api: ~/.config/switchboard/mcp.json:3 (switchboard user, trusted)
        {
          "type": "stdio",
          "command": "npx",
          "args": [
            "-y",
            "pkg"
          ],
          "env": {
            "API_KEY": "<redacted>",
            "REGION": "<redacted>"
          },
          "enabled": true
        }
    "#]]
    .assert_eq(&show.stdout);
    let show = sandbox.run(&["config", "show", "web", "--json"]);
    let value: serde_json::Value = serde_json::from_str(&show.stdout).expect("json");
    assert_eq!(value["entry"]["headers"]["Authorization"], "<redacted>");
    // Wrong combinations and malformed flags; no message shows a flag's text.
    let refused: Vec<String> = [
        vec!["--url", "https://w.example/mcp", "--env", "K=v"],
        vec!["--header", "X-Key: v", "--", "npx"],
        vec!["--env", TOKEN, "--", "npx"],
        vec!["--env", "=v", "--", "npx"],
        vec!["--header", TOKEN, "--url", "https://w.example/mcp"],
        vec![
            "--header",
            &header.replace(':', " "),
            "--url",
            "https://w.example/mcp",
        ],
        vec!["--env", "K=1", "--env", "K=2", "--", "npx"],
        vec![
            "--header",
            "x-key: 1",
            "--header",
            "X-Key: 2",
            "--url",
            "https://w.example/mcp",
        ],
    ]
    .iter()
    .map(|flags| {
        let mut args = vec!["config", "add", "bad"];
        args.extend(flags);
        let run = sandbox.run(&args);
        assert_eq!(run.code, 2, "{flags:?}: {}", run.stdout);
        run.stderr
    })
    .collect();
    expect![[r#"
        switchboard: `--env` sets a local server's environment; a remote server (`--url`) takes `--header 'Name: value'`
        switchboard: `--header` is sent to a remote server (`--url URL`); a local server takes `--env KEY=VALUE`
        switchboard: `--env` takes KEY=VALUE; one has no `=` (its text is not shown: it may be a secret)
        switchboard: `--env` takes KEY=VALUE; one has an empty or unusable KEY
        switchboard: `--header` takes 'Name: value'; one has no `:` (its text is not shown: it may be a secret)
        switchboard: `--header` takes 'Name: value'; one has no `:` (its text is not shown: it may be a secret)
        switchboard: `--env K` is given twice; keep one
        switchboard: `--header X-Key` is given twice; keep one
    "#]]
    .assert_eq(&refused.concat());
    assert!(
        !sandbox.read(&user_file).contains("\"bad\""),
        "nothing refused was written"
    );
}

#[test]
fn a_vscode_file_is_edited_byte_for_byte() {
    let sandbox = populated("vscode");
    let vscode = sandbox.project.join(".vscode/mcp.json");
    let original = "{\r\n\t// the team's servers\r\n\t\"inputs\": [],\r\n\t\"servers\": {\r\n\t\t/* the editor's own */\r\n\t\t\"code\": { \"type\": \"stdio\", \"command\": \"code-server\" }, // keep\r\n\t\t// more to come\r\n\t},\r\n}";
    sandbox.write(&vscode, original);
    let add = sandbox.run(&[
        "config",
        "add",
        "extra",
        "--config",
        ".vscode/mcp.json",
        "--env",
        "K=${TOKEN}",
        "--",
        "extra-server",
    ]);
    assert_eq!(add.code, 0, "{}", add.stderr);
    expect![[r#"
        {␍
        	// the team's servers␍
        	"inputs": [],␍
        	"servers": {␍
        		/* the editor's own */␍
        		"code": { "type": "stdio", "command": "code-server" }, // keep␍
        		"extra": {␍
        			"command": "extra-server",␍
        			"args": [],␍
        			"env": {␍
        				"K": "${TOKEN}"␍
        			}␍
        		},␍
        		// more to come␍
        	},␍
        }"#]]
    .assert_eq(&sandbox.read(&vscode).replace('\r', "␍"));
    let list = sandbox.run(&["config", "list"]);
    assert!(
        list.stdout.contains("extra      ./.vscode/mcp.json:7"),
        "{}",
        list.stdout
    );
    // Removed from the file that defines it.
    let remove = sandbox.run(&["config", "remove", "extra"]);
    assert_eq!(remove.code, 0, "{}", remove.stderr);
    expect![[r#"
        removed `extra` from ./.vscode/mcp.json
    "#]]
    .assert_eq(&remove.stdout);
    assert_eq!(
        sandbox.read(&vscode),
        original,
        "add then remove is the identity"
    );
}

#[test]
fn vscode_inputs_are_read_from_switchboard_input_variables() {
    let sandbox = Sandbox::new("inputs");
    sandbox.write(
        &sandbox.home.join(".config/Code/User/mcp.json"),
        r#"{
  "inputs": [{ "type": "promptString", "id": "api-key", "description": "The search API key", "password": true }],
  "servers": {
    "search": { "type": "http", "url": "https://s.example/mcp", "headers": { "X-Api-Key": "${input:api-key}" } }
  }
}"#,
    );
    let list = sandbox.run(&["config", "list"]);
    expect![[r#"
        NAME    SOURCE                          STATE  TRANSPORT
        search  ~/.config/Code/User/mcp.json:4  error  `headers.X-Api-Key` uses ${input:api-key} ("The search API key" in the file's `inputs`), a value VS Code asks for; Switchboard reads it from $SWITCHBOARD_INPUT_API_KEY, which is not set: set it, or write the value in the entry as ${env:VAR}
    "#]]
    .assert_eq(&list.stdout);
    let set = [("SWITCHBOARD_INPUT_API_KEY", TOKEN)];
    let show = sandbox.run_with(&["config", "show", "search"], &set);
    assert_eq!(show.code, 0, "{}", show.stderr);
    expect![[r#"
        search: ~/.config/Code/User/mcp.json:4 (vscode user, trusted)
        {
          "type": "http",
          "url": "https://s.example/mcp",
          "headers": {
            "X-Api-Key": "<redacted>"
          },
          "enabled": true
        }
    "#]]
    .assert_eq(&show.stdout);
}

#[test]
fn the_named_file_comes_first() {
    let sandbox = populated("named");
    let named = sandbox.root.join("named.json");
    sandbox.write(
        &named,
        r#"{"mcpServers": {"shared": {"command": "from-named"}}}"#,
    );
    let output = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["config", "show", "shared", "--json"])
        .current_dir(&sandbox.project)
        .env("HOME", &sandbox.home)
        .env("SWITCHBOARD_CONFIG", &named)
        .output()
        .expect("run");
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(value["entry"]["command"], "from-named", "{value}");
    assert_eq!(value["scope"], "explicit");
}

#[test]
fn a_file_that_cannot_be_read_or_written_is_the_systems_refusal() {
    // A folder where a config file should be: there, but not readable as a file (exit 5);
    // a missing file and a file that is not valid stay configuration errors (exit 2).
    let sandbox = Sandbox::new("refusals");
    let folder = sandbox.project.join("folder.json");
    std::fs::create_dir_all(&folder).expect("mkdir");
    sandbox.write(&sandbox.project.join("broken.json"), "{");
    let mut shown = Vec::new();
    for args in [
        &["config", "list", "--config", "folder.json"][..],
        &[
            "config",
            "add",
            "x",
            "--config",
            "folder.json",
            "--url",
            "https://h.example/mcp",
        ],
        &["tools", "--config", "folder.json"],
        &["config", "list", "--config", "missing.json"],
        &["tools", "--config", "broken.json"],
    ] {
        let run = sandbox.run(args);
        let said = run.stderr.lines().last().unwrap_or_default().to_owned();
        shown.push(format!("{} → exit {}: {said}", args.join(" "), run.code));
    }
    expect![[r#"
        config list --config folder.json → exit 5: switchboard: could not read config file `folder.json`: Is a directory (os error 21)
        config add x --config folder.json --url https://h.example/mcp → exit 5: switchboard: could not read `folder.json`: Is a directory (os error 21)
        tools --config folder.json → exit 5: switchboard: could not read config file `folder.json`: Is a directory (os error 21)
        config list --config missing.json → exit 2: switchboard: could not read config file `missing.json`: No such file or directory (os error 2)
        tools --config broken.json → exit 2: switchboard: broken.json:1:1: invalid JSON: EOF while parsing an object at line 1 column 1"#]].assert_eq(&shown.join("\n"));
}
