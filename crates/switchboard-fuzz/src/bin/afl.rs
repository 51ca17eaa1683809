//! `switchboard-fuzz-afl`: one fuzz target under AFL++ (persistent mode), chosen by
//! `SWITCHBOARD_FUZZ_TARGET`. Built with `cargo afl build --features afl` by
//! `scripts/fuzz.sh --afl`. A broken invariant, in the target or in a task it started,
//! aborts the process, which AFL++ records as a crash.
#![allow(clippy::print_stderr)]

use switchboard_fuzz::campaign;

fn main() {
    let name = std::env::var("SWITCHBOARD_FUZZ_TARGET").unwrap_or_default();
    let Some(target) = switchboard_fuzz::target(&name) else {
        eprintln!("set SWITCHBOARD_FUZZ_TARGET to one of the targets, not `{name}`");
        std::process::exit(2);
    };
    campaign::install_panic_hook();
    afl::fuzz!(|data: &[u8]| {
        if let Err(message) = campaign::check(target, data) {
            eprintln!("{message}");
            std::process::abort();
        }
    });
}
