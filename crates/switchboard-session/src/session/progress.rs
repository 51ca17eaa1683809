//! Progress bookkeeping: which calls want their progress, when it last came, and what
//! the dispatch task has handled.

use rustc_hash::FxHashMap;

// Keyed by our own request ids (a server's progress token only looks up): a fast hash is safe.
use super::*;

/// Progress bookkeeping. Nothing is registered for an ordinary call: the dispatch task
/// stamps when progress last arrived for a request that is still pending, and the call
/// looks at the stamp only when its idle deadline fires. A channel is registered only
/// when the host asked to receive the progress.
pub(super) struct ProgressRoutes {
    /// Hosts' progress sinks, by request id (= progress token).
    pub(super) sinks: Mutex<FxHashMap<RequestId, mpsc::Sender<ProgressParams>>>,
    /// Hosts' log message sinks, by request id.
    pub(super) logs: Mutex<FxHashMap<RequestId, mpsc::Sender<Value>>>,
    /// Requests in flight through the session's calls (not its listen streams, whose
    /// notifications name them).
    pub(super) calls: std::sync::atomic::AtomicUsize,
    /// When progress last arrived, by request id; bounded by the pending requests.
    pub(super) stamps: Mutex<FxHashMap<RequestId, Instant>>,
    /// Inbound events the dispatch task has handled, compared with
    /// `Connection::inbound_delivered` by a call that wants all of its progress.
    pub(super) handled: watch::Sender<u64>,
}

impl Default for ProgressRoutes {
    fn default() -> Self {
        ProgressRoutes {
            sinks: Mutex::default(),
            logs: Mutex::default(),
            calls: std::sync::atomic::AtomicUsize::new(0),
            stamps: Mutex::default(),
            handled: watch::Sender::new(0),
        }
    }
}

/// How long a finished call with a progress sink waits for the dispatch task to route the
/// progress that arrived before its result.
pub(super) const PROGRESS_FLUSH_WAIT: Duration = Duration::from_millis(100);

/// The most progress stamps kept before stale ones are swept.
pub(super) const MAX_PROGRESS_STAMPS: usize = 1024;

impl ProgressRoutes {
    pub(super) fn sinks(
        &self,
    ) -> std::sync::MutexGuard<'_, FxHashMap<RequestId, mpsc::Sender<ProgressParams>>> {
        self.sinks.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn logs(
        &self,
    ) -> std::sync::MutexGuard<'_, FxHashMap<RequestId, mpsc::Sender<Value>>> {
        self.logs.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn stamps(&self) -> std::sync::MutexGuard<'_, FxHashMap<RequestId, Instant>> {
        self.stamps.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// When progress last arrived for `id`.
    pub(super) fn last_progress(&self, id: &RequestId) -> Option<Instant> {
        self.stamps().get(id).copied()
    }

    /// Waits (bounded) until the dispatch task has handled `delivered` inbound events.
    pub(super) async fn flushed(&self, delivered: u64) {
        let mut handled = self.handled.subscribe();
        let _ = tokio::time::timeout(
            PROGRESS_FLUSH_WAIT,
            handled.wait_for(|handled| *handled >= delivered),
        )
        .await;
    }
}

/// Forgets a call's progress bookkeeping when it ends, however it ends.
pub(super) struct RouteGuard<'a> {
    pub(super) routes: &'a ProgressRoutes,
    pub(super) id: RequestId,
    pub(super) has_sink: bool,
    pub(super) has_log_sink: bool,
}

impl<'a> RouteGuard<'a> {
    /// Registers the call's progress and log message sinks (those `options` has) and
    /// counts it in flight, until the guard is dropped.
    pub(super) fn register(
        routes: &'a ProgressRoutes,
        id: RequestId,
        options: &CallOptions,
    ) -> RouteGuard<'a> {
        if let Some(sink) = &options.progress {
            routes.sinks().insert(id.clone(), sink.clone());
        }
        if let Some(sink) = &options.log_messages {
            routes.logs().insert(id.clone(), sink.clone());
        }
        routes
            .calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        RouteGuard {
            routes,
            id,
            has_sink: options.progress.is_some(),
            has_log_sink: options.log_messages.is_some(),
        }
    }
}

impl Drop for RouteGuard<'_> {
    fn drop(&mut self) {
        self.routes
            .calls
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        if self.has_sink {
            self.routes.sinks().remove(&self.id);
        }
        if self.has_log_sink {
            self.routes.logs().remove(&self.id);
        }
        let mut stamps = self.routes.stamps();
        if !stamps.is_empty() {
            stamps.remove(&self.id);
        }
    }
}
