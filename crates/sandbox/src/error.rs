//! The sandbox crate's single error type.
//!
//! Errors here mean "refused before anything ran" (bad spec, a required layer that cannot be activated) or an
//! internal setup failure. A command that started and then failed or timed out is a [`crate::RunResult`], not an
//! error.

use crate::layers::Layer;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a command was not run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The spec itself is malformed (relative program, NUL byte, zero timeout, ...).
    #[error("invalid command spec: {0}")]
    InvalidSpec(String),
    /// The caller required a layer and it could not be activated: fail closed.
    #[error("required sandbox layer {layer} is not active: {reason}")]
    RequiredLayerNotActive {
        /// Which layer.
        layer: Layer,
        /// Why it is not active.
        reason: String,
    },
    /// A writable path contains or lies inside a path no command may reach (the state root, the config file).
    #[error(
        "refusing to run: the writable path {} would expose the protected path {}",
        writable.display(),
        protected.display()
    )]
    ProtectedPathExposed {
        /// The protected path.
        protected: std::path::PathBuf,
        /// The writable path that contains it or lies inside it.
        writable: std::path::PathBuf,
    },
    /// The parent could not set up pipes or descriptors for the child.
    #[error("sandbox setup failed: {0}")]
    Setup(#[from] std::io::Error),
}
