//! The fault matrix: named hostile cases, each a hostile server (fixture mode, fixture over
//! HTTP, hand-written loopback HTTP server or one-line command), a `switchboard` command a
//! user would run against it, and the outcome that must hold — exit class, what stdout and
//! stderr say (an `expect-test` snapshot), no hang (a deadline that only detects one), no
//! process left behind, and where the case is about growth, peak memory under a bound
//! derived from the caps in code. The cases are data (`cases/`, one module per surface);
//! `docs/dev/faults.md` lists them and is checked against the tables.
//!
//! - Every case that holds ([`cases::HOLD`]) is its own test, named after the case with `_`
//!   for `-` (`cargo test -p switchboard-cli --test it faults::bom_at_stream_start` runs
//!   one), listed below in `case_tests!`; `every_case_that_holds_has_its_test` keeps that
//!   list and the tables equal. The cases run in parallel, as many at once as the test
//!   harness runs tests (`--test-threads`; by default one per core): each has its own
//!   directory, token, secret, servers and ports, and none needs to run alone.
//! - `open_cases_still_fail` runs the open ones ([`cases::PENDING`]: the defects
//!   being fixed elsewhere, and what the matrix found) and asserts each still fails; when
//!   one holds, it moves to its surface's `CASES` with a snapshot and gets its test.
//!
//! `SWITCHBOARD_FAULT_EXPLAIN=1` makes `open_cases_still_fail` fail with what each open
//! case gets wrong today (to see that it fails for the reason it names).

mod canned;
mod cases;
mod doc;
mod run;
mod table;
mod verify;

use std::panic::AssertUnwindSafe;

use run::{Harness, case_dir, run_case};
use table::Case;

/// One `#[test]` per case that holds: `fn a_case()` runs the case named `a-case`.
macro_rules! case_tests {
    ($($test:ident,)*) => {
        /// The cases that have a test (test names: the case names with `_` for `-`).
        const TESTED: &[&str] = &[$(stringify!($test)),*];
        $(
            #[test]
            fn $test() {
                holds(stringify!($test));
            }
        )*
    };
}

