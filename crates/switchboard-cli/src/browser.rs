//! The user's browser, for `switchboard login`'s authorization step. The one process the
//! CLI starts itself (a named exception to "only `switchboard-wire` starts processes",
//! checked by the testkit's tidy test): the platform's opener, handed the URL and nothing
//! else.

/// Opens `url` in the user's browser without a shell: the URL is one argument to the
/// platform's opener (`xdg-open`, or `open` on macOS). Only `https` URLs, or `http` to a
/// loopback host, are opened. Waits at most five seconds for the opener to hand over.
pub(crate) fn open_in_browser(url: &str) -> std::io::Result<()> {
    let lower = url.to_ascii_lowercase();
    let loopback = ["http://127.0.0.1", "http://localhost", "http://[::1]"]
        .iter()
        .any(|p| lower.starts_with(p));
    if !(lower.starts_with("https://") || loopback) {
        return Err(std::io::Error::other(format!(
            "refusing to open {url:?}: only https (or http on loopback) URLs are opened"
        )));
    }
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let mut child = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    let started = std::time::Instant::now();
    loop {
        match child.try_wait()? {
            Some(status) if status.success() => return Ok(()),
            Some(status) => {
                return Err(std::io::Error::other(format!("{opener} failed ({status})")));
            }
            None if started.elapsed() > std::time::Duration::from_secs(5) => {
                let _ = child.kill();
                let _ = child.wait();
                return Ok(());
            }
            None => std::thread::sleep(std::time::Duration::from_millis(50)),
        }
    }
}
