//! An in-memory connection pair, for tests of everything that speaks over a [`Connection`].

use tokio::sync::mpsc;

use crate::connection::{Connection, ConnectionOptions, Inbound};

/// Capacity of each in-memory pipe direction.
const PIPE_BYTES: usize = 256 * 1024;

/// Two connected ends: what one sends, the other receives.
pub fn memory_pair(
    first: ConnectionOptions,
    second: ConnectionOptions,
) -> (
    (Connection, mpsc::Receiver<Inbound>),
    (Connection, mpsc::Receiver<Inbound>),
) {
    let (a, b) = tokio::io::duplex(PIPE_BYTES);
    let (a_read, a_write) = tokio::io::split(a);
    let (b_read, b_write) = tokio::io::split(b);
    (
        Connection::start(a_read, a_write, first, None),
        Connection::start(b_read, b_write, second, None),
    )
}
