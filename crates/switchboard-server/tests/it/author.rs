//! The authoring guide's example is the one that builds, and it passes the compatibility
//! checker as a real process, from `cargo test`, the way docs/authoring.md tells server
//! authors to check theirs.

use std::path::{Path, PathBuf};

use switchboard_check::catalog::Transport;
use switchboard_check::{EraChoice, Options, ProcessSpec, ServerSpec, Status};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn the_guide_shows_the_example_as_it_is() {
    let example = std::fs::read_to_string(
        workspace_root().join("crates/switchboard-server/examples/hello.rs"),
    )
    .expect("examples/hello.rs");
    let guide =
        std::fs::read_to_string(workspace_root().join("docs/authoring.md")).expect("the guide");
    // `no_run`: the guide's snippets are doctests, and this one would serve on stdin.
    let fenced = format!("```rust,no_run\n{example}```");
    assert!(
        guide.contains(&fenced),
        "docs/authoring.md must show crates/switchboard-server/examples/hello.rs verbatim in a \
         ```rust,no_run block"
    );
}

/// The example binary `cargo test` built beside this test (examples are built with the
/// tests: `target/<profile>/examples/`).
fn hello_example() -> PathBuf {
    let test = std::env::current_exe().expect("the test's path");
    let profile = test
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/");
    let hello = profile.join("examples").join("hello");
    assert!(
        hello.exists(),
        "{} is missing: `cargo test -p switchboard-server` builds it (with `--test it` only, \
         run `cargo build -p switchboard-server --examples` first)",
        hello.display()
    );
    hello
}

#[tokio::test]
async fn the_example_passes_the_checker_in_both_eras() {
    let mut lines = Vec::new();
    for era in [EraChoice::Auto, EraChoice::Legacy, EraChoice::Modern] {
        let mut spec = ServerSpec::stdio(
            "hello",
            ProcessSpec {
                program: hello_example().display().to_string(),
                args: vec![],
                env: vec![],
                cwd: None,
                sandbox: None,
            },
        );
        spec.era = era;
        let report = switchboard_check::run(&spec, &Options::default()).await;
        assert!(report.passed(), "{era:?}:\n{}", report.render_text());
        // What matters per check: which applicable checks were skipped (every other one
        // passed). Checks that do not apply over stdio are skipped by definition, so they
        // are not listed: a new HTTP check leaves this snapshot alone.
        let counts = report.counts();
        assert_eq!(
            counts.pass + counts.fail + counts.warn + counts.skip,
            switchboard_check::CHECKS.len()
        );
        let skipped: Vec<&str> = report
            .results
            .iter()
            .filter(|r| r.status == Status::Skip && r.def().applies_to(Transport::Stdio))
            .map(|r| r.id)
            .collect();
        lines.push(format!(
            "{era:?}: {} failed, {} warnings; skipped: {}",
            counts.fail,
            counts.warn,
            skipped.join(", ")
        ));
    }
    expect_test::expect![[r#"
        Auto: 0 failed, 0 warnings; skipped: progress, cancellation, prompts-resources, input-required, subscriptions-listen, unknown-resource
        Legacy: 0 failed, 0 warnings; skipped: progress, cancellation, prompts-resources, discover, request-meta, unsupported-version, param-headers, cache-hints, input-required, subscriptions-listen, unknown-resource, error-codes
        Modern: 0 failed, 0 warnings; skipped: progress, cancellation, prompts-resources, input-required, subscriptions-listen, unknown-resource"#]].assert_eq(&lines.join("\n"));
}
