//! Lists, pagination, schemas: listings a server pages, repeats or fills with bad entries.

use expect_test::expect;

use super::super::canned::Script;
use super::super::table::{
    Area, CANNED_URL, Case, Check, Cmd, Exit, HANG, Outcome, PATIENT, PATIENT_LEGACY, PROMPT,
    QUICK, ROOMY, Server, Status, frames,
};

pub(crate) static CASES: &[Case] = &[
    Case {
        name: "same-cursor-again",
        area: Area::Lists,
        hostile: r#"every page returns `nextCursor: "again"`"#,
        servers: &[Server::Fixture(&["--mode", "pagination-loop"])],
        settings: PATIENT,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed error at once: pagination loop, naming the cursor",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` broke the protocol in `tools/list`: pagination loop: cursor "again" was returned twice
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "cycling-cursors",
        area: Area::Lists,
        hostile: "cursors cycle a → b → a",
        servers: &[Server::Fixture(&["--mode", "cycling-cursors"])],
        settings: PATIENT,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed error at once: pagination loop",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` broke the protocol in `tools/list`: pagination loop: cursor "a" was returned twice
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "empty-string-cursor-is-not-the-end",
        area: Area::Lists,
        hostile: r#"the first page returns `nextCursor: ""`"#,
        servers: &[Server::Fixture(&["--mode", "empty-string-cursor"])],
        settings: ROOMY,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: r#"`""` is followed; both pages are listed"#,
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                s: 6 tools (protocol 2025-11-25, legacy era, server switchboard-fixture 0.1.0)
                  echo          Returns the given text.
                                  (text: string)
                  add           Adds two integers.
                                  (a: integer, b: integer)
                  slow          Sleeps in steps, reporting progress after each; stops when cancelled.
                                  (duration_ms?: integer, steps?: integer)
                  fail          Always returns a tool error.
                  image         Returns a tiny PNG image and a caption.
                  change_tools  Adds a tool named extra_<n> and announces that the tool list changed.
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "empty-pages-with-cursors",
        area: Area::Lists,
        hostile: "three empty pages, each with a cursor, before the tools",
        servers: &[Server::Fixture(&["--mode", "empty-pages"])],
        settings: ROOMY,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "the tools are listed",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                s: 6 tools (protocol 2025-11-25, legacy era, server switchboard-fixture 0.1.0)
                  echo          Returns the given text.
                                  (text: string)
                  add           Adds two integers.
                                  (a: integer, b: integer)
                  slow          Sleeps in steps, reporting progress after each; stops when cancelled.
                                  (duration_ms?: integer, steps?: integer)
                  fail          Always returns a tool error.
                  image         Returns a tiny PNG image and a caption.
                  change_tools  Adds a tool named extra_<n> and announces that the tool list changed.
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "error-on-the-second-page",
        area: Area::Lists,
        hostile: "the second page is a -32602 error",
        servers: &[Server::Fixture(&["--mode", "invalid-cursor-mid-list"])],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed error naming the server and the error",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` answered `tools/list` with an error: invalid cursor: next (code -32602)
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "duplicates-across-pages",
        area: Area::Lists,
        hostile: "`echo` on both pages",
        servers: &[Server::Fixture(&["--mode", "duplicate-across-pages"])],
        settings: ROOMY,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "the first is kept; a warning names the duplicate",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                s: 6 tools (protocol 2025-11-25, legacy era, server switchboard-fixture 0.1.0)
                  echo          Returns the given text.
                                  (text: string)
                  add           Adds two integers.
                                  (a: integer, b: integer)
                  slow          Sleeps in steps, reporting progress after each; stops when cancelled.
                                  (duration_ms?: integer, steps?: integer)
                  fail          Always returns a tool error.
                  image         Returns a tiny PNG image and a caption.
                  change_tools  Adds a tool named extra_<n> and announces that the tool list changed.
                  warning: page 2: duplicate entry `echo`; the first one is kept
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "names-with-spaces-and-duplicates",
        area: Area::Lists,
        hostile: "a tool named `bad name!` and a second `echo`",
        servers: &[Server::Fixture(&["--mode", "bad-tool-names"])],
        settings: ROOMY,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "listed with warnings",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                s: 7 tools (protocol 2025-11-25, legacy era, server switchboard-fixture 0.1.0)
                  echo          Returns the given text.
                                  (text: string)
                  add           Adds two integers.
                                  (a: integer, b: integer)
                  slow          Sleeps in steps, reporting progress after each; stops when cancelled.
                                  (duration_ms?: integer, steps?: integer)
                  fail          Always returns a tool error.
                  image         Returns a tiny PNG image and a caption.
                  change_tools  Adds a tool named extra_<n> and announces that the tool list changed.
                  bad name!     A tool whose name has a space and an exclamation mark.
                  warning: page 1: duplicate entry `echo`; the first one is kept
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "tool-without-a-name",
        area: Area::Lists,
        hostile: "a tool definition without `name`",
        servers: &[Server::Fixture(&["--mode", "bad-tool-entry"])],
        settings: ROOMY,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "the others are listed; a warning names the problem",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                s: 6 tools (protocol 2025-11-25, legacy era, server switchboard-fixture 0.1.0)
                  echo          Returns the given text.
                                  (text: string)
                  add           Adds two integers.
                                  (a: integer, b: integer)
                  slow          Sleeps in steps, reporting progress after each; stops when cancelled.
                                  (duration_ms?: integer, steps?: integer)
                  fail          Always returns a tool error.
                  image         Returns a tiny PNG image and a caption.
                  change_tools  Adds a tool named extra_<n> and announces that the tool list changed.
                  warning: page 1: the tool has no `name`
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "megabyte-description",
        area: Area::Lists,
        hostile: "a tool with a 1 MiB description",
        servers: &[Server::Fixture(&["--mode", "huge-description"])],
        settings: ROOMY,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "listed; the description is cut on display",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                s: 7 tools (protocol 2025-11-25, legacy era, server switchboard-fixture 0.1.0)
                  echo          Returns the given text.
                                  (text: string)
                  add           Adds two integers.
                                  (a: integer, b: integer)
                  slow          Sleeps in steps, reporting progress after each; stops when cancelled.
                                  (duration_ms?: integer, steps?: integer)
                  fail          Always returns a tool error.
                  image         Returns a tiny PNG image and a caption.
                  change_tools  Adds a tool named extra_<n> and announces that the tool list changed.
                  verbose       vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv…
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "schema-zoo",
        area: Area::Lists,
        hostile: r#"tools whose `inputSchema` is missing, `null`, a string, `type: 5`, `required: "x"`, an unknown dialect, a network `$ref`, a recursive `$ref`, 36-deep `anyOf`/`oneOf`, a 10000-value `enum`"#,
        servers: &[Server::Fixture(&["--mode", "schema-zoo"])],
        settings: ROOMY,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "every tool is listed; none hangs or crashes the listing",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                s: 16 tools (protocol 2025-11-25, legacy era, server switchboard-fixture 0.1.0)
                  echo                    Returns the given text.
                                            (text: string)
                  add                     Adds two integers.
                                            (a: integer, b: integer)
                  slow                    Sleeps in steps, reporting progress after each; stops when cancelled.
                                            (duration_ms?: integer, steps?: integer)
                  fail                    Always returns a tool error.
                  image                   Returns a tiny PNG image and a caption.
                  change_tools            Adds a tool named extra_<n> and announces that the tool list changed.
                  schema_missing          Schema case schema_missing.
                  schema_null             Schema case schema_null.
                  schema_string           Schema case schema_string.
                  schema_type_5           Schema case schema_type_5.
                  schema_required_string  Schema case schema_required_string.
                  schema_unknown_dialect  Schema case schema_unknown_dialect.
                  schema_network_ref      Schema case schema_network_ref.
                                            (x?: schema.json)
                  schema_recursive_ref    Schema case schema_recursive_ref.
                                            (x?: loop)
                  schema_deep_anyof       Schema case schema_deep_anyof.
                                            (x?: string | integer | null | integer | null | integer | null | integer | null | integer | null | integer | null | integer | null | integer | null | integer | null | integer | null | integer | null | integer | null)
                  schema_huge_enum        Schema case schema_huge_enum.
                                            (x?: one of "value_0", "value_1", "value_2", "value_3", "value_4", "value_5", "value_6", "value_7", "value_8", "value_9", "value_10", "value_11", "value_12", "value_13", "value_14", "value_15", "value_16", "value_17", "value_18", "value_19", "value_20", "value_21", "value_22", "value_23", "value_24", "value_25", "value_26", "value… (138929 bytes)
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "page-count-over-the-cap",
        area: Area::Lists,
        hostile: "1010 tools in pages of 10 (101 pages)",
        servers: &[Server::Fixture(&[
            "--mode",
            "many-tools",
            "--tools",
            "1010",
            "--page-size",
            "10",
        ])],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed error naming the server: more than 100 pages",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` sent a `tools/list` listing over its page cap: more than 100 pages; stopped following `nextCursor`; nothing of it is used (if the listing is genuine, raise the cap: `maxListPages` in the server's config entry, or `max_list_pages` in a host's session configuration)
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "ten-thousand-tools",
        area: Area::Lists,
        hostile: "10000 tools in one page",
        servers: &[Server::Fixture(&[
            "--mode",
            "many-tools",
            "--tools",
            "10000",
            "--page-size",
            "10000",
        ])],
        settings: ROOMY,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "all are listed",
            checks: &[],
            deadline: HANG,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                s: 10000 tools (protocol 2025-11-25, legacy era, server switchboard-fixture 0.1.0)
                  tool_0000  Echo tool number 0.
                               (text: string)
                  tool_0001  Echo tool number 1.
                               (text: string)
                  tool_0002  Echo tool number 2.
                               (text: string)
                  tool_0003  Echo tool number 3.
                               (text: string)
                  tool_0004  Echo tool number 4.
                               (text: string)
                  tool_0005  Echo tool number 5.
                               (text: string)
                  tool_0006  Echo tool number 6.
                               (text: string)
                  tool_0007  Echo tool number 7.
                               (text: string)
                  tool_0008  Echo tool number 8.
                               (text: string)
                  tool_0009  Echo tool number 9.
                               (text: string)
                  tool_0010  Echo tool number 10.
                               (text: string)
                  tool_0011  Echo tool number 11.
                               (text: string)
                  tool_0012  Echo tool number 12.
                               (text: string)
                  tool_0013  Echo tool number 13.
                               (text: string)
                  tool_0014  Echo tool number 14.
                               (text: string)
                  tool_0015  Echo tool number 15.
                               (text: string)
                  tool_0016  Echo tool number 16.
                               (text: string)
                  tool_0017  Echo tool number 17.
                               (text: string)
                  tool_0018  Echo tool number 18.
                               (text: string)
                  tool_0019  Echo tool number 19.
                … (19961 more lines)
                --- stderr: empty
            "#]]),
        },
        status: Status::Holds,
    },
    Case {
        name: "d6-endless-fresh-pages",
        area: Area::Lists,
        hostile: "`tools/list` pages of 5000 tools (700 KB) with a fresh cursor every time, forever",
        servers: &[Server::Canned {
            script: Script::EndlessFreshPages,
            url: CANNED_URL,
        }],
        settings: PATIENT_LEGACY,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed error naming the server once the total byte or item cap is passed, long before the page cap",
            checks: &[Check::PeakMemory(frames(
                3,
                "the listing total cap (assumed at most 2 frames) plus one page being read",
            ))],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` sent a `tools/list` listing over its entry cap: 15000 entries, more than 10000; nothing of it is used (if the listing is genuine, raise the cap: `maxListItems` in the server's config entry, or `max_list_items` in a host's session configuration)
            "#]]),
        },
        status: Status::Fixed { defect: 6 },
    },
    Case {
        name: "d6-one-huge-page",
        area: Area::Lists,
        hostile: "one `tools/list` page of 100000 tools (14 MB, under the frame cap)",
        servers: &[Server::Canned {
            script: Script::HugeToolPage,
            url: CANNED_URL,
        }],
        settings: PATIENT_LEGACY,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed error naming the server (over the default item cap), with memory near the page's size instead of ~27x it",
            checks: &[Check::PeakMemory(frames(
                3,
                "one page as bytes plus its typed items, no `Value` tree",
            ))],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 3
                --- stdout: empty
                --- stderr
                switchboard: server `s` sent a `tools/list` listing over its entry cap: 100000 entries, more than 10000; nothing of it is used (if the listing is genuine, raise the cap: `maxListItems` in the server's config entry, or `max_list_items` in a host's session configuration)
            "#]]),
        },
        status: Status::Fixed { defect: 6 },
    },
    Case {
        name: "found-deep-schema-loses-the-listing",
        area: Area::Lists,
        hostile: "one tool whose `inputSchema` nests 200 objects deep (valid JSON, deeper than the parser's recursion limit)",
        servers: &[Server::Fixture(&["--mode", "deep-schema"])],
        settings: PATIENT,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "the other tools are listed and the deep one is a listing problem (partial success), at once",
            checks: &[],
            deadline: PROMPT,
            transcript: Some(expect![[r#"
                exit 0
                --- stdout
                s: 6 tools (protocol 2025-11-25, legacy era, server switchboard-fixture 0.1.0)
                  echo          Returns the given text.
                                  (text: string)
                  add           Adds two integers.
                                  (a: integer, b: integer)
                  slow          Sleeps in steps, reporting progress after each; stops when cancelled.
                                  (duration_ms?: integer, steps?: integer)
                  fail          Always returns a tool error.
                  image         Returns a tiny PNG image and a caption.
                  change_tools  Adds a tool named extra_<n> and announces that the tool list changed.
                  warning: page 1: tool `deep` cannot be read: recursion limit exceeded at line 1 column 2300
                --- stderr: empty
            "#]]),
        },
        status: Status::FoundFixed,
    },
];
