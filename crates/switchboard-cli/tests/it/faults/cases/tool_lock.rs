//! Tool lock (Hardening 2, item 2): a lock beside the config that exists but cannot be
//! used stops `serve` with what is wrong and how to recreate it or do without it; no tool is
//! served past it.

use expect_test::expect;

use super::super::table::{
    Area, Case, Check, Cmd, Exit, HANG, LockFile, Outcome, ROOMY, Server, Status,
};

pub(crate) static CASES: &[Case] = &[
    Case {
        name: "tool-lock-with-bom",
        area: Area::Gateway,
        hostile: "a tool lock that starts with a UTF-8 byte order mark (another program re-saved it)",
        servers: &[Server::Fixture(&[])],
        settings: ROOMY,
        command: Cmd::ServeBesideLock {
            lock: LockFile::Bytes(b"\xef\xbb\xbf{\"format\":\"switchboard-tool-lock/1\",\"servers\":{}}\n"),
        },
        outcome: Outcome {
            exit: Exit::Usage,
            says: "`serve` refuses to start: nothing is served; the message names the lock, what is wrong with it, `scan --update` to recreate it and `--no-tool-lock` to serve without it",
            checks: &[
                Check::StderrHas("not serving: the tool lock"),
                Check::StderrHas("--update"),
                Check::StderrHas("--no-tool-lock"),
            ],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 2
                --- stdout: empty
                --- stderr
                switchboard: not serving: the tool lock `<dir>/mcp.tool-lock.json` cannot be used: it starts with a UTF-8 byte order mark (BOM): another program saved it, and Switchboard, which writes it without one, does not guess what else changed
                  it pins the tools `switchboard serve` may serve from `<dir>/mcp.json`; check what happened to it, then move it aside and run `switchboard scan --config <dir>/mcp.json --update` to pin the tools offered now (review them first), or serve without it: `switchboard serve --config <dir>/mcp.json --no-tool-lock`
            "#]]),
        },
        status: Status::Hardened { item: 2 },
    },
    Case {
        name: "tool-lock-cut-short",
        area: Area::Gateway,
        hostile: "a tool lock cut short in the middle of its JSON (a write that was killed)",
        servers: &[Server::Fixture(&[])],
        settings: ROOMY,
        command: Cmd::ServeBesideLock {
            lock: LockFile::Bytes(b"{\n  \"format\": \"switchboard-tool-lock/1\",\n  \"servers\": {\n    \"s\": {\n      \"add\": \"0f"),
        },
        outcome: Outcome {
            exit: Exit::Usage,
            says: "`serve` refuses to start: nothing is served; the message names the lock, what is wrong with it, `scan --update` to recreate it and `--no-tool-lock` to serve without it",
            checks: &[
                Check::StderrHas("not serving: the tool lock"),
                Check::StderrHas("--update"),
                Check::StderrHas("--no-tool-lock"),
            ],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 2
                --- stdout: empty
                --- stderr
                switchboard: not serving: the tool lock `<dir>/mcp.tool-lock.json` cannot be used: its JSON ends early, cut short (EOF while parsing a string at line 5 column 16)
                  it pins the tools `switchboard serve` may serve from `<dir>/mcp.json`; check what happened to it, then move it aside and run `switchboard scan --config <dir>/mcp.json --update` to pin the tools offered now (review them first), or serve without it: `switchboard serve --config <dir>/mcp.json --no-tool-lock`
            "#]]),
        },
        status: Status::Hardened { item: 2 },
    },
    Case {
        name: "tool-lock-empty",
        area: Area::Gateway,
        hostile: "an empty tool lock (a write in place that was killed after the truncation)",
        servers: &[Server::Fixture(&[])],
        settings: ROOMY,
        command: Cmd::ServeBesideLock {
            lock: LockFile::Bytes(b""),
        },
        outcome: Outcome {
            exit: Exit::Usage,
            says: "`serve` refuses to start: nothing is served; the message names the lock, what is wrong with it, `scan --update` to recreate it and `--no-tool-lock` to serve without it",
            checks: &[
                Check::StderrHas("not serving: the tool lock"),
                Check::StderrHas("--update"),
                Check::StderrHas("--no-tool-lock"),
            ],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 2
                --- stdout: empty
                --- stderr
                switchboard: not serving: the tool lock `<dir>/mcp.tool-lock.json` cannot be used: it is empty (a write that was cut short leaves it so)
                  it pins the tools `switchboard serve` may serve from `<dir>/mcp.json`; check what happened to it, then move it aside and run `switchboard scan --config <dir>/mcp.json --update` to pin the tools offered now (review them first), or serve without it: `switchboard serve --config <dir>/mcp.json --no-tool-lock`
            "#]]),
        },
        status: Status::Hardened { item: 2 },
    },
    Case {
        name: "tool-lock-other-version",
        area: Area::Gateway,
        hostile: "a tool lock of another format version",
        servers: &[Server::Fixture(&[])],
        settings: ROOMY,
        command: Cmd::ServeBesideLock {
            lock: LockFile::Bytes(b"{\"format\":\"switchboard-tool-lock/3\",\"servers\":{}}\n"),
        },
        outcome: Outcome {
            exit: Exit::Usage,
            says: "`serve` refuses to start: nothing is served; the message names the lock, what is wrong with it, `scan --update` to recreate it and `--no-tool-lock` to serve without it",
            checks: &[
                Check::StderrHas("not serving: the tool lock"),
                Check::StderrHas("--update"),
                Check::StderrHas("--no-tool-lock"),
            ],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 2
                --- stdout: empty
                --- stderr
                switchboard: not serving: the tool lock `<dir>/mcp.tool-lock.json` cannot be used: its format is "switchboard-tool-lock/3", and this Switchboard reads only "switchboard-tool-lock/2" (another version of Switchboard wrote it?)
                  it pins the tools `switchboard serve` may serve from `<dir>/mcp.json`; check what happened to it, then move it aside and run `switchboard scan --config <dir>/mcp.json --update` to pin the tools offered now (review them first), or serve without it: `switchboard serve --config <dir>/mcp.json --no-tool-lock`
            "#]]),
        },
        status: Status::Hardened { item: 2 },
    },
    Case {
        name: "tool-lock-a-directory",
        area: Area::Gateway,
        hostile: "a folder where the tool lock belongs",
        servers: &[Server::Fixture(&[])],
        settings: ROOMY,
        command: Cmd::ServeBesideLock {
            lock: LockFile::Directory,
        },
        outcome: Outcome {
            exit: Exit::Usage,
            says: "`serve` refuses to start: nothing is served; the message names the lock, what is wrong with it, `scan --update` to recreate it and `--no-tool-lock` to serve without it",
            checks: &[
                Check::StderrHas("not serving: the tool lock"),
                Check::StderrHas("--update"),
                Check::StderrHas("--no-tool-lock"),
            ],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 2
                --- stdout: empty
                --- stderr
                switchboard: not serving: the tool lock `<dir>/mcp.tool-lock.json` cannot be used: it is a folder, not a file
                  it pins the tools `switchboard serve` may serve from `<dir>/mcp.json`; check what happened to it, then move it aside and run `switchboard scan --config <dir>/mcp.json --update` to pin the tools offered now (review them first), or serve without it: `switchboard serve --config <dir>/mcp.json --no-tool-lock`
            "#]]),
        },
        status: Status::Hardened { item: 2 },
    },
    Case {
        name: "tool-lock-dangling-link",
        area: Area::Gateway,
        hostile: "a tool lock that is a symbolic link to a file that does not exist",
        servers: &[Server::Fixture(&[])],
        settings: ROOMY,
        command: Cmd::ServeBesideLock {
            lock: LockFile::DanglingLink,
        },
        outcome: Outcome {
            exit: Exit::Usage,
            says: "`serve` refuses to start: nothing is served; the message names the lock, what is wrong with it, `scan --update` to recreate it and `--no-tool-lock` to serve without it",
            checks: &[
                Check::StderrHas("not serving: the tool lock"),
                Check::StderrHas("--update"),
                Check::StderrHas("--no-tool-lock"),
            ],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 2
                --- stdout: empty
                --- stderr
                switchboard: not serving: the tool lock `<dir>/mcp.tool-lock.json` cannot be used: it is a symbolic link to a file that does not exist
                  it pins the tools `switchboard serve` may serve from `<dir>/mcp.json`; check what happened to it, then move it aside and run `switchboard scan --config <dir>/mcp.json --update` to pin the tools offered now (review them first), or serve without it: `switchboard serve --config <dir>/mcp.json --no-tool-lock`
            "#]]),
        },
        status: Status::Hardened { item: 2 },
    },
];
