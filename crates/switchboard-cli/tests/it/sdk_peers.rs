//! The everyday verbs through the real `switchboard` binary against servers built on the
//! official SDKs: the Python SDK's FastMCP peer (`scripts/peers/fastmcp_server.py`) over
//! stdio and over Streamable HTTP, and the rmcp peer (`switchboard-rmcp-peer`) over stdio.
//! Each peer has the same tools, prompt and resources, so one script of verbs
//! ([`VERBS`]) runs against each; each SDK's transcript is its snapshot, and the Python
//! peer's is the same over both transports.

use expect_test::expect;
use serde_json::{Value, json};
use switchboard_testkit::locate::{peer_path, rmcp_peer_bin};
use switchboard_testkit::serve::{HttpServer, PeerCommand};

use crate::status::mask_durations;
use crate::verbs::run;
use crate::{config, scratch_dir};

/// How long a peer may take to start: a hang detector, generous because an interpreter
/// starts slowly on a busy machine.
const STARTUP: &str = "40s";

/// The bytes both peers serve as `peer://logo.png`.
const LOGO_BYTES: [u8; 10] = [
    0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n', 0x00, 0xff,
];

/// Where `read --out` writes in [`VERBS`]; replaced by the scratch file.
const OUT: &str = "OUT";

/// Every verb, with `S` for the peer's name: listings, one tool whole, calls typed by the
/// schema and one with a key the tool does not have, the prompt with and without its
/// required argument, every resource read (the binary one into a file), a URI no
/// resource has, and the status table.
const VERBS: &[&[&str]] = &[
    &["tools"],
    &["tools", "S", "add"],
    &["call", "S", "add", "a=2", "b=3"],
    &["call", "S", "add", "a=2", "c=3"],
    &["prompts"],
    &["prompt", "S", "review", "code=x = 1", "language=python"],
    &["prompt", "S", "review", "code=x = 1"],
    &["prompt", "S", "review", "language=python"],
    &["resources"],
    &["read", "S", "peer://readme"],
    &["read", "S", "peer://logo.png", "--out", OUT],
    &["read", "S", "peer://notes/groceries"],
    &["read", "S", "peer://nothing-here"],
    &["status"],
];

/// An SDK peer and how a config names it.
struct Peer {
    /// Its name in the config (the `S` of [`VERBS`]).
    name: &'static str,
    /// Its `mcpServers` entry.
    entry: Value,
    /// The HTTP peer's process, killed when this is dropped.
    _http: Option<HttpServer>,
}

impl Peer {
    fn fastmcp_stdio() -> Peer {
        Peer {
            name: "fastmcp",
            entry: json!({
                "command": peer_path("target/peers/venv/bin/python"),
                "args": [peer_path("scripts/peers/fastmcp_server.py")],
                "startupTimeout": STARTUP,
            }),
            _http: None,
        }
    }

    /// Started on a free loopback port; [`HttpServer::peer`] waits (bounded) until it
    /// listens. Named as over stdio: the transcripts must not differ.
    fn fastmcp_http() -> Peer {
        let server = HttpServer::peer(PeerCommand::fastmcp());
        Peer {
            name: "fastmcp",
            entry: json!({ "type": "http", "url": server.url(), "startupTimeout": STARTUP }),
            _http: Some(server),
        }
    }

    fn rmcp_stdio() -> Peer {
        Peer {
            name: "rmcp",
            entry: json!({ "command": rmcp_peer_bin(), "startupTimeout": STARTUP }),
            _http: None,
        }
    }
}

