//! One server of a runtime, by name ([`ServerHandle`], from [`Runtime::server`]): what a
//! host asks of that server alone — restart it, send it a request (prompts, resources,
//! completions, a client's request), set its log level, follow one of its resources, load
//! its skills, read its identity and stderr, approve its tools, trust its definition.
//!
//! A handle holds only the name: each operation looks the server up when it runs, so a
//! handle stays right across reloads and restarts, and an operation on a name that is not
//! configured fails as that operation says (an error, or `None`).

use std::sync::atomic::Ordering;

use serde_json::Value;

use super::{
    ClientRequest, LifecycleEvent, MAX_RESOURCE_STREAMS, Runtime, RuntimeError, ServerOutcome,
    ServerRequestError, load_definitions,
};
use crate::guards::{LockReading, ToolLock};
use crate::restarts::{Resend, through_restarts};
use crate::server::lock;
use crate::skills::SkillLoadError;
use crate::sources::TrustStore;
use crate::state_file::{ApproveError, TrustError};
use switchboard_protocol::methods;

/// One server of a [`Runtime`], named; see [`Runtime::server`]. Cheap to copy.
#[derive(Debug, Clone, Copy)]
pub struct ServerHandle<'a> {
    runtime: &'a Runtime,
    name: &'a str,
}

