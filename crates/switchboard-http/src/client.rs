//! How the transport's requests reach the server: one [`HttpClient`] per connection, which
//! takes one of two routes, chosen once when the connection is set up.
//!
//! - **Direct** (an `http://` endpoint that no proxy setting applies to, with no credentials
//!   in its URL): hyper's `client::conn::http1` over connections this module keeps. A request
//!   takes the most recently used idle connection that is still open (waiting at most the
//!   connect deadline for it to be ready), or opens a new one (TCP connect within the connect
//!   deadline, `TCP_NODELAY`). A connection goes back to the pool when its response body
//!   has been read to its end; one whose body was dropped part-way is closed. The pool keeps
//!   at most [`MAX_IDLE_CONNECTIONS`] idle connections and drops those idle for longer than
//!   [`IDLE_TIMEOUT`] (checked whenever the pool is used); each connection's task belongs to
//!   the pool and ends with it. No redirect is followed (as on the other route).
//! - **Through reqwest** (`https://`, a proxy that applies, credentials in the URL): the
//!   reqwest client as before — rustls with the webpki roots, the proxy environment
//!   (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`, `NO_PROXY`, lower-case forms too), no
//!   redirects, the same connect deadline.
//!
//! Whether a proxy applies is decided by the same matcher reqwest uses
//! (`hyper_util::client::proxy::matcher::Matcher::from_system`), read once at setup as
//! reqwest reads it when its client is built, so the same hosts are proxied as before.
//!
//! Requests are built with [`RequestBuilder`] (method, URL, headers, body) and answered as a
//! [`Response`] whose body is read chunk by chunk; failures are a [`SendError`] (whether
//! nothing accepted the connection, and the cause's text) or a [`BodyError`].

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::Uri;
use hyper::body::{Bytes, Incoming};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use reqwest::header::{HOST, HeaderMap, HeaderName, HeaderValue, IntoHeaderName};
use reqwest::{Method, StatusCode, Url};
use tokio::net::TcpStream;
use tokio::task::JoinSet;

use crate::driver::lock;

/// How many idle connections a direct client keeps.
pub(crate) const MAX_IDLE_CONNECTIONS: usize = 32;
/// How long a direct client keeps a connection nothing uses.
pub(crate) const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// The client of one connection: direct (hyper) or through reqwest.
pub(crate) enum HttpClient {
    Direct(Arc<DirectPool>),
    Reqwest(reqwest::Client),
}

/// Which route an endpoint takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    Direct,
    Reqwest,
}

/// The route for `url`, given the proxy settings `proxies` (read from the environment in
/// [`HttpClient::new`]).
pub(crate) fn route_for(url: &Url, proxies: &hyper_util::client::proxy::matcher::Matcher) -> Route {
    let has_credentials = !url.username().is_empty() || url.password().is_some();
    if url.scheme() != "http" || has_credentials {
        return Route::Reqwest;
    }
    let Ok(uri) = Uri::try_from(url.as_str()) else {
        return Route::Reqwest;
    };
    match proxies.intercept(&uri) {
        Some(_) => Route::Reqwest,
        None => Route::Direct,
    }
}

impl HttpClient {
    /// The client for `url`: the route the proxy environment and the URL call for.
    pub(crate) fn new(url: &Url, connect_timeout: Duration) -> Result<HttpClient, String> {
        let proxies = hyper_util::client::proxy::matcher::Matcher::from_system();
        match route_for(url, &proxies) {
            Route::Direct => Ok(HttpClient::Direct(Arc::new(DirectPool::new(
                url,
                connect_timeout,
            )?))),
            Route::Reqwest => reqwest::Client::builder()
                .connect_timeout(connect_timeout)
                // Server-supplied redirects could send our headers (and credentials) elsewhere.
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .map(HttpClient::Reqwest)
                .map_err(|e| format!("HTTP client: {e}")),
        }
    }

    /// The route this client takes.
    pub(crate) fn route(&self) -> Route {
        match self {
            HttpClient::Direct(_) => Route::Direct,
            HttpClient::Reqwest(_) => Route::Reqwest,
        }
    }

