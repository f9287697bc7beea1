//! Advisory leases on workspace paths, for read-before-mutate work shared by cooperating processes: every
//! toolgate process serving one workspace on one state root (stdio clients, an HTTP front end, code-mode runs)
//! sees the same leases, because they live in the namespace's database and each step is one immediate
//! transaction.
//!
//! A lease names a path (workspace-relative, as the caller normalised it), an owner (a label for whoever holds
//! it, shown to others) and an expiry; whoever holds it proves so with its lease id, 128 random bits handed out
//! once and stored only as a SHA-256, so neither a listing nor a reader of the database can present it. An
//! expired lease is the same as none. Acquiring a path another live lease holds is a conflict, never a wait;
//! acquiring with the live lease's id renews it. At most `Limits::max_locks` leases are live at once, and at most
//! `Limits::max_locks_per_holder` of one identity (the holder, which the gateway names, never the caller).
//!
//! Nothing here enforces a lease on a write: the workspace tools check them (`check_lock`) before they write.

use rand::TryRng;
use rusqlite::{params, OptionalExtension, TransactionBehavior};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::handle::Store;
use crate::time::Timestamp;

/// Random bytes in a lease id.
const LEASE_BYTES: usize = 16;
/// Prefix of a lease id, so one is recognisable in a client's hands.
const LEASE_PREFIX: &str = "lease_";
/// Cap on an owner label.
pub(crate) const MAX_OWNER_CHARS: usize = 64;

/// A live lease as anyone may see it: no lease id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Lease {
    /// The workspace-relative path it holds.
    pub path: String,
    /// Who holds it, as the holder labelled itself.
    pub owner: String,
    /// When it was taken (a renewal keeps this).
    pub acquired_at: Timestamp,
    /// When it lapses unless renewed.
    pub expires_at: Timestamp,
}

/// What an acquire came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acquired {
    /// The caller holds the path now, until `lease.expires_at`; `renewed` when it already held it.
    Held {
        lease_id: String,
        lease: Lease,
        renewed: bool,
    },
    /// Another live lease holds the path.
    Conflict(Lease),
    /// A lease id was given to renew, and no live lease of that id holds the path (it lapsed or was released).
    Missing,
}

/// Who holds a path, as a writer asks before writing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockCheck {
    /// No live lease.
    Free,
    /// The lease id presented holds it.
    Mine(Lease),
    /// Another lease holds it.
    Other(Lease),
}

/// What a release came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Released {
    /// The lease is gone.
    Released,
    /// No live lease held the path (released before, or lapsed): nothing to do.
    NotHeld,
    /// Another lease holds the path; it stays.
    Conflict(Lease),
}

/// A live row: the lease and its id's digest.
struct Row {
    lease: Lease,
    lease_sha256: String,
}

pub(crate) fn digest(lease_id: &str) -> String {
    jsonrpc::sha256_hex(lease_id.as_bytes())
}

pub(crate) fn new_lease_id() -> Result<String> {
    let mut bytes = [0u8; LEASE_BYTES];
    rand::rngs::SysRng
        .try_fill_bytes(&mut bytes)
        .map_err(|_| Error::Rng)?;
    Ok(format!("{LEASE_PREFIX}{}", hex::encode(bytes)))
}

/// The live lease on `path` at `now`, if any.
fn live(conn: &rusqlite::Connection, path: &str, now: Timestamp) -> Result<Option<Row>> {
    Ok(conn
        .query_row(
            "SELECT owner, acquired_at, expires_at, lease_sha256 FROM path_locks
              WHERE path = ?1 AND expires_at > ?2",
            params![path, now.as_millis()],
            |r| {
                Ok(Row {
                    lease: Lease {
                        path: path.to_owned(),
                        owner: r.get(0)?,
                        acquired_at: Timestamp::from_millis(r.get(1)?),
                        expires_at: Timestamp::from_millis(r.get(2)?),
                    },
                    lease_sha256: r.get(3)?,
                })
            },
        )
        .optional()?)
}

