//! The builtin crate's single error type, and its one mapping to Contract V1 outcomes.
//!
//! Domain refusals (escapes, symlinks, conflicts, failed hunks, a swapped executable) become structured tool
//! results; only malformed input and unknown tools stay protocol errors. The mapping is one exhaustive `match`
//! so a new variant cannot slip through unclassified.

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in a builtin tool.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The tool name is not one of ours.
    #[error("unknown tool: {0}")]
    UnknownTool(String),
    /// Arguments do not match the input schema.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// The workspace root is not an absolute, existing directory.
    #[error("invalid workspace root: {0}")]
    InvalidWorkspace(String),
    /// The path would leave the workspace, or is otherwise not acceptable (NUL, `..`, absolute elsewhere).
    #[error("path refused: {0}")]
    PathRefused(String),
    /// A mutation would go through a symbolic link.
    #[error("symbolic link on the path of a mutation: {0}")]
    SymlinkRefused(String),
    /// The file has more than one hard link, so its content may be shared with a file outside the workspace.
    #[error("file has {links} hard links and is refused: {path}")]
    HardLinked {
        /// Workspace-relative path.
        path: String,
        /// Link count.
        links: u64,
    },
    /// Nothing at that path.
    #[error("not found: {0}")]
    NotFound(String),
    /// Wrong kind of file (a directory where a file was expected, a FIFO, a device...).
    #[error("not a regular file or directory as required: {0}")]
    WrongKind(String),
    /// Over a size cap.
    #[error("{what} is {size} bytes, over the limit of {limit}")]
    TooLarge {
        /// What was too large.
        what: String,
        /// Its size.
        size: u64,
        /// The cap.
        limit: u64,
    },
    /// `expected_hash` did not match the current content.
    #[error("content changed: expected sha256 {expected}, found {actual}")]
    Conflict {
        /// Hash the caller expected.
        expected: String,
        /// Hash found (`absent` when the file does not exist).
        actual: String,
    },
    /// Another lease holds the file: nothing was written (or taken).
    #[error("{path} is locked by {owner} until {until}")]
    Locked {
        /// Workspace-relative path.
        path: String,
        /// The holder's label.
        owner: String,
        /// When the lease lapses unless renewed (RFC 3339).
        until: String,
    },
    /// The lease presented no longer holds the file (it lapsed or was released): what was read may be stale.
    #[error("the lease presented no longer holds {0}: read the file again and take a new lock")]
    LockMissing(String),
    /// There is no state store to keep leases in.
    #[error("file locks need the state store, and this gateway has none")]
    LocksUnavailable,
    /// As many leases are live as the store holds.
    #[error("{0} file locks are held already; release some or let them lapse")]
    TooManyLocks(u64),
    /// The caller's identity holds as many leases as its share.
    #[error("you hold {0} file locks already (your share); release some or let them lapse")]
    TooManyLocksHeld(u64),
    /// The state store failed while taking, checking or releasing a lease.
    #[error("the lock store failed: {0}")]
    LockStore(String),
    /// A patch did not apply; nothing was written.
    #[error("hunk {hunk} of {path} does not apply: {reason}")]
    PatchFailed {
        /// File the hunk belongs to.
        path: String,
        /// 1-based hunk number within that file (0 when the file itself is the problem).
        hunk: usize,
        /// Why.
        reason: String,
    },
    /// The executable approved for `shell_run` is no longer the same file.
    #[error("executable changed since approval: {0}")]
    ExecutableChanged(String),
    /// The program could not be resolved to an executable file.
    #[error("executable not found: {0}")]
    ExecutableNotFound(String),
    /// No git executable on this machine.
    #[error("git is not available: {0}")]
    GitUnavailable(String),
    /// The sandbox refused to run the command.
    #[error(transparent)]
    Sandbox(#[from] sandbox::Error),
    /// Unexpected I/O failure.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
}

/// Contract V1 outcome for a domain error, the stable error code, and whether retrying can help.
pub(crate) struct Classified {
    pub outcome: &'static str,
    pub code: &'static str,
    pub retryable: bool,
}

impl Error {
    /// `None` for errors that must stay protocol (tool) errors rather than structured results.
    pub(crate) fn classify(&self) -> Option<Classified> {
        let c = |outcome, code, retryable| {
            Some(Classified {
                outcome,
                code,
                retryable,
            })
        };
        match self {
            Error::UnknownTool(_) | Error::InvalidArguments(_) => None,
            Error::InvalidWorkspace(_) => c("FAILED", "INVALID_WORKSPACE", false),
            Error::PathRefused(_) => c("REFUSED", "PATH_OUTSIDE_WORKSPACE", false),
            Error::SymlinkRefused(_) => c("REFUSED", "SYMLINK_REFUSED", false),
            Error::HardLinked { .. } => c("REFUSED", "HARD_LINK_REFUSED", false),
            Error::NotFound(_) => c("REFUSED", "NOT_FOUND", false),
            Error::WrongKind(_) => c("REFUSED", "WRONG_FILE_TYPE", false),
            Error::TooLarge { .. } => c("REFUSED", "TOO_LARGE", false),
            Error::Conflict { .. } => c("CONFLICT", "HASH_MISMATCH", true),
            Error::PatchFailed { .. } => c("CONFLICT", "PATCH_HUNK_FAILED", true),
            Error::Locked { .. } => c("CONFLICT", "LOCK_CONFLICT", true),
            Error::LockMissing(_) => c("CONFLICT", "LOCK_MISSING", false),
            Error::LocksUnavailable => c("FAILED", "LOCKS_UNAVAILABLE", false),
            Error::TooManyLocks(_) | Error::TooManyLocksHeld(_) => {
                c("REFUSED", "TOO_MANY_LOCKS", true)
            }
            Error::LockStore(_) => c("FAILED", "LOCK_STORE_FAILED", true),
            Error::ExecutableChanged(_) => c("REFUSED", "EXECUTABLE_CHANGED", false),
            Error::ExecutableNotFound(_) => c("REFUSED", "EXECUTABLE_NOT_FOUND", false),
            Error::GitUnavailable(_) => c("FAILED", "GIT_UNAVAILABLE", false),
            Error::Sandbox(sandbox::Error::InvalidSpec(_)) => {
                c("REFUSED", "INVALID_COMMAND", false)
            }
            Error::Sandbox(sandbox::Error::RequiredLayerNotActive { .. }) => {
                c("REFUSED", "SANDBOX_LAYER_UNAVAILABLE", false)
            }
            Error::Sandbox(sandbox::Error::ProtectedPathExposed { .. }) => {
                c("REFUSED", "SANDBOX_PROTECTED_PATH", false)
            }
            Error::Sandbox(sandbox::Error::Setup(_)) => c("FAILED", "SANDBOX_SETUP_FAILED", true),
            Error::Io(_) => c("FAILED", "IO_ERROR", true),
        }
    }
}
