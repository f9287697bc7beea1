//! The store as the gateway sees it: one trait per concern of durable state, and `StateStore`, all of them
//! together, which is what a backend implements and what `gateway::State` holds (`Arc<dyn StateStore>`).
//!
//! Every method takes `&self` and every implementation is `Send + Sync`: a backend with a connection pool serves
//! concurrent callers without a lock of the gateway's, and one with a single connection (SQLite) locks inside.
//! Callers pass `now`; a backend never reads the clock for a decision. The rules every backend must keep — the
//! approval states and their transitions, single consumption as one atomic conditional step, the per-session and
//! per-identity caps checked in the same step as the insert, grants scoped to exact arguments, pins quarantined
//! on change and a generation that moves on every pin write, a witnessed audit head that never moves back, path
//! leases of which racing acquirers get one, token buckets that never give more than they hold, and a change feed that never misses a write — are the contract
//! suite's (`tests/suite/contract`), run against every
//! implementation. `SqliteStore` (`sqlite`) is the default implementation. This module holds no state and does
//! no I/O; secrets in the state root (the row-sealing key, the operator key) are files, not backend state.

use std::fmt::Debug;
use std::time::Instant;

use serde_json::Value;

use crate::approvals::{Approval, ApprovalStatus, NewRequest, PruneMode, PrunedApproval};
use crate::audit_chain::{AuditAnchor, AuditHead, ChainWitness};
use crate::changes::ChangeMark;
use crate::error::{Error, Result};
use crate::events::{ReportEvent, Retention};
use crate::handle::Limits;
use crate::locks::{Acquired, Lease, LockCheck, Released};
use crate::pins::{FirstUse, Observed, PinCheck, PinObservation, PinsSince, SinceChecks, ToolPin};
use crate::rate::{BucketSpec, Taken, TakenAll};
use crate::report::{GroupBy, Report};
use crate::time::Timestamp;

/// Approval requests: PENDING → APPROVED | REJECTED | CANCELLED | EXPIRED; APPROVED → CONSUMED, exactly once.
pub trait ApprovalStore {
    /// The ceilings this handle enforces.
    fn limits(&self) -> Limits;

