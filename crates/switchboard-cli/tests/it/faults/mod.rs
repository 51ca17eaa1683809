//! The fault matrix: named hostile cases, each a hostile server (fixture mode, fixture over
//! HTTP, hand-written loopback HTTP server or one-line command), a `switchboard` command a
//! user would run against it, and the outcome that must hold — exit class, what stdout and
//! stderr say (an `expect-test` snapshot), no hang (a deadline that only detects one), no
//! process left behind, and where the case is about growth, peak memory under a bound
//! derived from the caps in code. The cases are data (`cases.rs`); `docs/dev/faults.md`
//! lists them and is checked against the table.
//!
//! - `fault_matrix` runs every case that holds ([`cases::CASES`]), several at a time.
//! - `open_cases_still_fail` runs the open ones ([`cases::PENDING`]: the defects
//!   being fixed elsewhere, and what the matrix found) and asserts each still fails; when
//!   one holds, it moves to `CASES` with a snapshot.
//!
//! `SWITCHBOARD_FAULT_JOBS` sets how many cases run at once (default 4);
//! `SWITCHBOARD_FAULT_ONLY=NAME` runs only the cases whose name contains NAME;
//! `SWITCHBOARD_FAULT_EXPLAIN=1` makes `open_cases_still_fail` fail with what each open
//! case gets wrong today (to see that it fails for the reason it names).

mod canned;
mod cases;
mod doc;
mod run;
mod table;
mod verify;

use std::panic::AssertUnwindSafe;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use run::{Harness, Observed, run_case};
use table::Case;

/// Cases run at once unless `SWITCHBOARD_FAULT_JOBS` says otherwise.
const DEFAULT_JOBS: usize = 4;

fn jobs() -> usize {
    std::env::var("SWITCHBOARD_FAULT_JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(DEFAULT_JOBS)
}

fn selected(cases: &'static [Case]) -> Vec<&'static Case> {
    let only = std::env::var("SWITCHBOARD_FAULT_ONLY").ok();
    cases
        .iter()
        .filter(|c| only.as_deref().is_none_or(|o| c.name.contains(o)))
        .collect()
}

/// Runs `cases` on a few threads; returns each case's complaints (empty when it holds).
fn run_all(
    harness: &Harness,
    cases: &[&'static Case],
    judge: &(dyn Fn(&Case, &Observed) -> Vec<String> + Sync),
) -> Vec<(&'static str, Vec<String>)> {
    let next = AtomicUsize::new(0);
    let results = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..jobs().min(cases.len()) {
            scope.spawn(|| {
                while let Some(case) = cases.get(next.fetch_add(1, Ordering::SeqCst)) {
                    let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
                        let observed = run_case(harness, case);
                        judge(case, &observed)
                    }));
                    let problems = outcome.unwrap_or_else(|panic| {
                        let message = panic
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                            .unwrap_or_else(|| "panicked".to_owned());
                        vec![message]
                    });
                    results
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push((case.name, problems));
                }
            });
        }
    });
    let mut results = results
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    results.sort_by_key(|(name, _)| *name);
    results
}

