//! OAuth client behaviour against loopback servers.

mod discovery;
mod refresh;
mod store;
