//! The store section's model: which backend holds the state, and for PostgreSQL its URL (never printed with its
//! password) and the pool and deadlines a replica's handle uses.

use super::Setting;

/// The store backend (`"store": {"kind": …}`).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Store {
    /// SQLite under the state root, one database per workspace: the embedded default.
    #[default]
    Sqlite,
    /// A PostgreSQL server that several replicas share (`"kind": "postgres", "url": "postgres://…"`), with the
    /// pool and deadlines each replica's handle uses.
    Postgres(Setting<StoreUrl>, StorePool),
}

/// How a replica reaches its PostgreSQL store: `pool_size`, `connect_timeout_seconds`,
/// `statement_timeout_seconds` in the `store` section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StorePool {
    /// Most connections one handle holds at once.
    pub size: usize,
    /// How long opening a connection may take before the database counts as gone.
    pub connect_timeout: std::time::Duration,
    /// The server's limit on one statement; a call waits this and a margin for an answer.
    pub statement_timeout: std::time::Duration,
}

impl Default for StorePool {
    /// The store's own defaults: 8 connections, 5 s to connect, 15 s a statement.
    fn default() -> Self {
        Self {
            size: 8,
            connect_timeout: std::time::Duration::from_secs(5),
            statement_timeout: std::time::Duration::from_secs(15),
        }
    }
}

/// A `postgres://` URL, `${VAR}` expanded; it may hold a password, so it is never printed whole.
#[derive(Clone, PartialEq, Eq)]
pub struct StoreUrl(String);

impl StoreUrl {
    pub(crate) fn new(url: String) -> Self {
        Self(url)
    }

    /// The URL itself, password included: for connecting, never for showing.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The URL with any password replaced by `***`, for showing.
    pub fn redacted(&self) -> String {
        let Some((scheme, rest)) = self.0.split_once("://") else {
            return "***".to_owned();
        };
        let (authority, tail) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        match authority.rsplit_once('@') {
            Some((user, host)) if user.contains(':') => {
                let name = user.split(':').next().unwrap_or_default();
                format!("{scheme}://{name}:***@{host}{tail}")
            }
            _ => self.0.clone(),
        }
    }
}

impl std::fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl std::fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted())
    }
}
