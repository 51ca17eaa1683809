//! `switchboard login SERVER` and `switchboard logout SERVER` (or `--url URL` for a server
//! no config names): OAuth for HTTP servers.
//!
//! Login runs the authorization-code flow: the URL is printed (and opened in the browser
//! unless `--no-browser`), the authorization server sends the browser back to a one-shot
//! listener on 127.0.0.1 with an ephemeral port; with `--no-browser` the address the browser
//! ends up at is pasted instead. Tokens go to the token file (see [`token_store`]), readable
//! only by the user, never to `mcp.json` and never to the terminal. Other commands use the
//! saved tokens and say to run `switchboard login` when there are none.
//!
//! `--device` (for a machine without a browser) uses the device authorization grant
//! (RFC 8628) instead, when the authorization server's metadata offers it: the code and
//! the address to enter it at (and the address with the code filled in, when the server
//! gives one) are printed, and the token endpoint is polled at the server's interval until
//! the user approves on another device, denies, or the code expires (at most 30 minutes;
//! Ctrl-C stops it). The code and addresses are the server's text: checked by the auth
//! crate (https or loopback http, bounded lengths) and printed neutralised. The tokens are
//! saved exactly as the code flow's are (same store and key, `--as` too). A server that
//! does not offer the grant ends the login with a message suggesting `--no-browser`.
//!
//! A login's handshake waits for the person: its connect deadline is the user's step's
//! (5 minutes in a browser, the device code's capped expiry) plus a margin, however short
//! the server's `startupTimeout` is.

use std::io::BufRead;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use switchboard_auth::{
    Acquire, AuthorizationDriver, BoxFuture, ClientCredentials, DeviceDriver, DevicePrompt,
    DriverError, DriverErrorKind, FileTokens, OAuthClient, OAuthConfig, StoreBinding, StoreKey,
    TokenStore, WorkloadIdentity, WorkloadToken,
};
use switchboard_config::{ServerEntry, TransportEntry, WorkloadIdentitySource};
use url::Url;

use crate::terminal::{say, say_usable_address};

/// How long login waits for the user to approve in a browser (or to paste).
const APPROVAL_DEADLINE: Duration = Duration::from_secs(300);

/// What a login's handshake allows beyond the user's step: discovery, registration and
/// the token requests.
const LOGIN_MARGIN: Duration = Duration::from_secs(120);

/// The token file: `SWITCHBOARD_TOKEN_FILE`, else `$XDG_DATA_HOME/switchboard/tokens.json`,
/// else `~/.local/share/switchboard/tokens.json`.
pub(crate) fn token_store() -> TokenStore {
    let path = std::env::var_os("SWITCHBOARD_TOKEN_FILE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let base = std::env::var_os("XDG_DATA_HOME")
                .map(PathBuf::from)
                .or_else(|| {
                    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".local/share"))
                })
                .unwrap_or_else(|| PathBuf::from("."));
            base.join("switchboard").join("tokens.json")
        });
    TokenStore::new(&path)
}

/// The OAuth client for an HTTP entry, with saved tokens loaded: a login's
/// (`Acquire::Authorize`) or every other command's (`Acquire::SavedLogin`: the saved tokens
/// only, never discovery or registration; `Acquire::Unattended` for an entry with a
/// `workloadIdentity`). The entry's `clientMetadataUrl` is the client id where the
/// authorization server accepts metadata documents.
pub(crate) fn oauth_client(
    entry: &ServerEntry,
    binding: StoreBinding,
    acquire: Acquire,
    redirect_uri: String,
) -> Result<OAuthClient, String> {
    OAuthClient::new(OAuthConfig {
        client_name: "Switchboard".into(),
        redirect_uri,
        pre_registered: None,
        client_metadata_url: entry.oauth.client_metadata_url.clone(),
        want_refresh_tokens: true,
        max_step_ups: 2,
        acquire,
        identity_assertion: None,
        workload_identity: workload_identity(entry),
        store: Some(binding),
    })
    .map_err(|e| format!("server `{}`: {e}", entry.name))
}