/// Runs every verb of [`VERBS`] against `peer` and returns the transcript: each command
/// with its exit code, its stdout indented, its stderr after `!`. The config's path and
/// the output file are named `CONFIG` and `OUT`, the start times `<t>`; the HTTP peer's
/// port appears nowhere.
fn every_verb(peer: &Peer) -> String {
    let path = config(json!({ peer.name: peer.entry }));
    let path = path.to_str().expect("utf-8 path");
    let out = scratch_dir(&format!("sdk-peers-{}", peer.name)).join("logo.png");
    let out = out.to_str().expect("utf-8 path");
    let mut transcript = String::new();
    for verb in VERBS {
        let args: Vec<&str> = verb
            .iter()
            .map(|word| match *word {
                "S" => peer.name,
                OUT => out,
                word => word,
            })
            .collect();
        let (code, stdout, stderr) = run(path, &args);
        let stdout = if verb[0] == "status" {
            mask_durations(&stdout)
        } else {
            stdout
        };
        let shown: Vec<String> = args
            .iter()
            .map(|word| match *word {
                word if word == out => OUT.to_owned(),
                word if word.contains(' ') => format!("'{word}'"),
                word => word.to_owned(),
            })
            .collect();
        transcript.push_str(&format!("$ switchboard {} → {code}\n", shown.join(" ")));
        transcript.push_str(&indented(&stdout, "  "));
        transcript.push_str(&indented(&stderr.replace(out, OUT), "  ! "));
        if verb.contains(&OUT) {
            let written = match std::fs::read(out) {
                Ok(bytes) if bytes == LOGO_BYTES => "the bytes the peer serves".to_owned(),
                Ok(bytes) => format!("other bytes: {bytes:02x?}"),
                Err(error) => format!("nothing readable: {error}"),
            };
            transcript.push_str(&format!("  (OUT holds {written})\n"));
        }
    }
    transcript
}

/// `text`'s lines under `prefix` (blank ones left blank), and a note when its last line
/// has no newline.
fn indented(text: &str, prefix: &str) -> String {
    let mut out: String = text
        .lines()
        .map(|line| match line {
            "" => "\n".to_owned(),
            line => format!("{prefix}{line}\n"),
        })
        .collect();
    if !text.is_empty() && !text.ends_with('\n') {
        out.push_str(&format!("{prefix}(no newline at the end)\n"));
    }
    out
}

