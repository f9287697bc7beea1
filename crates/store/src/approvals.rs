//! The approval lifecycle: PENDING → APPROVED | REJECTED | EXPIRED; APPROVED → CONSUMED.
//!
//! Every transition is one conditional `UPDATE … WHERE status = <expected>` inside an
//! immediate transaction, and succeeds only if it changed exactly one row; that is what
//! makes consumption single-use across threads and processes. Expiry is judged against the
//! `now` the caller passes: a PENDING or APPROVED request at or past `expires_at` is
//! effectively EXPIRED. Reads never persist that lazy expiry (`expire_due` does, on
//! request). Snapshots are opaque JSON to this module: it neither interprets nor shows them.

use std::fmt;

use jsonrpc::sha256_hex;
use rand::TryRng;
use rusqlite::{params, OptionalExtension, Row, Transaction, TransactionBehavior};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::handle::Store;
use crate::time::Timestamp;

/// Random bytes in a request id: 128 bits, so ids cannot be guessed or enumerated.
const ID_RANDOM_BYTES: usize = 16;
/// Prefix that makes ids recognisable in logs and CLI arguments.
const ID_PREFIX: &str = "apr_";
/// Cap on free-text identity fields, so a caller cannot bloat rows through them.
const MAX_LABEL_CHARS: usize = 128;

/// The stored state of an approval request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ApprovalStatus {
    /// Waiting for a human decision.
    Pending,
    /// Approved and not yet used.
    Approved,
    /// Rejected by a human.
    Rejected,
    /// Not decided, or not used, before its expiry.
    Expired,
    /// Approved and used once; never usable again.
    Consumed,
}

impl ApprovalStatus {
    /// The stored and displayed spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "PENDING",
            Self::Approved => "APPROVED",
            Self::Rejected => "REJECTED",
            Self::Expired => "EXPIRED",
            Self::Consumed => "CONSUMED",
        }
    }

    fn parse(s: &str) -> Result<Self> {
        Ok(match s {
            "PENDING" => Self::Pending,
            "APPROVED" => Self::Approved,
            "REJECTED" => Self::Rejected,
            "EXPIRED" => Self::Expired,
            "CONSUMED" => Self::Consumed,
            other => return Err(Error::Corrupt(format!("approval status {other:?}"))),
        })
    }

    /// True once no further transition is possible.
    pub const fn is_terminal(self) -> bool {
        matches!(self, Self::Rejected | Self::Expired | Self::Consumed)
    }
}

impl fmt::Display for ApprovalStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One approval request as stored, with its status as effective at the `now` it was read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Approval {
    /// Unguessable request id.
    pub id: String,
    /// Lifecycle correlation id, preserved across submission, decision and execution.
    pub trace_id: String,
    /// Effective status: a live request past `expires_at` reads as `Expired`.
    pub status: ApprovalStatus,
    /// The protected snapshot. Show it to the approving human only, never to the agent.
    pub snapshot: Value,
    /// SHA-256 of the stored snapshot text, for display and correlation.
    pub snapshot_sha256: String,
    /// When the request was created.
    pub created_at: Timestamp,
    /// First instant at which the request is expired.
    pub expires_at: Timestamp,
    /// When a human approved or rejected it.
    pub decided_at: Option<Timestamp>,
    /// Who approved or rejected it.
    pub decided_by: Option<String>,
    /// When it was consumed.
    pub consumed_at: Option<Timestamp>,
}

/// What an agent may see of a request: no snapshot, no decider. Build it with
/// `Approval::handle`; answers to the agent should be made from this, not from `Approval`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApprovalHandle {
    /// The request id.
    pub request_id: String,
    /// Effective status.
    pub status: ApprovalStatus,
    /// Lifecycle correlation id.
    pub trace_id: String,
    /// First instant at which the request is expired.
    pub expires_at: Timestamp,
}

