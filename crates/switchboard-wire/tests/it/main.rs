//! Wire-layer tests: connections over in-memory pairs (the only place protocol peers are
//! simulated, since this layer knows no MCP) and the stdio transport with real processes.

mod connection;
mod stdio;
