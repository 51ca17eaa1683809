//! Who hears what an upstream server says outside any one call.
//!
//! A server's log message that its session could not tie to one call (the session ties it
//! only when exactly one call that asked for log messages is in flight) may be about any
//! client's request: a server that logs its users' queries tells one client's data to
//! whoever hears it. So the gateway tells such a message to the clients of the one
//! identity it can only be about, and to nobody else:
//!
//! - the identity whose requests wait on that server, when every request waiting on it,
//!   and every one that ended since its last such message was told, is of that identity
//!   (the message travels through the runtime's notices, so a request can end between the
//!   message's arrival and its telling: counting the ended ones errs towards telling
//!   fewer);
//! - when no request waits on it: the identity the gateway has served, when it has served
//!   only one (a single-user gateway: stdio, one bearer token, one address); every client
//!   when it has served none yet (a message from before any request, such as a server's
//!   start, can be about no client's request);
//!
//! otherwise (requests of several identities wait on the server, or none waits and the
//! gateway has served several) the message goes to the operator's log only. Among the
//! clients of that identity, a legacy client hears it at or above its `logging/setLevel`
//! level, as before; a 2026-07-28 client hears only its own requests' messages.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use switchboard_server::core::{Audience, ClientIdentity};

/// The gateway's record of who waits on which server and whom it has served; cheap to
/// share (one table). Bounded by the requests in flight, which the transports cap.
#[derive(Debug, Default)]
pub(crate) struct Audiences {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Requests waiting on each server, counted by identity.
    waiting: HashMap<String, HashMap<ClientIdentity, usize>>,
    /// Whose requests to each server ended since its last message was told.
    ended: HashMap<String, Served>,
    served: Served,
}

/// Whom the gateway (or a server's requests) served: kept as little as it takes to tell
/// one identity from several.
#[derive(Debug, Default)]
enum Served {
    #[default]
    Nobody,
    One(ClientIdentity),
    Several,
}

impl Served {
    fn and(self, identity: &ClientIdentity) -> Served {
        match self {
            Served::Nobody => Served::One(identity.clone()),
            Served::One(one) if one == *identity => Served::One(one),
            Served::One(_) | Served::Several => Served::Several,
        }
    }
}

/// A request counted as waiting on a server for as long as this lives.
#[derive(Debug)]
#[must_use = "the request counts as waiting only while this lives"]
pub(crate) struct Waiting {
    audiences: Arc<Audiences>,
    server: String,
    identity: ClientIdentity,
}

impl Audiences {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Notes a request of `identity`.
    pub(crate) fn served(&self, identity: &ClientIdentity) {
        let mut state = self.state();
        state.served = std::mem::take(&mut state.served).and(identity);
    }

    /// Counts a request of `identity` as waiting on `server` until the value is dropped.
    pub(crate) fn waiting_on(self: &Arc<Self>, server: &str, identity: ClientIdentity) -> Waiting {
        *self
            .state()
            .waiting
            .entry(server.to_owned())
            .or_default()
            .entry(identity.clone())
            .or_default() += 1;
        Waiting {
            audiences: self.clone(),
            server: server.to_owned(),
            identity,
        }
    }

    /// Who may hear a message `server` said outside any one call, told now; `None`: no
    /// client, only the operator's log.
    pub(crate) fn of_server(&self, server: &str) -> Option<Audience> {
        let mut state = self.state();
        let mut callers = state.ended.remove(server).unwrap_or_default();
        for identity in state
            .waiting
            .get(server)
            .into_iter()
            .flat_map(HashMap::keys)
        {
            callers = callers.and(identity);
        }
        let only = match callers {
            Served::One(only) => only,
            Served::Several => return None,
            Served::Nobody => match &state.served {
                Served::One(only) => only.clone(),
                Served::Nobody => return Some(Audience::Everyone),
                Served::Several => return None,
            },
        };
        Some(Audience::Only(only))
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let mut state = self.audiences.state();
        let ended = state.ended.remove(&self.server).unwrap_or_default();
        state
            .ended
            .insert(self.server.clone(), ended.and(&self.identity));
        let Some(by_identity) = state.waiting.get_mut(&self.server) else {
            return;
        };
        if let Some(count) = by_identity.get_mut(&self.identity) {
            *count -= 1;
            if *count == 0 {
                by_identity.remove(&self.identity);
            }
        }
        if by_identity.is_empty() {
            state.waiting.remove(&self.server);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};

    use super::*;

    fn peer(last: u8) -> ClientIdentity {
        ClientIdentity::peer(IpAddr::V4(Ipv4Addr::new(127, 0, 0, last)))
    }

    #[test]
    fn a_message_reaches_only_the_identity_it_can_only_be_about() {
        let audiences = Arc::new(Audiences::default());
        let mut seen = Vec::new();
        let mut say = |what: &str, audiences: &Audiences| {
            seen.push(format!("{what}: {:?}", audiences.of_server("s")));
        };
        say("nobody served yet", &audiences);
        audiences.served(&peer(2));
        say("one identity served, none waiting", &audiences);
        let a = audiences.waiting_on("s", peer(2));
        say("its request waits", &audiences);
        audiences.served(&peer(3));
        let b = audiences.waiting_on("s", peer(3));
        say("two identities wait", &audiences);
        drop(a);
        say(
            "one of them still waits, the other's ended since",
            &audiences,
        );
        say("one of them still waits", &audiences);
        drop(b);
        say("none waits, the last one's ended since", &audiences);
        say("none waits, two served", &audiences);
        let _other = audiences.waiting_on("t", peer(2));
        say("a request waits on another server", &audiences);
        expect_test::expect![[r#"
            nobody served yet: Some(Everyone)
            one identity served, none waiting: Some(Only(peer 127.0.0.2))
            its request waits: Some(Only(peer 127.0.0.2))
            two identities wait: None
            one of them still waits, the other's ended since: None
            one of them still waits: Some(Only(peer 127.0.0.3))
            none waits, the last one's ended since: Some(Only(peer 127.0.0.3))
            none waits, two served: None
            a request waits on another server: None"#]]
        .assert_eq(&seen.join("\n"));
    }
}