/// The entry's `workloadIdentity`, for the JWT-bearer grant.
fn workload_identity(entry: &ServerEntry) -> Option<WorkloadIdentity> {
    let token = match entry.oauth.workload_identity.as_ref()? {
        WorkloadIdentitySource::File(path) => WorkloadToken::File(path.clone()),
        WorkloadIdentitySource::Value(token) => WorkloadToken::Value(token.clone()),
    };
    Some(WorkloadIdentity { token })
}

/// The token file's authorization under `key`, renewed in turns by this user's processes
/// (`FileTokens`: a lock file per server and identity beside the token file); set
/// [`StoreBinding::shared`] to another store for one that instances on several machines
/// share.
pub(crate) fn binding(key: StoreKey) -> StoreBinding {
    let store = token_store();
    StoreBinding {
        shared: Some(Arc::new(FileTokens::new(store.clone()))),
        store,
        server_url: key.server_url,
        on_behalf_of: key.on_behalf_of,
    }
}

/// What the gateway's token exchange for one caller needs.
pub(crate) struct Exchanging<'a> {
    /// The server.
    pub(crate) entry: &'a ServerEntry,
    /// The gateway's client at the authorization server.
    pub(crate) pre_registered: ClientCredentials,
    /// [`Acquire::OnBehalfOf`] the caller.
    pub(crate) acquire: Acquire,
}

/// The OAuth client that exchanges one caller's token for the server's own (RFC 8693):
/// nothing stored (the exchanged tokens live as long as the caller's session), no
/// registration, no user's step.
pub(crate) fn exchanging_client(exchanging: Exchanging<'_>) -> Result<OAuthClient, String> {
    OAuthClient::new(OAuthConfig {
        client_name: "Switchboard".into(),
        redirect_uri: "http://127.0.0.1/callback".into(),
        pre_registered: Some(exchanging.pre_registered),
        client_metadata_url: None,
        want_refresh_tokens: false,
        max_step_ups: 2,
        acquire: exchanging.acquire,
        identity_assertion: None,
        workload_identity: None,
        store: None,
    })
    .map_err(|e| format!("server `{}`: {e}", exchanging.entry.name))
}

fn http_url(entry: &ServerEntry) -> Result<&str, String> {
    match &entry.transport {
        TransportEntry::Http { url, .. } => Ok(url),
        TransportEntry::Stdio { .. } => Err(format!(
            "server `{}` is a local (stdio) server: it takes credentials from its `env`, not from a login",
            entry.name
        )),
    }
}

/// How the user approves the authorization request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Approval {
    /// In a browser opened for them; the redirect comes back to a loopback listener.
    Browser,
    /// By visiting the printed address and pasting back the one the browser ends at
    /// (`--no-browser`).
    Paste,
    /// By entering a printed code at a printed address on any device (`--device`, RFC 8628).
    Device,
}

/// What a login did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LoginOutcome {
    /// Authorized and saved; the server offers this many tools.
    LoggedIn {
        /// Tools it offers.
        tools: usize,
    },
    /// The server asked for no authorization: nothing was saved, none is needed.
    NotNeeded {
        /// Tools it offers without one.
        tools: usize,
    },
}

/// Why a login failed: the command was wrong for this server (exit 2), or the server or
/// the authorization failed (exit 3).
#[derive(Debug)]
pub(crate) enum LoginError {
    /// Not a server one logs in to (a stdio server).
    NotApplicable(String),
    /// The server or the authorization failed.
    Failed(String),
}

/// Logs in to an HTTP server.
pub(crate) async fn login(
    entry: &ServerEntry,
    approval: Approval,
    on_behalf_of: Option<&str>,
) -> Result<LoginOutcome, LoginError> {
    let key = StoreKey {
        server_url: http_url(entry)
            .map_err(LoginError::NotApplicable)?
            .to_owned(),
        on_behalf_of: on_behalf_of.map(str::to_owned),
    };
    authorize(entry, key, approval)
        .await
        .map_err(LoginError::Failed)
}

