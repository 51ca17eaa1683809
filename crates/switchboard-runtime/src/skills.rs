//! Skills (the `io.modelcontextprotocol/skills` extension, SEP-2640) across a runtime's
//! servers: the host's registry is the servers' `skills/list` listings (read lazily, when
//! the host asks, and never a skill file), kept per server connection; a skill is loaded
//! from the entry the registry holds, verified by the session, and its files are read
//! from the server it came from only. A skill is identified by its server and its URI.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use switchboard_protocol::{SkillEntry, error_codes};
use switchboard_session::{Listing, LoadedSkill, Session, SessionError, SkillError};
use switchboard_wire::codes;

use crate::ServerRequestError;
use crate::server::{ServerShared, lock};

/// One server's skills, as its listing gave them.
#[derive(Debug, Clone)]
pub struct ServerSkills {
    /// The server's configured name: the host's label for it (never its self-reported
    /// `serverInfo`); with an entry's `uri` it identifies a skill.
    pub server: String,
    /// Its listing: the entries that could be read, and the problems beside them.
    pub listing: Arc<Listing<SkillEntry>>,
}

/// The skills of the ready servers that declare the extension ([`crate::Runtime::skills`]).
#[derive(Debug, Default)]
pub struct SkillCatalog {
    /// The servers whose listing succeeded, in name order.
    pub servers: Vec<ServerSkills>,
    /// The servers whose `skills/list` failed, with why.
    pub failures: Vec<SkillListingFailure>,
}

impl SkillCatalog {
    /// Every listed skill with its server.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &SkillEntry)> {
        self.servers.iter().flat_map(|server| {
            server
                .listing
                .items
                .iter()
                .map(move |entry| (server.server.as_str(), entry))
        })
    }
}

/// A server whose skills could not be listed.
#[derive(Debug)]
pub struct SkillListingFailure {
    /// The server.
    pub server: String,
    /// Why.
    pub error: SessionError,
}

/// Why [`crate::ServerHandle::load_skill`] or [`crate::Runtime::read_skill_file`] failed: the
/// server is not there to ask, or the skill (or file) was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillLoadError {
    /// The server is not configured or not available.
    #[error(transparent)]
    Server(#[from] ServerRequestError),
    /// The skill or file was refused or could not be read.
    #[error(transparent)]
    Skill(#[from] SkillError),
}

/// The listings the runtime holds, per server, for the connection they were read on.
#[derive(Debug, Default)]
pub(crate) struct SkillRegistry {
    listings: Mutex<HashMap<String, HeldListing>>,
}

#[derive(Debug)]
struct HeldListing {
    /// The server's connection count when it was listed: a reconnect lists again.
    connection: u32,
    listing: Arc<Listing<SkillEntry>>,
}

impl SkillRegistry {
    /// Lists the skills of each ready server in `servers` that declares the extension,
    /// and holds the listings for loading.
    pub(crate) async fn list(&self, servers: Vec<(String, Arc<ServerShared>)>) -> SkillCatalog {
        let mut catalog = SkillCatalog::default();
        for (name, shared) in servers {
            let Some(session) = shared.session() else {
                continue;
            };
            if !session.offers_skills() {
                continue;
            }
            match self
                .relist(&name, Some(shared.connection()), &session)
                .await
            {
                Ok(listing) => catalog.servers.push(ServerSkills {
                    server: name,
                    listing,
                }),
                Err(error) => catalog.failures.push(SkillListingFailure {
                    server: name,
                    error,
                }),
            }
        }
        catalog
    }

    /// Loads the skill `uri` of `server` from the entry held for it: the held listing of
    /// this connection, else a fresh listing, else `skills/get` (for a skill no listing
    /// names). The session verifies what it reads.
    pub(crate) async fn load(
        &self,
        server: &str,
        connection: Option<u32>,
        session: &Session,
        uri: &str,
    ) -> Result<LoadedSkill, SkillError> {
        if !session.offers_skills() {
            return Err(SkillError::NotOffered {
                server: server.to_owned(),
            });
        }
        let held = connection
            .and_then(|connection| self.held(server, connection))
            .and_then(|listing| find(&listing, uri));
        let entry = match held {
            Some(entry) => entry,
            None => {
                let listing = self.relist(server, connection, session).await?;
                match find(&listing, uri) {
                    Some(entry) => entry,
                    None => session
                        .get_skill(uri)
                        .await
                        .map_err(|error| unknown_skill(server, uri, error))?,
                }
            }
        };
        session.load_skill(&entry).await
    }

    /// The listing held for `server` on the connection counted `connection`.
    fn held(&self, server: &str, connection: u32) -> Option<Arc<Listing<SkillEntry>>> {
        lock(&self.listings)
            .get(server)
            .filter(|held| held.connection == connection)
            .map(|held| held.listing.clone())
    }

    /// Lists `server`'s skills and holds the listing for the connection counted
    /// `connection` (none held when the count is unknown).
    async fn relist(
        &self,
        server: &str,
        connection: Option<u32>,
        session: &Session,
    ) -> Result<Arc<Listing<SkillEntry>>, SessionError> {
        let listing = Arc::new(session.list_skills().await?);
        for problem in &listing.problems {
            tracing::warn!(server, detail = %problem.detail, "skills/list entry skipped");
        }
        if let Some(connection) = connection {
            lock(&self.listings).insert(
                server.to_owned(),
                HeldListing {
                    connection,
                    listing: listing.clone(),
                },
            );
        }
        Ok(listing)
    }
}

fn find(listing: &Listing<SkillEntry>, uri: &str) -> Option<SkillEntry> {
    listing.items.iter().find(|entry| entry.uri == uri).cloned()
}

/// `skills/get` refused with invalid params (or resource not found): the server serves no
/// such skill.
fn unknown_skill(server: &str, uri: &str, error: SessionError) -> SkillError {
    let refused = matches!(
        &error,
        SessionError::Rpc { error: object, .. }
            if object.code == codes::INVALID_PARAMS
                || object.code == error_codes::RESOURCE_NOT_FOUND_LEGACY
    );
    if refused {
        SkillError::UnknownSkill {
            server: server.to_owned(),
            uri: uri.to_owned(),
        }
    } else {
        SkillError::Session(error)
    }
}
