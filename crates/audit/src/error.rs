//! The one error type of the audit crate and its `Result` alias.
//!
//! Appends report errors to their caller (and count them) but never panic; what a failed
//! append means for the call that caused it is the caller's decision. This module only
//! names what can go wrong.

/// Everything that can go wrong in the audit crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Filesystem failure.
    #[error("audit I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// JSON (de)serialisation failure.
    #[error("audit JSON error: {0}")]
    Json(#[from] serde_json::Error),
    /// The last line of the log is not a complete audit record; appending after it would
    /// hide the damage, so the writer refuses until an administrator looks.
    #[error("audit log tail is not a complete record")]
    CorruptTail,
    /// The log's end is not where the witness says the chain got to: it was cut or rewritten
    /// since. Appending after it would bury the damage, so the writer refuses.
    #[error("audit log does not match its recorded head: {0}")]
    Witness(crate::chain::ProblemKind),
    /// The log failed verification; maintenance refuses to rewrite a damaged log.
    #[error("audit log failed verification at line {line}: {problem}")]
    Tampered {
        /// 1-based line number of the first problem.
        line: u64,
        /// What was wrong there.
        problem: String,
    },
}

/// Result alias for the audit crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
