//! Integration tests of the checker: the suite against the bundled-example fixture, the
//! well-behaved and broken fixture modes (each broken one fails exactly its checks), the
//! real interop peers, and the report formats.

mod fixtures;
mod formats;
mod peers;
mod support;
