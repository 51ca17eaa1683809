//! Integration tests of the session against real server processes: our fixtures (good and
//! deliberately broken) and real third-party peers.

mod fixtures;
mod http_connections;
mod http_faults;
mod http_interop;
mod interop;
mod skills;
mod support;
mod trace_context;
