//! Seed inputs: real messages, streams and config files, each with the leading bytes its
//! target reads for sizes and chunkings.

/// Frames a server sends: an `initialize` answer, a `tools/list` page, a call result with
/// progress before it, a server request, errors, and frames that are not JSON-RPC.
const SERVER_FRAMES: &[&str] = &[
    r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{},"resources":{"subscribe":true},"logging":{}},"serverInfo":{"name":"everything","version":"1.2.3"},"instructions":"Use the echo tool.\nIt echoes."}}"#,
    r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"echo","description":"Echoes its input","inputSchema":{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}},{"name":"add","inputSchema":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}}},"annotations":{"readOnlyHint":true}}],"nextCursor":"eyJwYWdlIjoyfQ=="}}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t-1","progress":0.5,"total":1,"message":"half"}}"#,
    r#"{"jsonrpc":"2.0","id":"call-3","result":{"content":[{"type":"text","text":"h\u00e9llo \ud83d\ude00"}],"structuredContent":{"n":1.5e3},"isError":false}}"#,
    r#"{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"unknown tool: nope","data":{"tool":"nope"}}}"#,
    r#"{"jsonrpc":"2.0","id":9,"method":"sampling/createMessage","params":{"messages":[],"maxTokens":10}}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#,
    r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}"#,
    r#"[{"jsonrpc":"2.0","id":5,"result":{}}]"#,
    r#"{"jsonrpc":"1.0","id":6,"result":{}}"#,
    r#"{"jsonrpc":"2.0","id":7,"result":{},"error":{"code":1,"message":"both"}}"#,
    "Server listening on stdio",
    "",
    "   ",
];

/// Client frames for the gateway: a whole session and its mistakes.
const CLIENT_FRAMES: &[&str] = &[
    r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{}},"clientInfo":{"name":"fuzz","version":"1"}}}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}"#,
    r#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#,
    r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"a__echo","arguments":{"message":"hi"},"_meta":{"progressToken":7}}}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"user"}}"#,
    r#"{"jsonrpc":"2.0","id":4,"method":"prompts/list"}"#,
    r#"{"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"name":"a__p","arguments":{}}}"#,
    r#"{"jsonrpc":"2.0","id":6,"method":"resources/list","params":{"cursor":"x"}}"#,
    r#"{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"file:///x"}}"#,
    r#"{"jsonrpc":"2.0","id":8,"method":"resources/templates/list"}"#,
    r#"{"jsonrpc":"2.0","id":9,"method":"server/discover"}"#,
    r#"{"jsonrpc":"2.0","id":10,"method":"no/such/method"}"#,
    r#"{"jsonrpc":"2.0","id":11,"result":{}}"#,
    r#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"nope"}}"#,
    r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    r#"{"id":13,"method":"ping"}"#,
    r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
    "not json",
    "[]",
];

/// SSE streams as servers send them.
const SSE_STREAMS: &[&str] = &[
    "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[]}}\n\n",
    ": keep-alive\n\nid: 42\nretry: 3000\ndata: {\"jsonrpc\":\"2.0\",\n\
     data: \"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\n",
    "event: endpoint\r\ndata: /messages?session_id=abc\r\n\r\n",
    "data: first\rdata: second\r\rdata:no-space\n\n",
    "id\nevent\ndata\n\nretry: x\n\n:\n\n",
    "\u{feff}data: bom\n\n",
];

/// Config files in both dialects, with expansions.
const JSON_CONFIGS: &[&str] = &[
    r#"{
  "mcpServers": {
    "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "${HOME}/src"], "env": {"API_KEY": "${TOKEN}", "N": 3}},
    "remote": {"type": "http", "url": "https://user:${TOKEN}@mcp.example.com/mcp?key=${TOKEN}", "headers": {"Authorization": "Bearer ${TOKEN}"}, "timeout": 30, "startupTimeout": "500ms"},
    "off": {"command": "server", "disabled": true, "era": "legacy", "protocolVersion": "2025-06-18"},
    "broken": {"command": "", "cwd": "../x"},
    "unset": {"command": "${UNSET}", "args": ["${UNSET:-fallback}", "$$literal"]}
  }
}"#,
    r#"{"servers": {"vscode": {"type": "stdio", "command": "python", "args": ["-m", "server"], "cwd": "${HOME}"}, "both": {"command": "x", "url": "http://h"}, "kind": {"type": "carrier-pigeon", "url": "x"}}}"#,
    r#"{"mcpServers": {"a": {"command": "x", "timeout": "2m", "era": "${TOKEN}"}, "b": {"url": "http://127.0.0.1:1/mcp", "type": "${TOKEN}"}, "c\u0041": {"command": "y"}}}"#,
    r#"{"mcpServers": []}"#,
    r#"{"mcpServers": {"f": {"command": "x", "enabledTools": ["read_*", "?ist", "${TOKEN}"], "disabledTools": ["*_secret"]}, "g": {"command": "x", "includeTools": [], "excludeTools": ["", 3]}, "h": {"command": "x", "enabledTools": "x", "disabled_tools": ["y"]}}}"#,
    "{\"mcpServers\": {\"a\": {\"command\": \"x\",}}}",
];

