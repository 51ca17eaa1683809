//! Tokens and client registrations kept between runs, per MCP server (resource URL), in a
//! JSON file readable only by its owner (0600). Never in `mcp.json`, never printed.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

const FORMAT: &str = "switchboard-tokens/1";

/// One server's saved authorization.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SavedAuthorization {
    /// The MCP server URL it is for (the key).
    pub server_url: String,
    /// The authorization server that issued it.
    pub issuer: String,
    /// The client identity at that issuer.
    pub client_id: String,
    /// Its secret, for registered confidential clients.
    pub client_secret: Option<String>,
    /// How the client authenticates at the token endpoint.
    pub auth_method: String,
    /// The access token.
    pub access_token: String,
    /// The refresh token, if one was issued.
    pub refresh_token: Option<String>,
    /// When the access token expires (seconds since the Unix epoch), if the server said.
    pub expires_at: Option<u64>,
}

impl std::fmt::Debug for SavedAuthorization {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SavedAuthorization")
            .field("server_url", &self.server_url)
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

/// The token file.
#[derive(Debug, Clone)]
pub struct TokenStore {
    path: PathBuf,
}

impl TokenStore {
    /// A store in this file (created on first save).
    pub fn new(path: &Path) -> TokenStore {
        TokenStore {
            path: path.to_owned(),
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The saved authorization for a server, if any.
    pub fn load(&self, server_url: &str) -> Option<SavedAuthorization> {
        self.read()
            .into_iter()
            .find(|entry| entry.server_url == server_url)
    }

    /// Saves (replaces) a server's authorization.
    pub fn save(&self, saved: &SavedAuthorization) -> Result<(), String> {
        let mut entries: Vec<SavedAuthorization> = self
            .read()
            .into_iter()
            .filter(|e| e.server_url != saved.server_url)
            .collect();
        entries.push(saved.clone());
        self.write(&entries)
    }

    /// Forgets a server's authorization; returns whether there was one.
    pub fn remove(&self, server_url: &str) -> Result<bool, String> {
        let entries = self.read();
        let kept: Vec<SavedAuthorization> = entries
            .iter()
            .filter(|e| e.server_url != server_url)
            .cloned()
            .collect();
        let removed = kept.len() != entries.len();
        if removed {
            self.write(&kept)?;
        }
        Ok(removed)
    }

    fn read(&self) -> Vec<SavedAuthorization> {
        let Ok(text) = std::fs::read_to_string(&self.path) else {
            return Vec::new();
        };
        let Ok(value) = serde_json::from_str::<Value>(&text) else {
            tracing::warn!(path = %self.path.display(), "the token file is not valid JSON; ignoring it");
            return Vec::new();
        };
        if value.get("format").and_then(Value::as_str) != Some(FORMAT) {
            return Vec::new();
        }
        let text = |e: &Value, k: &str| e.get(k).and_then(Value::as_str).map(str::to_owned);
        value
            .get("servers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|e| {
                Some(SavedAuthorization {
                    server_url: text(e, "server_url")?,
                    issuer: text(e, "issuer")?,
                    client_id: text(e, "client_id")?,
                    client_secret: text(e, "client_secret"),
                    auth_method: text(e, "auth_method").unwrap_or_else(|| "none".into()),
                    access_token: text(e, "access_token")?,
                    refresh_token: text(e, "refresh_token"),
                    expires_at: e.get("expires_at").and_then(Value::as_u64),
                })
            })
            .collect()
    }

    fn write(&self, entries: &[SavedAuthorization]) -> Result<(), String> {
        let servers: Vec<Value> = entries
            .iter()
            .map(|e| {
                json!({
                    "server_url": e.server_url, "issuer": e.issuer, "client_id": e.client_id,
                    "client_secret": e.client_secret, "auth_method": e.auth_method,
                    "access_token": e.access_token, "refresh_token": e.refresh_token,
                    "expires_at": e.expires_at,
                })
            })
            .collect();
        let text = serde_json::to_string_pretty(&json!({"format": FORMAT, "servers": servers}))
            .unwrap_or_default();
        if let Some(parent) = self.path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("could not create {}: {e}", parent.display()))?;
        }
        write_private(&self.path, text.as_bytes()).map_err(|e| {
            format!(
                "could not write the token file {}: {e}",
                self.path.display()
            )
        })
    }
}

/// Writes a file that only its owner can read, replacing it atomically.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let temporary = path.with_extension("tmp");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temporary)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&temporary, path)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn saves_loads_removes_and_keeps_the_file_private() {
        let path =
            std::env::temp_dir().join(format!("switchboard-tokens-{}.json", std::process::id()));
        let store = TokenStore::new(&path);
        let saved = SavedAuthorization {
            server_url: "https://a.test/mcp".into(),
            issuer: "https://as.test".into(),
            client_id: "c".into(),
            access_token: "secret-token".into(),
            ..Default::default()
        };
        store.save(&saved).expect("save");
        assert_eq!(store.load("https://a.test/mcp"), Some(saved.clone()));
        assert_eq!(
            std::fs::metadata(&path).expect("file").permissions().mode() & 0o777,
            0o600
        );
        assert!(!format!("{saved:?}").contains("secret-token"));
        assert_eq!(store.remove("https://a.test/mcp"), Ok(true));
        assert_eq!(store.load("https://a.test/mcp"), None);
        let _ = std::fs::remove_file(path);
    }
}
