//! The gateway crate's one error type: what can fail when its state opens, its policy loads, or its audit log
//! is verified, pruned or recovered. Each variant keeps the underlying error and says what was being done.
//!
//! Failures of governed requests are not errors of this kind: they are `outcome::CallOutcome`s.

/// An error of the gateway's own setup and maintenance operations.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the policy does not load: {0}")]
    Policy(policy::Error),
    #[error("profile {name:?}: {why}")]
    Profile { name: String, why: policy::Error },
    #[error("profile {name:?} sets {mode} mode, and this gateway serves {served} mode")]
    ProfileMode {
        name: String,
        mode: &'static str,
        served: &'static str,
    },
    #[error("{0}; restart toolgate to change it")]
    NeedsRestart(String),
    #[error("toolgate is shutting down")]
    ShuttingDown,
    #[error("state root: {0}")]
    StateRoot(store::Error),
    #[error("state for {workspace}: {why}")]
    Namespace {
        workspace: String,
        why: store::Error,
    },
    #[error("cannot open the state database: {0}")]
    Database(store::Error),
    #[error("cannot start the audit writer: {0}")]
    Writer(std::io::Error),
    #[error("cannot read the audit head: {0}")]
    AuditHead(store::Error),
    #[error("cannot read the audit witness: {0}")]
    AuditWitness(store::Error),
    #[error("audit witness {path}: {why}")]
    OutsideWitness { path: String, why: std::io::Error },
    #[error("cannot read the audit log: {0}")]
    AuditRead(audit::Error),
    #[error("cannot prune the audit log: {0}")]
    AuditPrune(audit::Error),
    #[error("cannot recover the audit log: {0}")]
    AuditRecover(audit::Error),
}
