//! Unprefixed naming: real servers' tools published under their own names, routed through
//! the route table, and a name two servers' tools share given to the first with a finding
//! for the other.

use switchboard_runtime::naming::Naming;
use switchboard_runtime::{FindingKind, Runtime, Tool};

use crate::support::*;

#[tokio::test]
async fn unprefixed_tools_keep_their_own_names_and_the_first_keeps_a_shared_one() {
    let mark = marker("naming");
    let mut options = options(vec![
        fixture_entry("alpha", &mark, &["--mode", "bad-tool-names"]),
        fixture_entry("beta", &mark, &[]),
    ]);
    options.naming = Naming::Unprefixed;
    let runtime = Runtime::new(options);
    enabled(&runtime).await;
    let snapshot = runtime.snapshot();
    assert_eq!(snapshot.naming, Naming::Unprefixed);
    let named: Vec<String> = snapshot
        .tools
        .iter()
        .map(|t| format!("{} -> {}/{}", t.name(), t.server(), t.wire_name()))
        .collect();
    expect_test::expect![[r#"
        [
            "add -> alpha/add",
            "bad name! -> alpha/bad name!",
            "change_tools -> alpha/change_tools",
            "echo -> alpha/echo",
            "fail -> alpha/fail",
            "image -> alpha/image",
            "slow -> alpha/slow",
        ]
    "#]]
    .assert_debug_eq(&named);
    // alpha's second `echo` is dropped by the listing already; beta's tools all have names
    // alpha took first.
    let mut left_out: Vec<String> = snapshot
        .findings
        .iter()
        .filter(|f| matches!(f.kind, FindingKind::NameTaken | FindingKind::ListingProblem))
        .map(ToString::to_string)
        .collect();
    left_out.sort();
    expect_test::expect![[r#"
        [
            "alpha: ListingProblem: tools/list page 1: duplicate entry `echo`; the first one is kept",
            "beta/add: NameTaken: left out: an earlier server's tool has the same name, and names are not prefixed",
            "beta/change_tools: NameTaken: left out: an earlier server's tool has the same name, and names are not prefixed",
            "beta/echo: NameTaken: left out: an earlier server's tool has the same name, and names are not prefixed",
            "beta/fail: NameTaken: left out: an earlier server's tool has the same name, and names are not prefixed",
            "beta/image: NameTaken: left out: an earlier server's tool has the same name, and names are not prefixed",
            "beta/slow: NameTaken: left out: an earlier server's tool has the same name, and names are not prefixed",
        ]
    "#]]
    .assert_debug_eq(&left_out);
    assert_adds(&snapshot, "add").await;
    runtime.dispose().await;
    no_processes_with(&mark).await;
}
