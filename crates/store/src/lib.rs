//! Durable gateway state behind one trait, `StateStore` (`backend`), with SQLite under the trusted state root as
//! its default implementation (`SqliteStore`): approvals, session grants, pins, reporting events, advisory path
//! leases, the audit chain's witness and the change feed held calls wait on. Approval and grant rows are sealed
//! (HMAC-SHA256 with a key in the state root), so a row changed by anything but toolgate is refused.
//!
//! The crate resolves the state root, binds one namespace per canonical workspace, and keeps
//! every piece of durable gateway state in that namespace's database. It never prints, never
//! reads the clock for decisions (callers pass `now`), and never interprets approval
//! snapshots or enforces policy: those belong to the gateway and the policy crate.

#![deny(clippy::print_stdout)]

mod approval_rows;
mod approval_space;
mod approvals;
mod audit_chain;
mod backend;
mod changes;
mod db;
mod error;
mod events;
mod grants;
mod handle;
mod locks;
mod namespace;
mod operator;
mod pins;
mod postgres;
mod rate;
mod report;
mod report_render;
mod seal;
mod sqlite;
mod time;
mod token;

pub use approvals::{
    Approval, ApprovalHandle, ApprovalStatus, NewRequest, PruneMode, PrunedApproval,
};
pub use audit_chain::{AuditAnchor, AuditHead, ChainWitness};
pub use backend::{
    ApprovalStore, ChangeFeed, GrantStore, LockStore, PinStore, RateStore, ReportStore, StateStore,
    WitnessStore,
};
pub use changes::ChangeMark;
pub use error::{Error, Result};
pub use events::{Decision, ReportEvent, Retention, OUTCOME_SUCCEEDED};
pub use handle::{Limits, Store, StoreStats};
pub use locks::{Acquired, Lease, LockCheck, Released};
// The form pins are stored in (`ToolPin::definition_json`), re-exported for callers that hash the same way.
pub use jsonrpc::canonical_json;
pub use namespace::{
    bind_state_root, pending_elsewhere, pending_under, resolve_state_root, Namespace,
    StateRootInputs,
};
pub use operator::{
    ensure_operator_key, operator_key_matches, operator_key_path, OPERATOR_KEY_FILE,
};
pub use pins::{
    definition_hash, FirstUse, Observed, PinCheck, PinObservation, PinState, PinsSince,
    SinceChecks, ToolPin,
};
pub use postgres::{Migrated, PgOptions, PostgresStore, POSTGRES_SCHEMA_VERSION};
pub use rate::{BucketSpec, Taken, TakenAll, MAX_BUCKET_KEY};
pub use report::{percentile_nearest_rank, GroupBy, ReasonCount, Report, ReportRow};
pub use report_render::ReportFormat;
pub use sqlite::SqliteStore;
pub use time::Timestamp;
pub use token::{TokenKey, MAX_TOKEN_PAYLOAD};
