//! Switchboard as an MCP server.
//!
//! [`gateway::serve`] answers one MCP client (the 2025-11-25 family of protocol versions,
//! with `initialize`) with the tools, prompts and resources of every server a
//! [`switchboard_runtime::Runtime`] operates: tools and prompts under the runtime's exported
//! names (`<server>__<name>`), resources under their own URIs. Calls go through the
//! runtime's bridge, so they get its argument validation, deadlines, restarts and output
//! bound; cancellation and progress travel both ways.

pub mod gateway;
