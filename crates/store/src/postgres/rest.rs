//! Session grants, the audit witness and path leases on PostgreSQL, with the rules of the SQLite store
//! (`grants`, `audit_chain`, `locks`).
//!
//! Grants are sealed as the SQLite rows are and compared byte for byte. The audit witness is kept per chain (one per
//! replica, named by it), and a chain's head moves only forward in one conditional upsert. A lease is taken under the namespace's lease lock (a
//! transaction-level advisory lock), so of racing acquirers on any replicas exactly one holds a path, and the
//! ceiling and the holder's share are counted in the same transaction as the insert.

use super::pool::{col, Tx};
use super::Scope;
use crate::audit_chain::{AuditAnchor, AuditHead, ChainWitness};
use crate::error::{Error, Result};
use crate::grants::{grant_fields, DOMAIN};
use crate::locks::{digest, new_lease_id, Acquired, Lease, LockCheck, Released, MAX_OWNER_CHARS};
use crate::time::Timestamp;

/// See `GrantStore::grant_session`.
pub(crate) fn grant(
    tx: &mut Tx<'_>,
    scope: &Scope,
    session_id: &str,
    tool: &str,
    definition_sha256: &str,
    what: &str,
    now: Timestamp,
) -> Result<()> {
    let at = now.as_millis();
    let fields = grant_fields(&scope.ns, session_id, tool, definition_sha256, what, at);
    let seal = scope.key.seal(DOMAIN, &fields);
    tx.execute(
        "INSERT INTO session_grants (ns, session_id, tool, definition_sha256, scope, granted_at, seal)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (ns, session_id, tool, definition_sha256, scope)
         DO UPDATE SET granted_at = excluded.granted_at, seal = excluded.seal",
        &[&scope.ns, &session_id, &tool, &definition_sha256, &what, &at, &seal],
    )?;
    Ok(())
}

