//! Text rules every side of Switchboard applies, with no workspace dependency and no I/O
//! (`serde_json`, and for [`poisoning`] `regex` and the Unicode tables): the client's
//! layers, the configuration, the checker and the servers reach them without pulling in a
//! transport.
//!
//! [`redact`] hides secrets in what we show (a URL's display form, known secret values
//! in free text); [`peer_text`] makes text a peer controls safe to show (controls, bidi
//! and invisible characters escaped); [`credentials`] finds credential-looking strings in
//! peer text (for warnings, never showing them); [`poisoning`] judges what a model reads
//! for tool poisoning (orders, secrets sent out, steering, concealment, hidden layers);
//! [`wildcard`] matches names against `*`/`?` patterns (tool filters, gateway policy).

pub mod credentials;
pub mod peer_text;
pub mod poisoning;
pub mod redact;
pub mod wildcard;