impl Approval {
    /// The agent-safe view of this request.
    pub fn handle(&self) -> ApprovalHandle {
        ApprovalHandle {
            request_id: self.id.clone(),
            status: self.status,
            trace_id: self.trace_id.clone(),
            expires_at: self.expires_at,
        }
    }
}

/// Whether a prune only reports or also deletes. The default is the harmless one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PruneMode {
    /// Report what would be removed; change nothing.
    #[default]
    DryRun,
    /// Remove it.
    Apply,
}

/// One record selected by a prune.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PrunedApproval {
    /// The request id.
    pub id: String,
    /// Its effective status.
    pub status: ApprovalStatus,
    /// The moment it became terminal (decision, consumption or expiry).
    pub terminal_at: Timestamp,
}

/// Columns read for an `Approval`, in `approval_from_row` order.
const COLUMNS: &str = "id, trace_id, status, snapshot, snapshot_sha256, created_at, expires_at, \
                       decided_at, decided_by, consumed_at";

impl Store {
    /// Creates a PENDING request holding `snapshot`, expiring at `expires_at`.
    ///
    /// Fails closed with `StoreFull`, `StoreBytesFull` or `SnapshotTooLarge` when a ceiling
    /// would be exceeded; the count and the insert share one immediate transaction so two
    /// processes cannot both squeeze past the last slot.
    pub fn create_request(
        &mut self,
        trace_id: &str,
        snapshot: &Value,
        now: Timestamp,
        expires_at: Timestamp,
    ) -> Result<Approval> {
        let text = serde_json::to_string(snapshot)?;
        let size = text.len() as u64;
        let limits = self.limits;
        if size > limits.max_snapshot_bytes {
            return Err(Error::SnapshotTooLarge {
                size,
                limit: limits.max_snapshot_bytes,
            });
        }
        let id = new_request_id()?;
        let trace_id = cap(trace_id);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let (count, bytes): (i64, i64) = tx.query_row(
            "SELECT COUNT(*), COALESCE(SUM(snapshot_bytes), 0) FROM approvals",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        if count as u64 >= limits.max_approval_records {
            return Err(Error::StoreFull {
                limit: limits.max_approval_records,
            });
        }
        if (bytes as u64).saturating_add(size) > limits.max_total_snapshot_bytes {
            return Err(Error::StoreBytesFull {
                limit: limits.max_total_snapshot_bytes,
            });
        }
        tx.execute(
            "INSERT INTO approvals (id, trace_id, status, snapshot, snapshot_sha256, snapshot_bytes,
                                    created_at, expires_at)
             VALUES (?1, ?2, 'PENDING', ?3, ?4, ?5, ?6, ?7)",
            params![
                id,
                trace_id,
                text,
                sha256_hex(text.as_bytes()),
                size as i64,
                now.as_millis(),
                expires_at.as_millis()
            ],
        )?;
        let approval = fetch(&tx, &id, now)?.ok_or(Error::RequestNotFound)?;
        tx.commit()?;
        Ok(approval)
    }

    /// Reads one request with its effective status. Read-only: it never persists expiry.
    /// An unknown id and an id of another workspace both give `RequestNotFound`.
    pub fn get_request(&self, id: &str, now: Timestamp) -> Result<Approval> {
        let sql = format!("SELECT {COLUMNS} FROM approvals WHERE id = ?1");
        self.conn
            .query_row(&sql, [id], |r| approval_from_row(r, now))
            .optional()?
            .ok_or(Error::RequestNotFound)?
    }

    /// Lists requests, newest first, optionally only those whose effective status is `status`.
    pub fn list_requests(
        &self,
        status: Option<ApprovalStatus>,
        now: Timestamp,
    ) -> Result<Vec<Approval>> {
        let sql = format!("SELECT {COLUMNS} FROM approvals ORDER BY created_at DESC, id");
        let mut stmt = self.conn.prepare(&sql)?;
        let rows = stmt.query_map([], |r| approval_from_row(r, now))?;
        let mut out = Vec::new();
        for row in rows {
            let approval = row??;
            if status.is_none_or(|s| s == approval.status) {
                out.push(approval);
            }
        }
        Ok(out)
    }

