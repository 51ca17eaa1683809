//! The proxy environment reaches HTTP servers as it always did: a plain `http://` server
//! that `HTTP_PROXY` or `ALL_PROXY` applies to is reached through the proxy (and one that
//! `NO_PROXY` names, or with no proxy set, directly); an `https://` server speaks TLS
//! (rustls) directly, or through the proxy's `CONNECT` tunnel when `HTTPS_PROXY` applies.
//! The proxy here records what it is asked and passes plain HTTP on to the fixture.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::json;
use switchboard_testkit::serve::HttpServer;

use crate::{NO_PROXY_VARIABLES, PROXY_VARIABLES, Run, config, isolated_switchboard, run_bounded};

/// How long the proxy and the TLS listener wait for a socket to move.
const SOCKET_DEADLINE: Duration = Duration::from_secs(30);
/// The most of a request head the proxy reads.
const HEAD_CAP: usize = 64 * 1024;

type Seen = Arc<Mutex<Vec<String>>>;

fn seen(lines: &Seen) -> Vec<String> {
    lines.lock().unwrap_or_else(PoisonError::into_inner).clone()
}

/// `switchboard tools` against `url` with exactly these proxy settings (none inherited).
fn tools_with_proxies(url: &str, proxies: &[(&str, &str)]) -> Run {
    let path = config(json!({ "remote": { "type": "http", "url": url } }));
    let mut command = isolated_switchboard();
    for name in PROXY_VARIABLES.iter().chain(&NO_PROXY_VARIABLES) {
        command.env_remove(name);
    }
    command
        .args(["tools", "--config", path.to_str().expect("utf-8 path")])
        .envs(proxies.iter().copied());
    run_bounded(command, &format!("switchboard tools with {proxies:?}"))
}

/// A forward proxy: records each connection's request line; passes plain HTTP on to
/// `upstream`, refuses `CONNECT` with 502. Its threads end when their sockets close or
/// stall past [`SOCKET_DEADLINE`].
fn recording_proxy(upstream: SocketAddr) -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
    let url = format!("http://{}", listener.local_addr().expect("proxy addr"));
    let lines: Seen = Arc::default();
    let recorded = lines.clone();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { return };
            let recorded = recorded.clone();
            std::thread::spawn(move || pass_on(client, upstream, &recorded));
        }
    });
    (url, lines)
}

fn pass_on(mut client: TcpStream, upstream: SocketAddr, recorded: &Seen) {
    let _ = client.set_read_timeout(Some(SOCKET_DEADLINE));
    let mut head = Vec::new();
    let mut chunk = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < HEAD_CAP {
        match client.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&chunk[..n]),
        }
    }
    let text = String::from_utf8_lossy(&head);
    let line = text.lines().next().unwrap_or_default().to_owned();
    recorded
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(line.clone());
    if line.starts_with("CONNECT ") {
        let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n");
        return;
    }
    let Ok(mut server) = TcpStream::connect(upstream) else {
        return;
    };
    let _ = server.set_read_timeout(Some(SOCKET_DEADLINE));
    // As a proxy does: the request line in origin form, and (to keep this one simple) one
    // request per connection.
    let origin_form = rewrite_for_upstream(&head);
    if server.write_all(&origin_form).is_err() {
        return;
    }
    let (Ok(mut server_writer), Ok(mut client_reader)) = (server.try_clone(), client.try_clone())
    else {
        return;
    };
    let body = std::thread::spawn(move || {
        let _ = std::io::copy(&mut client_reader, &mut server_writer);
    });
    let _ = std::io::copy(&mut server, &mut client);
    let _ = client.shutdown(Shutdown::Both);
    let _ = server.shutdown(Shutdown::Both);
    let _ = body.join();
}