case_tests! {
    // cases/framing.rs
    banner_and_garbage_before_first_message,
    bom_at_stream_start,
    crlf_line_ends_and_blank_lines,
    stdout_written_byte_by_byte,
    two_per_line,
    trailing_garbage,
    truncated_json,
    invalid_utf8,
    lone_surrogate,
    deep_nesting,
    batch_array_answer,
    numbers_beyond_f64_and_i64,
    duplicate_object_keys,
    empty_batch_line,
    partial_line_then_eof,
    long_line_under_the_cap,
    line_over_the_frame_cap,
    endless_line_without_newline,
    endless_non_json_lines,
    d7_stdio_answer_over_the_frame_cap,

    // cases/json_rpc.rs
    duplicate_response,
    response_to_unknown_id,
    result_and_error,
    found_malformed_answer_fails_at_once,
    neither_result_nor_error,
    null_id,
    id_echoed_as_string,
    id_echoed_as_float,
    error_code_not_integer,
    error_without_message,
    error_with_huge_data,
    jsonrpc_version_1_0,
    jsonrpc_field_missing,
    wrong_id,
    notification_instead_of_response,
    undeclared_server_requests,

    // cases/lifecycle.rs
    no_initialize_answer,
    unsupported_version,
    unknown_future_version,
    version_not_a_string,
    no_capabilities,
    messages_before_initialize_answer,
    probe_answered_with_custom_error,
    probe_never_answered,
    modern_version_refused_once,
    found_version_refused_forever_says_why,
    list_changed_not_declared,
    unknown_result_type,
    missing_result_type,
    input_required_without_requests_or_state,
    endless_input_required_rounds,
    server_request_in_modern_era,

    // cases/stdio_process.rs
    missing_binary,
    command_not_executable,
    exits_immediately,
    shell_one_liner_exits_with_stderr,
    crash_mid_call,
    ignores_eof_and_sigterm,
    spawns_grandchildren,
    stderr_flood,
    closes_stdout_keeps_running,
    closes_stdin_keeps_running,
    stops_reading_stdin,
    slow_tool_past_the_deadline,
    ignores_cancellation,
    never_speaks,
    d2_escapes_in_call_stderr_tail,
    d2_escapes_in_stderr_tail,
    d3_daemonised_grandchild,
    d3_daemonised_grandchild_holds_stdout,

    // cases/sandbox.rs
    sandbox_write_outside_its_folders,
    sandbox_network_none,
    sandbox_fork_bomb,
    sandbox_signal_its_parent,
    sandbox_denial_named_in_the_failure,

    // cases/http.rs
    json_without_content_type,
    html_instead_of_json,
    sse_content_type_json_body,
    json_content_type_sse_body,
    empty_200_for_a_request,
    http_202_for_a_request,
    sse_comments_retry_unknown_events_split_data,
    sse_trickled_byte_by_byte,
    sse_ends_before_the_response,
    sse_response_for_another_id,
    sse_line_over_the_cap,
    session_expired_once,
    session_always_expired,
    redirect_not_followed,
    reset_mid_body,
    slowloris_status_line,
    body_over_the_cap,
    http_500_with_html,
    legacy_sse_endpoint_on_another_origin,
    status_line_not_http,
    era_probe_answered_400_html,
    connection_refused,
    d1_sse_event_of_endless_short_lines,
    found_sse_data_with_a_line_break_inside_a_string,
    invalid_header_annotation_over_modern_http,

    // cases/auth.rs
    d8_tools_never_fetches_resource_metadata,
    d8_call_never_fetches_resource_metadata,
    d8_check_never_fetches_resource_metadata,
    d8_serve_never_fetches_resource_metadata,
    d8_bare_401_never_registers,
    d10_path_secret_not_printed_by_check,
    d10_query_secret_not_printed_by_call,
    d10_query_secret_not_printed_by_tools,
    d10_userinfo_not_printed,
    d8_login_refuses_link_local_metadata,
    d8_login_refuses_private_https_metadata,

    // cases/lists.rs
    same_cursor_again,
    cycling_cursors,
    empty_string_cursor_is_not_the_end,
    empty_pages_with_cursors,
    error_on_the_second_page,
    duplicates_across_pages,
    names_with_spaces_and_duplicates,
    tool_without_a_name,
    megabyte_description,
    schema_zoo,
    page_count_over_the_cap,
    ten_thousand_tools,
    d6_endless_fresh_pages,
    d6_one_huge_page,
    found_deep_schema_loses_the_listing,

    // cases/results.rs
    five_thousand_content_blocks,
    image_data_not_base64,
    unknown_content_type,
    javascript_and_file_links,
    resource_mime_type_mismatch,
    terminal_escapes_in_result_text,
    result_without_content,
    quarter_megabyte_result,
    tool_reports_an_error,
    d2_escapes_in_jsonrpc_error_message,

    // cases/notifications.rs
    log_message_flood,
    progress_unknown_backwards_and_late,
    list_changed_storm,

    // cases/gateway.rs
    gateway_server_crashes_mid_call,
    gateway_broken_server_beside_a_good_one,
    gateway_line_not_json,
    gateway_unknown_method,
    gateway_stubborn_server_at_eof,
    gateway_grandchildren_at_eof,
    gateway_list_changed_storm,
    gateway_recursive_and_network_refs,
    gateway_hostile_answers,
    gateway_passes_upstream_answers_unchanged,
    d2_escapes_in_serve_startup_report,
    found_log_colours_on_a_pipe,
    d5_gateway_eof_answers_requests_in_flight,
    d5_gateway_eof_with_300_calls_to_a_hung_server,
    d5_invalid_request_answered_with_its_id,
    d3_gateway_daemonised_grandchild,
    d1_gateway_sse_event_of_endless_short_lines,
    d4_gateway_response_streams_left_open,
    d6_gateway_one_huge_page,
    gateway_secret_in_stderr_tail,
    gateway_secret_in_http_error_page,

    // cases/tool_lock.rs
    tool_lock_with_bom,
    tool_lock_cut_short,
    tool_lock_empty,
    tool_lock_other_version,
    tool_lock_a_directory,
    tool_lock_dangling_link,

    // cases/cli.rs
    unset_variable_in_env,
    secret_env_not_in_errors,
    unknown_transport_type,
    unknown_tool,
    d2_escapes_in_its_tools_list,

    // cases/checker.rs
    check_garbage_stdout,
    check_tool_without_name,
    check_bad_tool_names,
    check_schema_zoo,
    check_credential_in_description,
    check_result_without_content,
    check_quarter_megabyte_result,
    check_accepts_invalid_arguments,
    check_vague_errors,
    check_unknown_tool_succeeds,
    check_unstable_tools,
    check_ignores_cancellation,
    check_ignores_eof_and_sigterm,
    check_grandchildren_left_behind,
    check_http_no_origin_check,
    check_http_ignores_session,
    check_http_delete_ignored,
    d3_check_sees_daemonised_grandchild,
}

