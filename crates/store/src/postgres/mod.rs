//! `PostgresStore`: the `StateStore` a team's replicas share, on an existing PostgreSQL server.
//!
//! Each handle holds a small pool of connections (`pool`), the row-sealing key of its state root and its
//! namespace's id, and a change feed on `LISTEN`/`NOTIFY` (`feed`). Every write runs in one transaction that also
//! notifies; the atomic rules of the contract hold across replicas through conditional updates and
//! transaction-level advisory locks (`approvals`, `pins`, `rest`), and rate-limit buckets through row locks
//! (`rate`). Rows are sealed exactly as SQLite's are, so
//! every replica needs the same `approval.key` in its state root: the database records a check of the key per
//! namespace and a replica with another key is refused at open. The schema is versioned (`schema`): opening
//! checks it, `migrate` moves it on. While the database cannot be reached every call fails with
//! `Error::Unavailable`, never a panic, and calls succeed again once it answers.

mod approvals;
mod events;
mod feed;
mod pins;
mod pool;
mod rate;
mod rest;
mod schema;
mod traits;

use std::sync::Arc;

use rand::TryRng;

use self::feed::{Feed, CHANNEL};
pub use self::pool::PgOptions;
use self::pool::{col, Pool, Tx};
use crate::backend::StateStore;
use crate::error::{Error, Result};
use crate::handle::Limits;
use crate::namespace::Namespace;
use crate::seal::SealKey;
use crate::time::Timestamp;

pub use self::schema::{Migrated, SCHEMA_VERSION as POSTGRES_SCHEMA_VERSION};

/// Derives the key check a namespace's row records; a MAC of a fixed label, so it tells nothing of the key.
const KEY_CHECK_LABEL: &str = "toolgate postgres key check";

/// What every statement of a handle is scoped and sealed by.
pub(crate) struct Scope {
    pub(crate) key: SealKey,
    pub(crate) ns: String,
    pub(crate) limits: Limits,
    /// The audit chain this handle witnesses: its replica's (`open_chain`), `""` for a single writer.
    pub(crate) chain: String,
}

/// A handle on the shared PostgreSQL state of one namespace; see the module doc.
pub struct PostgresStore {
    pool: Pool,
    scope: Scope,
    feed: Arc<Feed>,
}

impl std::fmt::Debug for PostgresStore {
    /// Names the namespace only: the URL holds a password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("namespace", &self.scope.ns)
            .finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Opens the namespace's state in the database at `url` with the default ceilings.
    pub fn open(url: &str, namespace: &Namespace) -> Result<Self> {
        Self::open_with_limits(url, namespace, Limits::DEFAULT)
    }

    /// Opens the namespace's state in the database at `url` as the replica `chain`: the audit witness it reads
    /// and moves is that replica's chain's (every replica writes an audit log of its own); all else is shared.
    pub fn open_chain(url: &str, namespace: &Namespace, chain: &str) -> Result<Self> {
        Self::open_chain_with(url, namespace, chain, PgOptions::DEFAULT)
    }

    /// `open_chain` with the pool and deadlines of `options` (the config's `store` section).
    pub fn open_chain_with(
        url: &str,
        namespace: &Namespace,
        chain: &str,
        options: PgOptions,
    ) -> Result<Self> {
        let mut store = Self::open_on(Pool::new(url, options)?, namespace, Limits::DEFAULT)?;
        chain.clone_into(&mut store.scope.chain);
        Ok(store)
    }

    /// Opens the namespace's state in the database at `url` with explicit ceilings. Refuses a schema behind or
    /// ahead of this build, and a state root whose `approval.key` is not the one the namespace's rows are sealed
    /// with.
    pub fn open_with_limits(url: &str, namespace: &Namespace, limits: Limits) -> Result<Self> {
        Self::open_on(Pool::new(url, PgOptions::DEFAULT)?, namespace, limits)
    }

    fn open_on(pool: Pool, namespace: &Namespace, limits: Limits) -> Result<Self> {
        let key = SealKey::load_or_create(namespace.state_root())?;
        crate::operator::ensure_operator_key(namespace.state_root())?;
        schema::check(&pool)?;
        let check = hex::encode(key.derive(KEY_CHECK_LABEL));
        let ns = namespace.id().to_owned();
        let (recorded, _) = pool.write(
            |tx| {
                tx.execute(
                    "INSERT INTO namespaces (ns, key_check, created_at) VALUES ($1, $2, $3)
                     ON CONFLICT (ns) DO NOTHING",
                    &[&ns, &check, &Timestamp::now().as_millis()],
                )?;
                col::<String>(
                    &tx.one("SELECT key_check FROM namespaces WHERE ns = $1", &[&ns])?,
                    0,
                )
            },
            |_| Ok(()),
        )?;
        if recorded != check {
            return Err(Error::SealKeyMismatch);
        }
        let mut id = [0u8; 8];
        rand::rngs::SysRng
            .try_fill_bytes(&mut id)
            .map_err(|_| Error::Rng)?;
        Ok(Self {
            pool,
            feed: Arc::new(Feed::new(&ns, hex::encode(id))),
            scope: Scope {
                key,
                ns,
                limits,
                chain: String::new(),
            },
        })
    }

    /// Applies every migration the database at `url` lacks (`toolgate store migrate`).
    pub fn migrate(url: &str) -> Result<Migrated> {
        Self::migrate_with(url, PgOptions::DEFAULT)
    }

    /// `migrate` with the pool and deadlines of `options`.
    pub fn migrate_with(url: &str, options: PgOptions) -> Result<Migrated> {
        schema::migrate(&Pool::new(url, options)?, Timestamp::now().as_millis())
    }

    /// The schema version of the database at `url`, when it is the one this build needs.
    pub fn check_schema(url: &str) -> Result<i64> {
        Self::check_schema_with(url, PgOptions::DEFAULT)
    }

    /// `check_schema` with the pool and deadlines of `options` (`toolgate doctor`).
    pub fn check_schema_with(url: &str, options: PgOptions) -> Result<i64> {
        schema::check(&Pool::new(url, options)?)
    }

    fn read<T>(&self, f: impl FnOnce(&Tx<'_>, &Scope) -> Result<T>) -> Result<T> {
        self.pool.read(|tx| f(tx, &self.scope))
    }

    /// One transaction; when it changed a row it notifies every listener in the same transaction.
    fn write<T>(&self, f: impl FnOnce(&mut Tx<'_>, &Scope) -> Result<T>) -> Result<T> {
        let payload = self.feed.payload();
        let (out, changed) = self.pool.write(
            |tx| f(tx, &self.scope),
            |tx| {
                if tx.changed > 0 {
                    tx.one("SELECT pg_notify($1, $2)::text", &[&CHANNEL, &payload])?;
                }
                Ok(())
            },
        )?;
        if changed > 0 {
            self.feed.wrote();
        }
        Ok(out)
    }
}

impl StateStore for PostgresStore {
    fn backend(&self) -> &'static str {
        "postgres"
    }

    fn record_written(
        &self,
        list: &[crate::ReportEvent],
        head: &crate::AuditHead,
        now: Timestamp,
    ) -> Result<()> {
        self.write(|tx, s| {
            events::record(tx, &s.ns, list)?;
            rest::advance_head(tx, &s.ns, &s.chain, head, now)
        })
    }
}
