//! Tokens and client registrations kept between runs, per MCP server (resource URL), in a
//! JSON file only its owner can use. Never in `mcp.json`, never printed.
//!
//! The file and its directory must be this user's and closed to everyone else (file 0600,
//! directory 0700): anything else is refused with a [`StoreError`] that says what to fix,
//! for reading as much as for writing (a file others could replace could hand us their
//! tokens). The file is never read or written through a symbolic link. A save writes a new
//! file under a fresh random name, created exclusively and without following links, with
//! mode 0600, syncs it, renames it over the old one and syncs the directory. Saves and
//! removals are read-modify-write under an exclusive `flock` on a lock file beside the
//! token file, waited for at most [`LOCK_WAIT`], so concurrent logins and refreshes (in
//! any number of processes) never lose each other's tokens.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::fcntl::{Flock, FlockArg, OFlag};
use serde_json::{Value, json};

const FORMAT: &str = "switchboard-tokens/1";

/// The longest a save or removal waits for another process's save to finish.
pub const LOCK_WAIT: Duration = Duration::from_secs(10);

/// How often a waiting save tries the lock again.
const LOCK_RETRY: Duration = Duration::from_millis(10);

/// The most read of a token file (a few KiB per server; anything bigger is not ours).
const MAX_TOKEN_FILE_BYTES: u64 = 4 * 1024 * 1024;

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
    /// The issuer's token endpoint, checked at login: where the refresh token is used, so
    /// that refreshing needs no discovery. Files saved before it was kept have none (their
    /// tokens are used until they expire, then a new login is needed).
    pub token_endpoint: Option<String>,
    /// The RFC 8707 resource indicator the tokens were issued for (the protected
    /// resource's identifier, which may differ from `server_url`); sent again on refresh.
    pub resource: Option<String>,
    /// For DPoP-bound tokens (RFC 9449), the client's ES256 key they are bound to (PKCS#8,
    /// base64url): as secret as the refresh token, kept with it.
    pub dpop_key: Option<String>,
    /// Whom the tokens speak for when they are not the user's own: a gateway client's
    /// identity (`client:NAME`, `subject:SUB`), saved by `switchboard login SERVER --as
    /// IDENTITY`. Part of the key: a server has one authorization per identity, and the
    /// user's own (`None`) is never one of them.
    pub on_behalf_of: Option<String>,
}

impl SavedAuthorization {
    /// As the token file keeps it (secrets included: for a store as private as the file).
    pub fn to_json(&self) -> Value {
        json!({
            "server_url": self.server_url, "issuer": self.issuer, "client_id": self.client_id,
            "client_secret": self.client_secret, "auth_method": self.auth_method,
            "access_token": self.access_token, "refresh_token": self.refresh_token,
            "expires_at": self.expires_at, "token_endpoint": self.token_endpoint,
            "resource": self.resource, "dpop_key": self.dpop_key,
            "on_behalf_of": self.on_behalf_of,
        })
    }

    /// Read back from [`SavedAuthorization::to_json`]; `None` without the fields every
    /// authorization has.
    pub fn from_json(e: &Value) -> Option<SavedAuthorization> {
        let text = |k: &str| e.get(k).and_then(Value::as_str).map(str::to_owned);
        Some(SavedAuthorization {
            server_url: text("server_url")?,
            issuer: text("issuer")?,
            client_id: text("client_id")?,
            client_secret: text("client_secret"),
            auth_method: text("auth_method").unwrap_or_else(|| "none".into()),
            access_token: text("access_token")?,
            refresh_token: text("refresh_token"),
            expires_at: e.get("expires_at").and_then(Value::as_u64),
            token_endpoint: text("token_endpoint"),
            resource: text("resource"),
            dpop_key: text("dpop_key"),
            on_behalf_of: text("on_behalf_of"),
        })
    }
}

