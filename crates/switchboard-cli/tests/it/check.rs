//! `switchboard check`: the bundled example passes every applicable check; reports as
//! text, JSON and JUnit; baselines; HTTP entries checked over Streamable HTTP (the
//! fixture's HTTP front end); usage errors exit 2.

use expect_test::expect;

use switchboard_testkit::serve::HttpServer;

use crate::serve_http::HttpGateway;
use crate::{config, fixture_entry, switchboard};

/// The counts of a `switchboard check` summary line (`NAME: P passed, F failed, W
/// warnings, S skipped…`): passed, failed, warnings, skipped. `None` for any other line.
pub(crate) fn check_totals(line: &str) -> Option<[usize; 4]> {
    let (_, counts) = line.split_once(": ")?;
    let mut parts = counts.splitn(4, ", ");
    let mut count = |label: &str| -> Option<usize> {
        let part = parts.next()?;
        let (number, _) = part.split_once(label)?;
        number.parse().ok()
    };
    Some([
        count(" passed")?,
        count(" failed")?,
        count(" warnings")?,
        count(" skipped")?,
    ])
}

/// `text` with the passed and skipped counts of every `switchboard check` summary shown as
/// `<n>`: they change with every check the registry gains (the per-check lines, and the
/// checker's own tests, pin what passed and what was skipped). The failures and warnings
/// stay; the four counts must add up to the registry's checks once per server counted.
pub(crate) fn derived_check_totals(text: &str) -> String {
    let checks = switchboard_check::CHECKS.len();
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        let Some([passed, failed, warnings, skipped]) = check_totals(line) else {
            out.push(line.to_owned());
            continue;
        };
        let total = passed + failed + warnings + skipped;
        assert!(
            total > 0 && total % checks == 0,
            "`{line}`: the counts add up to {total}, not a multiple of the registry's {checks} checks"
        );
        let (head, _) = line.split_once(": ").unwrap_or_default();
        let (_, tail) = line.split_once(" skipped").unwrap_or_default();
        out.push(format!(
            "{head}: <n> passed, {failed} failed, {warnings} warnings, <n> skipped{tail}"
        ));
    }
    let mut joined = out.join("\n");
    if text.ends_with('\n') {
        joined.push('\n');
    }
    joined
}

/// Replaces timings (which vary) with `N`, and derives the summary totals
/// ([`derived_check_totals`]).
fn normalize(text: &str) -> String {
    derived_check_totals(&timings_as_n(text))
}