    /// PENDING → APPROVED, recording who decided. Fails on an expired or decided request.
    pub fn approve(&mut self, id: &str, decided_by: &str, now: Timestamp) -> Result<Approval> {
        self.decide(id, ApprovalStatus::Approved, decided_by, now)
    }

    /// PENDING → REJECTED, recording who decided. Fails on an expired or decided request.
    pub fn reject(&mut self, id: &str, decided_by: &str, now: Timestamp) -> Result<Approval> {
        self.decide(id, ApprovalStatus::Rejected, decided_by, now)
    }

    fn decide(
        &mut self,
        id: &str,
        to: ApprovalStatus,
        decided_by: &str,
        now: Timestamp,
    ) -> Result<Approval> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let changed = tx.execute(
            "UPDATE approvals SET status = ?2, decided_at = ?3, decided_by = ?4
             WHERE id = ?1 AND status = 'PENDING' AND expires_at > ?3",
            params![id, to.as_str(), now.as_millis(), cap(decided_by)],
        )?;
        finish_transition(tx, id, changed, now)
    }

    /// APPROVED → CONSUMED, exactly once. Returns the request (with its protected snapshot)
    /// to the single caller that won; every other caller gets an error and must not execute.
    pub fn consume(&mut self, id: &str, now: Timestamp) -> Result<Approval> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let changed = tx.execute(
            "UPDATE approvals SET status = 'CONSUMED', consumed_at = ?2
             WHERE id = ?1 AND status = 'APPROVED' AND expires_at > ?2",
            params![id, now.as_millis()],
        )?;
        finish_transition(tx, id, changed, now)
    }

    /// Persists EXPIRED on every PENDING or APPROVED request at or past its expiry; returns
    /// how many changed. Optional: all reads already treat such requests as expired.
    pub fn expire_due(&mut self, now: Timestamp) -> Result<u64> {
        let n = self.conn.execute(
            "UPDATE approvals SET status = 'EXPIRED'
             WHERE status IN ('PENDING', 'APPROVED') AND expires_at <= ?1",
            [now.as_millis()],
        )?;
        Ok(n as u64)
    }

    /// Selects terminal requests (REJECTED, CONSUMED, EXPIRED, or effectively expired) whose
    /// terminal time is at or before `now - older_than_days`, and deletes them in `Apply`
    /// mode. Still-valid PENDING and APPROVED requests are never selected. Apply recomputes
    /// the selection inside the same immediate transaction that deletes.
    pub fn prune_approvals(
        &mut self,
        older_than_days: u32,
        now: Timestamp,
        mode: PruneMode,
    ) -> Result<Vec<PrunedApproval>> {
        let cutoff = now.minus_days(older_than_days);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let selected = {
            let sql = format!("SELECT {COLUMNS} FROM approvals ORDER BY created_at, id");
            let mut stmt = tx.prepare(&sql)?;
            let rows = stmt.query_map([], |r| approval_from_row(r, now))?;
            let mut selected = Vec::new();
            for row in rows {
                let a = row??;
                if let Some(at) = terminal_at(&a).filter(|at| *at <= cutoff) {
                    selected.push(PrunedApproval {
                        id: a.id,
                        status: a.status,
                        terminal_at: at,
                    });
                }
            }
            selected
        };
        if mode == PruneMode::Apply {
            for p in &selected {
                tx.execute("DELETE FROM approvals WHERE id = ?1", [&p.id])?;
            }
            tx.commit()?;
        }
        Ok(selected)
    }
}

/// When a request stopped being live, if it has.
fn terminal_at(a: &Approval) -> Option<Timestamp> {
    match a.status {
        ApprovalStatus::Rejected => a.decided_at,
        ApprovalStatus::Consumed => a.consumed_at,
        ApprovalStatus::Expired => Some(a.expires_at),
        ApprovalStatus::Pending | ApprovalStatus::Approved => None,
    }
}

