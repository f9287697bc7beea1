//! `Store`: one connection to a namespace's database, plus the fixed capacity ceilings.
//!
//! The domain operations live beside their tables (`approvals`, `grants`, `pins`,
//! `events`, `report`) as `impl Store` blocks; this file only opens the handle. A `Store`
//! is `Send` but not `Sync`: give each thread or task its own, or guard one with a mutex.

use std::collections::BTreeMap;

use rusqlite::Connection;
use serde::Serialize;

use crate::db;
use crate::error::Result;
use crate::namespace::Namespace;
use crate::seal::SealKey;
use crate::time::Timestamp;

/// Capacity ceilings of the approval store. Values exactly at a ceiling are allowed. Finished requests
/// (rejected, consumed, cancelled, expired) are deleted automatically once `keep_finished_ms` has passed, and
/// sooner, oldest first, when a new request would not fit otherwise; a live request is never evicted, and a
/// request that still does not fit is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Limits {
    /// Most approval records held at once, in any state, until pruned.
    pub max_approval_records: u64,
    /// Largest serialized snapshot of one request.
    pub max_snapshot_bytes: u64,
    /// Largest total of all stored snapshots.
    pub max_total_snapshot_bytes: u64,
    /// Most requests one session may have waiting for a human at once.
    pub max_pending_per_session: u64,
    /// Most requests one identity may have waiting for a human at once, over all its sessions; well under
    /// the record ceiling, so one identity's flood leaves room for every other identity's ask.
    pub max_pending_per_identity: u64,
    /// How long a finished request is kept (so a late status or resume still gets an exact answer).
    pub keep_finished_ms: i64,
    /// Most path leases live at once (`locks`).
    pub max_locks: u64,
    /// Most path leases one identity holds at once, well under `max_locks`, so one identity taking leases cannot
    /// leave none for the others.
    pub max_locks_per_holder: u64,
}

impl Limits {
    /// The production ceilings: 10,000 records, 64 KiB per snapshot, 16 MiB in total, 16 waiting requests per
    /// session (so one session can hold at most 1 MiB of snapshots) and 64 per identity (4 MiB), finished
    /// requests kept for 24 hours; 10,000 live path leases, 256 of them per identity.
    pub const DEFAULT: Self = Self {
        max_approval_records: 10_000,
        max_snapshot_bytes: 64 * 1024,
        max_total_snapshot_bytes: 16 * 1024 * 1024,
        max_pending_per_session: 16,
        max_pending_per_identity: 64,
        keep_finished_ms: 24 * 60 * 60 * 1000,
        max_locks: 10_000,
        max_locks_per_holder: 256,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Occupancy of a store, for `doctor`-style diagnostics and capacity warnings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoreStats {
    /// Schema version on disk.
    pub schema_version: i64,
    /// Approval records held, in any state (what the record ceiling counts).
    pub approval_records: u64,
    /// Total bytes of stored snapshots (what the byte ceiling counts).
    pub snapshot_bytes: u64,
    /// Approval records by effective status at the `now` given.
    pub approvals_by_status: BTreeMap<String, u64>,
    /// Session grants held.
    pub session_grants: u64,
    /// Tool pins held.
    pub tool_pins: u64,
    /// Reporting events held.
    pub report_events: u64,
    /// The ceilings in force.
    pub limits: Limits,
}

/// An open store for one workspace namespace.
#[derive(Debug)]
pub struct Store {
    pub(crate) conn: Connection,
    pub(crate) limits: Limits,
    /// Seals every approval and grant row this handle writes, and checks every one it reads.
    pub(crate) key: SealKey,
    /// Part of every seal, so a row copied from another workspace's database does not verify here.
    pub(crate) namespace_id: String,
}

impl Store {
    /// Opens the namespace's database with the default ceilings.
    pub fn open(namespace: &Namespace) -> Result<Self> {
        Self::open_with_limits(namespace, Limits::DEFAULT)
    }

    /// Opens the namespace's database with explicit ceilings (tests use small ones).
    pub fn open_with_limits(namespace: &Namespace, limits: Limits) -> Result<Self> {
        let key = SealKey::load_or_create(namespace.state_root())?;
        // Created with the approval key, so the operator finds it once toolgate has run.
        crate::operator::ensure_operator_key(namespace.state_root())?;
        let conn = db::open(&namespace.db_path())?;
        Ok(Self {
            conn,
            limits,
            key,
            namespace_id: namespace.id().to_owned(),
        })
    }

    /// The ceilings this handle enforces.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Counts of everything held, with approval statuses as effective at `now`.
    pub fn stats(&self, now: Timestamp) -> Result<StoreStats> {
        let count = |sql: &str| -> Result<u64> {
            let n: i64 = self.conn.query_row(sql, [], |r| r.get(0))?;
            Ok(n as u64)
        };
        let (approval_records, snapshot_bytes): (i64, i64) = self.conn.query_row(
            "SELECT COUNT(*), COALESCE(SUM(snapshot_bytes), 0) FROM approvals",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        let mut approvals_by_status = BTreeMap::new();
        let mut stmt = self.conn.prepare(
            "SELECT CASE WHEN status IN ('PENDING', 'APPROVED') AND expires_at <= ?1
                         THEN 'EXPIRED' ELSE status END AS effective, COUNT(*)
             FROM approvals GROUP BY effective",
        )?;
        let mut rows = stmt.query([now.as_millis()])?;
        while let Some(r) = rows.next()? {
            let status: String = r.get(0)?;
            let n: i64 = r.get(1)?;
            approvals_by_status.insert(status, n as u64);
        }
        Ok(StoreStats {
            schema_version: count("PRAGMA user_version")? as i64,
            approval_records: approval_records as u64,
            snapshot_bytes: snapshot_bytes as u64,
            approvals_by_status,
            session_grants: count("SELECT COUNT(*) FROM session_grants")?,
            tool_pins: count("SELECT COUNT(*) FROM tool_pins")?,
            report_events: count("SELECT COUNT(*) FROM report_events")?,
            limits: self.limits,
        })
    }
}
