//! Per-caller upstream credentials: for the HTTP servers its owner names, each client's
//! requests (`tools/call`, `prompts/get`, `resources/read`) go over an upstream session of
//! that client's own, opened with that client's own credential — never the operator's,
//! never another client's, and never the client's own token passed through.
//!
//! The owner (the CLI) says which servers are per-caller and makes the credential for a
//! caller ([`UpstreamCredentials`]): tokens stored for that identity by `switchboard login
//! SERVER --as IDENTITY`, or the caller's access token exchanged (RFC 8693) at the
//! upstream's authorization server for one of its own. This module keeps the sessions
//! ([`CallerSessions`]): one per (server, caller), opened on the caller's first request
//! (concurrent first requests wait for one opening), reopened when it closed, when an
//! OAuth caller presents another token than the one it was opened with (a refreshed token
//! is exchanged anew), or when a reload or restart replaced the server (an edited URL is
//! followed). One unused for [`IDLE_CLOSE`] is closed when another caller's session is
//! opened. They are bounded: at most
//! [`MAX_CALLER_SESSIONS`]; when full, the least recently used idle one is closed to make
//! room, and when every one is busy the request is refused at once
//! ([`codes::CREDENTIALS`](crate::codes::CREDENTIALS)) rather than queued.
//!
//! A caller is who the client is: a named client (`client:NAME`) or an OAuth subject
//! (`subject:SUB`). The stdio client, the one shared bearer token and unauthenticated
//! peers have no identity of their own, so a per-caller server refuses them. Listings
//! (the catalog every client is shown) still come from the runtime's own session, with
//! the operator's credential; per-caller servers answer each call as that caller.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use switchboard_http::Authorizer;
use switchboard_runtime::Runtime;
use switchboard_server::core::{ClientIdentity, PresentedToken};
use switchboard_session::Session;
use switchboard_wire::ErrorObject;

use crate::codes;

/// The most upstream sessions of callers kept open at once, over all servers.
pub const MAX_CALLER_SESSIONS: usize = 1024;

/// How long a caller's session is kept unused before it is closed.
pub const IDLE_CLOSE: Duration = Duration::from_secs(600);

/// Who a request is for, as a per-caller server needs to know.
#[derive(Debug, Clone, Copy)]
pub struct Caller<'a> {
    /// `client:NAME` or `subject:SUB` (see [`caller_name`]).
    pub name: &'a str,
    /// The caller's access token, for an OAuth subject: what token exchange exchanges.
    pub token: Option<&'a PresentedToken>,
}

/// The owner's side: which servers are per-caller, and each caller's credential.
pub trait UpstreamCredentials: Send + Sync {
    /// Whether requests to `server` go out with each caller's own credential.
    fn is_per_caller(&self, server: &str) -> bool;

    /// The authorizer that presents `caller`'s own credential to `server`, or why there is
    /// none.
    fn authorizer_for(
        &self,
        server: &str,
        caller: Caller<'_>,
    ) -> Result<Arc<dyn Authorizer>, CredentialRefusal>;
}

/// Why a caller has no credential for a per-caller server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CredentialRefusal {
    /// The client has no identity of its own (the stdio client, the shared bearer token,
    /// an unauthenticated peer).
    #[error(
        "`{server}` is called with each client's own credentials, and this client has no identity of its own: connect as a named client (`clients`) or with an OAuth token"
    )]
    NoIdentity {
        /// The server.
        server: String,
    },
    /// No tokens are stored for the identity and none can be exchanged for it.
    #[error(
        "`{server}` has no credentials for `{identity}`: on the gateway's host, run `switchboard login {server} --as {identity}`{}",
        .exchange.as_deref().map(|why| format!(" ({why})")).unwrap_or_default()
    )]
    NotLoggedIn {
        /// The server.
        server: String,
        /// The caller.
        identity: String,
        /// Why no token could be exchanged instead, when exchange is configured.
        exchange: Option<String>,
    },
    /// The stored credentials cannot be read (the token file is not private, …).
    #[error("`{server}`: the credentials of `{identity}` cannot be used: {detail}")]
    Unusable {
        /// The server.
        server: String,
        /// The caller.
        identity: String,
        /// What is wrong, and what to do.
        detail: String,
    },
    /// Every session slot is in use by a request in flight.
    #[error(
        "the gateway has {limit} upstream sessions of callers open and every one is busy; retry shortly"
    )]
    Full {
        /// [`MAX_CALLER_SESSIONS`].
        limit: usize,
    },
}

