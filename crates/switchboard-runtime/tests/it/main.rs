//! Runtime tests against real fixture server processes: each sentence of the seed, and each
//! weak spot of the system it describes, shown to hold.

mod filter;
mod host;
mod http;
mod lifecycle;
mod naming;
mod restarts;
mod skills;
mod support;
mod tools;
