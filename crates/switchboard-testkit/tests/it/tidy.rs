//! Machine checks of the invariants ARCHITECTURE.md states as absences.

use std::fs;
use std::path::{Path, PathBuf};

use switchboard_testkit::locate::workspace_root;

/// Every file under `dir` whose name ends in `.{extension}`, with its path relative to the
/// workspace root.
fn files_under(dir: &str, extension: &str) -> Vec<(String, String)> {
    fn walk(dir: &Path, extension: &str, out: &mut Vec<PathBuf>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, extension, out);
            } else if path.extension().is_some_and(|e| e == extension) {
                out.push(path);
            }
        }
    }
    let root = workspace_root();
    let mut paths = Vec::new();
    walk(&root.join(dir), extension, &mut paths);
    paths
        .into_iter()
        .map(|path| {
            let text = fs::read_to_string(&path).unwrap_or_default();
            let relative = path
                .strip_prefix(&root)
                .unwrap_or(&path)
                .display()
                .to_string();
            (relative, text)
        })
        .collect()
}

/// Every `.rs` file under `crates/`, with its path relative to the workspace root.
fn rust_files() -> Vec<(String, String)> {
    files_under("crates", "rs")
}

#[test]
fn every_rust_file_starts_with_a_doc_comment() {
    let missing: Vec<String> = rust_files()
        .into_iter()
        .filter(|(_, text)| !text.trim_start().starts_with("//!"))
        .map(|(path, _)| path)
        .collect();
    assert!(
        missing.is_empty(),
        "files without a leading `//!` comment: {missing:#?}"
    );
}

#[test]
fn only_the_wire_crate_starts_processes() {
    // Test code, fixtures (test peers) and the benchmark harness may start processes;
    // product crates may not, except switchboard-wire and the CLI's browser opener (one
    // file, for `login`).
    let allowed = |path: &str| {
        path.starts_with("crates/switchboard-wire/")
            || path == "crates/switchboard-cli/src/browser.rs"
            // Runs at build time (asks git for the commit), not in the product.
            || path == "crates/switchboard-cli/build.rs"
            // The sandbox launcher replaces itself with the server (`exec`): no child.
            || path == "crates/switchboard-sandbox/src/launch.rs"
            || path.starts_with("crates/switchboard-testkit/")
            || path.starts_with("crates/switchboard-bench/")
            || path.contains("/tests/")
    };
    let offenders: Vec<String> = rust_files()
        .into_iter()
        .filter(|(path, text)| {
            !allowed(path) && (text.contains("Command::new") || text.contains("process::Command"))
        })
        .map(|(path, _)| path)
        .collect();
    assert!(
        offenders.is_empty(),
        "processes started outside switchboard-wire: {offenders:#?}"
    );
}

/// The code of a source file without its unit tests (by convention the last item).
fn without_tests(text: &str) -> &str {
    text.find("#[cfg(test)]").map_or(text, |at| &text[..at])
}