fn report(failures: &[(&str, Vec<String>)]) -> String {
    failures
        .iter()
        .map(|(name, problems)| format!("{name}:\n  - {}", problems.join("\n  - ")))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn fault_matrix() {
    let harness = Harness::new("holds");
    let cases = selected(cases::CASES);
    let results = run_all(&harness, &cases, &|case, observed| {
        let mut problems = verify::problems(case, observed);
        match &case.outcome.transcript {
            Some(expected) => {
                let transcript = verify::transcript(case, observed);
                // A mismatch panics with the diff (printed above the summary).
                if std::panic::catch_unwind(AssertUnwindSafe(|| expected.assert_eq(&transcript)))
                    .is_err()
                {
                    problems.push("what the user sees differs from the snapshot".to_owned());
                }
            }
            None => problems.push("a case that holds needs a transcript snapshot".to_owned()),
        }
        problems
    });
    let failures: Vec<_> = results.into_iter().filter(|(_, p)| !p.is_empty()).collect();
    assert!(
        failures.is_empty(),
        "{} of {} fault-matrix case(s) do not hold:\n{}",
        failures.len(),
        cases.len(),
        report(&failures)
    );
}

#[test]
fn open_cases_still_fail() {
    let harness = Harness::new("open");
    let mut complaints = Vec::new();
    let runnable = selected(cases::PENDING);
    let explain = std::env::var_os("SWITCHBOARD_FAULT_EXPLAIN").is_some();
    for (name, problems) in run_all(&harness, &runnable, &verify::problems) {
        if explain {
            complaints.push((name, problems));
        } else if problems.is_empty() {
            complaints.push((
                name,
                vec![
                    "holds now: move it to CASES with a transcript snapshot (and mark it holds)"
                        .to_owned(),
                ],
            ));
        }
    }
    assert!(complaints.is_empty(), "{}", report(&complaints));
}

#[test]
fn the_tables_are_well_formed() {
    let mut names: Vec<&str> = cases::CASES
        .iter()
        .chain(cases::PENDING)
        .chain(cases::ELSEWHERE)
        .map(|c| c.name)
        .collect();
    for name in &names {
        assert!(
            !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
            "case names are kebab-case: {name:?}"
        );
    }
    let total = names.len();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), total, "case names are unique");
    for case in cases::CASES {
        assert!(
            case.status.holds(),
            "{}: CASES holds only cases that hold",
            case.name
        );
        assert!(
            case.outcome.transcript.is_some(),
            "{}: needs a snapshot",
            case.name
        );
    }
    for case in cases::PENDING {
        assert!(
            !case.status.holds(),
            "{}: PENDING holds only open cases",
            case.name
        );
    }
    for case in cases::ELSEWHERE {
        assert!(
            case.status.elsewhere_test().is_some(),
            "{}: ELSEWHERE holds only cases another test asserts",
            case.name
        );
    }
    assert!(
        cases::CASES.len() >= 60,
        "the fault matrix promises at least 60 cases that hold; it has {}",
        cases::CASES.len()
    );
}

/// A case asserted by another test names one that exists: `path::function`, where `path`
/// (from the workspace root) defines `fn function(`.
#[test]
fn cases_tested_elsewhere_name_real_tests() {
    let mut missing = Vec::new();
    for case in cases::ELSEWHERE {
        let Some(test) = case.status.elsewhere_test() else {
            continue;
        };
        let found = test.rsplit_once("::").is_some_and(|(path, function)| {
            std::fs::read_to_string(switchboard_testkit::locate::workspace_root().join(path))
                .is_ok_and(|text| text.contains(&format!("fn {function}(")))
        });
        if !found {
            missing.push(format!("{}: no test `{test}`", case.name));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn faults_doc_lists_every_case() {
    let path = doc::path();
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let generated = doc::render(&[cases::CASES, cases::PENDING, cases::ELSEWHERE]);
    let (Some(begin), Some(end)) = (text.find(doc::BEGIN), text.find(doc::END)) else {
        panic!(
            "{} needs the markers\n{}\n{}\naround the generated case list",
            path.display(),
            doc::BEGIN,
            doc::END
        );
    };
    let current = &text[begin + doc::BEGIN.len()..end];
    let wanted = format!("\n\n{generated}");
    if current == wanted {
        return;
    }
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        let updated = format!(
            "{}{wanted}{}",
            &text[..begin + doc::BEGIN.len()],
            &text[end..]
        );
        std::fs::write(&path, updated).expect("rewrite docs/dev/faults.md");
        return;
    }
    panic!(
        "{} does not list the cases of the table (a case is in one and not the other, or \
         its row changed); run `UPDATE_EXPECT=1 cargo test -p switchboard-cli --test it faults` \
         to regenerate it",
        path.display()
    );
}
