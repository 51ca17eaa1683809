//! OAuth client behaviour against loopback servers.

mod refresh;
mod store;