/// See `GrantStore::session_grant_valid`.
pub(crate) fn grant_valid(
    tx: &Tx<'_>,
    scope: &Scope,
    session_id: &str,
    tool: &str,
    definition_sha256: &str,
    what: &str,
) -> Result<bool> {
    let rows = tx.query(
        "SELECT granted_at, seal FROM session_grants
         WHERE ns = $1 AND session_id = $2 AND tool = $3 AND definition_sha256 = $4 AND scope = $5",
        &[&scope.ns, &session_id, &tool, &definition_sha256, &what],
    )?;
    for r in &rows {
        let (at, seal): (i64, String) = (col(r, 0)?, col(r, 1)?);
        let fields = grant_fields(&scope.ns, session_id, tool, definition_sha256, what, at);
        if scope.key.verify(DOMAIN, &fields, &seal) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// See `GrantStore::revoke_session`.
pub(crate) fn revoke(tx: &mut Tx<'_>, ns: &str, session_id: &str) -> Result<u64> {
    tx.execute(
        "DELETE FROM session_grants WHERE ns = $1 AND session_id = $2",
        &[&ns, &session_id],
    )
}

/// See `WitnessStore::audit_head`: the head of `chain`.
pub(crate) fn head(tx: &Tx<'_>, ns: &str, chain: &str) -> Result<Option<AuditHead>> {
    let row = tx.opt(
        "SELECT seq, hash FROM audit_head WHERE ns = $1 AND chain = $2",
        &[&ns, &chain],
    )?;
    row.map(|r| {
        Ok(AuditHead {
            seq: u64::try_from(col::<i64>(&r, 0)?).unwrap_or(0),
            hash: col(&r, 1)?,
        })
    })
    .transpose()
}

/// See `WitnessStore::advance_audit_head`: of `chain`, forward only.
pub(crate) fn advance_head(
    tx: &mut Tx<'_>,
    ns: &str,
    chain: &str,
    head: &AuditHead,
    now: Timestamp,
) -> Result<()> {
    let seq = i64::try_from(head.seq).unwrap_or(i64::MAX);
    tx.execute(
        "INSERT INTO audit_head (ns, chain, seq, hash, updated_at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (ns, chain) DO UPDATE SET seq = excluded.seq, hash = excluded.hash,
                                               updated_at = excluded.updated_at
         WHERE excluded.seq > audit_head.seq",
        &[&ns, &chain, &seq, &head.hash, &now.as_millis()],
    )?;
    Ok(())
}

/// See `WitnessStore::record_audit_anchor`: of `chain`.
pub(crate) fn record_anchor(
    tx: &mut Tx<'_>,
    ns: &str,
    chain: &str,
    anchor: (&str, u64, &str),
    now: Timestamp,
) -> Result<()> {
    let (hash, next_seq, prev) = anchor;
    let next = i64::try_from(next_seq).unwrap_or(i64::MAX);
    tx.execute(
        "INSERT INTO audit_anchors (ns, chain, hash, next_seq, prev, created_at)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (ns, chain, hash) DO NOTHING",
        &[&ns, &chain, &hash, &next, &prev, &now.as_millis()],
    )?;
    Ok(())
}

/// See `WitnessStore::audit_anchors`: of `chain`.
pub(crate) fn anchors(tx: &Tx<'_>, ns: &str, chain: &str) -> Result<Vec<AuditAnchor>> {
    let rows = tx.query(
        "SELECT hash, next_seq, prev, created_at FROM audit_anchors WHERE ns = $1 AND chain = $2
         ORDER BY created_at, hash",
        &[&ns, &chain],
    )?;
    rows.iter()
        .map(|r| {
            Ok(AuditAnchor {
                hash: col(r, 0)?,
                next_seq: u64::try_from(col::<i64>(r, 1)?).unwrap_or(0),
                prev: col(r, 2)?,
                created_at: Timestamp::from_millis(col(r, 3)?),
            })
        })
        .collect()
}

/// See `WitnessStore::audit_chains`: every chain with a head or an anchor in the namespace, by name.
pub(crate) fn chains(tx: &Tx<'_>, ns: &str) -> Result<Vec<ChainWitness>> {
    let rows = tx.query(
        "SELECT chain FROM audit_head WHERE ns = $1
         UNION SELECT chain FROM audit_anchors WHERE ns = $1 ORDER BY 1",
        &[&ns],
    )?;
    rows.iter()
        .map(|r| {
            let chain: String = col(r, 0)?;
            Ok(ChainWitness {
                head: head(tx, ns, &chain)?,
                anchors: anchors(tx, ns, &chain)?,
                chain,
            })
        })
        .collect()
}

/// The live lease on `path` at `now`, with its id's digest.
fn live(tx: &Tx<'_>, ns: &str, path: &str, now: Timestamp) -> Result<Option<(Lease, String)>> {
    let row = tx.opt(
        "SELECT owner, acquired_at, expires_at, lease_sha256 FROM path_locks
          WHERE ns = $1 AND path = $2 AND expires_at > $3",
        &[&ns, &path, &now.as_millis()],
    )?;
    row.map(|r| {
        let lease = Lease {
            path: path.to_owned(),
            owner: col(&r, 0)?,
            acquired_at: Timestamp::from_millis(col(&r, 1)?),
            expires_at: Timestamp::from_millis(col(&r, 2)?),
        };
        Ok((lease, col(&r, 3)?))
    })
    .transpose()
}

/// One acquire: what `LockStore::acquire_lock` names.
pub(crate) struct Acquire<'a> {
    pub path: &'a str,
    pub holder: &'a str,
    pub owner: &'a str,
    pub lease_id: Option<&'a str>,
    pub ttl_ms: u64,
    pub now: Timestamp,
}

/// See `LockStore::acquire_lock`.
pub(crate) fn acquire(tx: &mut Tx<'_>, scope: &Scope, a: &Acquire<'_>) -> Result<Acquired> {
    let ns = scope.ns.as_str();
    let (path, now) = (a.path, a.now);
    let expires_at = now.plus_millis(i64::try_from(a.ttl_ms).unwrap_or(i64::MAX));
    let owner: String = a.owner.chars().take(MAX_OWNER_CHARS).collect();
    let name = format!("{ns} locks");
    tx.one(
        "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
        &[&name],
    )?;
    Ok(match (live(tx, ns, path, now)?, a.lease_id) {
        (Some((lease, sha)), Some(id)) if sha == digest(id) => {
            tx.execute(
                "UPDATE path_locks SET owner = $3, expires_at = $4 WHERE ns = $1 AND path = $2",
                &[&ns, &path, &owner, &expires_at.as_millis()],
            )?;
            Acquired::Held {
                lease_id: id.to_owned(),
                lease: Lease {
                    owner,
                    expires_at,
                    ..lease
                },
                renewed: true,
            }
        }
        (Some((lease, _)), _) => Acquired::Conflict(lease),
        (None, Some(_)) => Acquired::Missing,
        (None, None) => {
            // Lapsed leases hold no place; the ceiling counts live ones.
            tx.execute(
                "DELETE FROM path_locks WHERE ns = $1 AND expires_at <= $2",
                &[&ns, &now.as_millis()],
            )?;
            let count = |n: i64| u64::try_from(n).unwrap_or(u64::MAX);
            let all = tx.one("SELECT COUNT(*) FROM path_locks WHERE ns = $1", &[&ns])?;
            let max = scope.limits.max_locks;
            if count(col(&all, 0)?) >= max {
                return Err(Error::LocksFull { limit: max });
            }
            let mine = tx.one(
                "SELECT COUNT(*) FROM path_locks WHERE ns = $1 AND holder = $2",
                &[&ns, &a.holder],
            )?;
            let share = scope.limits.max_locks_per_holder;
            if count(col(&mine, 0)?) >= share {
                return Err(Error::LocksShareFull { limit: share });
            }
            let id = new_lease_id()?;
            tx.execute(
                "INSERT INTO path_locks (ns, path, lease_sha256, holder, owner, acquired_at, expires_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
                &[
                    &ns,
                    &path,
                    &digest(&id),
                    &a.holder,
                    &owner,
                    &now.as_millis(),
                    &expires_at.as_millis(),
                ],
            )?;
            Acquired::Held {
                lease_id: id,
                lease: Lease {
                    path: path.to_owned(),
                    owner,
                    acquired_at: now,
                    expires_at,
                },
                renewed: false,
            }
        }
    })
}

/// See `LockStore::release_lock`.
pub(crate) fn release(
    tx: &mut Tx<'_>,
    ns: &str,
    path: &str,
    lease_id: &str,
    now: Timestamp,
) -> Result<Released> {
    Ok(match live(tx, ns, path, now)? {
        None => Released::NotHeld,
        Some((_, sha)) if sha == digest(lease_id) => {
            tx.execute(
                "DELETE FROM path_locks WHERE ns = $1 AND path = $2",
                &[&ns, &path],
            )?;
            Released::Released
        }
        Some((lease, _)) => Released::Conflict(lease),
    })
}

/// See `LockStore::check_lock`.
pub(crate) fn check(
    tx: &Tx<'_>,
    ns: &str,
    path: &str,
    lease_id: Option<&str>,
    now: Timestamp,
) -> Result<LockCheck> {
    Ok(match live(tx, ns, path, now)? {
        None => LockCheck::Free,
        Some((lease, sha)) if lease_id.is_some_and(|id| sha == digest(id)) => {
            LockCheck::Mine(lease)
        }
        Some((lease, _)) => LockCheck::Other(lease),
    })
}

/// See `LockStore::list_locks`.
pub(crate) fn list(tx: &Tx<'_>, ns: &str, now: Timestamp) -> Result<Vec<Lease>> {
    let rows = tx.query(
        "SELECT path, owner, acquired_at, expires_at FROM path_locks
          WHERE ns = $1 AND expires_at > $2 ORDER BY path",
        &[&ns, &now.as_millis()],
    )?;
    rows.iter()
        .map(|r| {
            Ok(Lease {
                path: col(r, 0)?,
                owner: col(r, 1)?,
                acquired_at: Timestamp::from_millis(col(r, 2)?),
                expires_at: Timestamp::from_millis(col(r, 3)?),
            })
        })
        .collect()
}
