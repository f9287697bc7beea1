//! The approval lifecycle on PostgreSQL, with the rules of the SQLite store (`approvals`, `approval_space`)
//! and the same sealed rows (`approval_rows`).
//!
//! A transition reads the row, checks its seal and status, and writes the resealed row with one conditional
//! `UPDATE … WHERE seal = <the seal read> AND status = <the status read> RETURNING id`: of any number of
//! callers on any replicas, the row lock lets exactly one update match, and every other finds the row already
//! moved on. Creating a request takes the namespace's approval lock (a transaction-level advisory lock) before
//! it counts, so the per-session and per-identity caps and the store's ceilings are checked in the same
//! transaction as the insert and two replicas never both take the last slot. Snapshots stay opaque.

use jsonrpc::sha256_hex;
use tokio_postgres::Row;

use super::pool::{col, Tx};
use super::Scope;
use crate::approval_rows::StoredRow;
use crate::approval_space::terminal_at;
use crate::approvals::{cap, new_request_id, Approval, ApprovalStatus, NewRequest};
use crate::approvals::{PruneMode, PrunedApproval};
use crate::error::{Error, Result};
use crate::handle::Limits;
use crate::time::Timestamp;

/// Columns read for a `StoredRow`, in `stored_row` order.
const ROW_COLUMNS: &str = "id, trace_id, status, snapshot, snapshot_sha256, snapshot_bytes, \
     created_at, expires_at, decided_at, decided_by, consumed_at, session_id, held_until, seal";

/// When a row stopped being usable, or the far future for a live row; `$2` is `now`.
const FINISHED_AT: &str = "CASE
        WHEN status IN ('PENDING', 'APPROVED') AND expires_at > $2 THEN 9223372036854775807
        WHEN status IN ('PENDING', 'APPROVED', 'EXPIRED') THEN expires_at
        WHEN status = 'CONSUMED' THEN COALESCE(consumed_at, created_at)
        ELSE COALESCE(decided_at, created_at) END";

fn stored_row(r: &Row) -> Result<StoredRow> {
    Ok(StoredRow {
        id: col(r, 0)?,
        trace_id: col(r, 1)?,
        status: ApprovalStatus::parse(col(r, 2)?)?,
        snapshot: col(r, 3)?,
        snapshot_sha256: col(r, 4)?,
        snapshot_bytes: col(r, 5)?,
        created_at: col(r, 6)?,
        expires_at: col(r, 7)?,
        decided_at: col(r, 8)?,
        decided_by: col(r, 9)?,
        consumed_at: col(r, 10)?,
        session_id: col(r, 11)?,
        held_until: col(r, 12)?,
        seal: col(r, 13)?,
    })
}

fn load(tx: &Tx<'_>, ns: &str, id: &str) -> Result<Option<StoredRow>> {
    let sql = format!("SELECT {ROW_COLUMNS} FROM approvals WHERE ns = $1 AND id = $2");
    tx.opt(&sql, &[&ns, &id])?
        .as_ref()
        .map(stored_row)
        .transpose()
}

/// Serialises the writers of one namespace's approvals that count before they write.
fn lock_approvals(tx: &Tx<'_>, ns: &str) -> Result<()> {
    let name = format!("{ns} approvals");
    tx.one(
        "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
        &[&name],
    )?;
    Ok(())
}

/// See `ApprovalStore::create_held_request`.
pub(crate) fn create(tx: &mut Tx<'_>, scope: &Scope, new: &NewRequest<'_>) -> Result<Approval> {
    let text = serde_json::to_string(new.snapshot)?;
    let size = text.len() as u64;
    let limits = scope.limits;
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
    row.reseal(&scope.key, &scope.ns);
    let ns = scope.ns.as_str();
    lock_approvals(tx, ns)?;
    let now = new.now.as_millis();
    let cutoff = new
        .now
        .plus_millis(-limits.keep_finished_ms.max(0))
        .as_millis();
    tx.execute(
        &format!("DELETE FROM approvals WHERE ns = $1 AND ({FINISHED_AT}) <= $3"),
        &[&ns, &now, &cutoff],
    )?;
    let waiting = |column: &str, who: &str| -> Result<u64> {
        let sql = format!(
            "SELECT COUNT(*) FROM approvals
             WHERE ns = $1 AND {column} = $2 AND status = 'PENDING' AND expires_at > $3"
        );
        Ok(col::<i64>(&tx.one(&sql, &[&ns, &who, &now])?, 0)?.max(0) as u64)
    };
    if !row.session_id.is_empty()
        && waiting("session_id", &row.session_id)? >= limits.max_pending_per_session
    {
        return Err(Error::SessionPendingFull {
            limit: limits.max_pending_per_session,
        });
    }
    let owner = new.owner.map(cap).unwrap_or_default();
    if !owner.is_empty() && waiting("owner", &owner)? >= limits.max_pending_per_identity {
        return Err(Error::IdentityPendingFull {
            limit: limits.max_pending_per_identity,
        });
    }
    make_room(tx, ns, &limits, size, now)?;
    let status = row.status.as_str();
    tx.execute(
        &format!(
            "INSERT INTO approvals (ns, {ROW_COLUMNS}, owner)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)"
        ),
        &[
            &ns,
            &row.id,
            &row.trace_id,
            &status,
            &row.snapshot,
            &row.snapshot_sha256,
            &row.snapshot_bytes,
            &row.created_at,
            &row.expires_at,
            &row.decided_at,
            &row.decided_by,
            &row.consumed_at,
            &row.session_id,
            &row.held_until,
            &row.seal,
            &owner,
        ],
    )?;
    Ok(row.into_approval(&scope.key, &scope.ns, new.now))
}

