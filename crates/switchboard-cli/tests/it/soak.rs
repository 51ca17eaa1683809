//! The chaos soak, short enough for every test run: the real `switchboard serve` over five
//! fixture servers, 2000 calls with 32 in flight while servers are killed and frozen (see
//! `switchboard_testkit::soak`; `scripts/soak.sh` runs the long one).

use switchboard_testkit::locate::{fixture_bin, workspace_root};
use switchboard_testkit::soak::{self, SoakPlan};

#[test]
#[expect(
    clippy::print_stderr,
    reason = "the soak's figures are its output; the harness shows them with --nocapture"
)]
fn the_gateway_survives_a_short_chaos_soak() {
    let mut plan = SoakPlan::new(
        env!("CARGO_BIN_EXE_switchboard").into(),
        fixture_bin(),
        2_000,
    );
    plan.work_dir = workspace_root().join("target").join("cli-tests");
    std::fs::create_dir_all(&plan.work_dir).expect("mkdir");
    let report = soak::run(&plan);
    eprintln!("{report}");
    assert!(report.passed(), "{report}");
    // Every phase opens with a kill and a freeze, so chaos happened whatever the timing.
    assert!(report.kills >= 1 && report.freezes >= 1, "{report}");
    assert_eq!(report.calls, 2_000, "{report}");
}
