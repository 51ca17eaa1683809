//! Bounded waits for tests: a step that hangs fails with a message naming what it was
//! waiting for instead of hanging the test run. Every deadline only detects a hang; none
//! measures speed.
//!
//! - [`within`]: awaits one future.
//! - [`until`] and [`try_until`]: look at a condition again and again (every
//!   [`POLL_INTERVAL`]) until it holds, in a blocking test; [`until_async`] is the same in an
//!   async one (it follows Tokio's clock, so it works under `tokio::time::pause`).
//! - [`exited`] and [`try_exited`]: a child process's exit; one still running at the
//!   deadline is killed and reaped.
//!
//! A condition answers `bool` (true: done) or `Option<T>` (`Some`: done, with what it
//! found), through [`Done`].

use std::fmt;
use std::future::Future;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

/// The default deadline for one step of a test (a response, a process exit, …).
pub const TEST_DEADLINE: Duration = Duration::from_secs(10);

/// How often [`until`], [`until_async`] and [`exited`] look again.
pub const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// Awaits `future`, panicking with "timed out after {deadline:?} waiting for {what}" if it
/// does not finish within `deadline`. Needs a Tokio runtime with the time driver enabled.
pub async fn within<T>(what: &str, deadline: Duration, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(deadline, future).await {
        Ok(value) => value,
        Err(_) => panic!("timed out after {deadline:?} waiting for {what}"),
    }
}

/// What a condition answers: whether it holds, and what it found when it does.
pub trait Done {
    /// What the wait returns once the condition holds.
    type Value;
    /// `Some` once the condition holds.
    fn done(self) -> Option<Self::Value>;
}

impl Done for bool {
    type Value = ();
    fn done(self) -> Option<()> {
        self.then_some(())
    }
}

impl<T> Done for Option<T> {
    type Value = T;
    fn done(self) -> Option<T> {
        self
    }
}

/// A wait that reached its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimedOut {
    /// The deadline it waited for.
    pub after: Duration,
}

impl fmt::Display for TimedOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "timed out after {:?}", self.after)
    }
}

impl std::error::Error for TimedOut {}

/// Blocks until `condition` holds, looking every [`POLL_INTERVAL`]; panics with "timed out
/// after {deadline:?} waiting for {what}" when it still does not at `deadline`.
///
/// ```
/// use std::time::Duration;
/// use switchboard_testkit::wait;
///
/// let mut looks = 0;
/// let found = wait::until("the third look", Duration::from_secs(10), || {
///     looks += 1;
///     (looks == 3).then_some(looks)
/// });
/// assert_eq!(found, 3);
/// ```
pub fn until<D: Done>(what: &str, deadline: Duration, condition: impl FnMut() -> D) -> D::Value {
    try_until(deadline, condition).unwrap_or_else(|timeout| panic!("{timeout} waiting for {what}"))
}

/// [`until`] for a caller that says more than `what` when the wait fails (the state it
/// last saw, say): the value, or [`TimedOut`].
pub fn try_until<D: Done>(
    deadline: Duration,
    mut condition: impl FnMut() -> D,
) -> Result<D::Value, TimedOut> {
    let started = Instant::now();
    loop {
        if let Some(value) = condition().done() {
            return Ok(value);
        }
        if started.elapsed() >= deadline {
            return Err(TimedOut { after: deadline });
        }
        std::thread::sleep(POLL_INTERVAL);
    }
}

/// [`until`] in async code: awaits `condition` every [`POLL_INTERVAL`] of Tokio's clock
/// until it holds; panics like [`until`] at `deadline`. Needs a Tokio runtime with the time
/// driver enabled.
pub async fn until_async<D: Done, F: Future<Output = D>>(
    what: &str,
    deadline: Duration,
    mut condition: impl FnMut() -> F,
) -> D::Value {
    within(what, deadline, async {
        loop {
            if let Some(value) = condition().await.done() {
                return value;
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    })
    .await
}

/// Blocks until `child` exits; one still running at `deadline` is killed and reaped, and
/// the wait panics with "timed out after {deadline:?} waiting for {what}".
pub fn exited(what: &str, deadline: Duration, child: &mut Child) -> ExitStatus {
    try_exited(deadline, child).unwrap_or_else(|timeout| panic!("{timeout} waiting for {what}"))
}

/// [`exited`] for a caller that says more when the wait fails: the exit status, or
/// [`TimedOut`] once the child was killed and reaped.
pub fn try_exited(deadline: Duration, child: &mut Child) -> Result<ExitStatus, TimedOut> {
    let waited = try_until(deadline, || child.try_wait().ok().flatten());
    if waited.is_err() {
        let _ = child.kill();
        let _ = child.wait();
    }
    waited
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn returns_the_value_in_time() {
        assert_eq!(within("a ready value", TEST_DEADLINE, async { 7 }).await, 7);
    }

    #[tokio::test]
    #[should_panic(expected = "timed out after 10ms waiting for the impossible")]
    async fn panics_with_what_it_waited_for() {
        within(
            "the impossible",
            Duration::from_millis(10),
            std::future::pending::<()>(),
        )
        .await;
    }

    #[test]
    fn until_returns_what_the_condition_found() {
        let mut looks = 0;
        let found = until("the second look", TEST_DEADLINE, || {
            looks += 1;
            (looks == 2).then_some("found")
        });
        assert_eq!((found, looks), ("found", 2));
    }

    #[test]
    #[should_panic(expected = "timed out after 10ms waiting for the impossible")]
    fn until_panics_with_what_it_waited_for() {
        until("the impossible", Duration::from_millis(10), || false);
    }

    #[test]
    fn try_until_says_when_it_gave_up() {
        let after = Duration::from_millis(10);
        assert_eq!(try_until(after, || false), Err(TimedOut { after }));
    }

    #[tokio::test(start_paused = true)]
    async fn until_async_follows_tokio_s_clock() {
        let start = tokio::time::Instant::now();
        let waited = until_async(
            "a minute of paused time",
            Duration::from_secs(120),
            || async { (start.elapsed() >= Duration::from_secs(60)).then(|| start.elapsed()) },
        )
        .await;
        assert!(waited >= Duration::from_secs(60));
    }

    #[test]
    fn exited_kills_a_child_past_its_deadline() {
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .expect("spawn sleep");
        assert_eq!(
            try_exited(Duration::from_millis(10), &mut child).map(|status| status.success()),
            Err(TimedOut {
                after: Duration::from_millis(10)
            })
        );
        assert!(
            child.try_wait().expect("wait").is_some(),
            "killed and reaped"
        );
    }
}
