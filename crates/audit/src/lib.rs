//! Privacy-first audit: bounded JSON Lines events, redaction, hash chain.
//!
//! The gateway reports each decision, approval transition and execution as an
//! `AuditEvent`; `AuditLog` redacts and caps it, chains it to the previous record and
//! appends it to `audit.jsonl` in the namespace directory. Raw arguments and results never
//! reach the log, only their size and SHA-256. The crate never prints; an append failure is
//! returned and counted, and the caller decides what it stops (the gateway stops calls).
//! What the log cannot prove about itself (where its end is, which anchors are genuine) is
//! checked against a `Witness` the caller keeps elsewhere. Choosing the directory is the
//! store crate's job; deciding what to audit is the gateway's.

#![deny(clippy::print_stdout)]

mod chain;
mod error;
mod event;
mod lock;
mod log;
mod maintain;
mod print;
mod redact;
mod time;
mod witness;

pub use chain::{verify_text, verify_text_with, Problem, ProblemKind, VerifyReport, GENESIS};
pub use error::{Error, Result};
pub use event::{
    AuditEvent, Digest, EventKind, MAX_FIELD_CHARS, MAX_RESOURCES, MAX_RESOURCE_CHARS,
};
pub use jsonrpc::canonical_json;
pub use log::{valid_chain, AuditLog, LOG_FILE};
pub use maintain::{PruneMode, PrunePlan, Recovery};
pub use print::redact_remembered;
pub use redact::{
    prepare as prepare_redaction, prepared as redaction_prepared, redact, redact_json, redact_map,
    REDACTED,
};
pub use witness::{Anchor, Head, Witness};
