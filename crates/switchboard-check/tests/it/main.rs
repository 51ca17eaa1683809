//! Integration tests of the checker: the suite against the bundled-example fixture, the
//! well-behaved and broken fixture modes (each broken one fails exactly its checks), over
//! stdio and over Streamable HTTP, the real interop peers on both transports, and the
//! report formats.

mod docs;
mod fixtures;
mod formats;
mod http;
mod modern;
mod peers;
mod support;
