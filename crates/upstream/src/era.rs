//! Protocol versions and the two eras they belong to.

/// The stateless era: no `initialize`, `_meta` on every request, `server/discover`.
pub const MODERN_VERSION: &str = "2026-07-28";

/// Versions negotiated with `initialize`, newest first. The newest is the counter-offer for unknown versions.
pub const LEGACY_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// `_meta` keys with this prefix are protocol plumbing of the modern era, not payload.
pub const PROTOCOL_META_PREFIX: &str = "io.modelcontextprotocol/";

/// The modern era's `_meta` keys, each `PROTOCOL_META_PREFIX` and a name (spelled out, so a request does not
/// format them again).
pub const PROTOCOL_VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";
pub const CLIENT_CAPABILITIES_META: &str = "io.modelcontextprotocol/clientCapabilities";
pub const CLIENT_INFO_META: &str = "io.modelcontextprotocol/clientInfo";
pub const SERVER_INFO_META: &str = "io.modelcontextprotocol/serverInfo";

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Era {
    /// Negotiated with `initialize`; the string is the agreed version.
    Legacy(String),
    Modern,
}

impl Era {
    pub fn version(&self) -> &str {
        match self {
            Era::Legacy(v) => v,
            Era::Modern => MODERN_VERSION,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_meta_key_is_the_prefix_and_its_name() {
        for (key, name) in [
            (PROTOCOL_VERSION_META, "protocolVersion"),
            (CLIENT_CAPABILITIES_META, "clientCapabilities"),
            (CLIENT_INFO_META, "clientInfo"),
            (SERVER_INFO_META, "serverInfo"),
        ] {
            assert_eq!(key, format!("{PROTOCOL_META_PREFIX}{name}"));
        }
    }
}