async fn authorize(
    entry: &ServerEntry,
    key: StoreKey,
    approval: Approval,
) -> Result<LoginOutcome, String> {
    let store = token_store();
    // A login starts fresh: forget what was saved for this server (and identity).
    store.remove_for(&key).map_err(|e| e.to_string())?;
    let (acquire, redirect_uri) = user_step(entry, approval)?;
    let client = oauth_client(entry, binding(key.clone()), acquire, redirect_uri)?;
    // The handshake waits for the person: its deadline (`startupTimeout`) covers the
    // user's step, however short the server's own is.
    let approval_deadline = match approval {
        Approval::Device => switchboard_auth::MAX_DEVICE_WAIT,
        Approval::Browser | Approval::Paste => APPROVAL_DEADLINE,
    };
    let mut waiting = entry.clone();
    waiting.startup_timeout =
        Some((approval_deadline + LOGIN_MARGIN).max(entry.startup_timeout.unwrap_or_default()));
    let server =
        crate::connect::ConnectedServer::connect_with(&waiting, None, Some(Arc::new(client)))
            .await
            .map_err(|e| e.to_string())?;
    let listed = server.session.list_tools().await.map(|l| l.items.len());
    server.close().await;
    let tools = listed.map_err(|e| e.to_string())?;
    if store.load_for(&key).map_err(|e| e.to_string())?.is_none() {
        return Ok(LoginOutcome::NotNeeded { tools });
    }
    Ok(LoginOutcome::LoggedIn { tools })
}

/// How the user approves, and the redirect URI a code-flow client registers (a device
/// login's takes no redirects; the URI is not used).
fn user_step(entry: &ServerEntry, approval: Approval) -> Result<(Acquire, String), String> {
    if approval == Approval::Device {
        let acquire = Acquire::Device {
            driver: Arc::new(DeviceCodePrinter),
            fallback_command: format!("{} --no-browser", crate::adhoc::login_command(entry)),
        };
        return Ok((acquire, "http://127.0.0.1/callback".to_owned()));
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| format!("could not listen on 127.0.0.1 for the callback: {e}"))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let redirect_uri = format!("http://127.0.0.1:{port}/callback");
    let driver: Arc<dyn AuthorizationDriver> = match approval {
        Approval::Browser => {
            listener.set_nonblocking(true).map_err(|e| e.to_string())?;
            let listener =
                tokio::net::TcpListener::from_std(listener).map_err(|e| e.to_string())?;
            Arc::new(LoopbackDriver {
                listener: Mutex::new(Some(listener)),
            })
        }
        Approval::Paste | Approval::Device => {
            drop(listener);
            Arc::new(PasteDriver)
        }
    };
    Ok((Acquire::Authorize(driver), redirect_uri))
}

/// Forgets a server's saved authorization (the user's own, or an identity's); returns
/// whether there was one.
pub(crate) fn logout(entry: &ServerEntry, on_behalf_of: Option<&str>) -> Result<bool, String> {
    let key = StoreKey {
        server_url: http_url(entry)?.to_owned(),
        on_behalf_of: on_behalf_of.map(str::to_owned),
    };
    token_store().remove_for(&key).map_err(|e| e.to_string())
}

/// Checks an identity given to `--as`: `client:NAME` (a named client of `serve`'s
/// `clients`) or `subject:SUB` (an OAuth subject).
pub(crate) fn check_identity(identity: &str) -> Result<(), String> {
    let named = ["client:", "subject:"]
        .iter()
        .find_map(|prefix| identity.strip_prefix(prefix));
    match named {
        Some(rest) if !rest.is_empty() && !rest.chars().any(char::is_control) => Ok(()),
        _ => Err(format!(
            "--as `{}`: give the gateway client the tokens are for, as `client:NAME` (a named client of `clients`) or `subject:SUB` (an OAuth token's subject)",
            identity.escape_debug()
        )),
    }
}

/// Prints the URL, opens the browser, and takes one callback on the loopback listener.
struct LoopbackDriver {
    listener: Mutex<Option<tokio::net::TcpListener>>,
}