impl std::fmt::Debug for SavedAuthorization {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SavedAuthorization")
            .field("server_url", &self.server_url)
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("token_endpoint", &self.token_endpoint)
            .field("dpop_bound", &self.dpop_key.is_some())
            .field("on_behalf_of", &self.on_behalf_of)
            .finish_non_exhaustive()
    }
}

/// What a token path is, in messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoredPath {
    /// The token file.
    File,
    /// The directory that holds it.
    Directory,
}

impl std::fmt::Display for StoredPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StoredPath::File => "token file",
            StoredPath::Directory => "token directory",
        })
    }
}

/// Why the token file could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Group or others have permissions on the file or its directory.
    #[error(
        "the {kind} {path} is open to other users (mode {mode:04o}); tokens are kept only where no one else can read or replace them: run `chmod {fix:o} {path}`"
    )]
    OpenToOthers {
        /// The file or directory.
        kind: StoredPath,
        /// Its path.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
        /// The mode to set.
        fix: u32,
    },
    /// The file or its directory belongs to another user.
    #[error(
        "the {kind} {path} belongs to user id {owner}, not to you (user id {you}); use a token file in a directory of your own"
    )]
    ForeignOwner {
        /// The file or directory.
        kind: StoredPath,
        /// Its path.
        path: PathBuf,
        /// Its owner's user id.
        owner: u32,
        /// This process's effective user id.
        you: u32,
    },
    /// The token path is a symbolic link (or something else that is not a plain file).
    #[error(
        "the {kind} {path} is not a plain {expected} (a symbolic link or a special file); tokens are never read or written through one: remove it"
    )]
    NotPlain {
        /// The file or directory.
        kind: StoredPath,
        /// Its path.
        path: PathBuf,
        /// What it should be.
        expected: &'static str,
    },
    /// Another process held the lock for longer than [`LOCK_WAIT`].
    #[error(
        "the token file {path} stayed locked by another switchboard process for {waited:?}; try again when it is done"
    )]
    Busy {
        /// The token file.
        path: PathBuf,
        /// How long this process waited.
        waited: Duration,
    },
    /// The file system refused.
    #[error("could not {action} {path}: {source}")]
    Io {
        /// What was being done, e.g. "write".
        action: &'static str,
        /// The path it was done to.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

impl StoreError {
    /// The file or directory's owner or permissions let someone else in.
    pub fn is_not_private(&self) -> bool {
        matches!(
            self,
            StoreError::OpenToOthers { .. }
                | StoreError::ForeignOwner { .. }
                | StoreError::NotPlain { .. }
        )
    }

    /// Another process kept the token file locked too long.
    pub fn is_busy(&self) -> bool {
        matches!(self, StoreError::Busy { .. })
    }

    fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> StoreError {
        let path = path.to_owned();
        move |source| StoreError::Io {
            action,
            path,
            source,
        }
    }
}

/// Which saved authorization: a server's (by its URL), the user's own or an identity's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreKey {
    /// The MCP server URL.
    pub server_url: String,
    /// The identity the tokens speak for (`None`: the user's own).
    pub on_behalf_of: Option<String>,
}

impl StoreKey {
    /// The user's own authorization for `server_url`.
    pub fn own(server_url: &str) -> StoreKey {
        StoreKey {
            server_url: server_url.to_owned(),
            on_behalf_of: None,
        }
    }

    fn matches(&self, saved: &SavedAuthorization) -> bool {
        saved.server_url == self.server_url && saved.on_behalf_of == self.on_behalf_of
    }

    /// A name for the key that shows neither the server nor the identity: the first 16
    /// bytes of the SHA-256 of both, in hex.
    pub fn digest(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut hasher = Sha256::new();
        hasher.update(self.server_url.as_bytes());
        hasher.update([0]);
        hasher.update(self.on_behalf_of.as_deref().unwrap_or("").as_bytes());
        hasher.finalize()[..16]
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }
}

/// The token file.
#[derive(Debug, Clone)]
pub struct TokenStore {
    path: PathBuf,
}