/// Replaces timings (which vary) with `N`.
fn timings_as_n(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if c.is_ascii_digit() {
            let mut end = at + c.len_utf8();
            while let Some((i, d)) = chars.peek().copied() {
                if d.is_ascii_digit() || d == '.' {
                    end = i + d.len_utf8();
                    chars.next();
                } else {
                    break;
                }
            }
            let rest = &text[end..];
            let before = &text[..at];
            if rest.starts_with(" ms") || rest.starts_with(" s\n") || before.ends_with("pid ") {
                out.push('N');
            } else {
                out.push_str(&text[at..end]);
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn bundled_example_passes_every_applicable_check() {
    let run = switchboard(&["check"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    expect!["switchboard: no --config given and no servers found; using the bundled example server `example`"]
    .assert_eq(run.stderr.lines().next().unwrap_or_default());
    expect![[r#"
        example (stdio, modern era, protocol 2026-07-28, server switchboard-example 0.1.0)
          pass  initialize                   handshake answered in N ms (modern era, protocol 2026-07-28)
          pass  protocol-version             modern era: `server/discover` lists 2026-07-28
          pass  capabilities                 declared: tools, logging; each declared list answers, nothing undeclared was used
          pass  stdout-purity                4 process(es) watched; every stdout line was a JSON-RPC message
          pass  tools-list                   4 tools in 1 page(s)
          pass  pagination                   one page, no `nextCursor`
          pass  tool-names                   4 unique names, all valid
          pass  input-schemas                4 input schemas are valid JSON Schemas with an object root
          pass  no-credentials               40 texts scanned, nothing credential-looking
          pass  tools-call                   `echo` answered a call with arguments derived from its schema
          pass  results-bounded              largest result 176 bytes (limit 102400)
          pass  invalid-input                `echo` rejected schema-violating arguments (`text` given a number where the schema says type "string"), an unknown tool was answered, the server still answers
          pass  errors-actionable            errors name the offending field and the unknown tool
          pass  unknown-tool                 reported as JSON-RPC error -32602
          pass  response-ids                 22 responses, each with the id of its request
          pass  notifications-not-responses  every request got a response
          pass  wire-schema                  23 messages the server sent match the 2026-07-28 schema
          pass  progress                     1 progress notification(s), each for a request of the checker's, its progress increasing
          pass  cancellation                 `slow` cancelled after N ms: no result and no progress within N ms, the server still answers
          pass  reconnect                    outstanding `tools/call` rejected when the server was killed; a fresh instance initialized and listed the same 4 tools
          pass  shutdown                     exited N ms after stdin closed (exit status: 0), no process left behind
          pass  utilities                    no log message came to requests that did not ask for one (2026-07-28 has no `ping` or `logging/setLevel`)
          skip  prompts-resources            the server lists no prompt or resource to fetch (or declares neither)
          skip  http-origin                  applies to Streamable HTTP servers only
          skip  http-session                 applies to Streamable HTTP servers only
          skip  http-responses               applies to Streamable HTTP servers only
          skip  sse-priming                  applies to Streamable HTTP servers only
          skip  http-notifications           applies to Streamable HTTP servers only
          pass  discover                     `server/discover` lists 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05 with capabilities, cache hints and the server's name; no undeclared list is served
          pass  request-meta                 requests without `_meta`, its protocol version or its client capabilities get -32602 with their id; one without `clientInfo` is served
          pass  unsupported-version          version 1900-01-01 gets -32022 naming it and versions `server/discover` lists
          skip  http-headers                 applies to Streamable HTTP servers only
          pass  param-headers                no tool annotates a parameter with `x-mcp-header`
          skip  removed-methods              applies to Streamable HTTP servers only
          pass  cache-hints                  `tools/list` carry `ttlMs` and one `cacheScope` on every page; tools come in the same order twice
          skip  input-required               no tool the checker called (`echo`, `add`) answered `input_required`; name one that asks for input with --call TOOL ARGS
          skip  subscriptions-listen         the server declares `listChanged` on no list, so there is no change to listen for (resource subscriptions need a resource to follow and are not probed)
          skip  unknown-resource             the server declares no `resources` (or `server/discover` failed)
          pass  error-codes                  no reserved, retired or pre-release error code in 7 answers
          example: <n> passed, 0 failed, 0 warnings, <n> skipped in N s
    "#]]
    .assert_eq(&normalize(&run.stdout));
}

/// `switchboard check` (which must pass) against two entries, `legacy` and `modern`, made
/// by `entry` for their era: the server lines, the skipped checks and the counts, timings
/// as `N`.
fn check_in_both_eras(entry: impl Fn(&str) -> serde_json::Value) -> String {
    let cfg = config(serde_json::json!({
        "legacy": entry("legacy"),
        "modern": entry("modern"),
    }));
    let run = switchboard(&["check", "--config", &cfg.display().to_string()]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let lines: Vec<&str> = run
        .stdout
        .lines()
        .filter(|line| {
            !line.starts_with(' ') || line.starts_with("  skip ") || line.contains(" passed, ")
        })
        .collect();
    normalize(&lines.join("\n"))
}

#[test]
fn the_bundled_example_passes_in_each_era_it_is_pinned_to() {
    // Auto (above) settles on 2026-07-28; the example speaks the legacy era too.
    let summary = check_in_both_eras(|era| {
        serde_json::json!({
            "command": env!("CARGO_BIN_EXE_switchboard"),
            "args": ["example-server"],
            "era": era,
        })
    });
    expect![[r#"
        legacy (stdio, legacy era, protocol 2025-11-25, server switchboard-example 0.1.0)
          skip  prompts-resources            the server lists no prompt or resource to fetch (or declares neither)
          skip  http-origin                  applies to Streamable HTTP servers only
          skip  http-session                 applies to Streamable HTTP servers only
          skip  http-responses               applies to Streamable HTTP servers only
          skip  sse-priming                  applies to Streamable HTTP servers only
          skip  http-notifications           applies to Streamable HTTP servers only
          skip  discover                     the server does not speak the 2026-07-28 protocol: its session negotiated the legacy era (a server that speaks both is checked in 2026-07-28 unless its entry pins `legacy`)
          skip  request-meta                 the server does not speak the 2026-07-28 protocol: its session negotiated the legacy era (a server that speaks both is checked in 2026-07-28 unless its entry pins `legacy`)
          skip  unsupported-version          the server does not speak the 2026-07-28 protocol: its session negotiated the legacy era (a server that speaks both is checked in 2026-07-28 unless its entry pins `legacy`)
          skip  http-headers                 applies to Streamable HTTP servers only
          skip  param-headers                the server does not speak the 2026-07-28 protocol: its session negotiated the legacy era (a server that speaks both is checked in 2026-07-28 unless its entry pins `legacy`)
          skip  removed-methods              applies to Streamable HTTP servers only
          skip  cache-hints                  the server does not speak the 2026-07-28 protocol: its session negotiated the legacy era (a server that speaks both is checked in 2026-07-28 unless its entry pins `legacy`)
          skip  input-required               the server does not speak the 2026-07-28 protocol: its session negotiated the legacy era (a server that speaks both is checked in 2026-07-28 unless its entry pins `legacy`)
          skip  subscriptions-listen         the server does not speak the 2026-07-28 protocol: its session negotiated the legacy era (a server that speaks both is checked in 2026-07-28 unless its entry pins `legacy`)
          skip  unknown-resource             the server does not speak the 2026-07-28 protocol: its session negotiated the legacy era (a server that speaks both is checked in 2026-07-28 unless its entry pins `legacy`)
          skip  error-codes                  the server does not speak the 2026-07-28 protocol: its session negotiated the legacy era (a server that speaks both is checked in 2026-07-28 unless its entry pins `legacy`)
          legacy: <n> passed, 0 failed, 0 warnings, <n> skipped in N s

        modern (stdio, modern era, protocol 2026-07-28, server switchboard-example 0.1.0)
          skip  prompts-resources            the server lists no prompt or resource to fetch (or declares neither)
          skip  http-origin                  applies to Streamable HTTP servers only
          skip  http-session                 applies to Streamable HTTP servers only
          skip  http-responses               applies to Streamable HTTP servers only
          skip  sse-priming                  applies to Streamable HTTP servers only
          skip  http-notifications           applies to Streamable HTTP servers only
          skip  http-headers                 applies to Streamable HTTP servers only
          skip  removed-methods              applies to Streamable HTTP servers only
          skip  input-required               no tool the checker called (`echo`, `add`) answered `input_required`; name one that asks for input with --call TOOL ARGS
          skip  subscriptions-listen         the server declares `listChanged` on no list, so there is no change to listen for (resource subscriptions need a resource to follow and are not probed)
          skip  unknown-resource             the server declares no `resources` (or `server/discover` failed)
          modern: <n> passed, 0 failed, 0 warnings, <n> skipped in N s

        all servers: <n> passed, 0 failed, 0 warnings, <n> skipped"#]]
    .assert_eq(&summary);
}

#[test]
fn the_bundled_example_passes_over_http_in_both_eras() {
    // Skipped: stdout-purity and shutdown (stdio's), and in the 2026-07-28 era, which has
    // no sessions, the session checks.
    let example = HttpGateway::launch(
        &["example-server", "--http", "127.0.0.1:0"],
        &[],
        "switchboard example-server: listening on ",
    );
    let summary = check_in_both_eras(
        |era| serde_json::json!({ "type": "http", "url": example.url(), "era": era }),
    );
    expect![[r#"
        legacy (http, legacy era, protocol 2025-11-25, server switchboard-example 0.1.0)
          skip  stdout-purity                applies to stdio servers only: over HTTP, stdout is not the protocol channel
          skip  progress                     no progress notification came (the checker asks for progress only on the long call of `cancellation`)
          skip  prompts-resources            the server lists no prompt or resource to fetch (or declares neither)
          skip  sse-priming                  `ping` was answered with HTTP 200 and `Content-Type: application/json`, not an event stream, so there was no stream to judge
          skip  http-notifications           the server does not speak the 2026-07-28 protocol: its session negotiated the legacy era (a server that speaks both is checked in 2026-07-28 unless its entry pins `legacy`)
          skip  discover                     the server does not speak the 2026-07-28 protocol: its session negotiated the legacy era (a server that speaks both is checked in 2026-07-28 unless its entry pins `legacy`)
          skip  request-meta                 the server does not speak the 2026-07-28 protocol: its session negotiated the legacy era (a server that speaks both is checked in 2026-07-28 unless its entry pins `legacy`)
          skip  unsupported-version          the server does not speak the 2026-07-28 protocol: its session negotiated the legacy era (a server that speaks both is checked in 2026-07-28 unless its entry pins `legacy`)
          skip  http-headers                 the server does not speak the 2026-07-28 protocol: its session negotiated the legacy era (a server that speaks both is checked in 2026-07-28 unless its entry pins `legacy`)
          skip  param-headers                the server does not speak the 2026-07-28 protocol: its session negotiated the legacy era (a server that speaks both is checked in 2026-07-28 unless its entry pins `legacy`)
          skip  removed-methods              the server does not speak the 2026-07-28 protocol: its session negotiated the legacy era (a server that speaks both is checked in 2026-07-28 unless its entry pins `legacy`)
          skip  cache-hints                  the server does not speak the 2026-07-28 protocol: its session negotiated the legacy era (a server that speaks both is checked in 2026-07-28 unless its entry pins `legacy`)
          skip  input-required               the server does not speak the 2026-07-28 protocol: its session negotiated the legacy era (a server that speaks both is checked in 2026-07-28 unless its entry pins `legacy`)
          skip  subscriptions-listen         the server does not speak the 2026-07-28 protocol: its session negotiated the legacy era (a server that speaks both is checked in 2026-07-28 unless its entry pins `legacy`)
          skip  unknown-resource             the server does not speak the 2026-07-28 protocol: its session negotiated the legacy era (a server that speaks both is checked in 2026-07-28 unless its entry pins `legacy`)
          skip  error-codes                  the server does not speak the 2026-07-28 protocol: its session negotiated the legacy era (a server that speaks both is checked in 2026-07-28 unless its entry pins `legacy`)
          legacy: <n> passed, 0 failed, 0 warnings, <n> skipped in N s

        modern (http, modern era, protocol 2026-07-28, server switchboard-example 0.1.0)
          skip  stdout-purity                applies to stdio servers only: over HTTP, stdout is not the protocol channel
          skip  prompts-resources            the server lists no prompt or resource to fetch (or declares neither)
          skip  http-session                 the entry pins the 2026-07-28 protocol, which has no sessions
          skip  sse-priming                  applies to the legacy era, and the entry pins 2026-07-28
          skip  input-required               no tool the checker called (`echo`, `add`) answered `input_required`; name one that asks for input with --call TOOL ARGS
          skip  subscriptions-listen         the server declares `listChanged` on no list, so there is no change to listen for (resource subscriptions need a resource to follow and are not probed)
          skip  unknown-resource             the server declares no `resources` (or `server/discover` failed)
          modern: <n> passed, 0 failed, 0 warnings, <n> skipped in N s

        all servers: <n> passed, 0 failed, 0 warnings, <n> skipped"#]].assert_eq(&summary);
}

fn good_and_ignores_cancel() -> std::path::PathBuf {
    config(serde_json::json!({
        "good": fixture_entry(&[]),
        "stubborn-cancel": fixture_entry(&["--mode", "ignores-cancel"]),
    }))
}

#[test]
fn json_and_junit_reports_and_exit_1_on_failure() {
    let cfg = good_and_ignores_cancel();
    let junit = cfg.with_extension("junit.xml");
    let run = switchboard(&[
        "check",
        "--config",
        &cfg.display().to_string(),
        "--json",
        "--junit",
        &junit.display().to_string(),
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let report: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON on stdout");
    assert_eq!(report["format"], "switchboard-check-report/1");
    assert_eq!(report["passed"], false);
    assert_eq!(report["summary"]["fail"], 1);
    let names: Vec<&str> = report["servers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert_eq!(names, ["good", "stubborn-cancel"]);
    let xml = std::fs::read_to_string(&junit).expect("junit file");
    assert_eq!(xml.matches("<testsuite ").count(), 2);
    assert!(xml.contains("name=\"cancellation\""), "{xml}");
    assert_eq!(xml.matches("<failure ").count(), 1, "{xml}");
}

#[test]
fn a_baseline_excuses_known_failures_and_flags_stale_entries() {
    let cfg = good_and_ignores_cancel();
    let baseline = cfg.with_extension("baseline.yml");
    // `cancelation` is misspelt: it reads as a server name, and is said to match nothing.
    std::fs::write(
        &baseline,
        "server:\n  - stubborn-cancel:cancellation\n  - cancelation\n",
    )
    .expect("write");
    let run = switchboard(&[
        "check",
        "--config",
        &cfg.display().to_string(),
        "--baseline",
        &baseline.display().to_string(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(
        run.stdout.contains("  fail* cancellation"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("expected by the baseline: stubborn-cancel:cancellation"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(
            "baseline entries that match no check of the servers checked here (a misspelt check \
             id reads as a server name): cancelation (line 3)"
        ),
        "{}",
        run.stdout
    );

    std::fs::write(
        &baseline,
        "server:\n  - stubborn-cancel:cancellation\n  - good:shutdown\n",
    )
    .expect("write");
    let run = switchboard(&[
        "check",
        "--config",
        &cfg.display().to_string(),
        "--baseline",
        &baseline.display().to_string(),
        "good",
        "stubborn-cancel",
    ]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout
            .contains("stale baseline entries (they pass now: remove them): good:shutdown"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_written_baseline_expects_exactly_what_the_run_found() {
    let cfg = good_and_ignores_cancel();
    let baseline = cfg.with_extension("written-baseline.yml");
    let config = cfg.display().to_string();
    let path = baseline.display().to_string();
    let written = switchboard(&["check", "--config", &config, "--write-baseline", &path]);
    assert_eq!(
        written.code, 1,
        "the run itself still fails: {}",
        written.stdout
    );
    let text = std::fs::read_to_string(&baseline).expect("the baseline is written");
    // Each entry, without its comment (the summary quotes what was measured).
    let entries: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("  - "))
        .map(|l| l.split("  #").next().unwrap_or(l))
        .collect();
    let adopted = switchboard(&["check", "--config", &config, "--baseline", &path]);
    expect_test::expect![[r#"
        switchboard check: wrote the baseline FILE (1 entry); `--baseline FILE` expects it
          - "stubborn-cancel:cancellation"
        with it: exit 0"#]]
    .assert_eq(&format!(
        "{}\n{}\nwith it: exit {}",
        written.stderr.trim_end().replace(&path, "FILE"),
        entries.join("\n"),
        adopted.code
    ));
}

#[test]
fn an_http_entry_is_checked_over_streamable_http() {
    let server = HttpServer::fixture(&[]);
    let cfg = config(serde_json::json!({
        "fixture-http": {"type": "http", "url": server.url(), "headers": {"Authorization": "Bearer hunter2-secret"}},
    }));
    let run = switchboard(&["check", "--config", &cfg.display().to_string()]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(!run.stdout.contains("hunter2-secret") && !run.stderr.contains("hunter2-secret"));
    expect![[r#"
        fixture-http (http, legacy era, protocol 2025-11-25, server switchboard-fixture 0.1.0)
          pass  initialize                   handshake answered in N ms (legacy era, protocol 2025-11-25)
          pass  protocol-version             legacy era: asked for 2025-11-25, the server agreed
          pass  capabilities                 declared: tools, prompts, resources, completions; each declared list answers, nothing undeclared was used
          skip  stdout-purity                applies to stdio servers only: over HTTP, stdout is not the protocol channel
          pass  tools-list                   6 tools in 1 page(s)
          pass  pagination                   one page, no `nextCursor`
          pass  tool-names                   6 unique names, all valid
          pass  input-schemas                6 input schemas are valid JSON Schemas with an object root
          pass  no-credentials               35 texts scanned, nothing credential-looking
          pass  tools-call                   `echo` answered a call with arguments derived from its schema
          pass  results-bounded              largest result 56 bytes (limit 102400)
          pass  invalid-input                `echo` rejected schema-violating arguments (`text` given a number where the schema says type "string"), an unknown tool was answered, the server still answers
          pass  errors-actionable            errors name the offending field and the unknown tool
          pass  unknown-tool                 reported as JSON-RPC error -32602
          pass  response-ids                 16 responses, each with the id of its request
          pass  notifications-not-responses  every request got a response
          pass  wire-schema                  16 messages the server sent match the 2025-11-25 schema
          skip  progress                     no progress notification came (the checker asks for progress only on the long call of `cancellation`)
          pass  cancellation                 `slow` cancelled after N ms: no result and no progress within N ms, the server still answers
          pass  reconnect                    outstanding `tools/call` rejected when the connection was dropped; a fresh connection initialized and listed the same 6 tools
          pass  shutdown                     DELETE ended the session (HTTP 200); afterwards its id gets 404
          pass  utilities                    `ping` is answered with an empty result (no `logging` declared)
          pass  prompts-resources            `prompts/get` of `greet`, `completion/complete` of `greet`'s `name`, `resources/read` of `fixture://readme`, `resources/subscribe` of `fixture://readme`, `resources/unsubscribe` of `fixture://readme` answered as specified
          pass  http-origin                  a POST `initialize` with `Origin: http://evil.example` was refused with 403, and with the server's own Origin served
          pass  http-session                 the issued session id is accepted; a made-up one gets 404, none at all 400
          pass  http-responses               `initialize` and `ping` are answered with 200 and a JSON-RPC response in `application/json` or `text/event-stream`; the notification gets 202 with no body; the session id (if any) is visible ASCII, issued at initialization
          pass  sse-priming                  the event stream answering `ping` opened with a priming event (id `2-0`, empty data)
          skip  http-notifications           the server does not speak the 2026-07-28 protocol: its session negotiated the legacy era (a server that speaks both is checked in 2026-07-28 unless its entry pins `legacy`)
          skip  discover                     the server does not speak the 2026-07-28 protocol: its session negotiated the legacy era (a server that speaks both is checked in 2026-07-28 unless its entry pins `legacy`)
          skip  request-meta                 the server does not speak the 2026-07-28 protocol: its session negotiated the legacy era (a server that speaks both is checked in 2026-07-28 unless its entry pins `legacy`)
          skip  unsupported-version          the server does not speak the 2026-07-28 protocol: its session negotiated the legacy era (a server that speaks both is checked in 2026-07-28 unless its entry pins `legacy`)
          skip  http-headers                 the server does not speak the 2026-07-28 protocol: its session negotiated the legacy era (a server that speaks both is checked in 2026-07-28 unless its entry pins `legacy`)
          skip  param-headers                the server does not speak the 2026-07-28 protocol: its session negotiated the legacy era (a server that speaks both is checked in 2026-07-28 unless its entry pins `legacy`)
          skip  removed-methods              the server does not speak the 2026-07-28 protocol: its session negotiated the legacy era (a server that speaks both is checked in 2026-07-28 unless its entry pins `legacy`)
          skip  cache-hints                  the server does not speak the 2026-07-28 protocol: its session negotiated the legacy era (a server that speaks both is checked in 2026-07-28 unless its entry pins `legacy`)
          skip  input-required               the server does not speak the 2026-07-28 protocol: its session negotiated the legacy era (a server that speaks both is checked in 2026-07-28 unless its entry pins `legacy`)
          skip  subscriptions-listen         the server does not speak the 2026-07-28 protocol: its session negotiated the legacy era (a server that speaks both is checked in 2026-07-28 unless its entry pins `legacy`)
          skip  unknown-resource             the server does not speak the 2026-07-28 protocol: its session negotiated the legacy era (a server that speaks both is checked in 2026-07-28 unless its entry pins `legacy`)
          skip  error-codes                  the server does not speak the 2026-07-28 protocol: its session negotiated the legacy era (a server that speaks both is checked in 2026-07-28 unless its entry pins `legacy`)
          fixture-http: <n> passed, 0 failed, 0 warnings, <n> skipped in N s
    "#]]
    .assert_eq(&normalize(&run.stdout));
}

#[test]
fn http_defects_and_unreachable_http_servers_fail_the_run_with_evidence() {
    let open = HttpServer::fixture(&["--http-fault", "no-origin-check"]);
    let cfg = config(serde_json::json!({
        "open-origin": {"type": "http", "url": open.url()},
        "gone": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer hunter2-secret"}},
    }));
    let run = switchboard(&["check", "--config", &cfg.display().to_string(), "--json"]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert!(!run.stdout.contains("hunter2-secret") && !run.stderr.contains("hunter2-secret"));
    let report: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON on stdout");
    let failed = |server: usize| -> Vec<String> {
        report["servers"][server]["checks"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| c["status"] == "fail")
            .filter_map(|c| c["id"].as_str().map(str::to_owned))
            .collect()
    };
    assert_eq!(report["servers"][0]["transport"], "http");
    assert_eq!(failed(0), ["http-origin"]);
    let origin = report["servers"][0]["checks"]
        .as_array()
        .and_then(|checks| checks.iter().find(|c| c["id"] == "http-origin"))
        .expect("http-origin");
    let exchange = &origin["evidence"]["exchanges"][0];
    assert_eq!(exchange["sent"]["headers"]["Origin"], "http://evil.example");
    assert_eq!(exchange["received"]["status"], 200);
    assert_eq!(failed(1), ["initialize"]);
}

/// `--call TOOL ARGS` takes ARGS in the forms `call` takes: key=value pairs (one quoted
/// word) typed by the tool's schema, refused as `call` refuses them.
#[test]
fn check_calls_take_key_value_pairs_typed_by_the_tools_schema() {
    let cfg = config(serde_json::json!({ "good": fixture_entry(&[]) }));
    let cfg = cfg.display().to_string();
    let typed = switchboard(&[
        "check", "--json", "--config", &cfg, "good", "--call", "add", "a=2 b=3",
    ]);
    let report: serde_json::Value = serde_json::from_str(&typed.stdout).expect("a JSON report");
    let tools_call = report["servers"][0]["checks"]
        .as_array()
        .and_then(|checks| checks.iter().find(|c| c["id"] == "tools-call"))
        .expect("tools-call");
    let sent = &tools_call["evidence"]["exchanges"][0]["sent"];
    expect![[r#"pass: 1 call(s) named with --call succeeded; sent {"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}"#]]
    .assert_eq(&format!(
        "{}: {}; sent {sent}",
        tools_call["status"].as_str().unwrap_or_default(),
        tools_call["summary"].as_str().unwrap_or_default()
    ));

    let mistyped = switchboard(&[
        "check",
        "--config",
        &cfg,
        "good",
        "--call",
        "add",
        "a=two b=3",
    ]);
    assert_eq!(mistyped.code, 2, "{}", mistyped.stderr);
    expect![[r#"
        switchboard: --call add on server `good`: `a` expects an integer, got `two`
    "#]]
    .assert_eq(&mistyped.stderr);
}

#[test]
fn usage_and_configuration_errors_exit_2() {
    let cfg = good_and_ignores_cancel();
    let cfg = cfg.display().to_string();
    let unknown = switchboard(&["check", "--config", &cfg, "nope"]);
    assert_eq!(unknown.code, 2, "{}", unknown.stderr);
    assert!(
        unknown.stderr.contains("no server named `nope`"),
        "{}",
        unknown.stderr
    );

    let bad_call = switchboard(&["check", "--config", &cfg, "--call", "echo", "{text:"]);
    assert_eq!(bad_call.code, 2);
    assert!(
        bad_call.stderr.contains("--call: invalid tool call `echo`"),
        "{}",
        bad_call.stderr
    );

    let missing = switchboard(&["check", "--config", "/nonexistent/mcp.json"]);
    assert_eq!(missing.code, 2);

    let baseline = std::path::Path::new(&cfg).with_extension("bad.yml");
    std::fs::write(&baseline, "server:\n  - good:no-such-check\n").expect("write");
    let bad_baseline = switchboard(&[
        "check",
        "--config",
        &cfg,
        "--baseline",
        &baseline.display().to_string(),
    ]);
    assert_eq!(bad_baseline.code, 2);
    assert!(
        bad_baseline
            .stderr
            .contains("unknown check id `no-such-check`"),
        "{}",
        bad_baseline.stderr
    );

    let bad_timeout = switchboard(&["check", "--timeout", "soon"]);
    assert_eq!(bad_timeout.code, 2);
}

#[test]
fn a_server_that_is_not_running_is_said_to_be_unreachable_not_broken() {
    // A port nothing listens on: bound, then let go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let cfg = config(serde_json::json!({ "down": {"type": "http", "url": url} }));
    let cfg = cfg.display().to_string();
    let check = switchboard(&["check", "--config", &cfg]);
    let tools = switchboard(&["tools", "--config", &cfg]);
    let first_lines: Vec<String> = check
        .stdout
        .lines()
        .take(4)
        .chain(tools.stderr.lines())
        .map(|line| line.replace(&port.to_string(), "PORT"))
        .map(|line| match line.split_once("): ") {
            // The OS's own words for the refusal vary; ours come first.
            Some((ours, _)) if line.contains("could not reach") => format!("{ours}): …"),
            _ => line,
        })
        .collect();
    expect![[r#"
        1 3
        down (http)
          FAIL  initialize                   nothing answers at http://127.0.0.1:PORT/mcp: server `down`: could not reach http://127.0.0.1:PORT/mcp (is the server running? start it, or correct the entry's `url`): …
                spec: basic/lifecycle#initialization (error)
                fix:  Start the server (or correct the entry's `url`), then check again: no server answered, so none of its behaviour was checked.
        switchboard: server `down`: could not reach http://127.0.0.1:PORT/mcp (is the server running? start it, or correct the entry's `url`): …"#]].assert_eq(&format!(
        "{} {}\n{}",
        check.code,
        tools.code,
        first_lines.join("\n")
    ));
}