#[test]
fn the_wire_crate_knows_no_mcp() {
    let root = workspace_root();
    let methods = fs::read_to_string(root.join("crates/switchboard-protocol/src/methods.rs"))
        .expect("methods.rs");
    let names: Vec<String> = methods
        .lines()
        .filter_map(|line| line.trim().strip_prefix("pub const "))
        .filter_map(|rest| rest.split_once("= \"").map(|(_, value)| value))
        .filter_map(|value| value.split_once('"').map(|(name, _)| format!("\"{name}\"")))
        .collect();
    assert!(names.len() > 10, "read the method names: {names:?}");
    let codes =
        fs::read_to_string(root.join("crates/switchboard-protocol/src/lib.rs")).expect("lib.rs");
    let codes: Vec<String> = codes
        .lines()
        .filter_map(|line| line.trim().strip_prefix("pub const "))
        .filter_map(|rest| rest.split_once(": i64 = ").map(|(_, value)| value))
        .map(|value| value.trim_end_matches(';').to_owned())
        .collect();
    assert!(
        codes.iter().any(|c| c == "-32020"),
        "read the MCP error codes: {codes:?}"
    );
    let mut found = Vec::new();
    for (path, text) in rust_files() {
        if !path.starts_with("crates/switchboard-wire/src/") {
            continue;
        }
        let code = without_tests(&text);
        let meta_prefix = "\"io.modelcontextprotocol/".to_owned();
        for word in names.iter().chain(&codes).chain([&meta_prefix]) {
            if code.contains(word.as_str()) {
                found.push(format!("{path}: {word}"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "switchboard-wire names MCP methods or error codes outside its tests (MCP belongs to \
         protocol, session and http): {found:?}"
    );
}

#[test]
fn no_test_reads_the_runtimes_own_journal() {
    // Tests observe from outside (the process table, what a host or a child sees): a
    // runtime that records the right order while doing the wrong thing must fail them.
    let call = [".journal", "()"].concat();
    let offenders: Vec<String> = rust_files()
        .into_iter()
        .filter(|(path, text)| path.contains("/tests/") && text.contains(&call))
        .map(|(path, _)| path)
        .collect();
    assert!(
        offenders.is_empty(),
        "tests reading Runtime::journal: {offenders:#?}"
    );
}

#[test]
fn no_test_is_ignored() {
    let marker = ["#[", "ignore"].concat();
    let offenders: Vec<String> = rust_files()
        .into_iter()
        .filter(|(_, text)| text.contains(&marker))
        .map(|(path, _)| path)
        .collect();
    assert!(offenders.is_empty(), "ignored tests: {offenders:#?}");
}

/// Every crate's library runs its doctests (`cargo test` compiles the examples in the docs).
#[test]
fn library_crates_run_their_doctests() {
    let root = workspace_root();
    let mut offenders = Vec::new();
    for entry in fs::read_dir(root.join("crates"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let manifest = fs::read_to_string(entry.path().join("Cargo.toml")).unwrap_or_default();
        if manifest.contains("[lib]\ndoctest = false") {
            offenders.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    assert!(
        offenders.is_empty(),
        "crates whose library skips its doctests: {offenders:?}"
    );
}

/// README.md and every Markdown file under docs/, with its path relative to the workspace
/// root.
fn markdown_files() -> Vec<(String, String)> {
    let readme = fs::read_to_string(workspace_root().join("README.md")).unwrap_or_default();
    let mut files = vec![("README.md".to_owned(), readme)];
    files.extend(files_under("docs", "md"));
    files
}

/// A Rust snippet in the docs compiles: its file is a library's doctest
/// (`#[cfg(doctest)] #[doc = include_str!("../../../docs/….md")]`), so `cargo test` builds
/// every block, and no block opts out with `ignore`.
#[test]
fn every_rust_snippet_in_the_docs_is_compiled() {
    let sources = rust_files();
    let mut problems = Vec::new();
    for (path, text) in markdown_files() {
        let fences: Vec<&str> = text
            .lines()
            .map(str::trim_start)
            .filter(|line| line.starts_with("```rust"))
            .collect();
        if fences.is_empty() {
            continue;
        }
        if fences.iter().any(|fence| fence.contains("ignore")) {
            problems.push(format!("{path}: a ```rust block is marked `ignore`"));
        }
        let included = format!("include_str!(\"../../../{path}\")");
        let compiled = sources
            .iter()
            .any(|(_, source)| source.contains("#[cfg(doctest)]") && source.contains(&included));
        if !compiled {
            problems.push(format!(
                "{path} has ```rust blocks but no library includes it as a doctest"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The `[dependencies]` table of a manifest (not dev- or build-dependencies).
fn dependencies_section(manifest: &str) -> &str {
    manifest
        .split("\n[dependencies]")
        .nth(1)
        .map(|rest| rest.split("\n[").next().unwrap_or(""))
        .unwrap_or("")
}

/// Each workspace crate's short name (`wire` for `switchboard-wire`) with the workspace
/// crates it depends on (normal dependencies only), sorted.
fn actual_crate_graph() -> Vec<(String, Vec<String>)> {
    let root = workspace_root();
    let mut graph = Vec::new();
    for entry in fs::read_dir(root.join("crates"))
        .expect("crates/")
        .flatten()
    {
        let Ok(manifest) = fs::read_to_string(entry.path().join("Cargo.toml")) else {
            continue;
        };
        let name = entry.file_name().to_string_lossy().into_owned();
        let short = name.trim_start_matches("switchboard-").to_owned();
        let mut edges: Vec<String> = dependencies_section(&manifest)
            .lines()
            .filter_map(|line| line.trim_start().strip_prefix("switchboard-"))
            .filter_map(|rest| rest.split([' ', '=', '.']).next())
            .map(str::to_owned)
            .collect();
        edges.sort();
        graph.push((short, edges));
    }
    graph.sort();
    graph
}

/// The graph ARCHITECTURE.md's "Dependency graph (workspace edges…):" paragraph states:
/// `` `a` → `b`, `c` `` for edges, `` `x` and `y` depend on no workspace crate `` for none.
fn documented_crate_graph() -> Vec<(String, Vec<String>)> {
    let text = architecture();
    let start = text
        .find("Dependency graph (workspace edges")
        .expect("ARCHITECTURE.md states the dependency graph");
    let paragraph = text[start..].split("\n\n").next().unwrap_or("");
    let paragraph = paragraph.split_once("):").map_or("", |(_, rest)| rest);
    let names = |part: &str| -> Vec<String> {
        part.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    };
    let mut graph = Vec::new();
    for statement in paragraph.split(';') {
        match statement.split_once('→') {
            Some((from, to)) => {
                let mut edges = names(to);
                edges.sort();
                for from in names(from) {
                    graph.push((from, edges.clone()));
                }
            }
            None => graph.extend(names(statement).into_iter().map(|name| (name, Vec::new()))),
        }
    }
    graph.sort();
    graph
}

#[test]
fn the_crate_graph_is_the_documented_one() {
    let actual = actual_crate_graph();
    let documented = documented_crate_graph();
    let render = |graph: &[(String, Vec<String>)]| {
        graph
            .iter()
            .map(|(from, to)| format!("{from} -> {}", to.join(", ")))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(
        render(&documented),
        render(&actual),
        "ARCHITECTURE.md's dependency graph (left) differs from the manifests (right): \
         every crate under crates/ is named there with its workspace dependencies"
    );
}

#[test]
fn the_shipped_binary_links_no_test_fixture() {
    // The testkit's fixture has deliberately broken modes (ignoring SIGTERM, forking
    // grandchildren); the `switchboard` binary serves its bundled example on its own.
    let manifest = fs::read_to_string(workspace_root().join("crates/switchboard-cli/Cargo.toml"))
        .expect("the CLI's manifest");
    let normal: String = manifest
        .split("\n[")
        .filter(|table| {
            let name = table.split(']').next().unwrap_or("");
            name.ends_with("dependencies") && !name.ends_with("dev-dependencies")
        })
        .collect();
    assert!(
        !normal.contains("switchboard-testkit"),
        "switchboard-cli depends on switchboard-testkit outside [dev-dependencies]"
    );
}

#[test]
fn library_crates_stay_free_of_binary_only_dependencies() {
    let root = workspace_root();
    for library in [
        "switchboard-text",
        "switchboard-wire",
        "switchboard-protocol",
        "switchboard-session",
        "switchboard-config",
        "switchboard-gateway",
    ] {
        let manifest = fs::read_to_string(root.join("crates").join(library).join("Cargo.toml"))
            .expect("manifest");
        let dependencies = dependencies_section(&manifest);
        for forbidden in ["anyhow", "clap", "tracing-subscriber"] {
            assert!(
                !dependencies
                    .lines()
                    .any(|line| line.trim_start().starts_with(forbidden)),
                "{library} depends on {forbidden}, which belongs in binaries only"
            );
        }
    }
}

#[test]
fn the_server_crates_read_no_configuration() {
    let root = workspace_root();
    for server in ["switchboard-server", "switchboard-gateway"] {
        let manifest = fs::read_to_string(root.join("crates").join(server).join("Cargo.toml"))
            .unwrap_or_default();
        assert!(
            !manifest.contains("switchboard-config"),
            "{server} serves the runtime it is given; configuration is its owner's"
        );
    }
    let offenders: Vec<String> = rust_files()
        .into_iter()
        .filter(|(path, text)| {
            (path.starts_with("crates/switchboard-server/src/")
                || path.starts_with("crates/switchboard-gateway/src/"))
                && (text.contains("std::fs") || text.contains("tokio::fs"))
        })
        .map(|(path, _)| path)
        .collect();
    assert!(
        offenders.is_empty(),
        "files read by the server crates: {offenders:#?}"
    );
}

#[test]
fn the_cli_writes_to_the_terminal_only_through_its_terminal_module() {
    // `terminal.rs` sanitises everything it writes; any other way out of the CLI would
    // let a server's control sequences reach the terminal raw.
    let raw_paths = [
        "print!(",
        "println!(",
        "eprint!(",
        "eprintln!(",
        "dbg!(",
        "io::stdout",
        "io::stderr",
        "stdout()",
        "stderr()",
        "print_stdout",
        "print_stderr",
    ];
    let offenders: Vec<String> = rust_files()
        .into_iter()
        .filter(|(path, _)| {
            path.starts_with("crates/switchboard-cli/src/")
                && path != "crates/switchboard-cli/src/terminal.rs"
        })
        .flat_map(|(path, text)| {
            raw_paths
                .iter()
                .filter(|raw| text.contains(**raw))
                .map(|raw| format!("{path}: {raw}"))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        offenders.is_empty(),
        "the CLI writes past its terminal module: {offenders:#?}"
    );
}

/// The text of every assertion macro call in `text` (`assert!(…)`, `assert_eq!(…)`, …),
/// from its name to its balanced closing parenthesis.
fn assertions(text: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("assert") {
        let call = &rest[at..];
        let Some(open) = call.find('(') else { break };
        let name = &call[..open];
        let is_macro = name.ends_with('!')
            && name[..name.len() - 1]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !is_macro {
            rest = &call["assert".len()..];
            continue;
        }
        let mut depth = 0usize;
        let mut end = call.len();
        for (offset, c) in call[open..].char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + offset + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        found.push(&call[..end]);
        rest = &call[end..];
    }
    found
}

#[test]
fn no_test_asserts_on_wall_clock_time() {
    // Tests bound their waits (a hang detector panics) and assert outcomes and order;
    // a speed is measured by the benchmarks, never asserted.
    let clock = ["elapsed", "()"].concat();
    let offenders: Vec<String> = rust_files()
        .into_iter()
        .filter(|(path, _)| path.contains("/tests/"))
        .flat_map(|(path, text)| {
            assertions(&text)
                .into_iter()
                .filter(|call| call.contains(&clock))
                .map(|call| format!("{path}: {}", call.lines().next().unwrap_or("")))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        offenders.is_empty(),
        "tests asserting on wall-clock time: {offenders:#?}"
    );
}

/// ARCHITECTURE.md's text, which is a map: short enough to read at one sitting.
fn architecture() -> String {
    fs::read_to_string(workspace_root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md")
}

#[test]
fn the_architecture_map_stays_within_1500_words() {
    let words = architecture().split_whitespace().count();
    assert!(
        words <= 1500,
        "ARCHITECTURE.md has {words} words; it is a map of at most 1,500: move details into \
         the modules' `//!` docs"
    );
}

/// What an invariant's "Checked by" names: `file.rs::test_fn` or fault `case-name`.
#[derive(Debug, PartialEq)]
enum Checker {
    TestFn { file: String, function: String },
    FaultCase(String),
}

/// The invariants section's bullets with what each names as its checker; a bullet that
/// says neither "Checked by" nor "Unchecked" is returned with `None`.
fn invariant_checkers(text: &str) -> Vec<(String, Option<Vec<Checker>>)> {
    let section = text
        .split("## Invariants")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .unwrap_or("");
    let mut bullets = Vec::new();
    for bullet in section.split("\n- ").skip(1) {
        let bullet = bullet.trim().to_owned();
        let Some((_, checked_by)) = bullet.split_once("Checked by") else {
            let unchecked = bullet.contains("Unchecked.");
            bullets.push((bullet, unchecked.then(Vec::new)));
            continue;
        };
        let quoted: Vec<&str> = checked_by.split('`').collect();
        let mut checkers = Vec::new();
        for (at, part) in quoted.iter().enumerate().skip(1).step_by(2) {
            let before = quoted[at - 1];
            if before.trim_end().ends_with("fault") {
                checkers.push(Checker::FaultCase((*part).to_owned()));
            } else if let Some((file, function)) = part.split_once(".rs::") {
                checkers.push(Checker::TestFn {
                    file: format!("{file}.rs"),
                    function: function.to_owned(),
                });
            }
        }
        bullets.push((bullet, Some(checkers)));
    }
    bullets
}

#[test]
fn every_invariant_names_a_test_that_exists_or_says_unchecked() {
    let files = rust_files();
    let bullets = invariant_checkers(&architecture());
    assert!(bullets.len() >= 10, "ARCHITECTURE.md lists its invariants");
    let mut wrong = Vec::new();
    for (bullet, checkers) in &bullets {
        let Some(checkers) = checkers else {
            wrong.push(format!(
                "says neither \"Checked by\" nor \"Unchecked.\": {bullet}"
            ));
            continue;
        };
        for checker in checkers {
            let found = match checker {
                Checker::TestFn { file, function } => files.iter().any(|(path, text)| {
                    (path.ends_with(&format!("/{file}")))
                        && text.contains(&format!("fn {function}("))
                }),
                Checker::FaultCase(name) => files.iter().any(|(path, text)| {
                    path.contains("/tests/it/faults/")
                        && text.contains(&format!("name: \"{name}\""))
                }),
            };
            if !found {
                wrong.push(format!("names {checker:?}, which does not exist"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "ARCHITECTURE.md's invariants:\n{}",
        wrong.join("\n")
    );
}
