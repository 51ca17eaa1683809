//! Running a handler so that nothing it does takes the server down or past its bounds: it
//! runs in a task of its own (a panic is caught as the task's `JoinError`), the task is
//! aborted when the request is cancelled or its answer is no longer awaited, and what it
//! returns is measured against the server's result cap.

use std::any::Any;
use std::io;

use serde_json::Value;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::error::ToolError;
use crate::core::ServiceFuture;

/// How a guarded handler ended.
#[derive(Debug)]
pub(crate) enum Ended<T> {
    /// It returned.
    Returned(Result<T, ToolError>),
    /// It panicked, with this message.
    Panicked(String),
    /// The request was cancelled; the handler's future was dropped.
    Cancelled,
}

/// Aborts the task when dropped: a handler never outlives the request it answers.
struct Owned<T>(JoinHandle<T>);

impl<T> Drop for Owned<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Runs `handler` in a task of its own until it ends or `cancel` fires.
pub(crate) async fn run<T: Send + 'static>(
    handler: ServiceFuture<Result<T, ToolError>>,
    cancel: &CancellationToken,
) -> Ended<T> {
    let mut task = Owned(tokio::spawn(handler));
    tokio::select! {
        joined = &mut task.0 => match joined {
            Ok(returned) => Ended::Returned(returned),
            Err(error) if error.is_panic() => Ended::Panicked(panic_message(error.into_panic())),
            Err(_) => Ended::Cancelled,
        },
        () = cancel.cancelled() => Ended::Cancelled,
    }
}

/// The text a panic carried (`panic!("…")` gives a `&str` or a `String`).
fn panic_message(payload: Box<dyn Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(message) => *message,
        Err(payload) => match payload.downcast::<&'static str>() {
            Ok(message) => (*message).to_owned(),
            Err(_) => "a panic without a message".to_owned(),
        },
    }
}

/// The size of a value as JSON text, in bytes, without writing the text out.
pub(crate) fn json_size(value: &Value) -> usize {
    struct Count(usize);
    impl io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a `Value` to a sink that never fails cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}