#[test]
fn every_verb_against_the_python_sdk_over_stdio_and_streamable_http() {
    let stdio = every_verb(&Peer::fastmcp_stdio());
    expect![[r#"
        $ switchboard tools → 0
          fastmcp: 3 tools (protocol 2026-07-28, modern era, server switchboard-fastmcp-peer 0.1.0)
            echo  Return `text` unchanged.
                    (text: string)
            add   Return a + b.
                    (a: integer, b: integer)
            slow  Sleep `duration_s` seconds in `steps` steps, reporting progress (i, steps) after…
                    (duration_s?: number, steps?: integer)
        $ switchboard tools fastmcp add → 0
          fastmcp / add
            Return a + b.
          annotations: readOnlyHint: true
          input:
            a: integer (required)
            b: integer (required)
          output:
            result: integer (required)
        $ switchboard call fastmcp add a=2 b=3 → 0
          5
        $ switchboard call fastmcp add a=2 c=3 → 2
          ! switchboard: tool `add`: `c` is not a parameter here; the parameters are: a, b
        $ switchboard prompts → 0
          fastmcp: 1 prompt
            review(code, language?)  Ask for a review of a piece of code.
        $ switchboard prompt fastmcp review 'code=x = 1' language=python → 0
          Ask for a review of a piece of code.

          [user] Please review this python code:
          x = 1
        $ switchboard prompt fastmcp review 'code=x = 1' → 0
          Ask for a review of a piece of code.

          [user] Please review this code:
          x = 1
        $ switchboard prompt fastmcp review language=python → 2
          ! switchboard: prompt `review` needs `code`: give it as code=VALUE
        $ switchboard resources → 0
          fastmcp: 2 resources, 1 template
            peer://readme  readme (text/plain)  About this peer.
            peer://logo.png  logo (image/png)  A few bytes of PNG.
            template peer://notes/{name}  note (text/plain)  A note by name.
        $ switchboard read fastmcp peer://readme → 0
          This is the Switchboard FastMCP peer.
          (no newline at the end)
        $ switchboard read fastmcp peer://logo.png --out OUT → 0
          ! switchboard: wrote 10 bytes of peer://logo.png to OUT
          (OUT holds the bytes the peer serves)
        $ switchboard read fastmcp peer://notes/groceries → 0
          Note groceries.
          (no newline at the end)
        $ switchboard read fastmcp peer://nothing-here → 3
          ! switchboard: server `fastmcp` answered `resources/read` with an error: Unknown resource: peer://nothing-here (code -32602), data: {"uri":"peer://nothing-here"}
        $ switchboard status → 0
          SERVER   STATE  SANDBOX  ERA     PROTOCOL    TOOLS  PROMPTS  RESOURCES  START
          fastmcp  ready  off      modern  2026-07-28  3      1        2          <t>
          1 of 1 server(s) ready
    "#]]
    .assert_eq(&stdio);
    // The one difference: a remote server has no sandbox.
    let http = every_verb(&Peer::fastmcp_http()).replace(
        "fastmcp  ready  remote   modern",
        "fastmcp  ready  off      modern",
    );
    assert_eq!(
        http, stdio,
        "over Streamable HTTP (left) as over stdio (right), the sandbox column aside"
    );
}

#[test]
fn every_verb_against_rmcp_over_stdio() {
    expect![[r#"
        $ switchboard tools → 0
          rmcp: 4 tools (protocol 2026-07-28, modern era, server switchboard-rmcp-peer 0.1.0)
            add   Add two integers and return their sum as text.
                    (a: integer, b: integer)
            echo  Echo the given text back as a single text content block.
                    (text: string)
            fail  Always fail: returns a tool result with isError set.
            slow  Sleep for `duration_ms` in `steps` equal steps, sending a progress notification…
                    (duration_ms?: integer, steps?: integer)
        $ switchboard tools rmcp add → 0
          rmcp / add
            Add two integers and return their sum as text.
          annotations: readOnlyHint: true
          input:
            a: integer (required) — The left-hand operand.
            b: integer (required) — The right-hand operand.
        $ switchboard call rmcp add a=2 b=3 → 0
          5
        $ switchboard call rmcp add a=2 c=3 → 2
          ! switchboard: tool `add`: `c` is not a parameter here; the parameters are: a, b
        $ switchboard prompts → 0
          rmcp: 1 prompt
            review(code, language?)  Ask for a review of a piece of code.
        $ switchboard prompt rmcp review 'code=x = 1' language=python → 0
          [user] Please review this python code:
          x = 1
        $ switchboard prompt rmcp review 'code=x = 1' → 0
          [user] Please review this code:
          x = 1
        $ switchboard prompt rmcp review language=python → 2
          ! switchboard: prompt `review` needs `code`: give it as code=VALUE
        $ switchboard resources → 0
          rmcp: 2 resources, 1 template
            peer://readme  readme (text/plain)  About this peer.
            peer://logo.png  logo (image/png)  A few bytes of PNG.
            template peer://notes/{name}  note (text/plain)  A note by name.
        $ switchboard read rmcp peer://readme → 0
          This is the Switchboard rmcp peer.
          (no newline at the end)
        $ switchboard read rmcp peer://logo.png --out OUT → 0
          ! switchboard: wrote 10 bytes of peer://logo.png to OUT
          (OUT holds the bytes the peer serves)
        $ switchboard read rmcp peer://notes/groceries → 0
          Note groceries.
          (no newline at the end)
        $ switchboard read rmcp peer://nothing-here → 3
          ! switchboard: server `rmcp` answered `resources/read` with an error: no resource peer://nothing-here (code -32602), data: {"uri":"peer://nothing-here"}
        $ switchboard status → 0
          SERVER  STATE  SANDBOX  ERA     PROTOCOL    TOOLS  PROMPTS  RESOURCES  START
          rmcp    ready  off      modern  2026-07-28  4      1        2          <t>
          1 of 1 server(s) ready
    "#]]
    .assert_eq(&every_verb(&Peer::rmcp_stdio()));
}
