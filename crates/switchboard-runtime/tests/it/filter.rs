//! Per-tool filtering: an entry's `enabledTools`/`disabledTools` decide which of a real
//! server's tools are published and callable, and a reload that changes only the filter
//! takes effect on the running server; a pattern that matches nothing is a finding.

use std::time::Duration;

use switchboard_runtime::sources::ServerSource;
use switchboard_runtime::{ChildAccess, FindingKind, Runtime};

use crate::support::*;

#[tokio::test]
async fn filtered_out_tools_are_neither_listed_nor_callable() {
    let mark = marker("filter");
    let runtime = Runtime::new(options(vec![
        filtered(
            fixture_entry("alpha", &mark, &[]),
            Some(&["e*", "ad?", "slow"]),
            &["slow"],
        ),
        fixture_entry("beta", &mark, &[]),
    ]));
    let report = enabled(&runtime).await;
    let snapshot = runtime.snapshot();
    expect_test::expect![[r#"
        [
            "alpha__add",
            "alpha__echo",
        ]
    "#]]
    .assert_debug_eq(&names_of(&snapshot, "alpha"));
    assert!(
        !snapshot
            .findings
            .iter()
            .any(|f| f.kind == FindingKind::UnmatchedFilter),
        "every pattern matches a tool: {:?}",
        snapshot.findings
    );
    // The other server is not filtered: it keeps every tool, `slow` included.
    assert!(snapshot.tool("beta__slow").is_some());
    let counts: Vec<(String, usize)> = report
        .servers
        .iter()
        .map(|s| (s.name.clone(), s.tools))
        .collect();
    assert_eq!(counts[0], ("alpha".to_owned(), 2), "{counts:?}");
    // A denied tool is as unknown as one that never existed, to the host and to a child.
    assert!(snapshot.tool("alpha__slow").is_none());
    assert!(snapshot.tool("alpha__fail").is_none());
    let child = runtime.child(ChildAccess::ParentServers);
    assert!(child.tool("alpha__slow").is_none() && child.tool("alpha__echo").is_some());
    assert_adds(&snapshot, "alpha__add").await;
    runtime.dispose().await;
    no_processes_with(&mark).await;
}

#[tokio::test]
async fn a_reload_that_changes_only_the_filter_applies_it_without_restarting() {
    let mark = marker("refilter");
    let first = filtered(fixture_entry("alpha", &mark, &[]), Some(&["echo"]), &[]);
    let runtime = Runtime::new(options(vec![first.clone()]));
    enabled(&runtime).await;
    assert_eq!(names_of(&runtime.snapshot(), "alpha"), ["alpha__echo"]);
    let pid = runtime.servers()[0].pid;
    assert!(pid.is_some());
    // `ech0` is a typo: it hides nothing, and a finding says so.
    let second = filtered(first, None, &["echo", "c*", "?mage", "ech0"]);
    runtime.set_source(ServerSource::Entries(vec![second]));
    let report = within("reload", Duration::from_secs(30), runtime.reload())
        .await
        .expect("reload");
    assert_eq!(report.kept, ["alpha"]);
    assert!(report.restarted.is_empty());
    assert_eq!(runtime.servers()[0].pid, pid, "the server kept its process");
    let snapshot = runtime.snapshot();
    expect_test::expect![[r#"
        [
            "alpha__add",
            "alpha__fail",
            "alpha__slow",
        ]
    "#]]
    .assert_debug_eq(&names_of(&snapshot, "alpha"));
    assert!(snapshot.tool("alpha__echo").is_none());
    let unmatched: Vec<String> = snapshot
        .findings
        .iter()
        .filter(|f| f.kind == FindingKind::UnmatchedFilter)
        .map(|f| format!("{}: {}", f.server, f.detail))
        .collect();
    expect_test::expect![[r#"
        [
            "alpha: `disabledTools[3]` matches none of the 6 tools the server lists; check its spelling",
        ]
    "#]]
    .assert_debug_eq(&unmatched);
    runtime.dispose().await;
    no_processes_with(&mark).await;
}