impl<'a> ServerHandle<'a> {
    pub(super) fn new(runtime: &'a Runtime, name: &'a str) -> ServerHandle<'a> {
        ServerHandle { runtime, name }
    }

    /// The server's name.
    pub fn name(self) -> &'a str {
        self.name
    }

    /// Which start of the server's definition runs now: a number that changes whenever a
    /// reload that changed its entry, or a restart, replaces the server (`None` for a name
    /// not configured). A host holding sessions of its own
    /// ([`ServerHandle::open_session_as`]) opens new ones when it changes, so that they
    /// follow an edited URL or headers.
    pub fn generation(self) -> Option<u64> {
        self.runtime
            .inner
            .router
            .server(self.name)
            .map(|shared| shared.generation)
    }

    /// A session of its own with this HTTP server that presents `authorizer`'s credentials
    /// in place of the host's: for a host that calls for several users, each with a
    /// credential of their own (a gateway's per-caller upstream credentials). It connects
    /// as the server's supervisor does (the entry as running now, its deadlines, the
    /// host's handler and connect hooks) and belongs to the caller: nothing is listed
    /// through it, nothing restarts it, and dropping the last clone closes it. Send calls
    /// on it with [`ToolContext::session`](crate::ToolContext). A stdio server has no
    /// credentials to vary: [`ServerRequestError::NotHttp`].
    pub async fn open_session_as(
        self,
        authorizer: std::sync::Arc<dyn switchboard_http::Authorizer>,
    ) -> Result<switchboard_session::Session, ServerRequestError> {
        // A start or reload in progress holds the servers; wait for it as a call waits
        // for its server, no longer.
        let wait = self.runtime.inner.router.ready_wait;
        let Ok(control) = tokio::time::timeout(wait, self.runtime.inner.control.lock()).await
        else {
            return Err(ServerRequestError::Unavailable {
                server: self.name.to_owned(),
                state: "starting or reloading".to_owned(),
            });
        };
        let entry = control
            .servers
            .get(self.name)
            .map(|supervisor| supervisor.entry.clone());
        drop(control);
        let Some(entry) = entry else {
            return Err(ServerRequestError::NotConfigured {
                server: self.name.to_owned(),
            });
        };
        if !matches!(
            entry.transport,
            switchboard_config::TransportEntry::Http { .. }
        ) {
            return Err(ServerRequestError::NotHttp {
                server: self.name.to_owned(),
            });
        }
        let policy = lock(&self.runtime.inner.options).policy.clone();
        Ok(crate::server::connect_with(&entry, &policy, Some(authorizer)).await?)
    }

    /// Stops the server and starts it again from the definition it runs with (a server the
    /// breaker stopped too), then publishes; the other servers are untouched. Returns its
    /// state once it settled (ready, or why not), as the startup report shows it.
    pub async fn restart(self) -> Result<ServerOutcome, RuntimeError> {
        self.runtime.inner.restart(self.name).await
    }

    /// `prompts/get` or `resources/read` sent to the server for a client of the host's own,
    /// as [`Runtime::call_tool_for_client`] does for tools (the client's capabilities sent,
    /// an `input_required` result passed back, the retry's input forwarded). Waits for a
    /// reconnecting server as [`ServerHandle::get_prompt`] does.
    pub async fn request_for_client(
        self,
        request: ClientRequest,
    ) -> Result<Value, ServerRequestError> {
        let options = switchboard_session::CallOptions {
            for_client: Some(request.for_client),
            ..switchboard_session::CallOptions::default()
        };
        let (method, params, options) = (request.method, &request.params, &options);
        self.through_restarts(method, |session| async move {
            session
                .request_for_client(method, params.clone(), options)
                .await
        })
        .await
    }

    /// Gets a prompt from the server (the raw MCP result: `description`, `messages`),
    /// waiting for a reconnecting server as a bridged tool call does.
    pub async fn get_prompt(
        self,
        name: &str,
        arguments: Option<Value>,
    ) -> Result<Value, ServerRequestError> {
        let arguments = &arguments;
        self.through_restarts(methods::PROMPTS_GET, |session| async move {
            session.get_prompt(name, arguments.clone()).await
        })
        .await
    }

    /// Reads a resource from the server (the raw MCP result: `contents`), waiting for a
    /// reconnecting server as a bridged tool call does.
    pub async fn read_resource(self, uri: &str) -> Result<Value, ServerRequestError> {
        self.through_restarts(methods::RESOURCES_READ, |session| async move {
            session.read_resource(uri).await
        })
        .await
    }

    /// Asks the server for completions (`completion/complete` with `params` as given:
    /// `ref`, `argument`, `context`); the raw result, or `None` when the server offers no
    /// completions.
    pub async fn complete_raw(self, params: Value) -> Result<Option<Value>, ServerRequestError> {
        let session = self.ready_session().await?;
        if session.negotiated().capabilities.completions.is_none() {
            return Ok(None);
        }
        let (options, params) = (&switchboard_session::CallOptions::default(), &params);
        let method = methods::COMPLETION_COMPLETE;
        let answer = self.through_restarts(method, |session| async move {
            session.request(method, Some(params.clone()), options).await
        });
        Ok(Some(answer.await?))
    }

    /// Who the server says it is (its `serverInfo`), while it is connected; display only
    /// (self-asserted).
    pub fn identity(self) -> Option<switchboard_protocol::Implementation> {
        let shared = self.runtime.inner.router.server(self.name)?;
        let session = lock(&shared.session);
        session
            .as_ref()
            .and_then(|session| session.negotiated().server_info.clone())
    }

    /// Successful connections of the server's current supervisor (1 after it first came
    /// up; each reconnection after a crash or a lost connection adds one; a reload or
    /// [`ServerHandle::restart`] starts a new count; 0 for a name that is not configured).
    pub fn connections(self) -> u32 {
        self.runtime
            .inner
            .router
            .server(self.name)
            .map_or(0, |shared| shared.connection())
    }

    /// Asks the server for log messages at `level` and above (they arrive as
    /// [`NoticeKind::Log`](crate::NoticeKind::Log)): `logging/setLevel` to a legacy server,
    /// the level with every request to a 2026-07-28 one. The choice is kept and applied
    /// again whenever the server reconnects or restarts.
    pub async fn set_log_level(
        self,
        level: switchboard_protocol::LogLevel,
    ) -> Result<switchboard_session::LevelSet, ServerRequestError> {
        let session = self.ready_session().await?;
        lock(&self.runtime.inner.log_levels).insert(self.name.to_owned(), level);
        Ok(session.set_log_level(level).await?)
    }

    /// Subscribes to updates of `uri` on the server; the updates arrive as
    /// [`ServerNotice`](crate::ServerNotice)s. A legacy server gets `resources/subscribe`;
    /// a 2026-07-28 one a `subscriptions/listen` stream following that resource, kept open
    /// until [`ServerHandle::unsubscribe_resource`] (or until the server's session ends: a
    /// restarted server is not subscribed again). `Ok(false)` when the server offers no
    /// subscriptions (or does not honour this one).
    pub async fn subscribe_resource(self, uri: &str) -> Result<bool, ServerRequestError> {
        self.resource_subscription(uri, switchboard_protocol::methods::RESOURCES_SUBSCRIBE)
            .await
    }

    /// Ends a subscription made with [`ServerHandle::subscribe_resource`].
    pub async fn unsubscribe_resource(self, uri: &str) -> Result<bool, ServerRequestError> {
        self.resource_subscription(uri, switchboard_protocol::methods::RESOURCES_UNSUBSCRIBE)
            .await
    }

    async fn resource_subscription(
        self,
        uri: &str,
        method: &str,
    ) -> Result<bool, ServerRequestError> {
        let session = self.ready_session().await?;
        let streams = &self.runtime.inner.resource_streams;
        let negotiated = session.negotiated();
        let offered = negotiated
            .capabilities
            .resources
            .is_some_and(|resources| resources.subscribe);
        let key = (self.name.to_owned(), uri.to_owned());
        if negotiated.era == switchboard_protocol::Era::Modern {
            if method == switchboard_protocol::methods::RESOURCES_UNSUBSCRIBE {
                // Dropping the stream's call cancels it.
                return Ok(lock(streams).remove(&key).is_some());
            }
            let room = lock(streams).len() < MAX_RESOURCE_STREAMS;
            if !offered || !room {
                return Ok(false);
            }
            let filter = switchboard_protocol::SubscriptionFilter {
                resource_subscriptions: vec![uri.to_owned()],
                ..Default::default()
            };
            let (stream, honoured) = session.listen(&filter).await?;
            if !honoured
                .resource_subscriptions
                .iter()
                .any(|followed| followed == uri)
            {
                return Ok(false);
            }
            lock(streams).insert(key, stream);
            return Ok(true);
        }
        if !offered {
            return Ok(false);
        }
        let options = switchboard_session::CallOptions::default();
        session
            .request(method, Some(serde_json::json!({ "uri": uri })), &options)
            .await?;
        Ok(true)
    }

    /// Loads the skill whose `SKILL.md` is `uri` on the server, from the entry the runtime
    /// holds for it (listed again, or asked for with `skills/get`, when none is held for the
    /// server's current connection): its `SKILL.md` is read and verified against the
    /// entry (size, digest, frontmatter) before it is returned.
    pub async fn load_skill(
        self,
        uri: &str,
    ) -> Result<switchboard_session::LoadedSkill, SkillLoadError> {
        let session = self.ready_session().await?;
        let inner = &self.runtime.inner;
        let connection = inner
            .router
            .server(self.name)
            .map(|shared| shared.connection());
        Ok(inner
            .skills
            .load(self.name, connection, &session, uri)
            .await?)
    }

    /// The last lines a stdio server wrote to stderr (for diagnostics), while it runs.
    pub fn stderr_tail(self) -> Option<String> {
        let shared = self.runtime.inner.running(self.name)?;
        shared.session()?.process().map(|p| p.stderr_tail())
    }

    /// Records the current definitions of the server's tools as approved in the lock file:
    /// the tools its entry's filter lets through (a tool left out was never shown, so it is
    /// new to the lock when a filter lets it in later).
    pub fn approve_tools(self) -> Result<(), ApproveError> {
        let inner = &self.runtime.inner;
        let Some(policy) = inner.options().lock else {
            return Err(ApproveError::NoLockFile);
        };
        let tools = inner
            .running(self.name)
            .filter(|s| s.listings().is_some())
            .map(|s| s.allowed_tools())
            .ok_or_else(|| ApproveError::NotReady {
                server: self.name.to_owned(),
            })?;
        let mut tool_lock = ToolLock::load(&policy.path)?;
        tool_lock.approve(self.name, &tools);
        tool_lock.save(&policy.path)?;
        *lock(&inner.tool_lock) = Some(LockReading::Pinned(tool_lock));
        if inner.enabled.load(Ordering::SeqCst) {
            let version = inner.publish(true);
            inner.record(LifecycleEvent::Republished { version });
        }
        Ok(())
    }

    /// Trusts the current definition of a project-scope server (takes effect on the next
    /// enable or reload). The server need not be running: untrusted, it is not started.
    pub fn trust(self) -> Result<(), TrustError> {
        let options = self.runtime.inner.options();
        let loaded = load_definitions(&options);
        let path = options.trust_store.ok_or(TrustError::NoTrustStore)?;
        let configured = loaded
            .servers
            .iter()
            .find(|s| s.entry.name == self.name)
            .ok_or_else(|| TrustError::UnknownServer {
                server: self.name.to_owned(),
            })?;
        Ok(TrustStore::load(&path)?.trust(configured)?)
    }

    /// `send` on the server's ready session, and once more on its next session when a
    /// server restart interrupted it (the method is safe to send again: `restarts.rs`).
    async fn through_restarts<T, F, Fut>(
        self,
        method: &'static str,
        send: F,
    ) -> Result<T, ServerRequestError>
    where
        F: Fn(switchboard_session::Session) -> Fut,
        Fut: std::future::Future<Output = Result<T, switchboard_session::SessionError>>,
    {
        let session = self.ready_session().await?;
        let router = &self.runtime.inner.router;
        let plan = Resend {
            server: router.server(self.name),
            wait: router.ready_wait,
            cancel: None,
            method,
            repeatable: switchboard_session::Repeatable::ByMethod,
            router,
        };
        Ok(through_restarts(plan, session, send).await?)
    }

    /// The server's session once it is ready, waiting for a reconnecting server up to the
    /// runtime's `ready_wait`.
    pub(super) async fn ready_session(
        self,
    ) -> Result<switchboard_session::Session, ServerRequestError> {
        let router = &self.runtime.inner.router;
        let shared = router
            .server(self.name)
            .ok_or_else(|| ServerRequestError::NotConfigured {
                server: self.name.to_owned(),
            })?;
        shared
            .ready_session(router.ready_wait)
            .await
            .map_err(|state| ServerRequestError::Unavailable {
                server: self.name.to_owned(),
                state: state.to_string(),
            })
    }
}
