//! `serve`'s `upstreamCredentials` section: the HTTP servers called with each client's own
//! credentials (`switchboard_gateway::credentials`), and where those come from.
//!
//! ```json
//! "upstreamCredentials": {
//!   "tickets": {
//!     "exchange": {
//!       "issuer": "https://idp.example.com",
//!       "clientId": "switchboard-gateway",
//!       "clientSecret": "${GATEWAY_CLIENT_SECRET}",
//!       "scopes": ["tickets"]
//!     }
//!   },
//!   "github": {}
//! }
//! ```
//!
//! For a caller (`client:NAME` or `subject:SUB`), the tokens stored for it by `switchboard
//! login SERVER --as IDENTITY` come first (refreshed as a login's are); else, with
//! `exchange`, an OAuth caller's access token is exchanged (RFC 8693) at the server's
//! authorization server for one of the server's own, as the gateway's client there
//! (`clientId`, `clientSecret`), and only when that authorization server is `issuer`: the
//! caller's token is never sent anywhere else, and never to the server. Anything else is
//! refused with the login to run. The section is read at start (a change needs a restart);
//! every key is checked and a server that is not an HTTP server being served is an error.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;
use switchboard_auth::{Acquire, ClientCredentials, SharedTokens, StoreKey, SubjectToken};
use switchboard_config::{ServerEntry, TransportEntry, Variables};
use switchboard_gateway::credentials::{Caller, CredentialRefusal, UpstreamCredentials};
use switchboard_http::Authorizer;

use crate::team::object;

/// The section's key.
pub(crate) const SECTION: &str = "upstreamCredentials";

/// Longest `issuer`, `clientId` or scope.
const MAX_TEXT: usize = 2048;

/// The per-caller servers and how their callers' credentials are had.
pub(crate) struct PerCallerServers {
    servers: BTreeMap<String, PerCaller>,
    /// Where instances share their renewed tokens (`serve --state`).
    shared: Option<Arc<dyn SharedTokens>>,
}

/// One per-caller server.
struct PerCaller {
    entry: ServerEntry,
    url: String,
    exchange: Option<Exchange>,
}

/// Token exchange at the server's authorization server.
struct Exchange {
    issuer: String,
    client: ClientCredentials,
    scopes: Vec<String>,
}

impl PerCallerServers {
    /// Stored logins renewed in turns with the other instances sharing `shared`.
    pub(crate) fn sharing(mut self, shared: Option<Arc<dyn SharedTokens>>) -> PerCallerServers {
        self.shared = shared;
        self
    }

    /// The servers' names, for the startup report.
    pub(crate) fn summary(&self) -> Option<String> {
        if self.servers.is_empty() {
            return None;
        }
        let described: Vec<String> = self
            .servers
            .iter()
            .map(|(name, server)| match &server.exchange {
                Some(exchange) => format!(
                    "{name} (stored logins, else exchange at {})",
                    exchange.issuer
                ),
                None => format!("{name} (stored logins)"),
            })
            .collect();
        Some(format!(
            "each client's own credentials for: {}",
            described.join(", ")
        ))
    }
}

/// Reads the section against the servers being served; the error names the server and
/// what to write.
pub(crate) fn read(
    section: &Value,
    served: &[ServerEntry],
    vars: &dyn Variables,
) -> Result<PerCallerServers, String> {
    let Value::Object(map) = section else {
        return Err(format!(
            "`{SECTION}` must be an object: `{{\"SERVER\": {{\"exchange\": {{...}}}}}}`, or `{{\"SERVER\": {{}}}}` for stored logins only"
        ));
    };
    let mut servers = BTreeMap::new();
    for (name, settings) in map {
        let at = format!("`{SECTION}.{name}`");
        let Some(entry) = served.iter().find(|entry| entry.name == *name) else {
            let names: Vec<&str> = served.iter().map(|e| e.name.as_str()).collect();
            return Err(format!(
                "{at}: no server `{name}` is served (served: {})",
                names.join(", ")
            ));
        };
        let TransportEntry::Http { url, .. } = &entry.transport else {
            return Err(format!(
                "{at}: `{name}` is a local (stdio) server; per-client credentials are for HTTP servers"
            ));
        };
        let settings = object(settings, &at, &["exchange"])?;
        let exchange = match settings.get("exchange") {
            Some(value) => Some(read_exchange(value, &format!("{at}.exchange"), vars)?),
            None => None,
        };
        servers.insert(
            name.clone(),
            PerCaller {
                entry: entry.clone(),
                url: url.clone(),
                exchange,
            },
        );
    }
    Ok(PerCallerServers {
        servers,
        shared: None,
    })
}

fn read_exchange(value: &Value, at: &str, vars: &dyn Variables) -> Result<Exchange, String> {
    let map = object(value, at, &["issuer", "clientId", "clientSecret", "scopes"])?;
    let text = |key: &str, what: &str| -> Result<String, String> {
        match map.get(key).and_then(Value::as_str) {
            Some(text) if !text.is_empty() && text.len() <= MAX_TEXT => Ok(text.to_owned()),
            _ => Err(format!("{at} needs `{key}`: {what}")),
        }
    };
    let issuer = text(
        "issuer",
        "the authorization server's issuer URL, the only one the clients' tokens are exchanged at",
    )?;
    if !(issuer.starts_with("https://") || issuer.starts_with("http://")) {
        return Err(format!("{at}: `issuer` must be an http(s) URL"));
    }
    let client_id = text(
        "clientId",
        "the gateway's client id at that authorization server",
    )?;
    let written = text(
        "clientSecret",
        "the gateway's client secret there, best `${VAR}` naming an environment variable",
    )?;
    let client_secret = switchboard_config::expand_vars(&written, vars).map_err(|unset| {
        format!("{at}: `clientSecret` uses the variable `{unset}`, which is not set")
    })?;
    let scopes = match map.get("scopes") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item.as_str() {
                Some(scope) if !scope.is_empty() && scope.len() <= MAX_TEXT => Ok(scope.to_owned()),
                _ => Err(format!("{at}.scopes must hold non-empty strings")),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(format!("{at}.scopes must be a list of strings")),
    };
    Ok(Exchange {
        issuer,
        client: ClientCredentials {
            client_id,
            client_secret: Some(client_secret),
            private_key_pem: None,
            signing_algorithm: None,
        },
        scopes,
    })
}

