//! One timer per session for the deadlines of its requests. A waiting request registers
//! its deadline here instead of arming a timer of its own; the sweep task sleeps until the
//! earliest deadline registered, marks every request whose deadline has passed as expired
//! and wakes it, and sleeps until the next one. A request that ends in time only removes
//! its entry. The sweep's timer moves only when a new deadline is earlier than the one it
//! sleeps until: deadlines from one idle timeout come in order, so an ordinary call neither
//! arms nor cancels a timer (the sweep wakes once per timeout period at most, and the
//! timer wheel holds one entry per session, not one per call).
//!
//! The task is owned by the session (aborted when the session goes away). A deadline
//! passes by the same clock as before (`tokio::time`, so a paused test clock still drives
//! it), and a request still waits for nothing without one.

use std::future::poll_fn;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Poll, Waker};

use slab::Slab;
use tokio::sync::Notify;
use tokio::time::Instant;

/// The deadlines of a session's waiting requests.
#[derive(Default)]
pub(super) struct Deadlines {
    state: Mutex<State>,
    /// Wakes the sweep when a deadline earlier than its timer was registered.
    earlier: Notify,
}

#[derive(Default)]
struct State {
    /// The waiting requests; bounded by the requests in flight.
    entries: Slab<Entry>,
    /// When the sweep's timer fires; `None` while nothing is registered.
    timer: Option<Instant>,
}

struct Entry {
    deadline: Instant,
    expired: bool,
    waker: Option<Waker>,
}

impl Deadlines {
    fn state(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means a panic elsewhere; each update leaves the table whole.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a deadline until the returned handle is dropped.
    pub(super) fn register(&self, deadline: Instant) -> Deadline<'_> {
        let mut state = self.state();
        let key = state.entries.insert(Entry {
            deadline,
            expired: false,
            waker: None,
        });
        self.schedule(&mut state, deadline);
        Deadline {
            deadlines: self,
            key,
        }
    }

    /// Makes sure the sweep wakes by `deadline`.
    fn schedule(&self, state: &mut State, deadline: Instant) {
        if state.timer.is_none_or(|timer| deadline < timer) {
            state.timer = Some(deadline);
            self.earlier.notify_one();
        }
    }

    /// Expires every entry whose deadline is not after `now`, and sets the timer to the
    /// earliest deadline left.
    fn expire(&self, now: Instant) {
        let mut due = Vec::new();
        {
            let mut state = self.state();
            let mut next: Option<Instant> = None;
            for (_, entry) in state.entries.iter_mut() {
                if entry.expired {
                    continue;
                }
                if entry.deadline <= now {
                    entry.expired = true;
                    due.extend(entry.waker.take());
                } else {
                    next = Some(next.map_or(entry.deadline, |next| next.min(entry.deadline)));
                }
            }
            state.timer = next;
        }
        // Woken outside the lock: a waker may drop a request, whose entry takes the lock.
        due.into_iter().for_each(Waker::wake);
    }
}

/// The sweep: sleeps until the earliest registered deadline and expires what is due.
pub(super) async fn sweep(deadlines: Arc<Deadlines>) {
    loop {
        let timer = deadlines.state().timer;
        match timer {
            None => deadlines.earlier.notified().await,
            Some(at) => {
                tokio::select! {
                    () = tokio::time::sleep_until(at) => {
                        // The timer fired for `at`: whatever the clock reads, `at` has passed.
                        deadlines.expire(Instant::now().max(at));
                    }
                    () = deadlines.earlier.notified() => {}
                }
            }
        }
    }
}

/// One request's registered deadline.
pub(super) struct Deadline<'a> {
    deadlines: &'a Deadlines,
    key: usize,
}

impl Deadline<'_> {
    /// Waits until the deadline has passed (at once if it already has).
    pub(super) async fn passed(&self) {
        poll_fn(|cx| {
            let mut state = self.deadlines.state();
            let Some(entry) = state.entries.get_mut(self.key) else {
                return Poll::Ready(());
            };
            if entry.expired {
                return Poll::Ready(());
            }
            match &mut entry.waker {
                Some(waker) if waker.will_wake(cx.waker()) => {}
                slot => *slot = Some(cx.waker().clone()),
            }
            Poll::Pending
        })
        .await
    }

    /// Moves the deadline (a call's idle deadline, after progress).
    pub(super) fn reset(&self, deadline: Instant) {
        let mut state = self.deadlines.state();
        if let Some(entry) = state.entries.get_mut(self.key) {
            entry.deadline = deadline;
            entry.expired = false;
        }
        self.deadlines.schedule(&mut state, deadline);
    }
}

impl Drop for Deadline<'_> {
    fn drop(&mut self) {
        self.deadlines.state().entries.try_remove(self.key);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// How long a test waits for a deadline that is due.
    const BOUND: Duration = Duration::from_secs(10);
    const FAR: Duration = Duration::from_secs(3600);
    const SOON: Duration = Duration::from_millis(20);

    async fn passes(deadline: &Deadline<'_>) -> bool {
        tokio::time::timeout(BOUND, deadline.passed()).await.is_ok()
    }

    fn has_passed(deadline: &Deadline<'_>) -> bool {
        let mut passed = std::pin::pin!(deadline.passed());
        let waker = std::task::Waker::noop();
        passed
            .as_mut()
            .poll(&mut std::task::Context::from_waker(waker))
            .is_ready()
    }

    #[tokio::test]
    async fn due_deadlines_pass_and_later_ones_wait() {
        let deadlines = Arc::new(Deadlines::default());
        let sweep = tokio::spawn(sweep(deadlines.clone()));
        let late = deadlines.register(Instant::now() + FAR);
        // Earlier than the sweep's timer: the sweep is woken to move it.
        let early = deadlines.register(Instant::now() + SOON);
        assert!(passes(&early).await);
        assert!(Instant::now() >= early_deadline(&deadlines, &early));
        assert!(!has_passed(&late));
        // A deadline moved again waits for its new time.
        early.reset(Instant::now() + FAR);
        assert!(!has_passed(&early));
        late.reset(Instant::now() + SOON);
        assert!(passes(&late).await);
        assert!(!has_passed(&early));
        drop((early, late));
        assert!(deadlines.state().entries.is_empty());
        // One registered after the sweep went idle wakes it again.
        let again = deadlines.register(Instant::now() + SOON);
        assert!(passes(&again).await);
        sweep.abort();
    }

    fn early_deadline(deadlines: &Deadlines, deadline: &Deadline<'_>) -> Instant {
        deadlines.state().entries[deadline.key].deadline
    }
}
