//! The store traits for `PostgresStore`: each method is one read or one write transaction over the modules
//! that hold the statements. This file adds no rule of its own.

use std::time::Instant;

use super::rest::Acquire;
use super::{approvals, events, pins, rate, rest, PostgresStore};
use crate::approvals::{Approval, ApprovalStatus, NewRequest, PruneMode, PrunedApproval};
use crate::audit_chain::{AuditAnchor, AuditHead, ChainWitness};
use crate::backend::{
    ApprovalStore, ChangeFeed, GrantStore, LockStore, PinStore, RateStore, ReportStore,
    WitnessStore,
};
use crate::changes::ChangeMark;
use crate::error::{Error, Result};
use crate::events::{ReportEvent, Retention};
use crate::handle::Limits;
use crate::locks::{Acquired, Lease, LockCheck, Released};
use crate::pins::{Observed, PinObservation, PinsSince, SinceChecks, ToolPin};
use crate::rate::{BucketSpec, TakenAll};
use crate::report::{GroupBy, Report};
use crate::time::Timestamp;

impl ApprovalStore for PostgresStore {
    fn limits(&self) -> Limits {
        self.scope.limits
    }

    fn create_held_request(&self, new: &NewRequest<'_>) -> Result<Approval> {
        self.write(|tx, s| approvals::create(tx, s, new))
    }

    fn get_request(&self, id: &str, now: Timestamp) -> Result<Approval> {
        self.read(|tx, s| approvals::get(tx, s, id, now))
    }

    fn list_requests(
        &self,
        status: Option<ApprovalStatus>,
        now: Timestamp,
    ) -> Result<Vec<Approval>> {
        self.read(|tx, s| approvals::list(tx, s, status, now))
    }

    fn find_approved(
        &self,
        session_id: &str,
        snapshot_sha256: &str,
        now: Timestamp,
    ) -> Result<Option<String>> {
        self.read(|tx, s| approvals::find_approved(tx, s, session_id, snapshot_sha256, now))
    }

    fn decide(
        &self,
        id: &str,
        to: ApprovalStatus,
        decided_by: &str,
        now: Timestamp,
    ) -> Result<Approval> {
        if !matches!(
            to,
            ApprovalStatus::Approved | ApprovalStatus::Rejected | ApprovalStatus::Cancelled
        ) {
            return Err(Error::InvalidTransition(to));
        }
        let decided_by = crate::approvals::cap(decided_by);
        self.write(|tx, s| {
            approvals::transition(tx, s, id, ApprovalStatus::Pending, now, |row| {
                row.status = to;
                row.decided_at = Some(now.as_millis());
                row.decided_by = Some(decided_by);
            })
        })
    }

    fn consume(&self, id: &str, now: Timestamp) -> Result<Approval> {
        self.write(|tx, s| {
            approvals::transition(tx, s, id, ApprovalStatus::Approved, now, |row| {
                row.status = ApprovalStatus::Consumed;
                row.consumed_at = Some(now.as_millis());
            })
        })
    }

    fn expire_due(&self, now: Timestamp) -> Result<u64> {
        self.write(|tx, s| approvals::expire_due(tx, s, now))
    }

    fn prune_approvals(
        &self,
        older_than_days: u32,
        now: Timestamp,
        mode: PruneMode,
    ) -> Result<Vec<PrunedApproval>> {
        self.write(|tx, s| approvals::prune(tx, s, older_than_days, now, mode))
    }
}

impl GrantStore for PostgresStore {
    fn grant_session(
        &self,
        session_id: &str,
        tool: &str,
        definition_sha256: &str,
        scope: &str,
        now: Timestamp,
    ) -> Result<()> {
        self.write(|tx, s| rest::grant(tx, s, session_id, tool, definition_sha256, scope, now))
    }

    fn session_grant_valid(
        &self,
        session_id: &str,
        tool: &str,
        definition_sha256: &str,
        scope: &str,
    ) -> Result<bool> {
        self.read(|tx, s| rest::grant_valid(tx, s, session_id, tool, definition_sha256, scope))
    }

    fn revoke_session(&self, session_id: &str) -> Result<u64> {
        self.write(|tx, s| rest::revoke(tx, &s.ns, session_id))
    }
}

