//! Fuzz targets for everything Switchboard reads from a peer or a user, and the driver that
//! runs them.
//!
//! Each target is one function taking `&[u8]` ([`TARGETS`]): it turns the bytes into an
//! input for one parser (the first bytes choose sizes and chunkings, the rest is the text),
//! runs it, and checks invariants, not only the absence of panics: a stream split
//! differently yields the same frames or events, memory stays within the cap, every
//! request to the gateway is answered, no secret reaches an error. A broken invariant is a
//! panic, which the [`campaign`] driver catches and keeps as a crash input.
//!
//! The same targets run in three places: a bounded campaign per target inside `cargo test`
//! (`tests/it`), every saved crash input as a regression test (`regressions/TARGET/*`), and
//! long campaigns through the `switchboard-fuzz` binary (`scripts/fuzz.sh`). The driver is a
//! mutation fuzzer over a seed corpus of real messages ([`corpus`]), without coverage
//! feedback; `switchboard-fuzz-afl` (feature `afl`, `scripts/fuzz.sh --afl`) runs the same
//! targets coverage-guided under AFL++.
//!
//! # Map
//!
//! Fuzz targets, one `fn(&[u8])` each, for what reads peer or user input: line framing and
//! envelope decoding (a `Connection` against the plain decoder), the SSE parser, the config
//! loader (JSON, TOML, `${VAR}`), the config editor (a server added where the map is and
//! nothing else changed; removed, the same bytes), header text and `Mcp-Param-*` parameters
//! (and `WWW-Authenticate` challenges), and the gateway's inbound frames (`serve` over an
//! in-memory pipe with a runtime without servers). Each checks invariants (chunking does
//! not change frames or events, buffers stay within their caps, every request is answered,
//! no secret in an error), not only the absence of panics. A seed corpus of real messages
//! and files, a mutation driver (`campaign`), a bounded campaign per target and every saved
//! crash input (`regressions/`) as tests, and the `switchboard-fuzz` binary for long runs
//! (`scripts/fuzz.sh`, also under AFL++). Not published.

pub mod campaign;
pub mod corpus;
mod input;
pub mod mutate;
pub mod targets;

/// One fuzz target.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// Its name (`scripts/fuzz.sh TARGET`, `regressions/TARGET/`).
    pub name: &'static str,
    /// Runs one input; panics when an invariant does not hold.
    pub run: fn(&[u8]),
    /// Words the mutator inserts (field names, separators, escapes).
    pub dictionary: &'static [&'static [u8]],
}

/// Every target.
pub const TARGETS: &[Target] = &[
    Target {
        name: "framing",
        run: targets::framing::run,
        dictionary: targets::JSON_RPC_WORDS,
    },
    Target {
        name: "envelope",
        run: targets::envelope::run,
        dictionary: targets::JSON_RPC_WORDS,
    },
    Target {
        name: "sse",
        run: targets::sse::run,
        dictionary: targets::sse::WORDS,
    },
    Target {
        name: "config",
        run: targets::config::run,
        dictionary: targets::config::WORDS,
    },
    Target {
        name: "edit",
        run: targets::edit::run,
        dictionary: targets::edit::WORDS,
    },
    Target {
        name: "headers",
        run: targets::headers::run,
        dictionary: targets::headers::WORDS,
    },
    Target {
        name: "gateway",
        run: targets::gateway::run,
        dictionary: targets::JSON_RPC_WORDS,
    },
];

/// The target with this name.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|target| target.name == name)
}
