//! What an [`HttpServer`](super::HttpServer) counts, read from outside for an operator's
//! metrics ([`HttpStats`], from [`HttpServer::stats`](super::HttpServer::stats)): the counts
//! `/healthz?detail` shows (sessions, connections, listen streams, requests in flight), read
//! from the same places, and the bytes of request and response bodies, counted as they pass
//! (a request body as it is read, a response body, whole or an event stream, as hyper
//! takes it).

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};

use hyper::body::{Body, Frame, SizeHint};

use super::Shared;

/// The server's counts now, as [`HttpStats::counts`] reads them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HttpCounts {
    /// Legacy sessions open.
    pub sessions: usize,
    /// `subscriptions/listen` streams open.
    pub listen_streams: usize,
    /// Authenticated connections open.
    pub connections: usize,
    /// Requests in flight (both eras).
    pub requests_in_flight: usize,
    /// Request body bytes read so far.
    pub request_body_bytes: u64,
    /// Response body bytes handed to connections so far (event streams included).
    pub response_body_bytes: u64,
}

/// A handle on a server's counts; it does not keep the server alive (once the server is
/// gone, [`HttpStats::counts`] is `None`).
#[derive(Clone)]
pub struct HttpStats {
    shared: Weak<Shared>,
}

impl std::fmt::Debug for HttpStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpStats")
            .field("counts", &self.counts())
            .finish()
    }
}

impl HttpStats {
    pub(super) fn new(shared: &Arc<Shared>) -> HttpStats {
        HttpStats {
            shared: Arc::downgrade(shared),
        }
    }

    /// The counts now (`None` once the server is gone).
    pub fn counts(&self) -> Option<HttpCounts> {
        let shared = self.shared.upgrade()?;
        Some(HttpCounts {
            sessions: shared.sessions.count(),
            listen_streams: shared.listens.load(Ordering::Relaxed),
            connections: shared.clients.connections(),
            requests_in_flight: shared.in_flight.load(Ordering::Relaxed),
            request_body_bytes: shared.traffic.request_bytes.load(Ordering::Relaxed),
            response_body_bytes: shared.traffic.response_bytes.load(Ordering::Relaxed),
        })
    }
}

/// Body bytes both ways.
#[derive(Debug, Default)]
pub(super) struct Traffic {
    pub(super) request_bytes: AtomicU64,
    pub(super) response_bytes: AtomicU64,
}

impl Traffic {
    /// Counts `bytes` of a request body read.
    pub(super) fn read(&self, bytes: usize) {
        self.request_bytes
            .fetch_add(u64::try_from(bytes).unwrap_or(u64::MAX), Ordering::Relaxed);
    }
}

/// A response body whose data frames are counted as they are taken.
pub(super) struct Counted<B> {
    body: B,
    traffic: Arc<Traffic>,
}

impl<B> Counted<B> {
    pub(super) fn new(body: B, traffic: Arc<Traffic>) -> Counted<B> {
        Counted { body, traffic }
    }
}

impl<B: Body<Data = hyper::body::Bytes> + Unpin> Body for Counted<B> {
    type Data = hyper::body::Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.body).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled
            && let Some(data) = frame.data_ref()
        {
            this.traffic.response_bytes.fetch_add(
                u64::try_from(data.len()).unwrap_or(u64::MAX),
                Ordering::Relaxed,
            );
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