    /// A request to `url` (on the connection's origin).
    pub(crate) fn request(&self, method: Method, url: Url) -> RequestBuilder {
        let via = match self {
            HttpClient::Direct(pool) => Via::Direct(pool.clone()),
            HttpClient::Reqwest(client) => Via::Reqwest(client.clone()),
        };
        RequestBuilder {
            via,
            method,
            url,
            headers: HeaderMap::new(),
            body: Bytes::new(),
        }
    }
}

enum Via {
    Direct(Arc<DirectPool>),
    Reqwest(reqwest::Client),
}

/// One request being built: its method, URL, headers and body.
pub(crate) struct RequestBuilder {
    via: Via,
    method: Method,
    url: Url,
    headers: HeaderMap,
    body: Bytes,
}

impl RequestBuilder {
    /// Adds a header whose value is text; a value that is not header text is left out (the
    /// values given here come from the session or from headers the server sent).
    pub(crate) fn header(mut self, name: impl IntoHeaderName, value: &str) -> RequestBuilder {
        if let Ok(value) = HeaderValue::from_str(value) {
            self.headers.append(name, value);
        }
        self
    }

    /// Adds a header value as it is (its sensitive flag kept).
    pub(crate) fn header_value(
        mut self,
        name: impl IntoHeaderName,
        value: HeaderValue,
    ) -> RequestBuilder {
        self.headers.append(name, value);
        self
    }

    /// Sets these headers, each replacing any value of the same name.
    pub(crate) fn headers(mut self, headers: &HeaderMap) -> RequestBuilder {
        let mut last: Option<&HeaderName> = None;
        for (name, value) in headers {
            if last == Some(name) {
                self.headers.append(name, value.clone());
            } else {
                self.headers.insert(name, value.clone());
            }
            last = Some(name);
        }
        self
    }

    pub(crate) fn body(mut self, body: impl Into<Bytes>) -> RequestBuilder {
        self.body = body.into();
        self
    }

    pub(crate) fn method(&self) -> &Method {
        &self.method
    }

    pub(crate) fn url(&self) -> &Url {
        &self.url
    }

    /// Sends the request; the answer's head is back when this returns.
    pub(crate) async fn send(self) -> Result<Response, SendError> {
        match self.via {
            Via::Direct(pool) => {
                pool.send(DirectRequest {
                    method: self.method,
                    url: self.url,
                    headers: self.headers,
                    body: self.body,
                })
                .await
            }
            Via::Reqwest(client) => {
                let sent = Box::pin(
                    client
                        .request(self.method, self.url)
                        .headers(self.headers)
                        .body(self.body)
                        .send(),
                )
                .await;
                match sent {
                    Ok(response) => Ok(Response::from(response)),
                    Err(error) => Err(SendError {
                        connect: error.is_connect(),
                        detail: crate::error_chain(&error),
                    }),
                }
            }
        }
    }
}

/// A request could not be sent, or its answer's head did not arrive.
#[derive(Debug)]
pub(crate) struct SendError {
    connect: bool,
    detail: String,
}

impl SendError {
    /// Nothing accepted the connection (refused, or not within the connect deadline).
    pub(crate) fn is_connect(&self) -> bool {
        self.connect
    }
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.detail)
    }
}

impl std::error::Error for SendError {}

/// A response body broke while it was read.
#[derive(Debug)]
pub(crate) struct BodyError(String);

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BodyError {}

/// An answer: its status and headers, and its body to read.
pub(crate) struct Response {
    status: StatusCode,
    headers: HeaderMap,
    body: Body,
}

enum Body {
    Direct {
        body: Incoming,
        /// The connection, back to the pool once the body has been read to its end.
        connection: Option<(Arc<DirectPool>, SendRequest<Full<Bytes>>)>,
    },
    Reqwest(reqwest::Response),
}

impl From<reqwest::Response> for Response {
    fn from(mut response: reqwest::Response) -> Response {
        Response {
            status: response.status(),
            headers: std::mem::take(response.headers_mut()),
            body: Body::Reqwest(response),
        }
    }
}

