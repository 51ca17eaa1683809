//! The wire layer of Switchboard: JSON-RPC 2.0 messages, newline framing with a size cap,
//! connections that correlate responses by id, and the stdio child-process transport.
//!
//! This crate knows JSON-RPC and byte streams, not MCP. It is the only crate in the
//! workspace that starts processes.
//!
//! Main types: [`Message`] and [`RequestId`] (the wire format), [`Connection`] (send
//! requests, receive responses; everything else arrives as [`Inbound`] events),
//! [`stdio::spawn`] (a server as a child process), [`orphans::adopt_orphans`] (owning the
//! descendants that daemonise), [`memory::memory_pair`] (for tests).
//!
//! # Map
//!
//! JSON-RPC 2.0 messages (`Message`, `RequestId`, `ErrorObject`), newline framing with a
//! size cap (`LineBuffer`; a line over the cap streams past a bounded scanner,
//! `frame_id.rs`, that reads the top-level `id` of the answer it meant to be), `Connection`
//! (concurrent sends, pending-request table, `Inbound` events for everything that is not an
//! awaited response, frame tap) over a `Transport` (`transport.rs`: each outgoing message
//! with its `OutgoingKind` — request id and method, the request a cancellation names — and
//! the `MessageContext` its owner gives it, the protocol version and headers; what comes back enters
//! through the connection's `InboundSink`, answers as message texts, failures as a typed
//! `TransportError` for the request's id). A byte stream is the built-in transport (one
//! reader task, one line a message); the cancellation notice is the owner's
//! (`Connection::set_cancel_notice`: the session sets MCP's). The stdio transport
//! (`stdio::spawn`, `ChildProcess` with staged shutdown and stderr tail), `/proc`
//! process-tree helpers, in-memory connection pairs, `own_stdio` (this process's
//! stdin/stdout as non-blocking pipes, for serving on stdio). The text rules it applies
//! (redaction, peer text, credentials) are `switchboard-text`'s. This crate is an
//! API boundary: its public items are what other crates and hosts use.
//!
//! # Hot path
//!
//! A request is serialised straight from borrowed parts into one line, written under a lock
//! by the caller's task; the reader task reads the reply's envelope (no `Value` tree:
//! `wire`'s `envelope.rs`) and completes the caller's oneshot with the result still as JSON
//! text, which the session parses straight into its type
//! (`CallToolResult::from_json_text`). Modern `_meta` is rendered once per session. One
//! task hop per message. The envelope's constant parts are written as bytes, the line end
//! is found with `memchr`, and the tables keyed by our own request ids hash with FxHash (a
//! peer's ids only look up). Over HTTP the same text is the POST's body (no re-framing or
//! re-decoding of outgoing messages), and a body that is one plain answer enters the
//! connection as it came.

mod connection;
mod envelope;
mod frame_id;
mod framing;
pub mod memory;
mod message;
pub mod orphans;
pub mod proc;
pub mod sandbox;
pub mod stdio;
mod transcript;
pub mod transport;

pub use connection::{
    CloseProbe, CloseReason, Connection, ConnectionOptions, DEFAULT_INBOUND_CAPACITY,
    DEFAULT_MAX_FRAME_BYTES, Direction, FrameTap, Inbound, InboundSink, PendingCall,
    UnexpectedReason, WireError, WireStats,
};
pub use envelope::{compact_layout, needs_exact_path};
pub use framing::{Frame, LineBuffer};
pub use message::{
    ErrorObject, Malformed, MalformedId, MalformedKind, Message, Notification, Outgoing, Request,
    RequestId, Response, WriteParams, codes, decode, encode,
};
pub use transcript::Transcript;
pub use transport::{
    CancelNotice, HttpStatus, MessageContext, OutgoingKind, OutgoingMessage, Transport,
    TransportError,
};

/// A short excerpt of peer bytes, safe to show on one line: lossy UTF-8, shown as
/// [`switchboard_text::peer_text::PeerLine`] does (controls, bidi and invisible characters escaped, newlines
/// as `\n`), cut at `max` bytes with a marker.
pub fn excerpt(bytes: &[u8], max: usize) -> String {
    let cut = bytes.len() > max;
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(max)]);
    let mut out = switchboard_text::peer_text::PeerLine(&text).to_string();
    if cut {
        out.push_str(&format!("… ({} more bytes)", bytes.len() - max));
    }
    out
}

/// Makes the child receive SIGKILL if our process dies without cleaning up (Linux).
#[expect(
    unsafe_code,
    reason = "pre_exec runs prctl in the forked child; it only calls an async-signal-safe syscall"
)]
fn die_with_parent(command: &mut tokio::process::Command) {
    // SAFETY: the closure runs between fork and exec and only calls prctl(2), which is
    // async-signal-safe; it allocates nothing and touches no locks.
    unsafe {
        command.pre_exec(|| {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                .map_err(std::io::Error::from)
        });
    }
}