/// Commits a transition that changed one row, or explains why none changed.
fn finish_transition(
    tx: Transaction<'_>,
    id: &str,
    changed: usize,
    now: Timestamp,
) -> Result<Approval> {
    let current = fetch(&tx, id, now)?;
    match (changed, current) {
        (1, Some(approval)) => {
            tx.commit()?;
            Ok(approval)
        }
        (_, None) => Err(Error::RequestNotFound),
        (_, Some(a)) if a.status == ApprovalStatus::Expired => Err(Error::Expired),
        (_, Some(a)) => Err(Error::InvalidTransition(a.status)),
    }
}

fn fetch(tx: &Transaction<'_>, id: &str, now: Timestamp) -> Result<Option<Approval>> {
    let sql = format!("SELECT {COLUMNS} FROM approvals WHERE id = ?1");
    tx.query_row(&sql, [id], |r| approval_from_row(r, now))
        .optional()?
        .transpose()
}

/// Maps a row; the inner `Result` carries domain corruption (bad status, bad JSON).
fn approval_from_row(r: &Row<'_>, now: Timestamp) -> rusqlite::Result<Result<Approval>> {
    let status: String = r.get(2)?;
    let snapshot: String = r.get(3)?;
    let expires_at = Timestamp::from_millis(r.get(6)?);
    let stored = match ApprovalStatus::parse(&status) {
        Ok(s) => s,
        Err(e) => return Ok(Err(e)),
    };
    let status = match stored {
        ApprovalStatus::Pending | ApprovalStatus::Approved if now >= expires_at => {
            ApprovalStatus::Expired
        }
        s => s,
    };
    let stored_sha256: String = r.get(4)?;
    // The hash was taken at creation; a mismatch means the row was altered behind the
    // store's back, and an altered snapshot must never be executed.
    if sha256_hex(snapshot.as_bytes()) != stored_sha256 {
        return Ok(Err(Error::Corrupt(
            "approval snapshot hash mismatch".into(),
        )));
    }
    let snapshot = match serde_json::from_str(&snapshot) {
        Ok(v) => v,
        Err(e) => return Ok(Err(e.into())),
    };
    Ok(Ok(Approval {
        id: r.get(0)?,
        trace_id: r.get(1)?,
        status,
        snapshot,
        snapshot_sha256: stored_sha256,
        created_at: Timestamp::from_millis(r.get(5)?),
        expires_at,
        decided_at: r.get::<_, Option<i64>>(7)?.map(Timestamp::from_millis),
        decided_by: r.get(8)?,
        consumed_at: r.get::<_, Option<i64>>(9)?.map(Timestamp::from_millis),
    }))
}

/// A fresh id: `apr_` + 128 bits from the OS RNG, hex (URL-safe, case-insensitive-safe).
fn new_request_id() -> Result<String> {
    let mut bytes = [0u8; ID_RANDOM_BYTES];
    rand::rngs::SysRng
        .try_fill_bytes(&mut bytes)
        .map_err(|_| Error::Rng)?;
    Ok(format!("{ID_PREFIX}{}", hex::encode(bytes)))
}

/// Truncates a label to `MAX_LABEL_CHARS` characters.
fn cap(s: &str) -> String {
    s.chars().take(MAX_LABEL_CHARS).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_long_random_and_url_safe() {
        let a = new_request_id().unwrap();
        let b = new_request_id().unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), ID_PREFIX.len() + 2 * ID_RANDOM_BYTES);
        assert!(a
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'));
    }

    #[test]
    fn status_round_trips() {
        for s in [
            ApprovalStatus::Pending,
            ApprovalStatus::Approved,
            ApprovalStatus::Rejected,
            ApprovalStatus::Expired,
            ApprovalStatus::Consumed,
        ] {
            assert_eq!(ApprovalStatus::parse(s.as_str()).unwrap(), s);
        }
        assert!(ApprovalStatus::parse("approved").is_err());
    }
}
