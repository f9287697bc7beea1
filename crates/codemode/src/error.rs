//! The crate's error type.

/// What can go wrong outside a program's own failures (those are a [`crate::RunEnd`]).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("code mode file: {0}")]
    File(String),
    #[error("code mode worker: {0}")]
    Worker(String),
}

pub type Result<T> = std::result::Result<T, Error>;
