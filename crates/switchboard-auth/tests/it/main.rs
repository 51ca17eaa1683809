//! OAuth client behaviour against loopback servers.

mod device;
mod discovery;
mod dpop;
mod refresh;
mod store;
mod workload;
