//! `Store`: one connection to a namespace's database, plus the fixed capacity ceilings.
//!
//! The domain operations live beside their tables (`approvals`, `grants`, `pins`,
//! `events`, `report`) as `impl Store` blocks; this file only opens the handle. A `Store`
//! is `Send` but not `Sync`: give each thread or task its own, or guard one with a mutex.

use rusqlite::Connection;

use crate::db;
use crate::error::Result;
use crate::namespace::Namespace;

/// Capacity ceilings of the approval store. Values exactly at a ceiling are allowed; a
/// request that would exceed one is refused, and nothing is ever evicted to make room.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most approval records held at once, in any state, until pruned.
    pub max_approval_records: u64,
    /// Largest serialized snapshot of one request.
    pub max_snapshot_bytes: u64,
    /// Largest total of all stored snapshots.
    pub max_total_snapshot_bytes: u64,
}

impl Limits {
    /// The production ceilings: 10,000 records, 64 KiB per snapshot, 16 MiB in total.
    pub const DEFAULT: Self = Self {
        max_approval_records: 10_000,
        max_snapshot_bytes: 64 * 1024,
        max_total_snapshot_bytes: 16 * 1024 * 1024,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// An open store for one workspace namespace.
#[derive(Debug)]
pub struct Store {
    pub(crate) conn: Connection,
    pub(crate) limits: Limits,
}

impl Store {
    /// Opens the namespace's database with the default ceilings.
    pub fn open(namespace: &Namespace) -> Result<Self> {
        Self::open_with_limits(namespace, Limits::DEFAULT)
    }

    /// Opens the namespace's database with explicit ceilings (tests use small ones).
    pub fn open_with_limits(namespace: &Namespace, limits: Limits) -> Result<Self> {
        let conn = db::open(&namespace.db_path())?;
        Ok(Self { conn, limits })
    }

    /// The ceilings this handle enforces.
    pub fn limits(&self) -> Limits {
        self.limits
    }
}
