//! The approval lifecycle: PENDING → APPROVED | REJECTED | CANCELLED | EXPIRED; APPROVED → CONSUMED.
//!
//! Every transition reads the row, checks its seal, and rewrites it (resealed) inside one
//! immediate transaction, which holds the database's write lock from the read to the commit;
//! that is what makes consumption single-use across threads and processes. A row whose seal
//! does not verify is reported (`Approval::authentic` false) and refused by every transition
//! with `Error::Tampered`. Expiry is judged against the `now` the caller passes: a PENDING or
//! APPROVED request at or past `expires_at` is effectively EXPIRED; reads never persist that
//! (`expire_due` does). Room-making and pruning live in `approval_space`, the row format and
//! its seal in `approval_rows`. Snapshots are opaque JSON here: never interpreted or shown.

use std::fmt;

use jsonrpc::sha256_hex;
use rand::TryRng;
use rusqlite::TransactionBehavior;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::approval_rows::{load, StoredRow, ROW_COLUMNS};
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
    /// The call that asked was cancelled, or its session ended, while it waited; never usable.
    Cancelled,
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
            Self::Cancelled => "CANCELLED",
        }
    }

    pub(crate) fn parse(s: &str) -> Result<Self> {
        Ok(match s {
            "PENDING" => Self::Pending,
            "APPROVED" => Self::Approved,
            "REJECTED" => Self::Rejected,
            "EXPIRED" => Self::Expired,
            "CONSUMED" => Self::Consumed,
            "CANCELLED" => Self::Cancelled,
            other => return Err(Error::Corrupt(format!("approval status {other:?}"))),
        })
    }

    /// True once no further transition is possible.
    pub const fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Rejected | Self::Expired | Self::Consumed | Self::Cancelled
        )
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
    /// The gateway session whose call asked; `None` for requests made outside a session.
    pub session_id: Option<String>,
    /// Until when the asking call is held waiting for the decision; after that the agent holds a handle and
    /// must resume. Only a hint for ordering what a human sees: a call may also end sooner.
    pub held_until: Timestamp,
    /// False when the row's seal does not verify: it was changed by something other than toolgate. Such a
    /// request is shown as tampered and is never approved, consumed or executed.
    pub authentic: bool,
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

/// Who asks for a new request, and how long the asking call waits for the answer.
#[derive(Debug, Clone, Copy)]
pub struct NewRequest<'a> {
    /// Lifecycle correlation id.
    pub trace_id: &'a str,
    /// Exactly what runs if a human approves.
    pub snapshot: &'a Value,
    /// The session whose call asks; its waiting requests count against the per-session cap.
    pub session_id: Option<&'a str>,
    /// The identity whose call asks (the front end's principal, or the gateway's one local identity); its
    /// waiting requests, over all its sessions, count against the per-identity cap. `None`: counted by no one
    /// (a request made outside any caller).
    pub owner: Option<&'a str>,
    /// Creation time.
    pub now: Timestamp,
    /// Until when the call is held waiting.
    pub held_until: Timestamp,
    /// First instant at which the request is expired.
    pub expires_at: Timestamp,
}

impl Store {
    /// Creates a PENDING request outside any session, not held (tests and tools that stand in for a gateway).
    pub fn create_request(
        &mut self,
        trace_id: &str,
        snapshot: &Value,
        now: Timestamp,
        expires_at: Timestamp,
    ) -> Result<Approval> {
        self.create_held_request(&NewRequest {
            trace_id,
            snapshot,
            session_id: None,
            owner: None,
            now,
            held_until: now,
            expires_at,
        })
    }

