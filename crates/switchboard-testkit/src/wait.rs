//! Deadlines for async test steps: a step that hangs fails with a message naming what it
//! was waiting for instead of hanging the test run.

use std::future::Future;
use std::time::Duration;

/// The default deadline for one step of a test (a response, a process exit, …).
pub const TEST_DEADLINE: Duration = Duration::from_secs(10);

/// Awaits `future`, panicking with "timed out after {deadline:?} waiting for {what}" if it
/// does not finish within `deadline`. Needs a Tokio runtime with the time driver enabled.
pub async fn within<T>(what: &str, deadline: Duration, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(deadline, future).await {
        Ok(value) => value,
        Err(_) => panic!("timed out after {deadline:?} waiting for {what}"),
    }
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
}