impl Response {
    pub(crate) fn status(&self) -> StatusCode {
        self.status
    }

    pub(crate) fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    /// The body's next chunk; `None` at its end.
    pub(crate) async fn chunk(&mut self) -> Result<Option<Bytes>, BodyError> {
        match &mut self.body {
            Body::Reqwest(response) => response
                .chunk()
                .await
                .map_err(|error| BodyError(crate::error_chain(&error))),
            Body::Direct { body, connection } => loop {
                let Some(frame) = body.frame().await else {
                    give_back(connection);
                    return Ok(None);
                };
                let frame = frame.map_err(|error| BodyError(crate::error_chain(&error)))?;
                if let Ok(data) = frame.into_data() {
                    if hyper::body::Body::is_end_stream(body) {
                        give_back(connection);
                    }
                    if !data.is_empty() {
                        return Ok(Some(data));
                    }
                }
            },
        }
    }
}

/// Returns a connection whose answer was read to its end to its pool.
fn give_back(connection: &mut Option<(Arc<DirectPool>, SendRequest<Full<Bytes>>)>) {
    if let Some((pool, sender)) = connection.take() {
        pool.keep(sender);
    }
}

/// Where a direct client connects.
enum Address {
    Socket(std::net::SocketAddr),
    Name(String, u16),
}

/// A request on the direct route.
struct DirectRequest {
    method: Method,
    url: Url,
    headers: HeaderMap,
    body: Bytes,
}

/// The connections of a direct client (one origin).
pub(crate) struct DirectPool {
    address: Address,
    /// The `Host` header: the URL's host, and its port when the URL names one.
    host: HeaderValue,
    connect_timeout: Duration,
    idle: Mutex<Vec<IdleConnection>>,
    /// Each connection's task (it ends when the connection closes or its pool is dropped).
    connections: Mutex<JoinSet<()>>,
}

struct IdleConnection {
    sender: SendRequest<Full<Bytes>>,
    since: Instant,
}