    /// Creates a sealed PENDING request.
    ///
    /// First deletes finished requests past their retention. Fails closed with `SessionPendingFull` when the
    /// session has its cap of waiting requests, with `IdentityPendingFull` when its identity has (over all its
    /// sessions, which cost nothing to open), with `SnapshotTooLarge` for an oversized snapshot, and with
    /// `StoreFull` / `StoreBytesFull` when the store cannot hold it even after finished requests were evicted;
    /// the checks and the insert share one immediate transaction so two processes cannot both squeeze past the
    /// last slot.
    pub fn create_held_request(&mut self, new: &NewRequest<'_>) -> Result<Approval> {
        let text = serde_json::to_string(new.snapshot)?;
        let size = text.len() as u64;
        let limits = self.limits;
        if size > limits.max_snapshot_bytes {
            return Err(Error::SnapshotTooLarge {
                size,
                limit: limits.max_snapshot_bytes,
            });
        }
        let mut row = StoredRow {
            id: new_request_id()?,
            trace_id: cap(new.trace_id),
            status: ApprovalStatus::Pending,
            snapshot_sha256: sha256_hex(text.as_bytes()),
            snapshot_bytes: size as i64,
            snapshot: text,
            created_at: new.now.as_millis(),
            expires_at: new.expires_at.as_millis(),
            decided_at: None,
            decided_by: None,
            consumed_at: None,
            session_id: new.session_id.map(cap).unwrap_or_default(),
            held_until: new.held_until.as_millis(),
            seal: String::new(),
        };
        row.reseal(&self.key, &self.namespace_id);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        crate::approval_space::drop_expired_finished(&tx, &limits, new.now)?;
        if !row.session_id.is_empty() {
            let waiting: i64 = tx.query_row(
                "SELECT COUNT(*) FROM approvals
                 WHERE session_id = ?1 AND status = 'PENDING' AND expires_at > ?2",
                rusqlite::params![row.session_id, new.now.as_millis()],
                |r| r.get(0),
            )?;
            if waiting as u64 >= limits.max_pending_per_session {
                return Err(Error::SessionPendingFull {
                    limit: limits.max_pending_per_session,
                });
            }
        }
        let owner = new.owner.map(cap).unwrap_or_default();
        if !owner.is_empty() {
            let waiting: i64 = tx.query_row(
                "SELECT COUNT(*) FROM approvals
                 WHERE owner = ?1 AND status = 'PENDING' AND expires_at > ?2",
                rusqlite::params![owner, new.now.as_millis()],
                |r| r.get(0),
            )?;
            if waiting as u64 >= limits.max_pending_per_identity {
                return Err(Error::IdentityPendingFull {
                    limit: limits.max_pending_per_identity,
                });
            }
        }
        crate::approval_space::make_room(&tx, &limits, size, new.now)?;
        row.insert(&tx)?;
        // Outside the seal: it only counts a caller's waiting requests, and whoever could edit it could delete
        // the rows as well.
        tx.execute(
            "UPDATE approvals SET owner = ?1 WHERE id = ?2",
            rusqlite::params![owner, row.id],
        )?;
        let approval = row.into_approval(&self.key, &self.namespace_id, new.now);
        tx.commit()?;
        Ok(approval)
    }

    /// Reads one request with its effective status. Read-only: it never persists expiry.
    /// An unknown id and an id of another workspace both give `RequestNotFound`.
    pub fn get_request(&self, id: &str, now: Timestamp) -> Result<Approval> {
        let row = load(&self.conn, id)?.ok_or(Error::RequestNotFound)?;
        Ok(row.into_approval(&self.key, &self.namespace_id, now))
    }

    /// Lists requests, newest first, optionally only those whose effective status is `status`.
    pub fn list_requests(
        &self,
        status: Option<ApprovalStatus>,
        now: Timestamp,
    ) -> Result<Vec<Approval>> {
        let sql = format!("SELECT {ROW_COLUMNS} FROM approvals ORDER BY created_at DESC, id");
        let mut stmt = self.conn.prepare(&sql)?;
        let rows = stmt.query_map([], StoredRow::read)?;
        let mut out = Vec::new();
        for row in rows {
            let approval = row??.into_approval(&self.key, &self.namespace_id, now);
            if status.is_none_or(|s| s == approval.status) {
                out.push(approval);
            }
        }
        Ok(out)
    }

