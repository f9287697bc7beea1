//! Keeping the approval store from filling up: retention of finished requests, eviction of finished requests
//! when a new one would not fit, persisted expiry, and the administrator's prune.
//!
//! Finished means no longer usable: rejected, consumed, cancelled, or expired (stored or effective). A live
//! request (PENDING or APPROVED before its expiry) is never removed here, so a human's pending decision or an
//! approved call awaiting its resume cannot be pushed out by a flood of new asks; the per-session and
//! per-identity caps in `approvals` bound that flood, so one identity cannot fill the store for every other. The audit log, not this table, is the lasting record of every request.

use rusqlite::{params, Transaction, TransactionBehavior};

use crate::approval_rows::{StoredRow, ROW_COLUMNS};
use crate::approvals::{Approval, ApprovalStatus, PruneMode, PrunedApproval};
use crate::error::{Error, Result};
use crate::handle::{Limits, Store};
use crate::time::Timestamp;

/// SQL for "when a row stopped being usable", or the far future for a live row. Parameter `?1` is `now`.
const FINISHED_AT: &str = "CASE
        WHEN status IN ('PENDING', 'APPROVED') AND expires_at > ?1 THEN 9223372036854775807
        WHEN status IN ('PENDING', 'APPROVED', 'EXPIRED') THEN expires_at
        WHEN status = 'CONSUMED' THEN COALESCE(consumed_at, created_at)
        ELSE COALESCE(decided_at, created_at) END";

/// Deletes finished requests that finished at least `keep_finished_ms` before `now`.
pub(crate) fn drop_expired_finished(
    tx: &Transaction<'_>,
    limits: &Limits,
    now: Timestamp,
) -> Result<()> {
    let cutoff = now.plus_millis(-limits.keep_finished_ms.max(0));
    tx.execute(
        &format!("DELETE FROM approvals WHERE ({FINISHED_AT}) <= ?2"),
        params![now.as_millis(), cutoff.as_millis()],
    )?;
    Ok(())
}

/// Makes room for one more request of `size` bytes by deleting finished requests, the longest finished
/// first; refuses when even that is not enough.
pub(crate) fn make_room(
    tx: &Transaction<'_>,
    limits: &Limits,
    size: u64,
    now: Timestamp,
) -> Result<()> {
    let (count, bytes): (i64, i64) = tx.query_row(
        "SELECT COUNT(*), COALESCE(SUM(snapshot_bytes), 0) FROM approvals",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let (mut count, mut bytes) = (count as u64, bytes as u64);
    let fits = |count: u64, bytes: u64| {
        count < limits.max_approval_records
            && bytes.saturating_add(size) <= limits.max_total_snapshot_bytes
    };
    if fits(count, bytes) {
        return Ok(());
    }
    let finished: Vec<(String, i64)> = {
        let mut stmt = tx.prepare(&format!(
            "SELECT id, snapshot_bytes, {FINISHED_AT} AS finished_at FROM approvals
             WHERE finished_at <= ?1 ORDER BY finished_at, id"
        ))?;
        let rows = stmt.query_map([now.as_millis()], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    for (id, row_bytes) in finished {
        if fits(count, bytes) {
            break;
        }
        tx.execute("DELETE FROM approvals WHERE id = ?1", [&id])?;
        count = count.saturating_sub(1);
        bytes = bytes.saturating_sub(row_bytes.max(0) as u64);
    }
    if count >= limits.max_approval_records {
        return Err(Error::StoreFull {
            limit: limits.max_approval_records,
        });
    }
    if bytes.saturating_add(size) > limits.max_total_snapshot_bytes {
        return Err(Error::StoreBytesFull {
            limit: limits.max_total_snapshot_bytes,
        });
    }
    Ok(())
}

impl Store {
    /// Persists EXPIRED on every authentic PENDING or APPROVED request at or past its expiry; returns how many
    /// changed. Optional: all reads already treat such requests as expired. Tampered rows are left as they are.
    pub fn expire_due(&mut self, now: Timestamp) -> Result<u64> {
        let (key, namespace_id) = (&self.key, self.namespace_id.as_str());
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let due: Vec<StoredRow> = {
            let mut stmt = tx.prepare(&format!(
                "SELECT {ROW_COLUMNS} FROM approvals
                 WHERE status IN ('PENDING', 'APPROVED') AND expires_at <= ?1"
            ))?;
            let rows = stmt.query_map([now.as_millis()], StoredRow::read)?;
            let mut due = Vec::new();
            for row in rows {
                due.push(row??);
            }
            due
        };
        let mut n = 0;
        for mut row in due.into_iter().filter(|r| r.authentic(key, namespace_id)) {
            let old_seal = row.seal.clone();
            row.status = ApprovalStatus::Expired;
            row.reseal(key, namespace_id);
            n += row.update(&tx, &old_seal)? as u64;
        }
        tx.commit()?;
        Ok(n)
    }

    /// Selects terminal requests (REJECTED, CONSUMED, CANCELLED, EXPIRED, or effectively expired) whose
    /// terminal time is at or before `now - older_than_days`, and deletes them in `Apply` mode. Still-valid
    /// PENDING and APPROVED requests are never selected. Apply recomputes the selection inside the same
    /// immediate transaction that deletes.
    pub fn prune_approvals(
        &mut self,
        older_than_days: u32,
        now: Timestamp,
        mode: PruneMode,
    ) -> Result<Vec<PrunedApproval>> {
        let cutoff = now.minus_days(older_than_days);
        let (key, namespace_id) = (&self.key, self.namespace_id.as_str());
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let selected = {
            let sql = format!("SELECT {ROW_COLUMNS} FROM approvals ORDER BY created_at, id");
            let mut stmt = tx.prepare(&sql)?;
            let rows = stmt.query_map([], StoredRow::read)?;
            let mut selected = Vec::new();
            for row in rows {
                let a = row??.into_approval(key, namespace_id, now);
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
pub(crate) fn terminal_at(a: &Approval) -> Option<Timestamp> {
    match a.status {
        ApprovalStatus::Rejected | ApprovalStatus::Cancelled => a.decided_at,
        ApprovalStatus::Consumed => a.consumed_at,
        ApprovalStatus::Expired => Some(a.expires_at),
        ApprovalStatus::Pending | ApprovalStatus::Approved => None,
    }
}
