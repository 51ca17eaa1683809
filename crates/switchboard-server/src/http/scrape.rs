//! A small HTTP listener of its own for one read-only page ([`PageServer`]): `serve
//! --metrics ADDR` answers `GET /metrics` on it, away from the MCP port (an operator keeps
//! it on a private address; the stdio gateway has it too). The page is made by a callback
//! at each request; every other path is 404, every other method on the page 405.
//!
//! It is bounded like the MCP listener, and tighter: at most [`MAX_CONNECTIONS`] open (a
//! newcomer beyond it closes the oldest, so idle connections cannot lock a scraper out), a
//! request head within [`HEADER_READ_TIMEOUT`] (also the longest an idle keep-alive
//! connection is kept) and of at most [`MAX_HEAD_BYTES`], no request body read, and a
//! connection closed after [`CONNECTION_LIFETIME`] whatever it does.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{ALLOW, CONTENT_TYPE, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::HttpServeError;

/// Connections open at once; a new one beyond it closes the oldest.
pub const MAX_CONNECTIONS: usize = 8;
/// A request head must arrive within this (and an idle connection is closed after it).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest request head (hyper's smallest read buffer).
pub const MAX_HEAD_BYTES: usize = 8192;
/// A connection is closed after this, whatever it does.
pub const CONNECTION_LIFETIME: Duration = Duration::from_secs(60);
/// How long open connections get to finish at shutdown.
const CLOSE_FLUSH: Duration = Duration::from_secs(2);

/// Makes the page's body at each request.
pub type Render = Arc<dyn Fn() -> String + Send + Sync>;

/// The one page a [`PageServer`] serves.
#[derive(Clone)]
pub struct Page {
    /// Its path (e.g. `/metrics`).
    pub path: &'static str,
    /// Its `Content-Type`.
    pub content_type: &'static str,
    /// Its body, made at each request.
    pub render: Render,
}

impl std::fmt::Debug for Page {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Page")
            .field("path", &self.path)
            .field("content_type", &self.content_type)
            .finish_non_exhaustive()
    }
}

/// A bound listener for one page, not yet serving.
#[derive(Debug)]
pub struct PageServer {
    listener: TcpListener,
    local_addr: SocketAddr,
    page: Page,
}

impl PageServer {
    /// Binds `addr` (port 0: any free port; see [`PageServer::local_addr`]).
    pub async fn bind(addr: SocketAddr, page: Page) -> Result<PageServer, HttpServeError> {
        let (listener, local_addr) = super::listen(addr).await?;
        Ok(PageServer {
            listener,
            local_addr,
            page,
        })
    }

    /// The address bound.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The page's URL (`http://127.0.0.1:PORT/metrics`).
    pub fn url(&self) -> String {
        format!("http://{}{}", self.local_addr, self.page.path)
    }

    /// Serves until `shutdown` is cancelled, then closes every connection (within bounds)
    /// before it returns.
    pub async fn serve(self, shutdown: CancellationToken) {
        let PageServer { listener, page, .. } = self;
        let page = Arc::new(page);
        let mut connections = JoinSet::new();
        let mut open: VecDeque<CancellationToken> = VecDeque::new();
        loop {
            while connections.try_join_next().is_some() {}
            let accepted = tokio::select! {
                () = shutdown.cancelled() => break,
                accepted = listener.accept() => accepted,
            };
            match accepted {
                Ok((stream, _peer)) => {
                    open.retain(|closed| !closed.is_cancelled());
                    while open.len() >= MAX_CONNECTIONS {
                        if let Some(oldest) = open.pop_front() {
                            oldest.cancel();
                        }
                    }
                    let closed = shutdown.child_token();
                    open.push_back(closed.clone());
                    connections.spawn(connection(page.clone(), stream, closed));
                }
                Err(error) => {
                    if !super::accept_failed(&error, &shutdown).await {
                        break;
                    }
                }
            }
        }
        drop(listener);
        super::close_connections(&mut connections, CLOSE_FLUSH).await;
    }
}

/// Serves one connection until it closes, is closed for a newer one or at shutdown, or
/// reaches its lifetime.
async fn connection(page: Arc<Page>, stream: TcpStream, closed: CancellationToken) {
    let _done = closed.clone().drop_guard();
    let service = service_fn(move |request| {
        let page = page.clone();
        async move { Ok::<_, Infallible>(respond(&page, &request)) }
    });
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .max_buf_size(MAX_HEAD_BYTES);
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    let mut connection = std::pin::pin!(connection);
    tokio::select! {
        ended = connection.as_mut() => {
            if let Err(error) = ended {
                tracing::debug!(%error, "a page connection ended with an error");
            }
        }
        () = closed.cancelled() => {}
        () = tokio::time::sleep(CONNECTION_LIFETIME) => {}
    }
}

/// The page, 404 or 405.
fn respond(page: &Page, request: &Request<Incoming>) -> Response<Full<Bytes>> {
    let plain = |status: StatusCode, text: &'static str| {
        let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())));
        *response.status_mut() = status;
        response.headers_mut().insert(
            CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        response
    };
    if request.uri().path() != page.path {
        return plain(StatusCode::NOT_FOUND, "not found\n");
    }
    match *request.method() {
        Method::GET => {
            let mut response = Response::new(Full::new(Bytes::from((page.render)())));
            response
                .headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static(page.content_type));
            response
        }
        Method::HEAD => {
            let mut response = Response::new(Full::new(Bytes::new()));
            response
                .headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static(page.content_type));
            response
        }
        _ => {
            let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
            response
                .headers_mut()
                .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
            response
        }
    }
}
