//! Protocol versions and eras.

use std::fmt;

/// The modern (stateless) protocol version.
pub const MODERN_VERSION: &str = "2026-07-28";
/// The newest legacy version (the one we propose in `initialize`).
pub const LATEST_LEGACY_VERSION: &str = "2025-11-25";
/// Legacy versions we speak, newest first.
pub const LEGACY_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
/// Modern versions we speak, newest first.
pub const MODERN_VERSIONS: &[&str] = &[MODERN_VERSION];

/// How a connection runs: with the `initialize` handshake, or stateless with per-request
/// metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Era {
    /// Versions up to 2025-11-25: `initialize` then `notifications/initialized`.
    Legacy,
    /// 2026-07-28 and later: `server/discover`, `_meta` on every request.
    Modern,
}

impl Era {
    /// The era a version string belongs to, if we speak that version.
    pub fn of_version(version: &str) -> Option<Era> {
        if LEGACY_VERSIONS.contains(&version) {
            Some(Era::Legacy)
        } else if MODERN_VERSIONS.contains(&version) {
            Some(Era::Modern)
        } else {
            None
        }
    }
}

impl fmt::Display for Era {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Era::Legacy => "legacy",
            Era::Modern => "modern",
        })
    }
}

/// True if we speak this version.
pub fn is_supported_version(version: &str) -> bool {
    Era::of_version(version).is_some()
}

/// All versions we speak, newest first.
pub fn supported_versions() -> Vec<&'static str> {
    MODERN_VERSIONS
        .iter()
        .chain(LEGACY_VERSIONS)
        .copied()
        .collect()
}