const TOML_CONFIGS: &[&str] = &[
    "[mcp_servers.files]\ncommand = \"npx\"\nargs = [\"-y\", \"server\", \"${HOME}\"]\nenv = { API_KEY = \"${TOKEN}\" }\nstartup_timeout_sec = 10\ntool_timeout_sec = 60\n\n\
     [mcp_servers.remote]\nurl = \"https://mcp.example.com/mcp\"\nhttp_headers = { Authorization = \"Bearer ${TOKEN}\" }\nenabled = false\n",
    "[mcp_servers.\"quoted name\"]\ncommand = \"x\"\ncwd = \"sub\"\n\n[mcp_servers.bad]\nargs = 3\n",
    "mcp_servers = { inline = { command = \"x\" } }\n",
    "[other]\nkey = 1\n",
    "[mcp_servers.f]\ncommand = \"x\"\nenabled_tools = [\"read_*\", \"${TOKEN}\"]\ndisabled_tools = [\"*_secret\"]\n\n[mcp_servers.g]\ncommand = \"x\"\nexcludeTools = [\"y\"]\n",
    "[mcp_servers.a]\ncommand = \"\"\"\nmulti\nline\"\"\"\n",
];

/// Files as the clients keep them, for the editor: comments, trailing commas, tabs, CRLF,
/// one-line objects, an empty map, a missing one.
const EDITED_JSON: &[&str] = &[
    "{\n\t// the team's\n\t\"inputs\": [],\n\t\"servers\": {\n\t\t/* first */\n\t\t\"a\": { \"command\": \"x\" }, // a's\n\t\t\"b\": { \"url\": \"https://h/mcp\" },\n\t},\n}\n",
    "{\r\n    \"mcpServers\": {\r\n        \"a\": {\"command\": \"x\"}\r\n    },\r\n    \"other\": 1\r\n}",
    "{\"mcpServers\": {\"a\": {\"command\": \"x\"}, \"b\": 2 /* two */}}",
    "{\n  \"mcpServers\": {}\n}\n",
    "{\n  \"servers\": {\n    // none yet\n  }\n}\n",
    "{\n  \"theme\": \"dark\" // mine\n}",
    "",
];

/// `tools/list` answers with header annotations, good and bad.
const LISTINGS: &[&str] = &[
    r#"{"tools":[{"name":"q","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"limit":{"type":"integer","x-mcp-header":"Limit"},"dry":{"type":"boolean","x-mcp-header":"Dry-Run"},"plain":{"type":"string"}}}},{"name":"bad","inputSchema":{"properties":{"a":{"type":"string","x-mcp-header":"a b"}}}},{"name":"twice","inputSchema":{"properties":{"a":{"type":"string","x-mcp-header":"X"},"b":{"type":"string","x-mcp-header":"x"}}}},{"name":"deep","inputSchema":{"properties":{"o":{"type":"object","properties":{"i":{"x-mcp-header":"I"}}}},"anyOf":[{"x-mcp-header":"Y"}]}}]}"#,
    r#"{"region":"eu-west"," padded ":" x ","n":9007199254740993,"m":-42,"f":1.5,"b":true,"z":null,"u":"h\u00e9llo","s":"=?base64?x?="}"#,
];

const HEADER_TEXTS: &[&str] = &[
    "eu-west",
    " padded",
    "héllo",
    "=?base64?x?=",
    "tab\there",
    "",
];

const CHALLENGES: &[&str] = &[
    r#"Bearer realm="mcp", error="insufficient_scope", scope="files:read files:write", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource""#,
    r#"Basic realm="x", Bearer scope=plain,error="a\"b""#,
    "bearer",
    r#"Bearer ="#,
];

/// The seed inputs of a target (empty for an unknown name).
pub fn seeds(target: &str) -> Vec<Vec<u8>> {
    match target {
        "framing" => streams(SERVER_FRAMES)
            .into_iter()
            .flat_map(|stream| {
                [
                    prefixed(&[0x03, 0xff, 7, 1, 13, 64], &stream),
                    prefixed(&[0x00, 0x3f, 0, 0, 0, 0], &stream),
                ]
            })
            .collect(),
        "envelope" => streams(SERVER_FRAMES)
            .into_iter()
            .map(|stream| prefixed(&[0x0f, 0xff], &stream))
            .collect(),
        "sse" => SSE_STREAMS
            .iter()
            .flat_map(|stream| {
                [
                    prefixed(&[0x03, 0xff, 5, 1, 2, 40], stream.as_bytes()),
                    prefixed(&[0x00, 0x1f, 0, 3, 0, 9], stream.as_bytes()),
                ]
            })
            .collect(),
        "config" => JSON_CONFIGS
            .iter()
            .map(|text| prefixed(&[0], text.as_bytes()))
            .chain(
                TOML_CONFIGS
                    .iter()
                    .map(|text| prefixed(&[1], text.as_bytes())),
            )
            .collect(),
        "edit" => EDITED_JSON
            .iter()
            .chain(JSON_CONFIGS)
            .flat_map(|text| {
                [
                    prefixed(&[0], text.as_bytes()),
                    prefixed(&[1], text.as_bytes()),
                ]
            })
            .chain(
                TOML_CONFIGS
                    .iter()
                    .map(|text| prefixed(&[2], text.as_bytes())),
            )
            .collect(),
        "headers" => HEADER_TEXTS
            .iter()
            .map(|text| prefixed(&[0], text.as_bytes()))
            .chain(LISTINGS.iter().map(|text| prefixed(&[1], text.as_bytes())))
            .chain(
                CHALLENGES
                    .iter()
                    .map(|text| prefixed(&[2], text.as_bytes())),
            )
            .collect(),
        "gateway" => streams(CLIENT_FRAMES),
        _ => Vec::new(),
    }
}

/// Each frame alone, all of them in one stream, and the stream with CRLF line ends.
fn streams(frames: &[&str]) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = frames
        .iter()
        .map(|f| format!("{f}\n").into_bytes())
        .collect();
    out.push(frames.join("\n").into_bytes());
    out.push(frames.join("\r\n").into_bytes());
    out
}

fn prefixed(prefix: &[u8], body: &[u8]) -> Vec<u8> {
    let mut out = prefix.to_vec();
    out.extend_from_slice(body);
    out
}