impl Store {
    /// Takes `path` for `owner` (a label, as `holder`, the identity taking it) for `ttl_ms`, or renews it when
    /// `lease_id` names its live lease; one immediate transaction, so of racing acquirers in any processes exactly
    /// one holds it. A new lease counts against the ceiling and against `holder`'s share.
    pub fn acquire_lock(
        &mut self,
        path: &str,
        holder: &str,
        owner: &str,
        lease_id: Option<&str>,
        ttl_ms: u64,
        now: Timestamp,
    ) -> Result<Acquired> {
        let expires_at = now.plus_millis(i64::try_from(ttl_ms).unwrap_or(i64::MAX));
        let owner: String = owner.chars().take(MAX_OWNER_CHARS).collect();
        let max = self.limits.max_locks;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let outcome = match (live(&tx, path, now)?, lease_id) {
            (Some(row), Some(id)) if row.lease_sha256 == digest(id) => {
                tx.execute(
                    "UPDATE path_locks SET owner = ?2, expires_at = ?3 WHERE path = ?1",
                    params![path, owner, expires_at.as_millis()],
                )?;
                let lease = Lease {
                    owner,
                    expires_at,
                    ..row.lease
                };
                Acquired::Held {
                    lease_id: id.to_owned(),
                    lease,
                    renewed: true,
                }
            }
            (Some(row), _) => Acquired::Conflict(row.lease),
            (None, Some(_)) => Acquired::Missing,
            (None, None) => {
                // Lapsed leases hold no place; the ceiling counts live ones.
                tx.execute(
                    "DELETE FROM path_locks WHERE expires_at <= ?1",
                    [now.as_millis()],
                )?;
                let held: i64 =
                    tx.query_row("SELECT COUNT(*) FROM path_locks", [], |r| r.get(0))?;
                if u64::try_from(held).unwrap_or(u64::MAX) >= max {
                    return Err(Error::LocksFull { limit: max });
                }
                let share = self.limits.max_locks_per_holder;
                let mine: i64 = tx.query_row(
                    "SELECT COUNT(*) FROM path_locks WHERE holder = ?1",
                    [holder],
                    |r| r.get(0),
                )?;
                if u64::try_from(mine).unwrap_or(u64::MAX) >= share {
                    return Err(Error::LocksShareFull { limit: share });
                }
                let id = new_lease_id()?;
                tx.execute(
                    "INSERT INTO path_locks (path, lease_sha256, holder, owner, acquired_at, expires_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    params![path, digest(&id), holder, owner, now.as_millis(), expires_at.as_millis()],
                )?;
                let lease = Lease {
                    path: path.to_owned(),
                    owner,
                    acquired_at: now,
                    expires_at,
                };
                Acquired::Held {
                    lease_id: id,
                    lease,
                    renewed: false,
                }
            }
        };
        tx.commit()?;
        Ok(outcome)
    }

    /// Gives up `path` when `lease_id` holds it.
    pub fn release_lock(&mut self, path: &str, lease_id: &str, now: Timestamp) -> Result<Released> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let outcome = match live(&tx, path, now)? {
            None => Released::NotHeld,
            Some(row) if row.lease_sha256 == digest(lease_id) => {
                tx.execute("DELETE FROM path_locks WHERE path = ?1", [path])?;
                Released::Released
            }
            Some(row) => Released::Conflict(row.lease),
        };
        tx.commit()?;
        Ok(outcome)
    }

    /// Who holds `path` at `now`, compared with the lease id a writer presents (if any).
    pub fn check_lock(
        &self,
        path: &str,
        lease_id: Option<&str>,
        now: Timestamp,
    ) -> Result<LockCheck> {
        Ok(match live(&self.conn, path, now)? {
            None => LockCheck::Free,
            Some(row) if lease_id.is_some_and(|id| row.lease_sha256 == digest(id)) => {
                LockCheck::Mine(row.lease)
            }
            Some(row) => LockCheck::Other(row.lease),
        })
    }

    /// Every live lease, by path; never their ids.
    pub fn list_locks(&self, now: Timestamp) -> Result<Vec<Lease>> {
        let mut stmt = self.conn.prepare(
            "SELECT path, owner, acquired_at, expires_at FROM path_locks
              WHERE expires_at > ?1 ORDER BY path",
        )?;
        let rows = stmt.query_map([now.as_millis()], |r| {
            Ok(Lease {
                path: r.get(0)?,
                owner: r.get(1)?,
                acquired_at: Timestamp::from_millis(r.get(2)?),
                expires_at: Timestamp::from_millis(r.get(3)?),
            })
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }
}