impl TokenStore {
    /// A store in this file (created, with its directory, on first save).
    pub fn new(path: &Path) -> TokenStore {
        TokenStore {
            path: path.to_owned(),
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The user's own saved authorization for a server, if any. A missing file is no
    /// authorization; a file or directory that is not private to this user is an error.
    pub fn load(&self, server_url: &str) -> Result<Option<SavedAuthorization>, StoreError> {
        self.load_for(&StoreKey::own(server_url))
    }

    /// The saved authorization under `key` (a server, for the user or for an identity).
    pub fn load_for(&self, key: &StoreKey) -> Result<Option<SavedAuthorization>, StoreError> {
        Ok(self.read()?.into_iter().find(|entry| key.matches(entry)))
    }

    /// Saves (replaces) the authorization under its key (its server and whom it speaks for).
    pub fn save(&self, saved: &SavedAuthorization) -> Result<(), StoreError> {
        let key = StoreKey {
            server_url: saved.server_url.clone(),
            on_behalf_of: saved.on_behalf_of.clone(),
        };
        self.update(|entries| {
            entries.retain(|e| !key.matches(e));
            entries.push(saved.clone());
            true
        })
        .map(|_| ())
    }

    /// Forgets the user's own authorization for a server; returns whether there was one.
    pub fn remove(&self, server_url: &str) -> Result<bool, StoreError> {
        self.remove_for(&StoreKey::own(server_url))
    }

    /// Forgets the authorization under `key`; returns whether there was one.
    pub fn remove_for(&self, key: &StoreKey) -> Result<bool, StoreError> {
        self.update(|entries| {
            let before = entries.len();
            entries.retain(|e| !key.matches(e));
            entries.len() != before
        })
    }

    /// Read-modify-write under the lock; `change` returns whether it changed anything
    /// (nothing is written otherwise), which is also what this returns.
    fn update(
        &self,
        change: impl Fn(&mut Vec<SavedAuthorization>) -> bool,
    ) -> Result<bool, StoreError> {
        let directory = self.directory();
        if !directory.exists() {
            // Nothing to forget (a logout before any login) creates nothing.
            if !change(&mut Vec::new()) {
                return Ok(false);
            }
        }
        create_private_directory(&directory)?;
        let _lock = self.lock(&directory)?;
        let mut entries = self.read()?;
        if !change(&mut entries) {
            return Ok(false);
        }
        self.write(&directory, &entries)?;
        Ok(true)
    }

    /// The directory the file is in (`.` for a bare file name).
    fn directory(&self) -> PathBuf {
        match self.path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
            _ => PathBuf::from("."),
        }
    }

    /// Takes the exclusive lock on `<file>.lock`, waiting at most [`LOCK_WAIT`].
    fn lock(&self, directory: &Path) -> Result<Flock<File>, StoreError> {
        let path = self.lock_path(directory, "lock");
        let mut file = open_lock_file(&path)?;
        let started = Instant::now();
        loop {
            match try_flock(file, &path)? {
                Ok(locked) => return Ok(locked),
                Err(unlocked) => file = unlocked,
            }
            if started.elapsed() >= LOCK_WAIT {
                return Err(StoreError::Busy {
                    path: self.path.clone(),
                    waited: started.elapsed(),
                });
            }
            std::thread::sleep(LOCK_RETRY);
        }
    }

    /// `<file>.<suffix>` in `directory`.
    fn lock_path(&self, directory: &Path, suffix: &str) -> PathBuf {
        let mut name = self.path.file_name().unwrap_or_default().to_owned();
        name.push(".");
        name.push(suffix);
        directory.join(name)
    }

    /// Takes the right to renew `key`'s tokens among this user's processes: an exclusive
    /// lock on `<file>.renew-<digest>.lock` (one per server and identity), waited for at
    /// most [`LOCK_WAIT`] without blocking the runtime; held until the value is dropped.
    pub async fn lock_renewal(&self, key: &StoreKey) -> Result<RenewalLock, StoreError> {
        let directory = self.directory();
        create_private_directory(&directory)?;
        let path = self.lock_path(&directory, &format!("renew-{}.lock", key.digest()));
        let mut file = open_lock_file(&path)?;
        let started = Instant::now();
        loop {
            match try_flock(file, &path)? {
                Ok(locked) => return Ok(RenewalLock(locked)),
                Err(unlocked) => file = unlocked,
            }
            if started.elapsed() >= LOCK_WAIT {
                return Err(StoreError::Busy {
                    path: self.path.clone(),
                    waited: started.elapsed(),
                });
            }
            tokio::time::sleep(LOCK_RETRY).await;
        }
    }
}

/// The right to renew one authorization among this user's processes
/// ([`TokenStore::lock_renewal`]); given back when dropped.
#[derive(Debug)]
pub struct RenewalLock(#[allow(dead_code)] Flock<File>);

/// Creates the token directory (0700) when it is missing, then checks that it is private.
fn create_private_directory(directory: &Path) -> Result<(), StoreError> {
    if !directory.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(directory)
            .map_err(StoreError::io("create the directory", directory))?;
    }
    check_directory(directory)
}

/// Opens (creating, 0600, never through a link) a lock file.
fn open_lock_file(path: &Path) -> Result<File, StoreError> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(OFlag::O_NOFOLLOW.bits())
        .open(path)
        .map_err(StoreError::io("open the lock file", path))
}

