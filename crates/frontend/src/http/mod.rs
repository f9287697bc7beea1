//! The Streamable HTTP front end: who may call (`auth`) and the admin surface (`admin`). The transport itself
//! lives beside them.

pub(crate) mod auth;

use std::path::PathBuf;

/// What keeps the HTTP front end from starting.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// The JWKS file named by `http.auth.jwt.jwksFile` is missing or malformed.
    #[error("the JWKS file {path} cannot be used: {why}")]
    Jwks { path: PathBuf, why: String },
}
