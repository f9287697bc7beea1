//! Advisory locks on workspace files for read-before-mutate work: `filesystem_lock_acquire` and
//! `filesystem_lock_release`, and the check the file-writing tools make before they write. The leases live in the
//! state store (`store::LockStore`), so every toolgate process serving this workspace on the same state — another
//! client's `serve`, an HTTP front end, a code-mode run — sees the same ones.
//!
//! A write (`filesystem_write_file`, every file `filesystem_apply_patch` touches) is refused while another
//! lease holds its path (`LOCK_CONFLICT`, naming the holder and until when, never its lease id), and refused
//! when it presents a lease id that no longer holds the path (`LOCK_MISSING`: the lease lapsed or was released,
//! so what was read may be stale). A write without a lease on a path nobody holds goes ahead: the locks are
//! advisory, among the tools that honour them — toolgate's own file tools, not an upstream server's. Checked
//! immediately before the write; the write itself still checks `expected_hash` when one is given.
//!
//! Without a state store there are no leases: acquiring fails with `LOCKS_UNAVAILABLE`, and writes are not
//! checked (nothing could hold a lease this process would see).

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Value};
use store::{Acquired, LockCheck, Released, StateStore, Timestamp};

use crate::builtin::{parse, ToolOutcome};
use crate::confine::{RelPath, Workspace};
use crate::error::{Error, Result};

/// A lease's life when the caller names none.
const DEFAULT_TTL: Duration = Duration::from_secs(300);
/// The longest lease: one holder that stops renewing frees the file within this.
const MAX_TTL: Duration = Duration::from_secs(3600);
/// The owner label when the caller gives none.
const DEFAULT_OWNER: &str = "agent";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AcquireArgs {
    path: String,
    #[serde(default)]
    owner: Option<String>,
    #[serde(default)]
    ttl_seconds: Option<u64>,
    #[serde(default)]
    lease_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReleaseArgs {
    path: String,
    lease_id: String,
}

/// The leases of one workspace, through the state store when there is one.
#[derive(Clone, Default)]
pub(crate) struct Leases {
    store: Option<Arc<dyn StateStore>>,
}

impl Leases {
    pub(crate) fn new(store: Option<Arc<dyn StateStore>>) -> Self {
        Self { store }
    }

    fn store(&self) -> Result<&dyn StateStore> {
        self.store.as_deref().ok_or(Error::LocksUnavailable)
    }

    /// `filesystem_lock_acquire`: takes the file for `caller` (the identity calling), or renews its lease on it.
    pub(crate) fn acquire(&self, ws: &Workspace, args: Value, caller: &str) -> Result<ToolOutcome> {
        let a: AcquireArgs = parse(args)?;
        let rel = file(ws, &a.path)?;
        let ttl = a.ttl_seconds.map_or(DEFAULT_TTL, Duration::from_secs);
        if ttl.is_zero() || ttl > MAX_TTL {
            return Err(Error::InvalidArguments(format!(
                "ttl_seconds must be between 1 and {}",
                MAX_TTL.as_secs()
            )));
        }
        let owner = owner(a.owner.as_deref())?;
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        let path = rel.display();
        let outcome = self
            .store()?
            .acquire_lock(
                &path,
                caller,
                &owner,
                a.lease_id.as_deref(),
                ttl_ms,
                Timestamp::now(),
            )
            .map_err(store_error)?;
        match outcome {
            Acquired::Held {
                lease_id,
                lease,
                renewed,
            } => Ok(ToolOutcome::ok(json!({
                "path": path,
                "lease_id": lease_id,
                "owner": lease.owner,
                "expires_at": lease.expires_at.to_rfc3339(),
                "ttl_seconds": ttl.as_secs(),
                "renewed": renewed,
            }))),
            Acquired::Conflict(lease) => Err(Error::Locked {
                path,
                owner: lease.owner,
                until: lease.expires_at.to_rfc3339(),
            }),
            Acquired::Missing => Err(Error::LockMissing(path)),
        }
    }

    /// `filesystem_lock_release`: gives the file up when the caller's lease holds it.
    pub(crate) fn release(&self, ws: &Workspace, args: Value) -> Result<ToolOutcome> {
        let a: ReleaseArgs = parse(args)?;
        let rel = file(ws, &a.path)?;
        let path = rel.display();
        let outcome = self
            .store()?
            .release_lock(&path, &a.lease_id, Timestamp::now())
            .map_err(store_error)?;
        match outcome {
            Released::Released => Ok(ToolOutcome::ok(json!({"path": path, "released": true}))),
            Released::NotHeld => Ok(ToolOutcome::ok(json!({"path": path, "released": false}))),
            Released::Conflict(lease) => Err(Error::Locked {
                path,
                owner: lease.owner,
                until: lease.expires_at.to_rfc3339(),
            }),
        }
    }

    /// Refuses a write of `path` that another lease holds, or whose presented `lease_id` no longer holds it.
    pub(crate) fn check_write(&self, path: &RelPath, lease_id: Option<&str>) -> Result<()> {
        let Some(store) = self.store.as_deref() else {
            return match lease_id {
                Some(_) => Err(Error::LocksUnavailable),
                None => Ok(()),
            };
        };
        let shown = path.display();
        match store
            .check_lock(&shown, lease_id, Timestamp::now())
            .map_err(store_error)?
        {
            LockCheck::Mine(_) => Ok(()),
            LockCheck::Free if lease_id.is_none() => Ok(()),
            LockCheck::Free => Err(Error::LockMissing(shown)),
            LockCheck::Other(lease) => Err(Error::Locked {
                path: shown,
                owner: lease.owner,
                until: lease.expires_at.to_rfc3339(),
            }),
        }
    }
}

/// A lease names one file path, never the workspace root.
fn file(ws: &Workspace, path: &str) -> Result<RelPath> {
    let rel = ws.relative(path)?;
    if rel.is_root() {
        return Err(Error::InvalidArguments(
            "a lock names a file in the workspace, not the workspace itself".into(),
        ));
    }
    Ok(rel)
}

/// The owner label: short visible text, since others are shown it.
fn owner(given: Option<&str>) -> Result<String> {
    let owner = given.unwrap_or(DEFAULT_OWNER).trim();
    if owner.is_empty() || owner.chars().count() > 64 || owner.chars().any(char::is_control) {
        return Err(Error::InvalidArguments(
            "owner must be 1 to 64 characters of visible text".into(),
        ));
    }
    Ok(owner.to_owned())
}

fn store_error(e: store::Error) -> Error {
    match e {
        store::Error::LocksFull { limit } => Error::TooManyLocks(limit),
        store::Error::LocksShareFull { limit } => Error::TooManyLocksHeld(limit),
        other => Error::LockStore(other.to_string()),
    }
}