impl CredentialRefusal {
    /// The JSON-RPC error a client is told.
    pub fn error(&self) -> ErrorObject {
        let data = match self {
            CredentialRefusal::NoIdentity { server } => json!({ "server": server }),
            CredentialRefusal::NotLoggedIn {
                server, identity, ..
            }
            | CredentialRefusal::Unusable {
                server, identity, ..
            } => json!({ "server": server, "identity": identity }),
            CredentialRefusal::Full { limit } => json!({ "limit": limit }),
        };
        ErrorObject {
            code: codes::CREDENTIALS,
            message: self.to_string(),
            data: Some(data),
        }
    }
}

/// The caller name of a client identity: `client:NAME` for a named client,
/// `subject:SUB` for an OAuth subject; `None` for the others.
pub fn caller_name(identity: &ClientIdentity) -> Option<String> {
    match identity {
        ClientIdentity::Client(name) => Some(format!("client:{name}")),
        ClientIdentity::Subject { subject, .. } if !subject.is_empty() => {
            Some(format!("subject:{subject}"))
        }
        _ => None,
    }
}

/// The callers' upstream sessions (see the module docs).
pub struct CallerSessions {
    credentials: Arc<dyn UpstreamCredentials>,
    slots: Mutex<HashMap<SlotKey, Arc<Slot>>>,
}

impl std::fmt::Debug for CallerSessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallerSessions")
            .field("open", &lock(&self.slots).len())
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct SlotKey {
    server: String,
    caller: String,
}

/// One caller's session with one server; its lock is held while the session is opened.
#[derive(Default)]
struct Slot {
    state: tokio::sync::Mutex<Option<Open>>,
    last_used: Mutex<Option<Instant>>,
}

struct Open {
    session: Session,
    /// A digest of the token the session's credential was made from (OAuth callers).
    token: Option<u64>,
    /// The server's generation it was opened for (`ServerHandle::generation`).
    generation: Option<u64>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

fn token_digest(token: Option<&PresentedToken>) -> Option<u64> {
    token.map(|token| {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        token.expose().hash(&mut hasher);
        hasher.finish()
    })
}

impl CallerSessions {
    /// Sessions made with `credentials`.
    pub fn new(credentials: Arc<dyn UpstreamCredentials>) -> CallerSessions {
        CallerSessions {
            credentials,
            slots: Mutex::new(HashMap::new()),
        }
    }

    /// Whether requests to `server` go out with each caller's own credential.
    pub fn is_per_caller(&self, server: &str) -> bool {
        self.credentials.is_per_caller(server)
    }

    /// The session of `identity` with `server`: the open one, or one opened now with the
    /// caller's credential. A refusal says what the client (or the operator) can do.
    pub async fn session_for(
        &self,
        runtime: &Runtime,
        server: &str,
        identity: &ClientIdentity,
    ) -> Result<Session, ErrorObject> {
        let Some(name) = caller_name(identity) else {
            return Err(CredentialRefusal::NoIdentity {
                server: server.to_owned(),
            }
            .error());
        };
        let token = match identity {
            ClientIdentity::Subject { grants, .. } => grants.claims().presented.as_ref(),
            _ => None,
        };
        let slot = self.slot(SlotKey {
            server: server.to_owned(),
            caller: name.clone(),
        })?;
        let mut state = slot.state.lock().await;
        *lock(&slot.last_used) = Some(Instant::now());
        let digest = token_digest(token);
        let generation = runtime.server(server).generation();
        if let Some(open) = &*state
            && open.session.close_reason().is_none()
            && open.token == digest
            && open.generation == generation
        {
            return Ok(open.session.clone());
        }
        // Closed, made from a token the caller no longer presents, or for a definition of
        // the server a reload or restart replaced.
        *state = None;
        let caller = Caller { name: &name, token };
        let authorizer = self
            .credentials
            .authorizer_for(server, caller)
            .map_err(|refusal| refusal.error())?;
        let session = runtime
            .server(server)
            .open_session_as(authorizer)
            .await
            .map_err(|error| caller_session_failed(server, &name, &error))?;
        *state = Some(Open {
            session: session.clone(),
            token: digest,
            generation,
        });
        Ok(session)
    }