impl DirectPool {
    fn new(url: &Url, connect_timeout: Duration) -> Result<DirectPool, String> {
        let port = url
            .port_or_known_default()
            .ok_or_else(|| "the URL has no port".to_owned())?;
        let address = match url.host() {
            Some(url::Host::Ipv4(ip)) => Address::Socket((ip, port).into()),
            Some(url::Host::Ipv6(ip)) => Address::Socket((ip, port).into()),
            Some(url::Host::Domain(name)) => Address::Name(name.to_owned(), port),
            None => return Err("the URL has no host".to_owned()),
        };
        let host = url.host_str().unwrap_or_default();
        let host = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        };
        let host = HeaderValue::from_str(&host).map_err(|_| "the URL's host is not header text")?;
        Ok(DirectPool {
            address,
            host,
            connect_timeout,
            idle: Mutex::new(Vec::new()),
            connections: Mutex::new(JoinSet::new()),
        })
    }

    async fn send(self: Arc<Self>, request: DirectRequest) -> Result<Response, SendError> {
        let mut sender = self.checkout().await?;
        let path = &request.url[url::Position::BeforePath..url::Position::AfterQuery];
        let uri = Uri::try_from(path).map_err(|e| SendError {
            connect: false,
            detail: format!("the request's path is not valid: {e}"),
        })?;
        let mut outgoing = hyper::Request::new(Full::new(request.body));
        *outgoing.method_mut() = request.method;
        *outgoing.uri_mut() = uri;
        let mut headers = request.headers;
        headers.insert(HOST, self.host.clone());
        *outgoing.headers_mut() = headers;
        let response = sender
            .send_request(outgoing)
            .await
            .map_err(|error| SendError {
                connect: false,
                detail: format!("error sending request: {}", crate::error_chain(&error)),
            })?;
        let (head, body) = response.into_parts();
        let mut connection = Some((self, sender));
        if hyper::body::Body::is_end_stream(&body) {
            give_back(&mut connection);
        }
        Ok(Response {
            status: head.status,
            headers: head.headers,
            body: Body::Direct { body, connection },
        })
    }

    /// An open, ready connection: the most recently used idle one, or a new one.
    async fn checkout(&self) -> Result<SendRequest<Full<Bytes>>, SendError> {
        loop {
            let Some(mut sender) = self.take_idle() else {
                // Boxed: opening is rare, and its future would make every request's larger.
                return Box::pin(self.open()).await;
            };
            if sender.is_ready() {
                return Ok(sender);
            }
            if sender.is_closed() {
                continue;
            }
            if let Ok(Ok(())) = tokio::time::timeout(self.connect_timeout, sender.ready()).await {
                return Ok(sender);
            }
        }
    }

    fn take_idle(&self) -> Option<SendRequest<Full<Bytes>>> {
        let mut idle = lock(&self.idle);
        let now = Instant::now();
        idle.retain(|c| now.duration_since(c.since) < IDLE_TIMEOUT && !c.sender.is_closed());
        idle.pop().map(|c| c.sender)
    }

    /// Keeps a connection whose answer was read, within the pool's bounds.
    fn keep(&self, sender: SendRequest<Full<Bytes>>) {
        if sender.is_closed() {
            return;
        }
        let mut idle = lock(&self.idle);
        let now = Instant::now();
        idle.retain(|c| now.duration_since(c.since) < IDLE_TIMEOUT);
        if idle.len() >= MAX_IDLE_CONNECTIONS {
            // The oldest goes: its task ends once its sender is dropped.
            idle.remove(0);
        }
        idle.push(IdleConnection { sender, since: now });
    }

    /// Opens a new connection within the connect deadline.
    async fn open(&self) -> Result<SendRequest<Full<Bytes>>, SendError> {
        let connect_error = |detail: String| SendError {
            connect: true,
            detail: format!("error sending request: tcp connect error: {detail}"),
        };
        let connecting = async {
            match &self.address {
                Address::Socket(address) => TcpStream::connect(address).await,
                Address::Name(name, port) => TcpStream::connect((name.as_str(), *port)).await,
            }
        };
        let stream = match tokio::time::timeout(self.connect_timeout, connecting).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(error)) => return Err(connect_error(error.to_string())),
            Err(_) => {
                return Err(connect_error(format!(
                    "no connection within {:?}",
                    self.connect_timeout
                )));
            }
        };
        // Requests are small and answered at once: no Nagle delay.
        let _ = stream.set_nodelay(true);
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|error| SendError {
                connect: false,
                detail: format!("error sending request: {}", crate::error_chain(&error)),
            })?;
        let mut connections = lock(&self.connections);
        while connections.try_join_next().is_some() {}
        connections.spawn(async move {
            if let Err(error) = connection.await {
                tracing::trace!(%error, "an HTTP connection ended");
            }
        });
        Ok(sender)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper_util::client::proxy::matcher::Matcher;

    fn route(url: &str, proxies: &Matcher) -> Route {
        route_for(&Url::parse(url).expect("url"), proxies)
    }

    #[test]
    fn direct_http_takes_hyper_and_proxied_https_or_credentialed_urls_take_reqwest() {
        let none = Matcher::builder().build();
        assert_eq!(route("http://127.0.0.1:8080/mcp", &none), Route::Direct);
        assert_eq!(route("http://localhost/mcp?x=1", &none), Route::Direct);
        assert_eq!(route("https://example.com/mcp", &none), Route::Reqwest);
        assert_eq!(route("http://u:p@127.0.0.1/mcp", &none), Route::Reqwest);

        let proxied = Matcher::builder()
            .http("http://127.0.0.1:3128")
            .no("localhost,10.0.0.0/8")
            .build();
        assert_eq!(route("http://example.com/mcp", &proxied), Route::Reqwest);
        assert_eq!(route("http://localhost:9/mcp", &proxied), Route::Direct);
        assert_eq!(route("http://10.1.2.3/mcp", &proxied), Route::Direct);

        let everything = Matcher::builder().all("http://127.0.0.1:3128").build();
        assert_eq!(route("http://127.0.0.1:9/mcp", &everything), Route::Reqwest);
    }
}