impl PinStore for PostgresStore {
    fn observe_pins(
        &self,
        items: &[PinObservation<'_>],
        now: Timestamp,
    ) -> Result<Vec<Result<Observed>>> {
        self.write(|tx, s| pins::observe(tx, &s.ns, items, now))
    }

    fn observe_pins_since(&self, pass: PinsSince<'_>, now: Timestamp) -> Result<SinceChecks> {
        if pass.changed.is_empty() {
            let current = self.pins_generation()?;
            if Some(current) == pass.generation {
                return Ok(SinceChecks {
                    changed: Vec::new(),
                    unchanged: None,
                    generation: current,
                });
            }
        }
        self.write(|tx, s| pins::observe_since(tx, &s.ns, pass, now))
    }

    fn pins_generation(&self) -> Result<u64> {
        self.read(|tx, s| pins::generation(tx, &s.ns))
    }

    fn accept_pin(&self, name: &str, expected_sha256: &str, now: Timestamp) -> Result<ToolPin> {
        self.write(|tx, s| pins::accept(tx, &s.ns, name, expected_sha256, now))
    }

    fn override_pin_flags(&self, name: &str, sha256: &str, now: Timestamp) -> Result<ToolPin> {
        self.write(|tx, s| pins::override_flags(tx, &s.ns, name, sha256, now))
    }

    fn get_pin(&self, name: &str) -> Result<Option<ToolPin>> {
        self.read(|tx, s| pins::get(tx, &s.ns, name))
    }

    fn list_pins(&self) -> Result<Vec<ToolPin>> {
        self.read(|tx, s| pins::list(tx, &s.ns))
    }
}

impl ReportStore for PostgresStore {
    fn record_events(&self, list: &[ReportEvent]) -> Result<()> {
        self.write(|tx, s| events::record(tx, &s.ns, list))
    }

    fn apply_retention(&self, retention: &Retention, now: Timestamp) -> Result<u64> {
        self.write(|tx, s| events::retain(tx, &s.ns, retention, now))
    }

    fn event_count(&self) -> Result<u64> {
        self.read(|tx, s| events::count(tx, &s.ns))
    }

    fn export_events(&self, since: Option<Timestamp>, limit: u64) -> Result<Vec<ReportEvent>> {
        self.read(|tx, s| events::export(tx, &s.ns, since, limit))
    }

    fn report(&self, group_by: GroupBy, since: Option<Timestamp>) -> Result<Report> {
        self.read(|tx, s| events::report(tx, &s.ns, group_by, since))
    }
}

impl LockStore for PostgresStore {
    fn acquire_lock(
        &self,
        path: &str,
        holder: &str,
        owner: &str,
        lease_id: Option<&str>,
        ttl_ms: u64,
        now: Timestamp,
    ) -> Result<Acquired> {
        let acquire = Acquire {
            path,
            holder,
            owner,
            lease_id,
            ttl_ms,
            now,
        };
        self.write(|tx, s| rest::acquire(tx, s, &acquire))
    }

    fn release_lock(&self, path: &str, lease_id: &str, now: Timestamp) -> Result<Released> {
        self.write(|tx, s| rest::release(tx, &s.ns, path, lease_id, now))
    }

    fn check_lock(&self, path: &str, lease_id: Option<&str>, now: Timestamp) -> Result<LockCheck> {
        self.read(|tx, s| rest::check(tx, &s.ns, path, lease_id, now))
    }

    fn list_locks(&self, now: Timestamp) -> Result<Vec<Lease>> {
        self.read(|tx, s| rest::list(tx, &s.ns, now))
    }
}

impl RateStore for PostgresStore {
    fn take_all(&self, buckets: &[BucketSpec<'_>], now: Timestamp) -> Result<TakenAll> {
        self.write(|tx, s| rate::take(tx, &s.ns, buckets, now))
    }
}

impl WitnessStore for PostgresStore {
    fn audit_head(&self) -> Result<Option<AuditHead>> {
        self.read(|tx, s| rest::head(tx, &s.ns, &s.chain))
    }

    fn advance_audit_head(&self, head: &AuditHead, now: Timestamp) -> Result<()> {
        self.write(|tx, s| rest::advance_head(tx, &s.ns, &s.chain, head, now))
    }

    fn record_audit_anchor(
        &self,
        hash: &str,
        next_seq: u64,
        prev: &str,
        now: Timestamp,
    ) -> Result<()> {
        self.write(|tx, s| rest::record_anchor(tx, &s.ns, &s.chain, (hash, next_seq, prev), now))
    }

    fn audit_anchors(&self) -> Result<Vec<AuditAnchor>> {
        self.read(|tx, s| rest::anchors(tx, &s.ns, &s.chain))
    }

    fn audit_chains(&self) -> Result<Vec<ChainWitness>> {
        self.read(|tx, s| rest::chains(tx, &s.ns))
    }
}

impl ChangeFeed for PostgresStore {
    fn change_mark(&self) -> Result<ChangeMark> {
        self.feed.mark(&self.pool)
    }

    fn wait_for_change(&self, since: &mut ChangeMark, deadline: Instant) -> Result<bool> {
        Ok(self.feed.wait(since, deadline))
    }

    fn own_writes(&self) -> u64 {
        self.feed.own_writes()
    }
}
