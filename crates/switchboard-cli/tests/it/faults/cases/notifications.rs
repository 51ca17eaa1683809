//! Notifications, progress, cancellation.

use expect_test::expect;

use super::super::table::{Area, Case, Cmd, Exit, HANG, Outcome, ROOMY, Server, Status};

pub(crate) static CASES: &[Case] = &[
    Case {
        name: "log-message-flood",
        area: Area::Notifications,
        hostile: "10000 log notifications before the result",
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: ROOMY,
        command: Cmd::Call {
            tool: "log_flood",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the call prints `ok`",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                ok
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "progress-unknown-backwards-and-late",
        area: Area::Notifications,
        hostile: "progress for an unknown token, backwards progress, then progress after the result",
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: ROOMY,
        command: Cmd::Call {
            tool: "progress_chaos",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the call prints `ok`",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                ok
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "list-changed-storm",
        area: Area::Notifications,
        hostile: "1000 tools list changes before the result",
        servers: &[Server::Fixture(&["--mode", "hostile-answers"])],
        settings: ROOMY,
        command: Cmd::Call {
            tool: "list_changed_storm",
            args: "{}",
        },
        outcome: Outcome {
            exit: Exit::Success,
            says: "the call prints `ok`",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                ok
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
];