    /// The slot for `key`, made if needed: idle sessions past [`IDLE_CLOSE`] are closed
    /// first, and when the table is full the least recently used idle one makes room.
    fn slot(&self, key: SlotKey) -> Result<Arc<Slot>, ErrorObject> {
        let mut slots = lock(&self.slots);
        if let Some(slot) = slots.get(&key) {
            return Ok(slot.clone());
        }
        let now = Instant::now();
        let idle = |slot: &Arc<Slot>| {
            // In use: someone holds its lock or a clone of the slot.
            Arc::strong_count(slot) == 1 && slot.state.try_lock().is_ok()
        };
        let used_at = |slot: &Arc<Slot>| *lock(&slot.last_used);
        slots.retain(|_, slot| {
            !(idle(slot) && used_at(slot).is_some_and(|at| now.duration_since(at) >= IDLE_CLOSE))
        });
        if slots.len() >= MAX_CALLER_SESSIONS {
            let oldest = slots
                .iter()
                .filter(|(_, slot)| idle(slot))
                .min_by_key(|(_, slot)| used_at(slot))
                .map(|(key, _)| key.clone());
            match oldest {
                Some(oldest) => {
                    slots.remove(&oldest);
                }
                None => {
                    return Err(CredentialRefusal::Full {
                        limit: MAX_CALLER_SESSIONS,
                    }
                    .error());
                }
            }
        }
        let slot = Arc::new(Slot::default());
        slots.insert(key, slot.clone());
        Ok(slot)
    }

    /// Caller sessions open now.
    pub fn open(&self) -> usize {
        lock(&self.slots).len()
    }
}

/// A caller's session that could not be opened: the upstream refused the credential or
/// could not be reached. Named with the caller, without any token.
fn caller_session_failed(
    server: &str,
    caller: &str,
    error: &switchboard_runtime::ServerRequestError,
) -> ErrorObject {
    tracing::warn!(server, caller = ?caller, %error, "a caller's upstream session could not be opened");
    ErrorObject {
        code: codes::CREDENTIALS,
        message: format!("`{server}` could not be reached as `{caller}`: {error}"),
        data: Some(json!({ "server": server, "identity": caller })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_server::core::{GrantClaims, Grants};

    #[test]
    fn callers_are_named_clients_and_subjects_only() {
        let subject = ClientIdentity::Subject {
            issuer: "https://idp.test".into(),
            subject: "alice".into(),
            grants: Grants::new(GrantClaims::default()),
        };
        let anonymous = ClientIdentity::Subject {
            issuer: "https://idp.test".into(),
            subject: "".into(),
            grants: Grants::new(GrantClaims::default()),
        };
        let names: Vec<Option<String>> = [
            ClientIdentity::Client("ci".into()),
            subject,
            anonymous,
            ClientIdentity::Local,
            ClientIdentity::peer("127.0.0.1".parse().expect("address")),
        ]
        .iter()
        .map(caller_name)
        .collect();
        assert_eq!(
            names,
            [
                Some("client:ci".to_owned()),
                Some("subject:alice".to_owned()),
                None,
                None,
                None
            ]
        );
    }

    struct NoCredentials;

    impl UpstreamCredentials for NoCredentials {
        fn is_per_caller(&self, _server: &str) -> bool {
            true
        }

        fn authorizer_for(
            &self,
            server: &str,
            _caller: Caller<'_>,
        ) -> Result<Arc<dyn Authorizer>, CredentialRefusal> {
            Err(CredentialRefusal::NoIdentity {
                server: server.to_owned(),
            })
        }
    }

    fn key(caller: usize) -> SlotKey {
        SlotKey {
            server: "remote".into(),
            caller: format!("client:c{caller}"),
        }
    }

    #[test]
    fn the_sessions_are_bounded_and_a_full_table_of_busy_ones_refuses_at_once() {
        let sessions = CallerSessions::new(Arc::new(NoCredentials));
        // Idle ones make room for newcomers: the table never grows past its bound.
        for caller in 0..MAX_CALLER_SESSIONS + 10 {
            let slot = sessions.slot(key(caller)).expect("room");
            *lock(&slot.last_used) = Some(Instant::now());
        }
        assert_eq!(sessions.open(), MAX_CALLER_SESSIONS);
        // Every one busy (a request holds it): the next caller is refused, not queued.
        let busy: Vec<Arc<Slot>> = lock(&sessions.slots).values().cloned().collect();
        let refused = sessions.slot(key(usize::MAX)).err().expect("refused");
        assert_eq!(refused.code, codes::CREDENTIALS);
        assert_eq!(sessions.open(), MAX_CALLER_SESSIONS);
        drop(busy);
        assert!(
            sessions.slot(key(usize::MAX)).is_ok(),
            "room once one is idle"
        );
    }

    #[test]
    fn refusals_say_what_to_do_and_carry_no_token() {
        let refusal = CredentialRefusal::NotLoggedIn {
            server: "remote".into(),
            identity: "client:ci".into(),
            exchange: None,
        };
        let error = refusal.error();
        assert_eq!(error.code, codes::CREDENTIALS);
        expect_test::expect![[r#"
            `remote` has no credentials for `client:ci`: on the gateway's host, run `switchboard login remote --as client:ci`"#]]
        .assert_eq(&error.message);
        let token = PresentedToken::new("eyJ.secret.token");
        assert_eq!(format!("{token:?}"), "PresentedToken(<redacted>)");
    }
}
