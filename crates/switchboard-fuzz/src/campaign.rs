//! The campaign driver: runs a target on mutated corpus entries (and now and then on plain
//! random bytes) for a number of executions or a time, and keeps the inputs that broke an
//! invariant.
//!
//! A broken invariant is a panic, in the target's own code or in a task it started on its
//! thread's current-thread runtime (tokio catches those): [`install_panic_hook`] counts the
//! panics of each thread while it runs a target and keeps their messages, so both are seen.

use std::cell::{Cell, RefCell};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use crate::Target;
use crate::corpus;
use crate::mutate::{self, Rng, Sources};

thread_local! {
    /// Whether this thread is running a target inside [`check`].
    static CHECKING: Cell<bool> = const { Cell::new(false) };
    /// Panics on this thread while it ran a target.
    static PANICS: Cell<u64> = const { Cell::new(0) };
    /// The message of the last of them.
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Makes every panic while a target runs on this thread (in its own code or in a task on
/// its current-thread runtime) counted and its message kept instead of printed; other
/// panics go to the hook that was there before. Call once before running targets; later
/// calls change nothing.
pub fn install_panic_hook() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !CHECKING.with(Cell::get) {
                previous(info);
                return;
            }
            PANICS.with(|panics| panics.set(panics.get() + 1));
            let message = match info.location() {
                Some(at) => format!(
                    "{} at {}:{}",
                    payload_text(info.payload()),
                    at.file(),
                    at.line()
                ),
                None => payload_text(info.payload()),
            };
            LAST_PANIC.with(|last| *last.borrow_mut() = Some(message));
        }));
    });
}

fn payload_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "panic with a non-text payload".to_owned()
    }
}

/// Runs one input; `Err` with the panic's message when an invariant broke (in this thread
/// or in a task). Needs [`install_panic_hook`] to see panics inside tasks.
pub fn check(target: &Target, input: &[u8]) -> Result<(), String> {
    let before = PANICS.with(Cell::get);
    CHECKING.with(|checking| checking.set(true));
    let caught = catch_unwind(AssertUnwindSafe(|| (target.run)(input)));
    CHECKING.with(|checking| checking.set(false));
    let panicked = PANICS.with(Cell::get) != before;
    if caught.is_err() || panicked {
        let message = LAST_PANIC
            .with(|last| last.borrow_mut().take())
            .unwrap_or_else(|| "panic (message not recorded: install the panic hook)".to_owned());
        return Err(message);
    }
    Ok(())
}

/// How long a campaign runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    /// This many executions.
    Executions(u64),
    /// Until this much time has passed.
    Time(Duration),
}

/// An input that broke an invariant.
#[derive(Debug, Clone)]
pub struct Crash {
    /// The input.
    pub input: Vec<u8>,
    /// The panic's message and location.
    pub message: String,
}

/// What a campaign did.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Inputs run.
    pub executions: u64,
    /// Inputs that broke an invariant (the first few of each distinct message).
    pub crashes: Vec<Crash>,
    /// Inputs that broke an invariant, all of them.
    pub crash_count: u64,
    /// How long it ran.
    pub elapsed: Duration,
}

/// Distinct crash messages kept, and inputs kept per message.
const KEPT_MESSAGES: usize = 32;
const KEPT_PER_MESSAGE: usize = 3;

/// Runs `target` within `budget`, mutating its corpus with a generator seeded by `seed`
/// (the same seed and budget in executions give the same inputs).
pub fn run(target: &Target, budget: Budget, seed: u64) -> Outcome {
    install_panic_hook();
    let corpus = corpus::seeds(target.name);
    let sources = Sources {
        corpus: &corpus,
        dictionary: target.dictionary,
    };
    let mut rng = Rng::new(seed);
    let started = Instant::now();
    let mut outcome = Outcome {
        executions: 0,
        crashes: Vec::new(),
        crash_count: 0,
        elapsed: Duration::ZERO,
    };
    loop {
        match budget {
            Budget::Executions(n) if outcome.executions >= n => break,
            Budget::Time(limit)
                if outcome.executions.is_multiple_of(64) && started.elapsed() >= limit =>
            {
                break;
            }
            _ => {}
        }
        let input = next_input(&corpus, sources, outcome.executions, &mut rng);
        outcome.executions += 1;
        if let Err(message) = check(target, &input) {
            outcome.crash_count += 1;
            keep(&mut outcome.crashes, Crash { input, message });
        }
    }
    outcome.elapsed = started.elapsed();
    outcome
}

/// The corpus as it is first, then mostly mutations, and one input in 32 plain random bytes.
fn next_input(corpus: &[Vec<u8>], sources: Sources<'_>, done: u64, rng: &mut Rng) -> Vec<u8> {
    if let Some(seed) = usize::try_from(done).ok().and_then(|i| corpus.get(i)) {
        return seed.clone();
    }
    if corpus.is_empty() || rng.one_in(32) {
        let len = rng.below(512);
        return (0..len).map(|_| rng.next_u64() as u8).collect();
    }
    let base = &corpus[rng.below(corpus.len())];
    mutate::mutate(base, sources, rng)
}

fn keep(crashes: &mut Vec<Crash>, crash: Crash) {
    let same = crashes
        .iter()
        .filter(|kept| kept.message == crash.message)
        .count();
    let distinct = crashes
        .iter()
        .map(|kept| &kept.message)
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    if (same == 0 && distinct < KEPT_MESSAGES) || (same > 0 && same < KEPT_PER_MESSAGE) {
        crashes.push(crash);
    }
}
