//! The one-page listener (`http::scrape`, behind `serve --metrics`) over real TCP: it
//! serves its page, says 404 and 405 for the rest, refuses an oversized request head, and
//! a connection beyond its cap closes the oldest one, so idle connections cannot lock a
//! scraper out.

use std::sync::Arc;
use std::time::Duration;

use switchboard_server::http::scrape::{MAX_CONNECTIONS, Page, PageServer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

/// Longest wait for one exchange (a hang detector).
const BOUND: Duration = Duration::from_secs(10);

/// Sends `request` raw and reads until the server closes or `BOUND`; the first line of the
/// answer.
async fn first_line(address: std::net::SocketAddr, request: &[u8]) -> String {
    let mut stream = TcpStream::connect(address).await.expect("connect");
    stream.write_all(request).await.expect("write");
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(BOUND, stream.read_to_end(&mut answer)).await;
    String::from_utf8_lossy(&answer)
        .lines()
        .next()
        .unwrap_or("")
        .to_owned()
}

#[tokio::test]
async fn a_page_server_serves_its_page_refuses_the_rest_and_closes_the_oldest_connection() {
    let page = Page {
        path: "/metrics",
        content_type: "text/plain; version=0.0.4; charset=utf-8",
        render: Arc::new(|| "up 1\n".to_owned()),
    };
    let server = PageServer::bind("127.0.0.1:0".parse().expect("an address"), page)
        .await
        .expect("bind");
    let address = server.local_addr();
    let shutdown = CancellationToken::new();
    let serving = tokio::spawn(server.serve(shutdown.clone()));

    let close = b"Connection: close\r\n\r\n";
    let ask = |method: &str, path: &str| {
        let mut request = format!("{method} {path} HTTP/1.1\r\nHost: x\r\n").into_bytes();
        request.extend_from_slice(close);
        request
    };
    let mut huge = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Pad: ".to_vec();
    huge.extend(std::iter::repeat_n(b'a', 16 * 1024));
    huge.extend_from_slice(b"\r\n\r\n");
    let lines = [
        first_line(address, &ask("GET", "/metrics")).await,
        first_line(address, &ask("GET", "/")).await,
        first_line(address, &ask("POST", "/metrics")).await,
        first_line(address, &huge).await,
    ];
    assert_eq!(
        lines,
        [
            "HTTP/1.1 200 OK",
            "HTTP/1.1 404 Not Found",
            "HTTP/1.1 405 Method Not Allowed",
            "HTTP/1.1 431 Request Header Fields Too Large",
        ]
    );

    // The oldest idle connection is closed for the one past the cap.
    let mut oldest = TcpStream::connect(address).await.expect("connect");
    let mut others = Vec::new();
    for _ in 0..MAX_CONNECTIONS {
        others.push(TcpStream::connect(address).await.expect("connect"));
    }
    let mut byte = [0u8; 1];
    let read = tokio::time::timeout(BOUND, oldest.read(&mut byte))
        .await
        .expect("the oldest connection is closed");
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    let newest = others.pop().expect("a connection");
    drop(newest);
    assert_eq!(
        first_line(address, &ask("GET", "/metrics")).await,
        "HTTP/1.1 200 OK"
    );

    shutdown.cancel();
    tokio::time::timeout(BOUND, serving)
        .await
        .expect("serving ends")
        .expect("no panic");
}
