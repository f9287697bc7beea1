//! The one error type of this crate. Messages name keys, variables and files, never secret values.

use std::path::PathBuf;

pub type Result<T, E = ConfigError> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    // The io error is part of the message and deliberately not a `source`: printed as a chain it would appear
    // twice.
    #[error("cannot read config file {path}: {error}")]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{path}: invalid {format}: {message}")]
    Syntax {
        path: String,
        format: &'static str,
        message: String,
    },
    #[error("{key}: {message}")]
    Invalid { key: String, message: String },
    /// Clients start servers with a trimmed environment, so this is the commonest start-up failure: the message
    /// says where the reference is and how to fix it.
    #[error(
        "{key} in {file} references ${{{var}}}, which is not set in toolgate's environment; set {var} in the \
         \"env\" block of toolgate's entry in the client's config (clients pass servers only a few variables), \
         or write ${{{var}:-default}}"
    )]
    MissingVariable {
        key: String,
        var: String,
        file: PathBuf,
    },
    /// A reference only the client can resolve (`${input:token}` prompts the user in VS Code).
    #[error("{key} references {reference}, which {why}")]
    Unresolvable {
        key: String,
        reference: String,
        why: String,
    },
    /// A file of another kind given as the config (a ToolFence policy), refused with what to do instead.
    #[error("{path} is not a toolgate config: {why}")]
    NotAConfig { path: PathBuf, why: &'static str },
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