    /// The id of an authentic, unexpired APPROVED request of `session_id` whose snapshot hashes to
    /// `snapshot_sha256`, oldest first: how a repeated prompt or resource read finds the approval it waited for.
    pub fn find_approved(
        &self,
        session_id: &str,
        snapshot_sha256: &str,
        now: Timestamp,
    ) -> Result<Option<String>> {
        let sql = format!(
            "SELECT {ROW_COLUMNS} FROM approvals
             WHERE session_id = ?1 AND snapshot_sha256 = ?2 AND status = 'APPROVED' AND expires_at > ?3
             ORDER BY created_at, id"
        );
        let mut stmt = self.conn.prepare(&sql)?;
        let rows = stmt.query_map(
            rusqlite::params![session_id, snapshot_sha256, now.as_millis()],
            StoredRow::read,
        )?;
        for row in rows {
            let row = row??;
            if row.authentic(&self.key, &self.namespace_id) {
                return Ok(Some(row.id));
            }
        }
        Ok(None)
    }

    /// PENDING → APPROVED, recording who decided. Fails on an expired, decided or tampered request.
    pub fn approve(&mut self, id: &str, decided_by: &str, now: Timestamp) -> Result<Approval> {
        self.decide(id, ApprovalStatus::Approved, decided_by, now)
    }

    /// PENDING → REJECTED, recording who decided. Fails on an expired, decided or tampered request.
    pub fn reject(&mut self, id: &str, decided_by: &str, now: Timestamp) -> Result<Approval> {
        self.decide(id, ApprovalStatus::Rejected, decided_by, now)
    }

    /// PENDING → CANCELLED: the call that asked is gone (cancelled by its client, or its session ended), so no
    /// one waits for the answer. Terminal: a cancelled request can never be approved or resumed.
    pub fn cancel(&mut self, id: &str, why: &str, now: Timestamp) -> Result<Approval> {
        self.decide(id, ApprovalStatus::Cancelled, why, now)
    }

    fn decide(
        &mut self,
        id: &str,
        to: ApprovalStatus,
        decided_by: &str,
        now: Timestamp,
    ) -> Result<Approval> {
        let decided_by = cap(decided_by);
        self.transition(id, ApprovalStatus::Pending, now, |row| {
            row.status = to;
            row.decided_at = Some(now.as_millis());
            row.decided_by = Some(decided_by);
        })
    }

    /// APPROVED → CONSUMED, exactly once. Returns the request (with its protected snapshot)
    /// to the single caller that won; every other caller gets an error and must not execute.
    pub fn consume(&mut self, id: &str, now: Timestamp) -> Result<Approval> {
        self.transition(id, ApprovalStatus::Approved, now, |row| {
            row.status = ApprovalStatus::Consumed;
            row.consumed_at = Some(now.as_millis());
        })
    }

    /// Moves an authentic request from `from` (as effective at `now`) to what `change` makes of it, resealed.
    fn transition(
        &mut self,
        id: &str,
        from: ApprovalStatus,
        now: Timestamp,
        change: impl FnOnce(&mut StoredRow),
    ) -> Result<Approval> {
        let (key, namespace_id) = (&self.key, self.namespace_id.as_str());
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut row = load(&tx, id)?.ok_or(Error::RequestNotFound)?;
        if !row.authentic(key, namespace_id) {
            return Err(Error::Tampered);
        }
        match row.effective(now) {
            ApprovalStatus::Expired => return Err(Error::Expired),
            s if s != from => return Err(Error::InvalidTransition(s)),
            _ => {}
        }
        let old_seal = row.seal.clone();
        change(&mut row);
        row.reseal(key, namespace_id);
        if row.update(&tx, &old_seal)? != 1 {
            return Err(Error::Corrupt(
                "approval row changed during its transition".into(),
            ));
        }
        let approval = row.into_approval(key, namespace_id, now);
        tx.commit()?;
        Ok(approval)
    }
}

/// A fresh id: `apr_` + 128 bits from the OS RNG, hex (URL-safe, case-insensitive-safe).
pub(crate) fn new_request_id() -> Result<String> {
    let mut bytes = [0u8; ID_RANDOM_BYTES];
    rand::rngs::SysRng
        .try_fill_bytes(&mut bytes)
        .map_err(|_| Error::Rng)?;
    Ok(format!("{ID_PREFIX}{}", hex::encode(bytes)))
}

/// Truncates a label to `MAX_LABEL_CHARS` characters.
pub(crate) fn cap(s: &str) -> String {
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