/// `POST http://host:port/path HTTP/1.1` as `POST /path HTTP/1.1`, with
/// `connection: close` added; the rest of what was read (headers, body bytes) as it came.
fn rewrite_for_upstream(head: &[u8]) -> Vec<u8> {
    let line_end = head
        .windows(2)
        .position(|w| w == b"\r\n")
        .unwrap_or(head.len());
    let line = String::from_utf8_lossy(&head[..line_end]);
    let mut parts = line.splitn(3, ' ');
    let (method, target, version) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    let path = target
        .strip_prefix("http://")
        .and_then(|rest| rest.find('/').map(|slash| &rest[slash..]))
        .unwrap_or(target);
    let mut out = format!("{method} {path} {version}\r\nconnection: close").into_bytes();
    out.extend_from_slice(&head[line_end..]);
    out
}

/// A listener that records the first byte of each connection and closes it (a TLS client
/// opens with a handshake record, 0x16).
fn first_byte_listener() -> (SocketAddr, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = listener.local_addr().expect("addr");
    let bytes: Seen = Arc::default();
    let recorded = bytes.clone();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(mut client) = client else { return };
            let _ = client.set_read_timeout(Some(SOCKET_DEADLINE));
            let mut first = [0u8; 1];
            if client.read_exact(&mut first).is_ok() {
                recorded
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(format!("{:#04x}", first[0]));
            }
        }
    });
    (address, bytes)
}

#[test]
fn plain_http_goes_through_the_proxy_the_environment_names_unless_no_proxy_names_the_host() {
    let http = HttpServer::fixture(&[]);
    let upstream: SocketAddr = ([127, 0, 0, 1], http.port()).into();
    let (proxy, through_proxy) = recording_proxy(upstream);

    let direct = tools_with_proxies(http.url(), &[]);
    assert_eq!(direct.code, 0, "{}", direct.stderr);
    assert_eq!(seen(&through_proxy), Vec::<String>::new(), "no proxy set");

    let exempt = tools_with_proxies(
        http.url(),
        &[("HTTP_PROXY", &proxy), ("NO_PROXY", "localhost,127.0.0.1")],
    );
    assert_eq!(exempt.code, 0, "{}", exempt.stderr);
    assert_eq!(seen(&through_proxy), Vec::<String>::new(), "NO_PROXY");

    let proxied = tools_with_proxies(http.url(), &[("HTTP_PROXY", &proxy)]);
    assert_eq!(proxied.code, 0, "{}", proxied.stderr);
    let lines = seen(&through_proxy);
    let expected = format!("POST {} HTTP/1.1", http.url());
    assert!(lines.contains(&expected), "HTTP_PROXY: {lines:?}");

    let before = lines.len();
    let all = tools_with_proxies(http.url(), &[("all_proxy", &proxy)]);
    assert_eq!(all.code, 0, "{}", all.stderr);
    let lines = seen(&through_proxy);
    assert!(
        lines[before..].contains(&expected),
        "all_proxy: {:?}",
        &lines[before..]
    );
}

#[test]
fn https_speaks_tls_directly_or_tunnels_through_the_https_proxy() {
    let (tls_server, first_bytes) = first_byte_listener();
    let url = format!("https://{tls_server}/mcp");
    let (proxy, through_proxy) = recording_proxy(tls_server);

    // `HTTP_PROXY` is for plain HTTP only: the https server is reached directly, with TLS.
    let direct = tools_with_proxies(&url, &[("HTTP_PROXY", &proxy)]);
    assert_ne!(direct.code, 0, "the listener speaks no TLS back");
    let opened = seen(&first_bytes);
    assert!(
        !opened.is_empty() && opened.iter().all(|b| b == "0x16"),
        "a TLS handshake opens each connection: {opened:?}"
    );
    assert_eq!(seen(&through_proxy), Vec::<String>::new());

    let tunnelled = tools_with_proxies(&url, &[("HTTPS_PROXY", &proxy)]);
    assert_ne!(tunnelled.code, 0, "the proxy refuses the tunnel");
    let lines = seen(&through_proxy);
    let expected = format!("CONNECT {tls_server} HTTP/1.1");
    assert!(lines.contains(&expected), "HTTPS_PROXY: {lines:?}");
    assert_eq!(
        seen(&first_bytes),
        opened,
        "nothing reached the server directly"
    );
}
