//! What to check: a server's name and how to reach it, from a config entry or built by a
//! server author's own test.

use std::fmt;
use std::sync::Arc;

use switchboard_config::{ListLimits, ServerEntry};
use switchboard_http::Authorizer;
use switchboard_runtime::connect::Endpoint;
use switchboard_session::EraChoice;
use switchboard_wire::FrameTap;
use switchboard_wire::stdio::ProcessSpec;

use crate::catalog::Transport;

/// One server to check.
#[derive(Clone)]
pub struct ServerSpec {
    /// The name reports use (the config entry's name).
    pub name: String,
    /// How to reach it.
    pub transport: Endpoint,
    /// Which protocol era to speak (`Auto` probes, as clients do).
    pub era: EraChoice,
    /// A pinned protocol version, if any.
    pub protocol_version: Option<String>,
    /// Caps on one listing, where the entry sets them.
    pub list_limits: ListLimits,
    /// Credentials for an HTTP server (e.g. the OAuth client with saved tokens), used by
    /// the session and by the raw requests of the HTTP checks. Ignored for stdio.
    pub authorizer: Option<Arc<dyn Authorizer>>,
    /// Secret values beyond the environment, header and URL-credential values the
    /// transport holds (from a config entry: what its `${VAR}` expansions substituted,
    /// wherever they landed). The report never shows any of them.
    pub extra_secrets: Vec<String>,
    /// Also sees every frame of the checker's sessions with the server, both ways, beside
    /// the checker's own recorder (e.g. a host's trace). The raw HTTP requests of the
    /// Origin, session and `DELETE` checks are no session's frames and do not reach it.
    pub tap: Option<Arc<dyn FrameTap>>,
}

impl fmt::Debug for ServerSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerSpec")
            .field("name", &self.name)
            .field("transport", &self.transport)
            .field("era", &self.era)
            .field("protocol_version", &self.protocol_version)
            .field("list_limits", &self.list_limits)
            .field("authorizer", &self.authorizer.is_some())
            .field("extra_secrets", &self.extra_secrets.len())
            .field("tap", &self.tap.is_some())
            .finish()
    }
}

impl ServerSpec {
    /// A stdio server with automatic era detection.
    pub fn stdio(name: &str, process: ProcessSpec) -> ServerSpec {
        ServerSpec {
            name: name.to_owned(),
            transport: Endpoint::Stdio(process),
            era: EraChoice::Auto,
            protocol_version: None,
            list_limits: ListLimits::default(),
            authorizer: None,
            extra_secrets: Vec::new(),
            tap: None,
        }
    }

    /// A Streamable HTTP server with automatic era detection and no credentials beyond
    /// `headers`.
    pub fn http(name: &str, url: &str, headers: Vec<(String, String)>) -> ServerSpec {
        ServerSpec {
            name: name.to_owned(),
            transport: Endpoint::Http {
                url: url.to_owned(),
                headers,
            },
            era: EraChoice::Auto,
            protocol_version: None,
            list_limits: ListLimits::default(),
            authorizer: None,
            extra_secrets: Vec::new(),
            tap: None,
        }
    }

    /// The server a configuration entry describes (without an authorizer: set
    /// [`ServerSpec::authorizer`] for servers that need OAuth; without a sandbox: see
    /// [`Endpoint::sandbox_in`]).
    pub fn from_entry(entry: &ServerEntry) -> ServerSpec {
        ServerSpec {
            name: entry.name.clone(),
            transport: Endpoint::of_entry(entry),
            era: switchboard_runtime::connect::era_choice(entry.era),
            protocol_version: entry.protocol_version.clone(),
            list_limits: entry.list_limits,
            authorizer: None,
            extra_secrets: entry.provenance.expanded_values().to_vec(),
            tap: None,
        }
    }

    /// The sandbox the server runs in (`on`, or `partial (…)`), if any.
    pub fn sandbox_description(&self) -> Option<String> {
        match &self.transport {
            Endpoint::Stdio(ProcessSpec {
                sandbox: Some(sandbox),
                ..
            }) => Some(sandbox.policy.describe()),
            _ => None,
        }
    }

    /// The transport kind.
    pub fn transport_kind(&self) -> Transport {
        match self.transport {
            Endpoint::Stdio(_) => Transport::Stdio,
            Endpoint::Http { .. } => Transport::Http,
        }
    }

    /// Configured secret values (environment and header values, URL credentials and
    /// query values, [`ServerSpec::extra_secrets`]), for redaction.
    pub(crate) fn secret_values(&self) -> Vec<String> {
        let mut values = self.extra_secrets.clone();
        match &self.transport {
            Endpoint::Stdio(process) => {
                values.extend(process.env.iter().map(|(_, v)| v.clone()));
            }
            Endpoint::Http { url, headers } => {
                values.extend(headers.iter().map(|(_, v)| v.clone()));
                values.extend(switchboard_text::redact::url_secret_values(url));
            }
        }
        values
    }
}
