//! What to check: a server's name and how to reach it, from a config entry or built by a
//! server author's own test.

use std::fmt;
use std::sync::Arc;

use switchboard_config::{EraSetting, ListLimits, Origin, ServerEntry, TransportEntry};
use switchboard_http::Authorizer;
use switchboard_session::EraChoice;
use switchboard_wire::FrameTap;
use switchboard_wire::stdio::ProcessSpec;

use crate::catalog::Transport;

/// How to reach the server under test. `Debug` never shows environment or header values.
#[derive(Clone)]
pub enum TransportSpec {
    /// A child process speaking over stdin/stdout.
    Stdio(ProcessSpec),
    /// A Streamable HTTP endpoint.
    Http {
        /// The endpoint URL.
        url: String,
        /// Extra headers (secret values).
        headers: Vec<(String, String)>,
    },
}

impl fmt::Debug for TransportSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransportSpec::Stdio(process) => f.debug_tuple("Stdio").field(process).finish(),
            TransportSpec::Http { url, headers } => {
                let names: Vec<&str> = headers.iter().map(|(k, _)| k.as_str()).collect();
                f.debug_struct("Http")
                    .field("url", &switchboard_text::redact::url_for_display(url))
                    .field("header_names", &names)
                    .finish()
            }
        }
    }
}

/// One server to check.
#[derive(Clone)]
pub struct ServerSpec {
    /// The name reports use (the config entry's name).
    pub name: String,
    /// How to reach it.
    pub transport: TransportSpec,
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
            transport: TransportSpec::Stdio(process),
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
            transport: TransportSpec::Http {
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
    /// [`ServerSpec::authorizer`] for servers that need OAuth).
    pub fn from_entry(entry: &ServerEntry) -> ServerSpec {
        let transport = match &entry.transport {
            TransportEntry::Stdio {
                command,
                args,
                env,
                cwd,
            } => TransportSpec::Stdio(ProcessSpec {
                program: command.clone(),
                args: args.clone(),
                env: env.clone(),
                cwd: cwd.clone(),
                sandbox: None,
            }),
            TransportEntry::Http { url, headers } => TransportSpec::Http {
                url: url.clone(),
                headers: headers.clone(),
            },
        };
        ServerSpec {
            name: entry.name.clone(),
            transport,
            era: switchboard_runtime::connect::era_choice(entry.era),
            protocol_version: entry.protocol_version.clone(),
            list_limits: entry.list_limits,
            authorizer: None,
            extra_secrets: entry.provenance.expanded_values().to_vec(),
            tap: None,
        }
    }

    /// The entry [`switchboard_runtime::connect`] connects to: this server as a
    /// configuration would describe it, without timeouts of its own (the checker's options
    /// set them).
    pub(crate) fn to_entry(&self) -> ServerEntry {
        let transport = match &self.transport {
            TransportSpec::Stdio(process) => TransportEntry::Stdio {
                command: process.program.clone(),
                args: process.args.clone(),
                env: process.env.clone(),
                cwd: process.cwd.clone(),
            },
            TransportSpec::Http { url, headers } => TransportEntry::Http {
                url: url.clone(),
                headers: headers.clone(),
            },
        };
        let sandbox = match &self.transport {
            TransportSpec::Stdio(ProcessSpec {
                sandbox: Some(sandbox),
                ..
            }) => switchboard_config::SandboxChoice::On(sandbox.policy.clone()),
            _ => switchboard_config::SandboxChoice::Off,
        };
        let era = match self.era {
            EraChoice::Auto | EraChoice::AutoLegacyFirst => EraSetting::Auto,
            EraChoice::Legacy => EraSetting::Legacy,
            EraChoice::Modern => EraSetting::Modern,
        };
        let mut entry = ServerEntry::new(&self.name, transport)
            .with_origin(Origin::described("<server under check>"));
        entry.era = era;
        entry.protocol_version = self.protocol_version.clone();
        entry.list_limits = self.list_limits;
        entry.sandbox = sandbox;
        entry
    }

    /// The sandbox the server runs in (`on`, or `partial (…)`), if any.
    pub fn sandbox_description(&self) -> Option<String> {
        match &self.transport {
            TransportSpec::Stdio(ProcessSpec {
                sandbox: Some(sandbox),
                ..
            }) => Some(sandbox.policy.describe()),
            _ => None,
        }
    }

    /// The transport kind.
    pub fn transport_kind(&self) -> Transport {
        match self.transport {
            TransportSpec::Stdio(_) => Transport::Stdio,
            TransportSpec::Http { .. } => Transport::Http,
        }
    }

    /// Configured secret values (environment and header values, URL credentials and
    /// query values, [`ServerSpec::extra_secrets`]), for redaction.
    pub(crate) fn secret_values(&self) -> Vec<String> {
        let mut values = self.extra_secrets.clone();
        match &self.transport {
            TransportSpec::Stdio(process) => {
                values.extend(process.env.iter().map(|(_, v)| v.clone()));
            }
            TransportSpec::Http { url, headers } => {
                values.extend(headers.iter().map(|(_, v)| v.clone()));
                values.extend(switchboard_text::redact::url_secret_values(url));
            }
        }
        values
    }
}