    /// Creates a sealed PENDING request, checking the snapshot size, the session's and the identity's caps of
    /// waiting requests and the store's ceilings in the same atomic step as the insert (two writers never both
    /// take the last slot).
    fn create_held_request(&self, new: &NewRequest<'_>) -> Result<Approval>;

    /// Reads one request with its status as effective at `now`; never persists expiry. Unknown and foreign ids
    /// are both `RequestNotFound`.
    fn get_request(&self, id: &str, now: Timestamp) -> Result<Approval>;

    /// Requests newest first, optionally only those whose effective status is `status`.
    fn list_requests(
        &self,
        status: Option<ApprovalStatus>,
        now: Timestamp,
    ) -> Result<Vec<Approval>>;

    /// The oldest authentic, unexpired APPROVED request of `session_id` whose snapshot hashes to `snapshot_sha256`.
    fn find_approved(
        &self,
        session_id: &str,
        snapshot_sha256: &str,
        now: Timestamp,
    ) -> Result<Option<String>>;

    /// PENDING → `to` (APPROVED, REJECTED or CANCELLED), recording who decided; one atomic conditional step.
    /// Any other `to` is refused as an invalid transition.
    fn decide(
        &self,
        id: &str,
        to: ApprovalStatus,
        decided_by: &str,
        now: Timestamp,
    ) -> Result<Approval>;

    /// APPROVED → CONSUMED as one atomic conditional step: of any number of callers, in any processes, exactly
    /// one gets the request back; every other gets an error and must not execute.
    fn consume(&self, id: &str, now: Timestamp) -> Result<Approval>;

    /// Persists EXPIRED on live requests past their expiry; returns how many changed.
    fn expire_due(&self, now: Timestamp) -> Result<u64>;

    /// Selects finished requests older than `older_than_days` and, in `Apply` mode, deletes them.
    fn prune_approvals(
        &self,
        older_than_days: u32,
        now: Timestamp,
        mode: PruneMode,
    ) -> Result<Vec<PrunedApproval>>;

    /// A PENDING request outside any session, not held (tests and tools standing in for a gateway).
    fn create_request(
        &self,
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

    /// PENDING → APPROVED.
    fn approve(&self, id: &str, decided_by: &str, now: Timestamp) -> Result<Approval> {
        self.decide(id, ApprovalStatus::Approved, decided_by, now)
    }

    /// PENDING → REJECTED.
    fn reject(&self, id: &str, decided_by: &str, now: Timestamp) -> Result<Approval> {
        self.decide(id, ApprovalStatus::Rejected, decided_by, now)
    }

    /// PENDING → CANCELLED: nobody waits for the answer any more.
    fn cancel(&self, id: &str, why: &str, now: Timestamp) -> Result<Approval> {
        self.decide(id, ApprovalStatus::Cancelled, why, now)
    }
}

/// Session grants, keyed by (session, tool, definition hash, scope) and compared byte for byte.
pub trait GrantStore {
    /// Records (or renews) the grant of `scope` for `tool` in `session_id`, bound to `definition_sha256`.
    fn grant_session(
        &self,
        session_id: &str,
        tool: &str,
        definition_sha256: &str,
        scope: &str,
        now: Timestamp,
    ) -> Result<()>;

    /// True only for an authentic grant of exactly this tool, definition and scope in this session.
    fn session_grant_valid(
        &self,
        session_id: &str,
        tool: &str,
        definition_sha256: &str,
        scope: &str,
    ) -> Result<bool>;

    /// Removes every grant of `session_id`; returns how many went.
    fn revoke_session(&self, session_id: &str) -> Result<u64>;
}

/// Tool pins, their flag overrides and the generation that moves on every pin write.
pub trait PinStore {
    /// Checks every item against its pin in one atomic step; one result per item, in order.
    fn observe_pins(
        &self,
        items: &[PinObservation<'_>],
        now: Timestamp,
    ) -> Result<Vec<Result<Observed>>>;

    /// Checks `pass.changed`, and `pass.unchanged` too unless no pin changed since `pass.generation`, reading
    /// the generation inside the same atomic step so a concurrent write is never missed.
    fn observe_pins_since(&self, pass: PinsSince<'_>, now: Timestamp) -> Result<SinceChecks>;

    /// The pins' generation: equal readings mean no pin changed in between, whoever wrote.
    fn pins_generation(&self) -> Result<u64>;

    /// Accepts the quarantined definition `expected_sha256` of `name`; `PinMismatch` when it is not the one.
    fn accept_pin(&self, name: &str, expected_sha256: &str, now: Timestamp) -> Result<ToolPin>;

    /// Overrides the flags of the accepted definition `sha256` of `name`; `PinMismatch` for any other.
    fn override_pin_flags(&self, name: &str, sha256: &str, now: Timestamp) -> Result<ToolPin>;

    /// The pin for `name`, if any.
    fn get_pin(&self, name: &str) -> Result<Option<ToolPin>>;

    /// Every pin, by name.
    fn list_pins(&self) -> Result<Vec<ToolPin>>;

    /// Checks one definition against its pin.
    fn observe_tool(
        &self,
        name: &str,
        definition: &Value,
        first_use: FirstUse,
        now: Timestamp,
    ) -> Result<PinCheck> {
        let item = PinObservation {
            name,
            definition,
            sha256: None,
            first_use,
        };
        let mut checks = self.observe_pins(std::slice::from_ref(&item), now)?;
        Ok(checks
            .pop()
            .ok_or_else(|| Error::Corrupt("no pin check".to_owned()))??
            .check)
    }
}

/// Metadata-only reporting events and the reports made of them.
pub trait ReportStore {
    /// Appends events (capped and sanitised) in one commit.
    fn record_events(&self, events: &[ReportEvent]) -> Result<()>;

    /// Deletes events beyond the retention limits; returns how many went.
    fn apply_retention(&self, retention: &Retention, now: Timestamp) -> Result<u64>;

    /// Number of stored events.
    fn event_count(&self) -> Result<u64>;

    /// The newest `limit` events at or after `since` (all when `None`), oldest first, as stored: metadata only,
    /// which is all an event holds.
    fn export_events(&self, since: Option<Timestamp>, limit: u64) -> Result<Vec<ReportEvent>>;

    /// Aggregates events at or after `since`, with nearest-rank duration percentiles.
    fn report(&self, group_by: GroupBy, since: Option<Timestamp>) -> Result<Report>;

    /// Appends one event.
    fn record_event(&self, event: &ReportEvent) -> Result<()> {
        self.record_events(std::slice::from_ref(event))
    }
}

/// Advisory leases on workspace paths, shared by every process on the same state (`locks`). A lease id is handed
/// out once and never readable back; an expired lease is none.
pub trait LockStore {
    /// Takes `path` for `owner` (a label; `holder` is the identity taking it) until `now + ttl_ms`, or renews it
    /// when `lease_id` names its live lease: of any number of racing acquirers, in any processes, exactly one
    /// holds it; the others get a conflict. A new lease is refused past the ceiling, and past `holder`'s share.
    fn acquire_lock(
        &self,
        path: &str,
        holder: &str,
        owner: &str,
        lease_id: Option<&str>,
        ttl_ms: u64,
        now: Timestamp,
    ) -> Result<Acquired>;

    /// Gives up `path` when `lease_id` holds it; another's lease stays.
    fn release_lock(&self, path: &str, lease_id: &str, now: Timestamp) -> Result<Released>;

    /// Who holds `path` at `now`, against the lease id a writer presents.
    fn check_lock(&self, path: &str, lease_id: Option<&str>, now: Timestamp) -> Result<LockCheck>;

    /// Every live lease, by path, without ids.
    fn list_locks(&self, now: Timestamp) -> Result<Vec<Lease>>;
}

/// The audit chain's witness: the newest head recorded as written and every anchor.
pub trait WitnessStore {
    /// The recorded head, if any.
    fn audit_head(&self) -> Result<Option<AuditHead>>;

    /// Moves the head forward to `head`; a head at or before the recorded one changes nothing.
    fn advance_audit_head(&self, head: &AuditHead, now: Timestamp) -> Result<()>;

    /// Records an anchor (once per hash).
    fn record_audit_anchor(
        &self,
        hash: &str,
        next_seq: u64,
        prev: &str,
        now: Timestamp,
    ) -> Result<()>;

    /// Every anchor, oldest first.
    fn audit_anchors(&self) -> Result<Vec<AuditAnchor>>;

    /// Every audit chain witnessed for this namespace, this handle's own included, by name. A store of one
    /// writer keeps one chain and answers none here (the default); a store replicas share keeps one per replica,
    /// so that `audit verify` can check them all.
    fn audit_chains(&self) -> Result<Vec<ChainWitness>> {
        Ok(Vec::new())
    }
}

/// Token buckets of rate limits, shared by every handle on the state (`rate`).
pub trait RateStore {
    /// Refills every bucket (each created full: `capacity` tokens, gaining `refill_per_ms` a millisecond) up to
    /// `now` and takes one token from each if each has one, else from none, in one atomic step: racing takers on
    /// any handles, in any processes, never get more tokens than a bucket holds, and a call one bucket refuses
    /// spends nothing of the others. Refused, `retry_after_ms` says when every bucket has a token and
    /// `limiting` which bucket waits longest. A take need not wake the feed's waiters (nobody waits on a
    /// bucket). `InvalidBucket` for no bucket, a key named twice, empty or longer than `MAX_BUCKET_KEY`, a
    /// capacity of 0 or a refill that is not positive.
    fn take_all(&self, buckets: &[BucketSpec<'_>], now: Timestamp) -> Result<TakenAll>;

    /// `take_all` of one bucket.
    fn take(&self, key: &str, capacity: u32, refill_per_ms: f64, now: Timestamp) -> Result<Taken> {
        let bucket = BucketSpec {
            key,
            capacity,
            refill_per_ms,
        };
        Ok(self.take_all(&[bucket], now)?.taken)
    }
}

/// "May anything have changed?": what held calls and the watch terminal wait on. A false "changed" costs the
/// caller one read; a missed change would leave it waiting until its deadline, so a backend errs on "changed".
/// A backend with notifications (LISTEN/NOTIFY, a pub/sub channel) answers `wait_for_change` from them; one
/// without polls something cheap.
pub trait ChangeFeed {
    /// Where the store stands now. Take it before reading what you will wait on. A mark means something only to
    /// the handle that made it: compare it on that handle.
    fn change_mark(&self) -> Result<ChangeMark>;

    /// Blocks until the store may have changed since `since`, or until `deadline`; moves `since` to what it saw.
    /// True when it may have changed. A change committed by any handle, in any process, ends the wait well
    /// before the deadline.
    fn wait_for_change(&self, since: &mut ChangeMark, deadline: Instant) -> Result<bool>;

    /// Writes committed through this handle so far: a counter the caller compares before and after a piece of
    /// work to wake its own waiters at once, without asking the database.
    fn own_writes(&self) -> u64;

    /// Whether the store may have changed since `mark`, without waiting; moves `mark` to now.
    fn changed_since(&self, mark: &mut ChangeMark) -> Result<bool> {
        let now = self.change_mark()?;
        let changed = now != *mark;
        *mark = now;
        Ok(changed)
    }
}

/// Everything durable the gateway keeps: what a backend implements.
pub trait StateStore:
    ApprovalStore
    + GrantStore
    + PinStore
    + ReportStore
    + LockStore
    + WitnessStore
    + RateStore
    + ChangeFeed
    + Debug
    + Send
    + Sync
{
    /// The backend's name, for diagnostics (`sqlite`).
    fn backend(&self) -> &'static str;

    /// What an audit writer records once a batch is in the log: its reporting events, and the witnessed head
    /// moved to `head`, in one commit (one sync instead of two): both are recorded or, on an error, neither.
    fn record_written(
        &self,
        events: &[ReportEvent],
        head: &AuditHead,
        now: Timestamp,
    ) -> Result<()>;
}
