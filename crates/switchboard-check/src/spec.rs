//! What to check: a server's name and how to reach it, from a config entry or built by a
//! server author's own test.

use std::fmt;

use switchboard_config::{ServerEntry, TransportEntry};
use switchboard_session::EraChoice;
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
                    .field("url", url)
                    .field("header_names", &names)
                    .finish()
            }
        }
    }
}

/// One server to check.
#[derive(Debug, Clone)]
pub struct ServerSpec {
    /// The name reports use (the config entry's name).
    pub name: String,
    /// How to reach it.
    pub transport: TransportSpec,
    /// Which protocol era to speak (`Auto` probes, as clients do).
    pub era: EraChoice,
    /// A pinned protocol version, if any.
    pub protocol_version: Option<String>,
}

impl ServerSpec {
    /// A stdio server with automatic era detection.
    pub fn stdio(name: &str, process: ProcessSpec) -> ServerSpec {
        ServerSpec {
            name: name.to_owned(),
            transport: TransportSpec::Stdio(process),
            era: EraChoice::Auto,
            protocol_version: None,
        }
    }

    /// The server a configuration entry describes.
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
            }),
            TransportEntry::Http { url, headers } => TransportSpec::Http {
                url: url.clone(),
                headers: headers.clone(),
            },
        };
        ServerSpec {
            name: entry.name.clone(),
            transport,
            era: match entry.era.as_deref() {
                Some("legacy") => EraChoice::Legacy,
                Some("modern") => EraChoice::Modern,
                _ => EraChoice::Auto,
            },
            protocol_version: entry.protocol_version.clone(),
        }
    }

    /// The transport kind.
    pub fn transport_kind(&self) -> Transport {
        match self.transport {
            TransportSpec::Stdio(_) => Transport::Stdio,
            TransportSpec::Http { .. } => Transport::Http,
        }
    }

    /// Configured secret values (environment and header values), for redaction.
    pub(crate) fn secret_values(&self) -> Vec<String> {
        let pairs = match &self.transport {
            TransportSpec::Stdio(process) => &process.env,
            TransportSpec::Http { headers, .. } => headers,
        };
        pairs.iter().map(|(_, v)| v.clone()).collect()
    }
}
