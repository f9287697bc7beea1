//! `SqliteStore`: the default `StateStore`, one SQLite connection (`Store`) behind a lock.
//!
//! Every trait method locks the connection for one call and delegates to `Store`, whose transactions make the
//! atomic steps atomic across threads and processes; the schema and the rows are exactly `Store`'s. The change
//! feed has no notifications to listen to: a waiter is woken at once by a write through this handle (a condition
//! variable), and sees commits of other connections — the admin CLI, the watch terminal, another handle in this
//! process — by looking at `PRAGMA data_version` every `POLL`. This module adds no rule of its own.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::approvals::{Approval, ApprovalStatus, NewRequest, PruneMode, PrunedApproval};
use crate::audit_chain::{AuditAnchor, AuditHead};
use crate::backend::{
    ApprovalStore, ChangeFeed, GrantStore, LockStore, PinStore, RateStore, ReportStore, StateStore,
    WitnessStore,
};
use crate::changes::ChangeMark;
use crate::error::{Error, Result};
use crate::events::{ReportEvent, Retention};
use crate::handle::{Limits, Store, StoreStats};
use crate::locks::{Acquired, Lease, LockCheck, Released};
use crate::namespace::Namespace;
use crate::pins::{Observed, PinObservation, PinsSince, SinceChecks, ToolPin};
use crate::rate::{BucketSpec, TakenAll};
use crate::report::{GroupBy, Report};
use crate::time::Timestamp;

/// How often a waiter looks for commits by other connections: a pragma is cheap, and 50 ms is well under what a
/// human approving in another window notices.
const POLL: Duration = Duration::from_millis(50);

/// One SQLite connection shared by threads; see the module doc.
#[derive(Debug)]
pub struct SqliteStore {
    store: Mutex<Store>,
    /// Writes committed through this handle; `changed` is notified whenever it moves.
    writes: Mutex<u64>,
    changed: Condvar,
}

impl SqliteStore {
    /// Opens the namespace's database with the default ceilings.
    pub fn open(namespace: &Namespace) -> Result<Self> {
        Store::open(namespace).map(Self::from)
    }

    /// Opens the namespace's database with explicit ceilings.
    pub fn open_with_limits(namespace: &Namespace, limits: Limits) -> Result<Self> {
        Store::open_with_limits(namespace, limits).map(Self::from)
    }

    /// Counts of everything held (SQLite's own diagnostics: schema version, bytes), at `now`.
    pub fn stats(&self, now: Timestamp) -> Result<StoreStats> {
        self.lock().stats(now)
    }