/// Deletes finished requests, longest finished first, until one more of `size` bytes fits; refuses otherwise.
fn make_room(tx: &mut Tx<'_>, ns: &str, limits: &Limits, size: u64, now: i64) -> Result<()> {
    let held = tx.one(
        "SELECT COUNT(*), COALESCE(SUM(snapshot_bytes), 0)::BIGINT FROM approvals WHERE ns = $1",
        &[&ns],
    )?;
    let (mut count, mut bytes) = (
        col::<i64>(&held, 0)?.max(0) as u64,
        col::<i64>(&held, 1)?.max(0) as u64,
    );
    let fits = |count: u64, bytes: u64| {
        count < limits.max_approval_records
            && bytes.saturating_add(size) <= limits.max_total_snapshot_bytes
    };
    if !fits(count, bytes) {
        let finished = tx.query(
            &format!(
                "SELECT id, snapshot_bytes FROM
                   (SELECT id, snapshot_bytes, {FINISHED_AT} AS finished_at FROM approvals WHERE ns = $1) f
                 WHERE finished_at <= $2 ORDER BY finished_at, id"
            ),
            &[&ns, &now],
        )?;
        for r in &finished {
            if fits(count, bytes) {
                break;
            }
            let id: String = col(r, 0)?;
            tx.execute(
                "DELETE FROM approvals WHERE ns = $1 AND id = $2",
                &[&ns, &id],
            )?;
            count = count.saturating_sub(1);
            bytes = bytes.saturating_sub(col::<i64>(r, 1)?.max(0) as u64);
        }
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

/// See `ApprovalStore::get_request`.
pub(crate) fn get(tx: &Tx<'_>, scope: &Scope, id: &str, now: Timestamp) -> Result<Approval> {
    let row = load(tx, &scope.ns, id)?.ok_or(Error::RequestNotFound)?;
    Ok(row.into_approval(&scope.key, &scope.ns, now))
}

/// See `ApprovalStore::list_requests`.
pub(crate) fn list(
    tx: &Tx<'_>,
    scope: &Scope,
    status: Option<ApprovalStatus>,
    now: Timestamp,
) -> Result<Vec<Approval>> {
    let sql =
        format!("SELECT {ROW_COLUMNS} FROM approvals WHERE ns = $1 ORDER BY created_at DESC, id");
    let mut out = Vec::new();
    for r in tx.query(&sql, &[&scope.ns])? {
        let approval = stored_row(&r)?.into_approval(&scope.key, &scope.ns, now);
        if status.is_none_or(|s| s == approval.status) {
            out.push(approval);
        }
    }
    Ok(out)
}

/// See `ApprovalStore::find_approved`.
pub(crate) fn find_approved(
    tx: &Tx<'_>,
    scope: &Scope,
    session_id: &str,
    snapshot_sha256: &str,
    now: Timestamp,
) -> Result<Option<String>> {
    let sql = format!(
        "SELECT {ROW_COLUMNS} FROM approvals
         WHERE ns = $1 AND session_id = $2 AND snapshot_sha256 = $3 AND status = 'APPROVED'
           AND expires_at > $4
         ORDER BY created_at, id"
    );
    let rows = tx.query(
        &sql,
        &[&scope.ns, &session_id, &snapshot_sha256, &now.as_millis()],
    )?;
    for r in &rows {
        let row = stored_row(r)?;
        if row.authentic(&scope.key, &scope.ns) {
            return Ok(Some(row.id));
        }
    }
    Ok(None)
}

/// Moves an authentic request from `from` (as effective at `now`) to what `change` makes of it, resealed, in
/// one conditional update; a caller that lost a race learns what the row became.
pub(crate) fn transition(
    tx: &mut Tx<'_>,
    scope: &Scope,
    id: &str,
    from: ApprovalStatus,
    now: Timestamp,
    change: impl FnOnce(&mut StoredRow),
) -> Result<Approval> {
    let (key, ns) = (&scope.key, scope.ns.as_str());
    let mut row = load(tx, ns, id)?.ok_or(Error::RequestNotFound)?;
    eligible(&row, scope, from, now)?;
    let (old_seal, old_status) = (row.seal.clone(), row.status.as_str());
    change(&mut row);
    row.reseal(key, ns);
    if update(tx, ns, &row, &old_seal, old_status)? {
        return Ok(row.into_approval(key, ns, now));
    }
    // Another caller moved it first: answer as if this one came second, which it did.
    let row = load(tx, ns, id)?.ok_or(Error::RequestNotFound)?;
    eligible(&row, scope, from, now)?;
    Err(Error::Corrupt(
        "approval row changed during its transition".into(),
    ))
}

fn eligible(row: &StoredRow, scope: &Scope, from: ApprovalStatus, now: Timestamp) -> Result<()> {
    if !row.authentic(&scope.key, &scope.ns) {
        return Err(Error::Tampered);
    }
    match row.effective(now) {
        ApprovalStatus::Expired => Err(Error::Expired),
        s if s != from => Err(Error::InvalidTransition(s)),
        _ => Ok(()),
    }
}

/// Writes the mutable columns of `row` over the row as it was read; true when this caller's update won.
fn update(
    tx: &mut Tx<'_>,
    ns: &str,
    row: &StoredRow,
    old_seal: &str,
    old_status: &str,
) -> Result<bool> {
    let status = row.status.as_str();
    let won = tx.query(
        "UPDATE approvals SET status = $3, decided_at = $4, decided_by = $5, consumed_at = $6, seal = $7
         WHERE ns = $1 AND id = $2 AND seal = $8 AND status = $9
         RETURNING id",
        &[
            &ns,
            &row.id,
            &status,
            &row.decided_at,
            &row.decided_by,
            &row.consumed_at,
            &row.seal,
            &old_seal,
            &old_status,
        ],
    )?;
    tx.changed += won.len() as u64;
    Ok(!won.is_empty())
}

/// See `ApprovalStore::expire_due`.
pub(crate) fn expire_due(tx: &mut Tx<'_>, scope: &Scope, now: Timestamp) -> Result<u64> {
    let (key, ns) = (&scope.key, scope.ns.as_str());
    let sql = format!(
        "SELECT {ROW_COLUMNS} FROM approvals
         WHERE ns = $1 AND status IN ('PENDING', 'APPROVED') AND expires_at <= $2"
    );
    let due = tx.query(&sql, &[&ns, &now.as_millis()])?;
    let mut n = 0;
    for r in &due {
        let mut row = stored_row(r)?;
        if !row.authentic(key, ns) {
            continue;
        }
        let (old_seal, old_status) = (row.seal.clone(), row.status.as_str());
        row.status = ApprovalStatus::Expired;
        row.reseal(key, ns);
        n += u64::from(update(tx, ns, &row, &old_seal, old_status)?);
    }
    Ok(n)
}

/// See `ApprovalStore::prune_approvals`: the selection is made under the approval lock of the transaction that
/// deletes.
pub(crate) fn prune(
    tx: &mut Tx<'_>,
    scope: &Scope,
    older_than_days: u32,
    now: Timestamp,
    mode: PruneMode,
) -> Result<Vec<PrunedApproval>> {
    let cutoff = now.minus_days(older_than_days);
    let ns = scope.ns.as_str();
    lock_approvals(tx, ns)?;
    let sql = format!("SELECT {ROW_COLUMNS} FROM approvals WHERE ns = $1 ORDER BY created_at, id");
    let mut selected = Vec::new();
    for r in tx.query(&sql, &[&ns])? {
        let a = stored_row(&r)?.into_approval(&scope.key, ns, now);
        if let Some(at) = terminal_at(&a).filter(|at| *at <= cutoff) {
            selected.push(PrunedApproval {
                id: a.id,
                status: a.status,
                terminal_at: at,
            });
        }
    }
    if mode == PruneMode::Apply {
        for p in &selected {
            tx.execute(
                "DELETE FROM approvals WHERE ns = $1 AND id = $2",
                &[&ns, &p.id],
            )?;
        }
    }
    Ok(selected)
}
