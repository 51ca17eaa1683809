//! The edits against real files of each dialect: an add then a remove gives back the same
//! bytes (comments, indent, line endings, trailing commas kept), with the file in between
//! snapshotted; removals beside comments and insertions in unusual places.

use expect_test::{Expect, expect};

use super::*;

fn stdio(command: &str) -> Value {
    serde_json::json!({"command": command, "args": ["-y", "pkg"], "env": {"KEY": "${TOKEN}"}})
}

fn remote() -> Value {
    serde_json::json!({"type": "http", "url": "https://h.example/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}})
}

/// A text with its carriage returns shown (`␍`), for snapshots.
fn visible(text: &str) -> String {
    text.replace('\r', "␍")
}

/// Adds server `new` to `client`'s file then removes it: the file is back byte for byte, and
/// the added file reads in the layout with `new` as its last, usable server. Returns the
/// added file.
fn round_trip(client: &str, text: &str, file: &str, layout: &Layout, entry: &Value) -> String {
    let path = Path::new(file);
    let added = match add_server(text, path, layout, "new", entry) {
        Ok(added) => added,
        Err(error) => panic!("{client}: {error}"),
    };
    let vars: std::collections::BTreeMap<String, String> =
        [("TOKEN".to_owned(), "t".to_owned())].into();
    let read = match crate::parse_as(&added, path, layout, &vars) {
        Ok(read) => read,
        Err(error) => panic!("{client}: the edited file does not read: {error}\n{added}"),
    };
    let last = read.file.servers.last().expect("a server");
    match last {
        Ok(entry) => assert_eq!(entry.name, "new", "{client}: {added}"),
        Err(error) => panic!("{client}: the added server does not read: {error}\n{added}"),
    }
    let removed = match remove_server(&added, path, layout, "new") {
        Ok(removed) => removed,
        Err(error) => panic!("{client}: {error}"),
    };
    assert_eq!(
        visible(&removed),
        visible(text),
        "{client}: add then remove changed the file; the added one:\n{added}"
    );
    added
}

/// One client's file as people have them: comments where the client allows them, its own
/// indentation and line breaks, its other settings.
struct Dialect {
    client: &'static str,
    file: &'static str,
    layout: Layout,
    text: &'static str,
    entry: Value,
    added: Expect,
}

#[test]
fn every_dialect_round_trips_byte_for_byte() {
    let claude = r#"{
  "numStartups": 42,
  "theme": "dark",
  "mcpServers": {
    "github": {
      "type": "http",
      "url": "https://api.githubcopilot.com/mcp/",
      "headers": {
        "Authorization": "Bearer ${GITHUB_TOKEN}"
      }
    }
  },
  "projects": {
    "/home/me/app": {
      "allowedTools": [],
      "mcpServers": {}
    }
  },
  "tipsHistory": {"ide-hotkey": 3}
}
"#;
    let dialects = [
        Dialect {
            client: "Claude Code, user scope",
            file: ".claude.json",
            layout: Layout::claude_code_user(),
            text: claude,
            entry: stdio("npx"),
            added: expect![[r#"
                {
                  "numStartups": 42,
                  "theme": "dark",
                  "mcpServers": {
                    "github": {
                      "type": "http",
                      "url": "https://api.githubcopilot.com/mcp/",
                      "headers": {
                        "Authorization": "Bearer ${GITHUB_TOKEN}"
                      }
                    },
                    "new": {
                      "command": "npx",
                      "args": [
                        "-y",
                        "pkg"
                      ],
                      "env": {
                        "KEY": "${TOKEN}"
                      }
                    }
                  },
                  "projects": {
                    "/home/me/app": {
                      "allowedTools": [],
                      "mcpServers": {}
                    }
                  },
                  "tipsHistory": {"ide-hotkey": 3}
                }
            "#]],
        },
        Dialect {
            client: "Claude Code, a project's part",
            file: ".claude.json",
            layout: Layout::claude_code_project("/home/me/app"),
            text: claude,
            entry: remote(),
            added: expect![[r#"
                {
                  "numStartups": 42,
                  "theme": "dark",
                  "mcpServers": {
                    "github": {
                      "type": "http",
                      "url": "https://api.githubcopilot.com/mcp/",
                      "headers": {
                        "Authorization": "Bearer ${GITHUB_TOKEN}"
                      }
                    }
                  },
                  "projects": {
                    "/home/me/app": {
                      "allowedTools": [],
                      "mcpServers": {
                        "new": {
                          "type": "http",
                          "url": "https://h.example/mcp",
                          "headers": {
                            "Authorization": "Bearer ${TOKEN}"
                          }
                        }
                      }
                    }
                  },
                  "tipsHistory": {"ide-hotkey": 3}
                }
            "#]],
        },
        Dialect {
            client: "Claude Desktop on Windows: CRLF, four spaces, no final line break",
            file: "claude_desktop_config.json",
            layout: Layout::claude_code_user(),
            text: "{\r\n    \"mcpServers\": {\r\n        \"filesystem\": {\r\n            \"command\": \"npx\",\r\n            \"args\": [\r\n                \"-y\",\r\n                \"@modelcontextprotocol/server-filesystem\",\r\n                \"C:\\\\Users\\\\me\\\\Desktop\"\r\n            ]\r\n        }\r\n    },\r\n    \"globalShortcut\": \"Ctrl+Space\"\r\n}",
            entry: stdio("npx"),
            added: expect![[r#"
                {␍
                    "mcpServers": {␍
                        "filesystem": {␍
                            "command": "npx",␍
                            "args": [␍
                                "-y",␍
                                "@modelcontextprotocol/server-filesystem",␍
                                "C:\\Users\\me\\Desktop"␍
                            ]␍
                        },␍
                        "new": {␍
                            "command": "npx",␍
                            "args": [␍
                                "-y",␍
                                "pkg"␍
                            ],␍
                            "env": {␍
                                "KEY": "${TOKEN}"␍
                            }␍
                        }␍
                    },␍
                    "globalShortcut": "Ctrl+Space"␍
                }"#]],
        },
        Dialect {
            client: "a project's .mcp.json, tab-indented",
            file: ".mcp.json",
            layout: Layout::mcp_json(),
            text: "{\n\t\"mcpServers\": {\n\t\t\"sentry\": {\n\t\t\t\"type\": \"http\",\n\t\t\t\"url\": \"https://mcp.sentry.dev/mcp\"\n\t\t}\n\t}\n}\n",
            entry: stdio("uvx"),
            added: expect![[r#"
                {
                	"mcpServers": {
                		"sentry": {
                			"type": "http",
                			"url": "https://mcp.sentry.dev/mcp"
                		},
                		"new": {
                			"command": "uvx",
                			"args": [
                				"-y",
                				"pkg"
                			],
                			"env": {
                				"KEY": "${TOKEN}"
                			}
                		}
                	}
                }
            "#]],
        },
        Dialect {
            client: "Cursor: three spaces, one-line entries",
            file: ".cursor/mcp.json",
            layout: Layout::mcp_json(),
            text: "{\n   \"mcpServers\": {\n      \"browser\": { \"command\": \"npx\", \"args\": [\"@browsermcp/mcp@latest\"] },\n      \"linear\": { \"url\": \"https://mcp.linear.app/sse\" }\n   }\n}\n",
            entry: remote(),
            added: expect![[r#"
                {
                   "mcpServers": {
                      "browser": { "command": "npx", "args": ["@browsermcp/mcp@latest"] },
                      "linear": { "url": "https://mcp.linear.app/sse" },
                      "new": {
                         "type": "http",
                         "url": "https://h.example/mcp",
                         "headers": {
                            "Authorization": "Bearer ${TOKEN}"
                         }
                      }
                   }
                }
            "#]],
        },
        Dialect {
            client: "VS Code: tabs, comments, trailing commas, inputs",
            file: ".vscode/mcp.json",
            layout: Layout::vscode(),
            text: r#"{
	// Servers for this workspace.
	"inputs": [
		{
			"type": "promptString",
			"id": "perplexity-key",
			"description": "Perplexity API Key",
			"password": true,
		},
	],
	"servers": {
		/* the search server */
		"perplexity": {
			"type": "stdio",
			"command": "npx",
			"args": ["-y", "server-perplexity-ask"],
			"env": { "PERPLEXITY_API_KEY": "${input:perplexity-key}" },
		}, // needs the key above
		"fetch": { "type": "stdio", "command": "uvx", "args": ["mcp-server-fetch"] }, // no key
	},
}
"#,
            entry: stdio("npx"),
            added: expect![[r#"
                {
                	// Servers for this workspace.
                	"inputs": [
                		{
                			"type": "promptString",
                			"id": "perplexity-key",
                			"description": "Perplexity API Key",
                			"password": true,
                		},
                	],
                	"servers": {
                		/* the search server */
                		"perplexity": {
                			"type": "stdio",
                			"command": "npx",
                			"args": ["-y", "server-perplexity-ask"],
                			"env": { "PERPLEXITY_API_KEY": "${input:perplexity-key}" },
                		}, // needs the key above
                		"fetch": { "type": "stdio", "command": "uvx", "args": ["mcp-server-fetch"] }, // no key
                		"new": {
                			"command": "npx",
                			"args": [
                				"-y",
                				"pkg"
                			],
                			"env": {
                				"KEY": "${TOKEN}"
                			}
                		},
                	},
                }
            "#]],
        },
        Dialect {
            client: "Gemini CLI: comments among other settings",
            file: ".gemini/settings.json",
            layout: Layout::gemini(),
            text: r#"{
  "theme": "GitHub",
  "selectedAuthType": "oauth-personal",
  // servers Gemini CLI starts
  "mcpServers": {
    "pythonTools": {
      "command": "python",
      "args": ["-m", "my_mcp_server", "--port", "8080"],
      "cwd": "./mcp-servers/python",
      "timeout": 15000 // milliseconds
    } // the only one
  },
  "checkpointing": { "enabled": true }
}
"#,
            entry: remote(),
            added: expect![[r#"
                {
                  "theme": "GitHub",
                  "selectedAuthType": "oauth-personal",
                  // servers Gemini CLI starts
                  "mcpServers": {
                    "pythonTools": {
                      "command": "python",
                      "args": ["-m", "my_mcp_server", "--port", "8080"],
                      "cwd": "./mcp-servers/python",
                      "timeout": 15000 // milliseconds
                    }, // the only one
                    "new": {
                      "httpUrl": "https://h.example/mcp",
                      "headers": {
                        "Authorization": "Bearer ${TOKEN}"
                      }
                    }
                  },
                  "checkpointing": { "enabled": true }
                }
            "#]],
        },
        Dialect {
            client: "Zed: comments before the object and between members, trailing commas",
            file: "zed/settings.json",
            layout: Layout::zed(),
            text: r#"// Zed settings
//
// For information on how to configure Zed, see the Zed
// documentation: https://zed.dev/docs/configuring-zed
{
  "ui_font_size": 16,
  "context_servers": {
    // from the extension
    "mcp-server-github": {
      "source": "extension",
      "settings": { "github_personal_access_token": "${GITHUB_TOKEN}" },
    },
    // my own
    "local-db": {
      "source": "custom",
      "command": "db-mcp",
      "args": ["--readonly"],
      "env": {},
    },
  },
  "theme": { "mode": "system", "light": "One Light", "dark": "One Dark" },
}"#,
            entry: stdio("node"),
            added: expect![[r#"
                // Zed settings
                //
                // For information on how to configure Zed, see the Zed
                // documentation: https://zed.dev/docs/configuring-zed
                {
                  "ui_font_size": 16,
                  "context_servers": {
                    // from the extension
                    "mcp-server-github": {
                      "source": "extension",
                      "settings": { "github_personal_access_token": "${GITHUB_TOKEN}" },
                    },
                    // my own
                    "local-db": {
                      "source": "custom",
                      "command": "db-mcp",
                      "args": ["--readonly"],
                      "env": {},
                    },
                    "new": {
                      "command": "node",
                      "args": [
                        "-y",
                        "pkg"
                      ],
                      "env": {
                        "KEY": "${TOKEN}"
                      }
                    },
                  },
                  "theme": { "mode": "system", "light": "One Light", "dark": "One Dark" },
                }"#]],
        },
        Dialect {
            client: "Codex: TOML with comments and CRLF",
            file: ".codex/config.toml",
            layout: Layout::codex(),
            text: "# Codex\r\nmodel = \"o3\"\r\napproval_policy = \"on-request\"\r\n\r\n# the docs server\r\n[mcp_servers.docs]\r\ncommand = \"docs-mcp\"   # in PATH\r\nargs = [\"--stdio\"]\r\n\r\n[profiles.fast]\r\nmodel = \"o4-mini\"\r\n",
            entry: remote(),
            added: expect![[r#"
                # Codex␍
                model = "o3"␍
                approval_policy = "on-request"␍
                ␍
                # the docs server␍
                [mcp_servers.docs]␍
                command = "docs-mcp"   # in PATH␍
                args = ["--stdio"]␍
                ␍
                [mcp_servers.new]␍
                url = "https://h.example/mcp"␍
                http_headers = { Authorization = "Bearer ${TOKEN}" }␍
                ␍
                [profiles.fast]␍
                model = "o4-mini"␍
            "#]],
        },
        Dialect {
            client: "Switchboard's own file written on one line, no final line break",
            file: "mcp.json",
            layout: Layout::switchboard_user(),
            text: r#"{"mcpServers": {"a": {"command": "x"}}}"#,
            entry: stdio("npx"),
            added: expect![[
                r#"{"mcpServers": {"a": {"command": "x"}, "new": {"command": "npx", "args": ["-y", "pkg"], "env": {"KEY": "${TOKEN}"}}}}"#
            ]],
        },
    ];
    for dialect in dialects {
        let added = round_trip(
            dialect.client,
            dialect.text,
            dialect.file,
            &dialect.layout,
            &dialect.entry,
        );
        dialect.added.assert_eq(&visible(&added));
    }
}

/// `text` (a `{"s": {…}}` file) without server `name`.
fn removed(text: &str, name: &str) -> String {
    let layout = Layout {
        maps: vec![vec!["s".to_owned()]],
        ..Layout::vscode()
    };
    remove_server(text, Path::new("f.json"), &layout, name).expect("remove")
}

#[test]
fn removing_keeps_every_comment() {
    let commented = "{\n  \"s\": {\n    // first\n    \"a\": 1, // about a\n    // about b\n    \"b\": 2, // b's own\n    /* about c */\n    \"c\": 3 // c's own\n    // after c\n  }\n}\n";
    let cases = [
        (
            commented,
            "a",
            expect![[r#"
                {
                  "s": {
                    // first
                    // about a
                    // about b
                    "b": 2, // b's own
                    /* about c */
                    "c": 3 // c's own
                    // after c
                  }
                }
            "#]],
        ),
        (
            commented,
            "b",
            expect![[r#"
                {
                  "s": {
                    // first
                    "a": 1, // about a
                    // about b
                    // b's own
                    /* about c */
                    "c": 3 // c's own
                    // after c
                  }
                }
            "#]],
        ),
        (
            commented,
            "c",
            expect![[r#"
                {
                  "s": {
                    // first
                    "a": 1, // about a
                    // about b
                    "b": 2 // b's own
                    /* about c */
                    // c's own
                    // after c
                  }
                }
            "#]],
        ),
        (
            "{\n  \"s\": {\n    // the only one\n    \"a\": 1 // its note\n  }\n}\n",
            "a",
            expect![[r#"
                {
                  "s": {
                    // the only one
                    // its note
                  }
                }
            "#]],
        ),
        (
            "{\"s\": {\"a\": 1 /* one */, \"b\": 2, \"c\": 3}}",
            "a",
            expect![[r#"{"s": {/* one */ "b": 2, "c": 3}}"#]],
        ),
        (
            "{\"s\": {\"a\": 1, \"b\": 2 /* two */, \"c\": 3}}",
            "b",
            expect![[r#"{"s": {"a": 1, /* two */ "c": 3}}"#]],
        ),
        (
            "{\"s\": {\"a\": 1, \"b\": 2 /* two */}}",
            "b",
            expect![[r#"{"s": {"a": 1 /* two */}}"#]],
        ),
        (
            "{\n\t\"s\": {\n\t\t\"a\": 1,\n\t\t\"b\": 2,\n\t},\n}",
            "b",
            expect![[r#"
                {
                	"s": {
                		"a": 1,
                	},
                }"#]],
        ),
        (
            "{\r\n  \"s\": {\r\n    \"a\": 1\r\n  },\r\n  \"t\": 2\r\n}\r\n",
            "a",
            expect![[r#"
                {␍
                  "s": {},␍
                  "t": 2␍
                }␍
            "#]],
        ),
    ];
    for (text, name, expect) in cases {
        expect.assert_eq(&visible(&removed(text, name)));
    }
}

#[test]
fn members_go_where_the_object_puts_them() {
    let layout = Layout {
        maps: vec![vec!["s".to_owned()]],
        ..Layout::vscode()
    };
    let path = Path::new("f.json");
    let value = serde_json::json!({"command": "x"});
    let cases = [
        // The object ends on the last member's line.
        (
            "{\n  \"s\": {\n    \"a\": 1 }\n}\n",
            expect![[r#"
                {
                  "s": {
                    "a": 1,
                    "new": {
                      "command": "x"
                    } }
                }
            "#]],
        ),
        // A block comment after the last member, then the object's end.
        (
            "{\n  \"s\": {\n    \"a\": 1 /* one */ }\n}\n",
            expect![[r#"
                {
                  "s": {
                    "a": 1,
                    "new": {
                      "command": "x"
                    } /* one */ }
                }
            "#]],
        ),
        // Only comments inside.
        (
            "{\n  \"s\": {\n    // none yet\n  }\n}\n",
            expect![[r#"
                {
                  "s": {
                    // none yet
                    "new": {
                      "command": "x"
                    }
                  }
                }
            "#]],
        ),
        // A trailing comma on a one-line object.
        (
            "{\"s\": {\"a\": 1,}}",
            expect![[r#"{"s": {"a": 1, "new": {"command": "x"},}}"#]],
        ),
        (
            "{\"s\": {}}",
            expect![[r#"{"s": {"new": {"command": "x"}}}"#]],
        ),
        (
            "{\"s\": {/* none */}}",
            expect![[r#"{"s": {/* none */ "new": {"command": "x"}}}"#]],
        ),
    ];
    for (text, expect) in cases {
        let added = add_server(text, path, &layout, "new", &value).expect("add");
        expect.assert_eq(&added);
        let back = remove_server(&added, path, &layout, "new").expect("remove");
        assert_eq!(back, text, "add then remove changed the file:\n{added}");
    }
}

#[test]
fn json_edits_create_what_is_missing() {
    let path = Path::new("settings.json");
    let added = add_server(
        "{\n  \"theme\": \"dark\" // mine\n}\n",
        path,
        &Layout::gemini(),
        "g",
        &serde_json::json!({"type": "http", "url": "https://g/mcp"}),
    )
    .expect("add");
    expect![[r#"
        {
          "theme": "dark", // mine
          "mcpServers": {
            "g": {
              "httpUrl": "https://g/mcp"
            }
          }
        }
    "#]]
    .assert_eq(&added);
    // The map stays when its last server goes, as the clients' own commands leave it.
    let only = remove_server(&added, path, &Layout::gemini(), "g").expect("remove");
    expect![[r#"
        {
          "theme": "dark", // mine
          "mcpServers": {}
        }
    "#]]
    .assert_eq(&only);
    let created = add_server(
        "",
        Path::new(".mcp.json"),
        &Layout::mcp_json(),
        "n",
        &stdio("x"),
    )
    .expect("add");
    assert!(
        created.starts_with("{\n  \"mcpServers\": {\n    \"n\": {"),
        "{created}"
    );
    let taken = add_server(
        &created,
        Path::new(".mcp.json"),
        &Layout::mcp_json(),
        "n",
        &stdio("x"),
    );
    expect!["Err(AlreadyExists { path: \".mcp.json\", name: \"n\" })"]
        .assert_eq(&format!("{taken:?}"));
    let missing = remove_server(
        &created,
        Path::new(".mcp.json"),
        &Layout::mcp_json(),
        "other",
    );
    expect![".mcp.json: no server named `other`"]
        .assert_eq(&missing.expect_err("missing").to_string());
    let only =
        remove_server(&created, Path::new(".mcp.json"), &Layout::mcp_json(), "n").expect("remove");
    assert_eq!(only, "{\n  \"mcpServers\": {}\n}\n");
    // A VS Code file named as an `mcp.json` gets the server in the map it has.
    let vscode = "{\n  \"servers\": {}\n}\n";
    let added = add_server(vscode, path, &Layout::mcp_json(), "v", &stdio("x")).expect("add");
    assert!(
        added.starts_with("{\n  \"servers\": {\n    \"v\""),
        "{added}"
    );
    let not_object = add_server(
        "{\"mcpServers\": []}",
        path,
        &Layout::mcp_json(),
        "v",
        &stdio("x"),
    );
    expect!["settings.json: `mcpServers` is not an object"]
        .assert_eq(&not_object.expect_err("an array").to_string());
}

#[test]
fn toml_edits_keep_comments_and_order() {
    let codex = "# Codex settings\nmodel = \"o3\"\n\n[mcp_servers.docs] # the docs\ncommand = \"docs\"\n\n[profiles.fast]\nmodel = \"mini\"\n";
    let added = round_trip(
        "Codex",
        codex,
        "config.toml",
        &Layout::codex(),
        &stdio("npx"),
    );
    expect![[r##"
        # Codex settings
        model = "o3"

        [mcp_servers.docs] # the docs
        command = "docs"

        [mcp_servers.new]
        command = "npx"
        args = ["-y", "pkg"]
        env = { KEY = "${TOKEN}" }

        [profiles.fast]
        model = "mini"
    "##]]
    .assert_eq(&added);
    let fresh =
        add_server("", Path::new("c.toml"), &Layout::codex(), "web", &remote()).expect("add");
    expect![[r#"
        [mcp_servers.web]
        url = "https://h.example/mcp"
        http_headers = { Authorization = "Bearer ${TOKEN}" }
    "#]]
    .assert_eq(&fresh);
}

#[test]
fn files_are_replaced_whole() {
    let dir = std::env::temp_dir().join(format!("sb-edit-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("mkdir");
    let path = dir.join("mcp.json");
    std::fs::write(&path, "old").expect("write");
    std::os::unix::fs::symlink(&path, dir.join("link.json")).expect("link");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    write_atomically(&dir.join("link.json"), "new").expect("write");
    assert_eq!(std::fs::read_to_string(&path).expect("read"), "new");
    let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(
        std::fs::symlink_metadata(dir.join("link.json"))
            .expect("link")
            .file_type()
            .is_symlink()
    );
    let left: Vec<_> = std::fs::read_dir(&dir).expect("dir").collect();
    assert_eq!(left.len(), 2, "no temporary file is left");
    let _ = std::fs::remove_dir_all(&dir);
}
