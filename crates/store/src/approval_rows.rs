//! An approval request as stored: its columns, its seal, and what it reads as.
//!
//! The seal covers every column that decides what may run and when: id, namespace, trace id, stored status,
//! snapshot hash and size, creation, expiry, decision (time and decider), consumption, session and hold time.
//! The snapshot itself is bound through its SHA-256, which is checked against the text on every read. This
//! module only maps rows; the lifecycle rules are in `approvals`.

use jsonrpc::sha256_hex;
use rusqlite::{params, Connection, OptionalExtension, Row};
use serde_json::Value;

use crate::approvals::{Approval, ApprovalStatus};
use crate::error::Result;
use crate::seal::{Field, SealKey};
use crate::time::Timestamp;

/// Separates request seals from grant seals and from any later row kind.
const DOMAIN: &str = "toolgate approval v2";

/// Columns read for a `StoredRow`, in `StoredRow::read` order.
pub(crate) const ROW_COLUMNS: &str =
    "id, trace_id, status, snapshot, snapshot_sha256, snapshot_bytes, \
     created_at, expires_at, decided_at, decided_by, consumed_at, session_id, held_until, seal";

/// One `approvals` row, as it is on disk.
#[derive(Debug, Clone)]
pub(crate) struct StoredRow {
    pub id: String,
    pub trace_id: String,
    pub status: ApprovalStatus,
    pub snapshot: String,
    pub snapshot_sha256: String,
    pub snapshot_bytes: i64,
    pub created_at: i64,
    pub expires_at: i64,
    pub decided_at: Option<i64>,
    pub decided_by: Option<String>,
    pub consumed_at: Option<i64>,
    /// Empty for a request made outside a session.
    pub session_id: String,
    pub held_until: i64,
    pub seal: String,
}

impl StoredRow {
    /// Maps a row; the inner `Result` carries a status no toolgate writes.
    pub fn read(r: &Row<'_>) -> rusqlite::Result<Result<Self>> {
        let status: String = r.get(2)?;
        let status = match ApprovalStatus::parse(&status) {
            Ok(s) => s,
            Err(e) => return Ok(Err(e)),
        };
        Ok(Ok(Self {
            id: r.get(0)?,
            trace_id: r.get(1)?,
            status,
            snapshot: r.get(3)?,
            snapshot_sha256: r.get(4)?,
            snapshot_bytes: r.get(5)?,
            created_at: r.get(6)?,
            expires_at: r.get(7)?,
            decided_at: r.get(8)?,
            decided_by: r.get(9)?,
            consumed_at: r.get(10)?,
            session_id: r.get(11)?,
            held_until: r.get(12)?,
            seal: r.get(13)?,
        }))
    }

    fn fields<'a>(&'a self, namespace_id: &'a str) -> [Field<'a>; 13] {
        [
            Field::Text(&self.id),
            Field::Text(namespace_id),
            Field::Text(&self.trace_id),
            Field::Text(self.status.as_str()),
            Field::Text(&self.snapshot_sha256),
            Field::Int(self.snapshot_bytes),
            Field::Int(self.created_at),
            Field::Int(self.expires_at),
            Field::OptInt(self.decided_at),
            Field::OptText(self.decided_by.as_deref()),
            Field::OptInt(self.consumed_at),
            Field::Text(&self.session_id),
            Field::Int(self.held_until),
        ]
    }

    /// Recomputes the seal after a change.
    pub fn reseal(&mut self, key: &SealKey, namespace_id: &str) {
        self.seal = key.seal(DOMAIN, &self.fields(namespace_id));
    }

    /// True when toolgate wrote exactly this row: the seal verifies and the snapshot is the one it hashed.
    pub fn authentic(&self, key: &SealKey, namespace_id: &str) -> bool {
        key.verify(DOMAIN, &self.fields(namespace_id), &self.seal)
            && sha256_hex(self.snapshot.as_bytes()) == self.snapshot_sha256
            && self.snapshot.len() as i64 == self.snapshot_bytes
    }

    /// The status as effective at `now`: a live request past its expiry is expired.
    pub fn effective(&self, now: Timestamp) -> ApprovalStatus {
        match self.status {
            ApprovalStatus::Pending | ApprovalStatus::Approved
                if now.as_millis() >= self.expires_at =>
            {
                ApprovalStatus::Expired
            }
            s => s,
        }
    }

    /// What callers see. A tampered row is still shown (marked), with its snapshot as text when it is not
    /// JSON, so an administrator can look at it; nothing acts on it.
    pub fn into_approval(self, key: &SealKey, namespace_id: &str, now: Timestamp) -> Approval {
        let authentic = self.authentic(key, namespace_id);
        let status = self.effective(now);
        let snapshot = match serde_json::from_str(&self.snapshot) {
            Ok(v) => v,
            Err(_) => Value::String(self.snapshot),
        };
        Approval {
            id: self.id,
            trace_id: self.trace_id,
            status,
            snapshot,
            snapshot_sha256: self.snapshot_sha256,
            created_at: Timestamp::from_millis(self.created_at),
            expires_at: Timestamp::from_millis(self.expires_at),
            decided_at: self.decided_at.map(Timestamp::from_millis),
            decided_by: self.decided_by,
            consumed_at: self.consumed_at.map(Timestamp::from_millis),
            session_id: Some(self.session_id).filter(|s| !s.is_empty()),
            held_until: Timestamp::from_millis(self.held_until),
            authentic,
        }
    }

    pub fn insert(&self, conn: &Connection) -> Result<()> {
        conn.execute(
            &format!("INSERT INTO approvals ({ROW_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)"),
            params![
                self.id,
                self.trace_id,
                self.status.as_str(),
                self.snapshot,
                self.snapshot_sha256,
                self.snapshot_bytes,
                self.created_at,
                self.expires_at,
                self.decided_at,
                self.decided_by,
                self.consumed_at,
                self.session_id,
                self.held_until,
                self.seal,
            ],
        )?;
        Ok(())
    }

    /// Writes the mutable columns back, only over the row as it was read (`old_seal`); returns rows changed.
    pub fn update(&self, conn: &Connection, old_seal: &str) -> Result<usize> {
        Ok(conn.execute(
            "UPDATE approvals SET status = ?2, decided_at = ?3, decided_by = ?4, consumed_at = ?5, seal = ?6
             WHERE id = ?1 AND seal = ?7",
            params![
                self.id,
                self.status.as_str(),
                self.decided_at,
                self.decided_by,
                self.consumed_at,
                self.seal,
                old_seal
            ],
        )?)
    }
}

/// Reads the row of `id`, if there is one.
pub(crate) fn load(conn: &Connection, id: &str) -> Result<Option<StoredRow>> {
    let sql = format!("SELECT {ROW_COLUMNS} FROM approvals WHERE id = ?1");
    conn.query_row(&sql, [id], StoredRow::read)
        .optional()?
        .transpose()
}