/// One try at an exclusive lock: `Ok(Err(file))` when another process holds it.
fn try_flock(file: File, path: &Path) -> Result<Result<Flock<File>, File>, StoreError> {
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(locked) => Ok(Ok(locked)),
        Err((unlocked, nix::errno::Errno::EWOULDBLOCK | nix::errno::Errno::EINTR)) => {
            Ok(Err(unlocked))
        }
        Err((_, errno)) => Err(StoreError::Io {
            action: "lock",
            path: path.to_owned(),
            source: std::io::Error::from(errno),
        }),
    }
}

impl TokenStore {
    /// Every saved authorization; empty when there is no file. The file is opened without
    /// following links and checked through the open descriptor.
    fn read(&self) -> Result<Vec<SavedAuthorization>, StoreError> {
        let file = match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(OFlag::O_NOFOLLOW.bits() | OFlag::O_NONBLOCK.bits())
            .open(&self.path)
        {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            // O_NOFOLLOW on a symbolic link.
            Err(error) if error.raw_os_error() == Some(nix::libc::ELOOP) => {
                return Err(StoreError::NotPlain {
                    kind: StoredPath::File,
                    path: self.path.clone(),
                    expected: "file",
                });
            }
            Err(error) => return Err(StoreError::io("open", &self.path)(error)),
        };
        check_directory(&self.directory())?;
        let metadata = file
            .metadata()
            .map_err(StoreError::io("inspect", &self.path))?;
        if !metadata.is_file() {
            return Err(StoreError::NotPlain {
                kind: StoredPath::File,
                path: self.path.clone(),
                expected: "file",
            });
        }
        check_private(StoredPath::File, &self.path, &metadata)?;
        let mut text = String::new();
        file.take(MAX_TOKEN_FILE_BYTES)
            .read_to_string(&mut text)
            .map_err(StoreError::io("read", &self.path))?;
        let Ok(value) = serde_json::from_str::<Value>(&text) else {
            tracing::warn!(path = %self.path.display(), "the token file is not valid JSON; ignoring it");
            return Ok(Vec::new());
        };
        if value.get("format").and_then(Value::as_str) != Some(FORMAT) {
            return Ok(Vec::new());
        }
        Ok(value
            .get("servers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(SavedAuthorization::from_json)
            .collect())
    }

    fn write(&self, directory: &Path, entries: &[SavedAuthorization]) -> Result<(), StoreError> {
        let servers: Vec<Value> = entries.iter().map(SavedAuthorization::to_json).collect();
        let text = serde_json::to_string_pretty(&json!({"format": FORMAT, "servers": servers}))
            .unwrap_or_default();
        write_private(&self.path, directory, text.as_bytes())
    }
}

/// The directory must be a directory of this user's that no one else can use.
fn check_directory(directory: &Path) -> Result<(), StoreError> {
    let metadata =
        std::fs::metadata(directory).map_err(StoreError::io("inspect the directory", directory))?;
    if !metadata.is_dir() {
        return Err(StoreError::NotPlain {
            kind: StoredPath::Directory,
            path: directory.to_owned(),
            expected: "directory",
        });
    }
    check_private(StoredPath::Directory, directory, &metadata)
}

/// Owned by this user, no permissions for group or others.
fn check_private(
    kind: StoredPath,
    path: &Path,
    metadata: &std::fs::Metadata,
) -> Result<(), StoreError> {
    let you = nix::unistd::geteuid().as_raw();
    if metadata.uid() != you {
        return Err(StoreError::ForeignOwner {
            kind,
            path: path.to_owned(),
            owner: metadata.uid(),
            you,
        });
    }
    let mode = metadata.mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(StoreError::OpenToOthers {
            kind,
            path: path.to_owned(),
            mode,
            fix: match kind {
                StoredPath::File => 0o600,
                StoredPath::Directory => 0o700,
            },
        });
    }
    Ok(())
}

