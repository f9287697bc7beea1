//! The one error type of the store crate and its `Result` alias.
//!
//! Variants are shaped for callers that must map them to user-facing outcomes
//! (Contract V1 codes, CLI exit codes); this module does no such mapping itself.

use std::path::PathBuf;

use crate::approvals::ApprovalStatus;

/// Everything that can go wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No state root could be determined (no explicit root, no XDG state dir, no home).
    #[error("no state directory: set TOOLGATE_STATE_DIR or HOME")]
    NoStateDir,
    /// The explicit state root was not an absolute path.
    #[error("state root must be an absolute path")]
    StateRootNotAbsolute,
    /// The workspace is not an existing directory.
    #[error("workspace is not a directory: {0}")]
    WorkspaceNotDirectory(PathBuf),
    /// The state root lies inside the workspace, where workspace tools could edit it.
    #[error("state root must be outside the workspace")]
    StateRootInsideWorkspace,
    /// The namespace is already bound to another workspace; bindings are never reassigned.
    #[error("state namespace belongs to a different workspace")]
    NamespaceBoundElsewhere,
    /// The binding file exists but cannot be understood; refused rather than rewritten.
    #[error("state namespace binding is unreadable")]
    CorruptBinding,
    /// The database was written by a newer toolgate; refusing avoids misreading it.
    #[error("database schema version {found} is newer than supported version {supported}")]
    SchemaTooNew {
        /// Version found on disk.
        found: i64,
        /// Highest version this build understands.
        supported: i64,
    },
    /// The shared database's schema is older than this build needs; migrations run only when asked.
    #[error(
        "the state database's schema is at version {found}, this toolgate needs version {needed}: run \
         `toolgate store migrate` (with the same config) first"
    )]
    SchemaBehind {
        /// Version found in the database.
        found: i64,
        /// Version this build needs.
        needed: i64,
    },
    /// The shared database cannot be reached (gone, restarting, refusing, or not answering in time). Calls
    /// fail closed until it answers again.
    #[error(
        "the state database cannot be reached ({0}); calls are refused until it answers again"
    )]
    Unavailable(String),
    /// The shared database refused a statement.
    #[error("state database error: {0}")]
    Postgres(String),
    /// The store URL cannot be read; the message never repeats the URL, which may hold a password.
    #[error("the store url is not a valid postgres:// URL: {0}")]
    StoreUrl(String),
    /// The namespace's rows in the shared database are sealed with another key than this state root's.
    #[error(
        "this state root's approval.key is not the key this workspace's rows in the state database are sealed \
         with: every replica sharing the database needs the same approval.key (copy it, mode 0600)"
    )]
    SealKeyMismatch,
    /// Unknown id, or an id that belongs to another workspace (deliberately indistinguishable).
    #[error("REQUEST_NOT_FOUND")]
    RequestNotFound,
    /// The request is past its expiry.
    #[error("approval request has expired")]
    Expired,
    /// The request is not in the state the transition needs.
    #[error("approval request is {0}, not eligible for this transition")]
    InvalidTransition(ApprovalStatus),
    /// No pin with that name awaits acceptance of that definition hash.
    #[error("no pin awaits acceptance of that definition")]
    PinMismatch,
    /// The approval store holds its maximum number of records; nothing is evicted.
    #[error(
        "approval store is full ({limit} live records); decide or let pending requests expire"
    )]
    StoreFull {
        /// The record ceiling.
        limit: u64,
    },
    /// The approval store's snapshots would exceed their total size ceiling.
    #[error("approval store snapshot bytes would exceed {limit}")]
    StoreBytesFull {
        /// The byte ceiling.
        limit: u64,
    },
    /// One snapshot is larger than allowed.
    #[error("approval snapshot is {size} bytes, limit {limit}")]
    SnapshotTooLarge {
        /// Serialized size of the snapshot.
        size: u64,
        /// The per-snapshot ceiling.
        limit: u64,
    },
    /// A value in the database violates an invariant (corruption or a foreign writer).
    #[error("corrupt store row: {0}")]
    Corrupt(String),
    /// The row's seal does not verify: it was not written by toolgate as it stands (edited, inserted or copied
    /// by something else). It is never approved, consumed or executed.
    #[error("approval record failed its integrity check (tampered); it will not be used")]
    Tampered,
    /// A secret in the state root (the approval key, the operator key) can be read by other users, so it may be
    /// known; refused, not trusted.
    #[error("{0} in the state root is readable by other users; make it owner-only (chmod 600)")]
    SecretExposed(String),
    /// As many path leases are live as the store holds; nothing is evicted.
    #[error(
        "{limit} path locks are held already (the store's ceiling); release some or let them lapse"
    )]
    LocksFull {
        /// The ceiling.
        limit: u64,
    },
    /// The identity taking a lease holds as many as its share allows.
    #[error(
        "this identity holds {limit} path locks already (its share); release some or let them lapse"
    )]
    LocksShareFull {
        /// The share.
        limit: u64,
    },
    /// The session already has as many requests waiting for a human as it may.
    #[error(
        "this session already has {limit} approval requests waiting for a human (the per-session cap); \
         decide or let them expire before asking for more"
    )]
    SessionPendingFull {
        /// The per-session cap.
        limit: u64,
    },
    /// The identity already has as many requests waiting for a human as it may, over all its sessions.
    #[error(
        "this identity already has {limit} approval requests waiting for a human over its sessions (the \
         per-identity cap); decide or let them expire before asking for more"
    )]
    IdentityPendingFull {
        /// The per-identity cap.
        limit: u64,
    },
    /// A rate-limit bucket the store cannot keep: its key is empty or too long, or its capacity or refill is not
    /// positive.
    #[error("invalid rate-limit bucket: {0}")]
    InvalidBucket(String),
    /// The OS random number generator failed; no id is better than a guessable id.
    #[error("OS random number generator failed")]
    Rng,
    /// Filesystem failure.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// SQLite failure.
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// JSON (de)serialisation failure.
    #[error("JSON error: {0}")]
    Json(#[from] serde_json::Error),
}

/// Result alias for the store crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