impl AuthorizationDriver for LoopbackDriver {
    fn authorize(&self, authorization_url: Url) -> BoxFuture<'_, Result<Url, DriverError>> {
        let listener = self
            .listener
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        Box::pin(async move {
            let listener = listener.ok_or_else(|| {
                DriverError::new(
                    DriverErrorKind::Local,
                    "the callback listener was already used",
                )
            })?;
            say_usable_address(format_args!(
                "switchboard: opening your browser to authorize; if it does not open, visit:\n  {authorization_url}"
            ));
            if let Err(error) = crate::browser::open_in_browser(authorization_url.as_str()) {
                say(format_args!(
                    "switchboard: could not open a browser ({error}); open the address above yourself"
                ));
            }
            let accepted = tokio::time::timeout(APPROVAL_DEADLINE, listener.accept()).await;
            let (mut socket, _) = accepted
                .map_err(|_| {
                    DriverError::new(
                        DriverErrorKind::TimedOut,
                        "no approval arrived within 5 minutes",
                    )
                })?
                .map_err(local)?;
            let port = listener.local_addr().map_err(local)?.port();
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let mut request = vec![0u8; 8192];
            let read = tokio::time::timeout(Duration::from_secs(10), socket.read(&mut request))
                .await
                .map_err(|_| {
                    DriverError::new(
                        DriverErrorKind::TimedOut,
                        "the browser's callback did not arrive",
                    )
                })?
                .map_err(local)?;
            let head = String::from_utf8_lossy(&request[..read]);
            let target = head
                .lines()
                .next()
                .and_then(|line| line.split_whitespace().nth(1))
                .ok_or_else(|| {
                    DriverError::new(
                        DriverErrorKind::BadRedirect,
                        "the callback request was not HTTP",
                    )
                })?
                .to_owned();
            let page = "<!doctype html><title>Switchboard</title><p>Authorization received. You can close this tab.";
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
                page.len()
            );
            let _ = socket.write_all(response.as_bytes()).await;
            Url::parse(&format!("http://127.0.0.1:{port}{target}")).map_err(|e| {
                DriverError::new(
                    DriverErrorKind::BadRedirect,
                    format!("the callback address is not a URL: {e}"),
                )
            })
        })
    }
}

/// Headless: prints the URL and reads the address the browser was sent to from stdin.
struct PasteDriver;

impl AuthorizationDriver for PasteDriver {
    fn authorize(&self, authorization_url: Url) -> BoxFuture<'_, Result<Url, DriverError>> {
        Box::pin(async move {
            say_usable_address(format_args!(
                "switchboard: open this address in a browser and approve:\n  {authorization_url}"
            ));
            say(format_args!(
                "switchboard: then paste the address the browser was sent to (it starts with http://127.0.0.1) and press Enter:"
            ));
            let line = tokio::time::timeout(
                APPROVAL_DEADLINE,
                tokio::task::spawn_blocking(|| {
                    let mut line = String::new();
                    std::io::stdin().lock().read_line(&mut line).map(|_| line)
                }),
            )
            .await
            .map_err(|_| {
                DriverError::new(
                    DriverErrorKind::TimedOut,
                    "no address was pasted within 5 minutes",
                )
            })?
            .map_err(local)?
            .map_err(|e| {
                DriverError::new(
                    DriverErrorKind::Local,
                    format!("could not read the pasted address: {e}"),
                )
            })?;
            Url::parse(line.trim()).map_err(|e| {
                DriverError::new(
                    DriverErrorKind::BadRedirect,
                    format!("the pasted text is not an address: {e}"),
                )
            })
        })
    }
}

/// Prints a device login's code and where to enter it (`--device`).
struct DeviceCodePrinter;

impl DeviceDriver for DeviceCodePrinter {
    fn show(&self, prompt: &DevicePrompt) -> Result<(), DriverError> {
        say_usable_address(format_args!(
            "switchboard: to log in, visit this address on any device with a browser:\n  {}\nswitchboard: and enter this code there:\n  {}",
            prompt.verification_uri, prompt.user_code
        ));
        if let Some(complete) = &prompt.verification_uri_complete {
            say_usable_address(format_args!(
                "switchboard: or visit this address, which carries the code:\n  {complete}"
            ));
        }
        let seconds = prompt.expires_in.as_secs();
        let expiry = match seconds {
            0..120 => format!("{seconds} seconds"),
            _ => format!("{} minutes", seconds.div_ceil(60)),
        };
        say(format_args!(
            "switchboard: waiting for the approval (the code expires in {expiry}; Ctrl-C stops)"
        ));
        Ok(())
    }
}

/// A local failure (listener, socket, terminal) of the user's step.
fn local(error: impl std::fmt::Display) -> DriverError {
    DriverError::new(DriverErrorKind::Local, error.to_string())
}