/// The test name of a case.
fn test_name(case: &Case) -> String {
    case.name.replace('-', "_")
}

/// Runs the case that holds whose test is `test`, and asserts that it still holds: the
/// outcome's checks and the transcript's snapshot. The case's directory is removed when it
/// holds and kept when not (to rerun the case by hand).
fn holds(test: &str) {
    let case = cases::holding()
        .find(|case| test_name(case) == test)
        .unwrap_or_else(|| panic!("no case that holds is named {:?}", test.replace('_', "-")));
    let Some(expected) = &case.outcome.transcript else {
        panic!(
            "{}: a case that holds needs a transcript snapshot",
            case.name
        );
    };
    let observed = run_case(Harness::shared(), case);
    let problems = verify::problems(case, &observed);
    let transcript = verify::transcript(case, &observed);
    // A mismatch panics with the diff; the checks are reported first.
    let snapshot = std::panic::catch_unwind(AssertUnwindSafe(|| expected.assert_eq(&transcript)));
    assert!(
        problems.is_empty(),
        "{} does not hold:\n  - {}",
        case.name,
        problems.join("\n  - ")
    );
    if let Err(mismatch) = snapshot {
        std::panic::resume_unwind(mismatch);
    }
    let _ = std::fs::remove_dir_all(case_dir(case));
}

#[test]
fn every_case_that_holds_has_its_test() {
    let mut untested: Vec<String> = cases::holding()
        .map(test_name)
        .filter(|name| !TESTED.contains(&name.as_str()))
        .collect();
    untested.sort();
    let mut stale: Vec<&str> = TESTED
        .iter()
        .copied()
        .filter(|test| !cases::holding().any(|case| test_name(case) == *test))
        .collect();
    stale.sort_unstable();
    assert!(
        untested.is_empty() && stale.is_empty(),
        "`case_tests!` in faults/mod.rs lists one test per case that holds;\n\
         add: {untested:?}\nremove: {stale:?}"
    );
}

#[test]
fn open_cases_still_fail() {
    let explain = std::env::var_os("SWITCHBOARD_FAULT_EXPLAIN").is_some();
    let mut complaints = Vec::new();
    for case in cases::PENDING {
        let problems = verify::problems(case, &run_case(Harness::shared(), case));
        if explain {
            complaints.push(format!("{}:\n  - {}", case.name, problems.join("\n  - ")));
        } else if problems.is_empty() {
            complaints.push(format!(
                "{}: holds now: move it to its surface's CASES with a transcript snapshot (and mark it holds)",
                case.name
            ));
        }
    }
    assert!(complaints.is_empty(), "{}", complaints.join("\n"));
}

#[test]
fn the_tables_are_well_formed() {
    let mut names: Vec<&str> = cases::holding()
        .chain(cases::PENDING)
        .chain(cases::ELSEWHERE)
        .map(|c| c.name)
        .collect();
    for name in &names {
        assert!(
            name.starts_with(|c: char| c.is_ascii_lowercase())
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
            "case names are kebab-case and start with a letter (a test is named after each): \
             {name:?}"
        );
    }
    let total = names.len();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), total, "case names are unique");
    for case in cases::holding() {
        assert!(
            case.status.holds(),
            "{}: the CASES of a surface hold only cases that hold",
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
        cases::holding().count() >= 60,
        "the fault matrix promises at least 60 cases that hold; it has {}",
        cases::holding().count()
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
    let tables: Vec<&[Case]> = cases::HOLD
        .iter()
        .copied()
        .chain([cases::PENDING, cases::ELSEWHERE])
        .collect();
    let generated = doc::render(&tables);
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
