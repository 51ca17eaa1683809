//! Fixed defects whose hostile input the matrix cannot stage; each names the test that
//! asserts it (checked to exist by `cases_tested_elsewhere_name_real_tests`).

use super::super::table::{Area, Case, Cmd, Exit, HANG, Outcome, QUICK, Status};

pub(crate) static ELSEWHERE: &[Case] = &[
    Case {
        name: "gateway-loose-log-stays-with-its-identity",
        area: Area::Gateway,
        hostile: "through `serve --http`: a server logs each call's arguments while clients of three addresses have calls in flight, so its session cannot tie the message to one call (the matrix has one client)",
        servers: &[],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "neither the bystander nor the other caller hears B's query; the operator's log has it; clients of one address all hear it, as before",
            checks: &[],
            deadline: HANG,
            transcript: None,
        },
        status: Status::HardenedElsewhere {
            item: 6,
            test: "crates/switchboard-cli/tests/it/gateway_logs.rs::another_identitys_query_in_a_servers_log_reaches_only_the_operator",
        },
    },
    Case {
        name: "gateway-http-client-told-no-upstream-detail",
        area: Area::Gateway,
        hostile: "through `serve --http`: a server that crashes or times out after writing its `env` secrets to stderr, and an HTTP server whose 500 page quotes its URL and headers (the matrix has no HTTP client of the gateway)",
        servers: &[],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "the remote client hears which server failed and how (no stderr tail, address or page), the operator's log has the whole account with the secrets replaced; `--full-errors` tells the client everything, secrets replaced",
            checks: &[],
            deadline: HANG,
            transcript: None,
        },
        status: Status::HardenedElsewhere {
            item: 1,
            test: "crates/switchboard-cli/tests/it/gateway_secrets.rs::an_http_client_is_told_which_server_failed_and_how_and_the_log_has_the_rest",
        },
    },
    Case {
        name: "d8-login-refuses-http-metadata-for-a-remote-server",
        area: Area::Auth,
        hostile: "during `login` against an `https://` server on a public name, metadata over plain `http://`: refused (the matrix has no TLS server on a public name)",
        servers: &[],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::ServerFailure,
            says: "typed refusal naming the URL and why",
            checks: &[],
            deadline: HANG,
            transcript: None,
        },
        status: Status::TestedBy {
            defect: 8,
            test: "crates/switchboard-auth/src/policy.rs::urls_are_judged_by_the_class_of_their_host_and_the_servers",
        },
    },
    Case {
        name: "d9-preexisting-world-readable-temp-file",
        area: Area::Auth,
        hostile: "a 0644 `tokens.tmp` exists before `login`: the token file is still written 0600 (fresh temp file, O_EXCL)",
        servers: &[],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "the token file stays private and complete",
            checks: &[],
            deadline: HANG,
            transcript: None,
        },
        status: Status::TestedBy {
            defect: 9,
            test: "crates/switchboard-auth/tests/it/store.rs::a_stale_world_readable_temp_file_does_not_make_the_token_file_readable",
        },
    },
    Case {
        name: "d9-symlinked-temp-file",
        area: Area::Auth,
        hostile: "`tokens.tmp` is a symlink to another file: it is not followed, the target is untouched (O_NOFOLLOW)",
        servers: &[],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "the token file stays private and complete",
            checks: &[],
            deadline: HANG,
            transcript: None,
        },
        status: Status::TestedBy {
            defect: 9,
            test: "crates/switchboard-auth/tests/it/store.rs::a_symlink_at_the_temp_path_is_not_followed",
        },
    },
    Case {
        name: "d9-token-directory-readable-by-others",
        area: Area::Auth,
        hostile: "the token directory is 0755 or owned by another user: refused with a typed error",
        servers: &[],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "the token file stays private and complete",
            checks: &[],
            deadline: HANG,
            transcript: None,
        },
        status: Status::TestedBy {
            defect: 9,
            test: "crates/switchboard-auth/tests/it/store.rs::a_token_directory_others_can_read_or_write_is_refused",
        },
    },
    Case {
        name: "d9-concurrent-logins-keep-both-tokens",
        area: Area::Auth,
        hostile: "two `login`s (or refreshes) at once: both tokens survive (lock)",
        servers: &[],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "the token file stays private and complete",
            checks: &[],
            deadline: HANG,
            transcript: None,
        },
        status: Status::TestedBy {
            defect: 9,
            test: "crates/switchboard-auth/tests/it/store.rs::concurrent_saves_from_processes_lose_nothing",
        },
    },
    // HTTP exhaustion (Hardening 2, items 3–5): an attacker and a victim against a real
    // `serve --http`, which the case shape (one command against hostile servers) cannot
    // stage; asserted by the named tests.
    Case {
        name: "h2-3-one-client-takes-every-legacy-session",
        area: Area::Http,
        hostile: "HTTP exhaustion: against `serve --http --max-sessions 64 --max-sessions-per-client 8`, one client sends 300 `initialize` POSTs on one connection; a victim from another address then opens a session and lists tools",
        servers: &[],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "the attacker recycles its own idle sessions (never more than 8, each initialize answered); the victim's session and `tools/list` are answered; `/healthz` says ok and its detail counts the evictions",
            checks: &[],
            deadline: HANG,
            transcript: None,
        },
        status: Status::HardenedElsewhere {
            item: 3,
            test: "crates/switchboard-cli/tests/it/serve_http.rs::one_client_opening_sessions_in_a_loop_leaves_room_for_others",
        },
    },
    Case {
        name: "h2-4-one-client-fills-the-requests-in-flight",
        area: Area::Http,
        hostile: "HTTP exhaustion: against `serve --http --max-in-flight 8 --max-in-flight-per-client 4`, one client sends eight long calls, each in a session of its own (under the per-session cap); a victim from another address then lists tools",
        servers: &[],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "four of the attacker's calls are in flight, the other four get 429 naming `max_in_flight_per_client` at once; the victim's session and `tools/list` are answered",
            checks: &[],
            deadline: HANG,
            transcript: None,
        },
        status: Status::HardenedElsewhere {
            item: 4,
            test: "crates/switchboard-cli/tests/it/serve_http.rs::one_client_filling_requests_in_flight_leaves_room_for_others",
        },
    },
    Case {
        name: "h2-4-one-client-holds-the-connections-with-get-streams",
        area: Area::Http,
        hostile: "HTTP exhaustion: against `serve --http --max-connections 64 --max-sessions 64`, one client opens 200 sessions and holds a GET stream open on each; a victim from another address then opens a session, its GET stream, and lists tools",
        servers: &[],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "the attacker holds its 8 streams (`--max-streams-per-client`), the rest get 429 with `Retry-After` naming `max_streams_per_client`, never a hang; the victim's stream and requests are answered; `/healthz` answers on a fresh connection",
            checks: &[],
            deadline: HANG,
            transcript: None,
        },
        status: Status::HardenedElsewhere {
            item: 4,
            test: "crates/switchboard-cli/tests/it/serve_http.rs::one_client_holding_get_streams_leaves_room_for_others",
        },
    },
    Case {
        name: "h2-5-slowloris-before-authentication",
        area: Area::Http,
        hostile: "HTTP exhaustion: against `serve --http --bearer-token-env VAR --max-connections 64`, 300 sockets send half a request head and then nothing; an authenticated victim from another address then makes 20 exchanges, each on a fresh connection",
        servers: &[],
        settings: QUICK,
        command: Cmd::Tools,
        outcome: Outcome {
            exit: Exit::Success,
            says: "every one of the victim's exchanges is answered: unauthenticated sockets count in their own budget (16 an address, the oldest closed for a newcomer), not against the connection cap; `/healthz` says ok and its detail counts the evictions",
            checks: &[],
            deadline: HANG,
            transcript: None,
        },
        status: Status::HardenedElsewhere {
            item: 5,
            test: "crates/switchboard-cli/tests/it/serve_http.rs::sockets_that_never_authenticate_do_not_starve_clients_that_do",
        },
    },
];