impl UpstreamCredentials for PerCallerServers {
    fn is_per_caller(&self, server: &str) -> bool {
        self.servers.contains_key(server)
    }

    fn authorizer_for(
        &self,
        server: &str,
        caller: Caller<'_>,
    ) -> Result<Arc<dyn Authorizer>, CredentialRefusal> {
        let Some(per_caller) = self.servers.get(server) else {
            return Err(CredentialRefusal::NoIdentity {
                server: server.to_owned(),
            });
        };
        let key = StoreKey {
            server_url: per_caller.url.clone(),
            on_behalf_of: Some(caller.name.to_owned()),
        };
        let unusable = |detail: String| CredentialRefusal::Unusable {
            server: server.to_owned(),
            identity: caller.name.to_owned(),
            detail,
        };
        let stored = crate::login::token_store()
            .load_for(&key)
            .map_err(|problem| unusable(problem.to_string()))?;
        if stored.is_some() {
            let acquire = Acquire::SavedLogin {
                server_name: server.to_owned(),
                login_command: format!("switchboard login {server} --as {}", caller.name),
            };
            let mut binding = crate::login::binding(key);
            if let Some(shared) = &self.shared {
                binding.shared = Some(shared.clone());
            }
            let client = crate::login::oauth_client(
                &per_caller.entry,
                binding,
                acquire,
                "http://127.0.0.1/callback".into(),
            )
            .map_err(unusable)?;
            return Ok(Arc::new(client));
        }
        let not_logged_in = |why: Option<&str>| CredentialRefusal::NotLoggedIn {
            server: server.to_owned(),
            identity: caller.name.to_owned(),
            exchange: why.map(str::to_owned),
        };
        let Some(exchange) = &per_caller.exchange else {
            return Err(not_logged_in(None));
        };
        let Some(token) = caller.token else {
            return Err(not_logged_in(Some(
                "only a client with an OAuth token can have it exchanged",
            )));
        };
        let client = crate::login::exchanging_client(crate::login::Exchanging {
            entry: &per_caller.entry,
            pre_registered: exchange.client.clone(),
            acquire: Acquire::OnBehalfOf {
                subject: SubjectToken(token.expose().to_owned()),
                issuer: exchange.issuer.clone(),
                scopes: exchange.scopes.clone(),
            },
        })
        .map_err(unusable)?;
        Ok(Arc::new(client))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::expect;
    use serde_json::json;

    struct Vars;

    impl Variables for Vars {
        fn get(&self, name: &str) -> Option<String> {
            (name == "SECRET").then(|| "s3cret".to_owned())
        }
    }

    fn served() -> Vec<ServerEntry> {
        let text = json!({"mcpServers": {
            "remote": {"url": "http://127.0.0.1:1/mcp"},
            "local": {"command": "true"}
        }})
        .to_string();
        let file = switchboard_config::parse(&text, std::path::Path::new("mcp.json"), &Vars)
            .expect("config");
        file.entries().cloned().collect()
    }

    fn problem(section: Value) -> String {
        match read(&section, &served(), &Vars) {
            Ok(_) => "read".to_owned(),
            Err(problem) => problem,
        }
    }

    #[test]
    fn the_section_reads_and_every_mistake_is_named() {
        let exchange =
            json!({"issuer": "https://idp.test", "clientId": "gw", "clientSecret": "${SECRET}"});
        assert_eq!(problem(json!({"remote": {}})), "read");
        assert_eq!(problem(json!({"remote": {"exchange": exchange}})), "read");
        let problems = [
            problem(json!({"nowhere": {}})),
            problem(json!({"local": {}})),
            problem(json!({"remote": {"exchnage": {}}})),
            problem(
                json!({"remote": {"exchange": {"issuer": "https://idp.test", "clientId": "gw"}}}),
            ),
            problem(
                json!({"remote": {"exchange": {"issuer": "https://idp.test", "clientId": "gw", "clientSecret": "${UNSET}"}}}),
            ),
            problem(
                json!({"remote": {"exchange": {"issuer": "idp.test", "clientId": "gw", "clientSecret": "x"}}}),
            ),
            problem(json!(["remote"])),
        ];
        expect![[r#"
            `upstreamCredentials.nowhere`: no server `nowhere` is served (served: remote, local)
            `upstreamCredentials.local`: `local` is a local (stdio) server; per-client credentials are for HTTP servers
            `upstreamCredentials.remote`: `exchnage` is not a setting here (known: `exchange`); a rule with an unknown key is refused rather than half applied
            `upstreamCredentials.remote`.exchange needs `clientSecret`: the gateway's client secret there, best `${VAR}` naming an environment variable
            `upstreamCredentials.remote`.exchange: `clientSecret` uses the variable `UNSET`, which is not set
            `upstreamCredentials.remote`.exchange: `issuer` must be an http(s) URL
            `upstreamCredentials` must be an object: `{"SERVER": {"exchange": {...}}}`, or `{"SERVER": {}}` for stored logins only"#]]
        .assert_eq(&problems.join("\n"));
    }
}