/// Writes `bytes` to a fresh, exclusively created 0600 file beside `path` (never through a
/// link), syncs it, renames it over `path` and syncs the directory.
fn write_private(path: &Path, directory: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let mut suffix = [0u8; 12];
    getrandom::fill(&mut suffix).map_err(|e| StoreError::Io {
        action: "name a temporary file for",
        path: path.to_owned(),
        source: std::io::Error::other(e.to_string()),
    })?;
    let suffix: String = suffix.iter().map(|b| format!("{b:02x}")).collect();
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let temporary = directory.join(format!(".{name}.{suffix}.tmp"));
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(OFlag::O_NOFOLLOW.bits())
            .open(&temporary)
            .map_err(StoreError::io("create", &temporary))?;
        file.write_all(bytes)
            .and_then(|()| file.sync_all())
            .map_err(StoreError::io("write", &temporary))?;
        std::fs::rename(&temporary, path).map_err(StoreError::io("replace", path))
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written?;
    File::open(directory)
        .and_then(|d| d.sync_all())
        .map_err(StoreError::io("sync the directory", directory))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn saves_loads_removes_and_keeps_the_file_private() {
        let dir =
            std::env::temp_dir().join(format!("switchboard-store-unit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("tokens.json");
        let store = TokenStore::new(&path);
        let saved = SavedAuthorization {
            server_url: "https://a.test/mcp".into(),
            issuer: "https://as.test".into(),
            client_id: "c".into(),
            access_token: "secret-token".into(),
            token_endpoint: Some("https://as.test/token".into()),
            ..Default::default()
        };
        store.save(&saved).expect("save");
        assert_eq!(
            store.load("https://a.test/mcp").expect("load"),
            Some(saved.clone())
        );
        let mode = |p: &Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&dir), 0o700, "a directory it creates is private");
        assert!(!format!("{saved:?}").contains("secret-token"));
        assert!(store.remove("https://a.test/mcp").expect("remove"));
        assert!(!store.remove("https://a.test/mcp").expect("remove again"));
        assert_eq!(store.load("https://a.test/mcp").expect("load"), None);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_missing_file_is_no_authorization_and_forgetting_it_creates_nothing() {
        let store = TokenStore::new(Path::new("/nonexistent-switchboard-dir/tokens.json"));
        assert_eq!(store.load("https://a.test/mcp").expect("load"), None);
        assert!(
            !store
                .remove("https://a.test/mcp")
                .expect("nothing to remove")
        );
        assert!(!Path::new("/nonexistent-switchboard-dir").exists());
    }
}
