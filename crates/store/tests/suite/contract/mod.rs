//! The contract every `StateStore` keeps, written once against the trait and run against each backend.
//!
//! A backend is run by one line at the bottom of this file: `contract!(name: Type)`, where `Type` implements
//! `Backend` (make a fresh, empty state; open another handle on it). Each case opens its own fresh state. The
//! cases only use the trait: what is SQLite's own (seals, schema, files) is tested in the other modules, what is
//! PostgreSQL's own (migrations, replicas in other processes, a restarted server) in `pg`.

mod approvals;
mod feed;
mod locks;
mod rate;
mod rest;

use std::sync::Arc;

use serde_json::{json, Value};
use store::{Limits, Namespace, PostgresStore, SqliteStore, StateStore, Timestamp};

pub use crate::support::{MINUTE, T0};

/// How a backend is brought up for one case.
pub trait Backend: Sized {
    /// A fresh, empty state enforcing `limits`.
    fn fresh(limits: Limits) -> Self;
    /// Another handle on the same state, as another replica or process would hold it.
    fn handle(&self) -> Arc<dyn StateStore>;
}

/// A snapshot whose content names `n`, so requests differ.
pub fn snapshot(n: u64) -> Value {
    json!({"tool": {"server": "fx", "name": "write"}, "arguments": {"n": n}})
}

/// Creates a PENDING request expiring a minute after `T0`.
pub fn pending(s: &dyn StateStore, n: u64) -> String {
    s.create_request("trace", &snapshot(n), T0, T0.plus_millis(MINUTE))
        .unwrap()
        .id
}

/// The instant `ms` after `T0`.
pub fn at(ms: i64) -> Timestamp {
    T0.plus_millis(ms)
}

/// The default backend: a namespace in a temporary state root; each handle is a connection of its own.
pub struct Sqlite {
    /// Holds the temporary directories for as long as the case runs.
    _env: crate::support::Env,
    namespace: Namespace,
    limits: Limits,
}

impl Backend for Sqlite {
    fn fresh(limits: Limits) -> Self {
        let env = crate::support::Env::new();
        let namespace = env.namespace();
        Self {
            _env: env,
            namespace,
            limits,
        }
    }

    fn handle(&self) -> Arc<dyn StateStore> {
        Arc::new(SqliteStore::open_with_limits(&self.namespace, self.limits).unwrap())
    }
}

/// A namespace of its own in the process's private PostgreSQL cluster (one database, migrated once); each handle
/// is a pool of its own, as another replica's would be.
pub struct Postgres {
    _env: crate::support::Env,
    namespace: Namespace,
    limits: Limits,
}

impl Backend for Postgres {
    fn fresh(limits: Limits) -> Self {
        let env = crate::support::Env::new();
        let namespace = env.namespace();
        Self {
            _env: env,
            namespace,
            limits,
        }
    }

    fn handle(&self) -> Arc<dyn StateStore> {
        Arc::new(
            PostgresStore::open_with_limits(&crate::pg::url(), &self.namespace, self.limits)
                .unwrap(),
        )
    }
}

/// One test per case, for backend `$ty`, in module `$name`.
macro_rules! contract {
    ($name:ident: $ty:ty) => {
        mod $name {
            use super::*;

            contract!(@cases $ty;
                approvals::pending_becomes_approved_rejected_or_cancelled_once,
                approvals::a_request_past_its_expiry_is_expired_and_cannot_be_decided,
                approvals::expire_due_persists_expiry,
                approvals::an_approved_request_is_consumed_exactly_once,
                approvals::racing_consumers_on_separate_handles_have_one_winner,
                approvals::racing_consumers_on_one_shared_handle_have_one_winner,
                approvals::per_session_cap_of_waiting_requests,
                approvals::per_identity_cap_counts_every_session,
                approvals::store_ceilings_refuse_what_does_not_fit,
                approvals::unknown_ids_are_not_found,
                approvals::listing_filters_by_effective_status_newest_first,
                approvals::find_approved_names_only_an_approved_request_of_that_session,
                approvals::prune_removes_only_finished_requests,
                rest::grants_cover_exactly_their_session_tool_definition_and_scope,
                rest::pins_quarantine_on_change_and_accept_only_the_named_definition,
                rest::pin_generation_moves_on_every_pin_write_by_any_handle,
                rest::a_pass_advances_the_generation_once_for_all_its_writes,
                rest::a_run_of_first_sightings_still_finds_the_pins_among_them,
                rest::flag_overrides_name_the_accepted_definition,
                rest::report_percentiles_rates_and_since,
                rest::retention_keeps_the_newest_events,
                rest::export_gives_the_newest_events_oldest_first_as_stored,
                rest::audit_head_only_moves_forward_and_anchors_are_kept_once,
                rest::a_written_batch_records_its_events_and_head_together,
                locks::a_lease_is_held_renewed_and_released_by_its_holder_alone,
                locks::a_lapsed_lease_is_no_lease,
                locks::racing_acquirers_on_separate_handles_get_one_lease,
                locks::live_leases_are_bounded,
                locks::one_identity_cannot_take_every_lease,
                rate::a_burst_then_a_refusal_with_a_retry_hint,
                rate::a_bucket_refills_over_time_up_to_its_capacity,
                rate::racing_takers_on_separate_handles_never_exceed_the_capacity,
                rate::bad_bucket_keys_and_rates_are_refused,
                rate::a_call_one_bucket_refuses_spends_nothing_of_the_others,
                rate::takers_of_the_same_buckets_in_any_order_all_finish_within_capacity,
                feed::a_change_by_another_handle_wakes_a_waiter_before_its_deadline,
                feed::a_write_through_the_same_handle_wakes_its_waiter,
                feed::without_a_change_the_wait_lasts_until_the_deadline,
                feed::own_writes_count_writes_not_reads_or_refusals
            );
        }
    };
    (@cases $ty:ty; $($module:ident::$case:ident),* $(,)?) => {
        $(#[test] fn $case() { $module::$case::<$ty>() })*
    };
}

contract!(sqlite: Sqlite);
contract!(postgres: Postgres);