    fn lock(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn writes(&self) -> MutexGuard<'_, u64> {
        self.writes.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` on the connection; a call that wrote a row wakes this handle's waiters.
    fn with<T>(&self, f: impl FnOnce(&mut Store) -> T) -> T {
        let mut store = self.lock();
        let before = store.rows_written();
        let out = f(&mut store);
        let wrote = store.rows_written() != before;
        drop(store);
        if wrote {
            *self.writes() += 1;
            self.changed.notify_all();
        }
        out
    }
}

impl From<Store> for SqliteStore {
    fn from(store: Store) -> Self {
        Self {
            store: Mutex::new(store),
            writes: Mutex::new(0),
            changed: Condvar::new(),
        }
    }
}

impl ApprovalStore for SqliteStore {
    fn limits(&self) -> Limits {
        self.lock().limits()
    }

    fn create_held_request(&self, new: &NewRequest<'_>) -> Result<Approval> {
        self.with(|s| s.create_held_request(new))
    }

    fn get_request(&self, id: &str, now: Timestamp) -> Result<Approval> {
        self.lock().get_request(id, now)
    }

    fn list_requests(
        &self,
        status: Option<ApprovalStatus>,
        now: Timestamp,
    ) -> Result<Vec<Approval>> {
        self.lock().list_requests(status, now)
    }

    fn find_approved(
        &self,
        session_id: &str,
        snapshot_sha256: &str,
        now: Timestamp,
    ) -> Result<Option<String>> {
        self.lock().find_approved(session_id, snapshot_sha256, now)
    }

    fn decide(
        &self,
        id: &str,
        to: ApprovalStatus,
        decided_by: &str,
        now: Timestamp,
    ) -> Result<Approval> {
        self.with(|s| match to {
            ApprovalStatus::Approved => s.approve(id, decided_by, now),
            ApprovalStatus::Rejected => s.reject(id, decided_by, now),
            ApprovalStatus::Cancelled => s.cancel(id, decided_by, now),
            other => Err(Error::InvalidTransition(other)),
        })
    }

    fn consume(&self, id: &str, now: Timestamp) -> Result<Approval> {
        self.with(|s| s.consume(id, now))
    }

    fn expire_due(&self, now: Timestamp) -> Result<u64> {
        self.with(|s| s.expire_due(now))
    }

    fn prune_approvals(
        &self,
        older_than_days: u32,
        now: Timestamp,
        mode: PruneMode,
    ) -> Result<Vec<PrunedApproval>> {
        self.with(|s| s.prune_approvals(older_than_days, now, mode))
    }
}

impl GrantStore for SqliteStore {
    fn grant_session(
        &self,
        session_id: &str,
        tool: &str,
        definition_sha256: &str,
        scope: &str,
        now: Timestamp,
    ) -> Result<()> {
        self.with(|s| s.grant_session(session_id, tool, definition_sha256, scope, now))
    }

    fn session_grant_valid(
        &self,
        session_id: &str,
        tool: &str,
        definition_sha256: &str,
        scope: &str,
    ) -> Result<bool> {
        self.lock()
            .session_grant_valid(session_id, tool, definition_sha256, scope)
    }

    fn revoke_session(&self, session_id: &str) -> Result<u64> {
        self.with(|s| s.revoke_session(session_id))
    }
}

impl PinStore for SqliteStore {
    fn observe_pins(
        &self,
        items: &[PinObservation<'_>],
        now: Timestamp,
    ) -> Result<Vec<Result<Observed>>> {
        self.with(|s| s.observe_pins(items, now))
    }

    fn observe_pins_since(&self, pass: PinsSince<'_>, now: Timestamp) -> Result<SinceChecks> {
        self.with(|s| s.observe_pins_since(pass, now))
    }

    fn pins_generation(&self) -> Result<u64> {
        self.lock().pins_generation()
    }

    fn accept_pin(&self, name: &str, expected_sha256: &str, now: Timestamp) -> Result<ToolPin> {
        self.with(|s| s.accept_pin(name, expected_sha256, now))
    }

    fn override_pin_flags(&self, name: &str, sha256: &str, now: Timestamp) -> Result<ToolPin> {
        self.with(|s| s.override_pin_flags(name, sha256, now))
    }

    fn get_pin(&self, name: &str) -> Result<Option<ToolPin>> {
        self.lock().get_pin(name)
    }

    fn list_pins(&self) -> Result<Vec<ToolPin>> {
        self.lock().list_pins()
    }
}

impl ReportStore for SqliteStore {
    fn record_events(&self, events: &[ReportEvent]) -> Result<()> {
        self.with(|s| s.record_events(events))
    }

    fn apply_retention(&self, retention: &Retention, now: Timestamp) -> Result<u64> {
        self.with(|s| s.apply_retention(retention, now))
    }

    fn event_count(&self) -> Result<u64> {
        self.lock().event_count()
    }

    fn export_events(&self, since: Option<Timestamp>, limit: u64) -> Result<Vec<ReportEvent>> {
        self.lock().export_events(since, limit)
    }

    fn report(&self, group_by: GroupBy, since: Option<Timestamp>) -> Result<Report> {
        self.lock().report(group_by, since)
    }
}

impl LockStore for SqliteStore {
    fn acquire_lock(
        &self,
        path: &str,
        holder: &str,
        owner: &str,
        lease_id: Option<&str>,
        ttl_ms: u64,
        now: Timestamp,
    ) -> Result<Acquired> {
        self.with(|s| s.acquire_lock(path, holder, owner, lease_id, ttl_ms, now))
    }

    fn release_lock(&self, path: &str, lease_id: &str, now: Timestamp) -> Result<Released> {
        self.with(|s| s.release_lock(path, lease_id, now))
    }

    fn check_lock(&self, path: &str, lease_id: Option<&str>, now: Timestamp) -> Result<LockCheck> {
        self.lock().check_lock(path, lease_id, now)
    }

    fn list_locks(&self, now: Timestamp) -> Result<Vec<Lease>> {
        self.lock().list_locks(now)
    }
}

impl RateStore for SqliteStore {
    fn take_all(&self, buckets: &[BucketSpec<'_>], now: Timestamp) -> Result<TakenAll> {
        // Not through `with`: a take is no change a waiter waits on.
        self.lock().take_tokens(buckets, now)
    }
}

impl WitnessStore for SqliteStore {
    fn audit_head(&self) -> Result<Option<AuditHead>> {
        self.lock().audit_head()
    }

    fn advance_audit_head(&self, head: &AuditHead, now: Timestamp) -> Result<()> {
        self.with(|s| s.advance_audit_head(head, now))
    }

    fn record_audit_anchor(
        &self,
        hash: &str,
        next_seq: u64,
        prev: &str,
        now: Timestamp,
    ) -> Result<()> {
        self.with(|s| s.record_audit_anchor(hash, next_seq, prev, now))
    }

    fn audit_anchors(&self) -> Result<Vec<AuditAnchor>> {
        self.lock().audit_anchors()
    }
}

impl ChangeFeed for SqliteStore {
    fn change_mark(&self) -> Result<ChangeMark> {
        self.lock().change_mark()
    }

    fn wait_for_change(&self, since: &mut ChangeMark, deadline: Instant) -> Result<bool> {
        loop {
            // Read before looking, so a write between the look and the wait still ends the wait at once.
            let seen = *self.writes();
            if self.lock().approvals_changed_since(since)? {
                return Ok(true);
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(false);
            }
            let writes = self.writes();
            let wait = POLL.min(deadline - now);
            let _ = self
                .changed
                .wait_timeout_while(writes, wait, |w| *w == seen)
                .unwrap_or_else(|p| p.into_inner());
        }
    }

    fn own_writes(&self) -> u64 {
        *self.writes()
    }
}

impl StateStore for SqliteStore {
    fn backend(&self) -> &'static str {
        "sqlite"
    }

    fn record_written(
        &self,
        events: &[ReportEvent],
        head: &AuditHead,
        now: Timestamp,
    ) -> Result<()> {
        self.with(|s| s.record_written(events, head, now))
    }
}
