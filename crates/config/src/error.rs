//! The one error type of this crate. Messages name keys and variables, never secret values.

use std::path::PathBuf;

pub type Result<T, E = ConfigError> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: invalid {format}: {message}")]
    Syntax {
        path: String,
        format: &'static str,
        message: String,
    },
    #[error("{key}: {message}")]
    Invalid { key: String, message: String },
    #[error("{key} references ${{{var}}}, which is not set in toolgate's environment")]
    MissingVariable { key: String, var: String },
    #[error("unknown key {key}{hint}")]
    UnknownKey { key: String, hint: String },
    #[error("{key} is not supported yet by this version of toolgate: {why}")]
    NotYetSupported { key: String, why: &'static str },
}

impl ConfigError {
    pub(crate) fn invalid(key: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Invalid {
            key: key.into(),
            message: message.into(),
        }
    }
}
