//! Who sent a request to the HTTP front end. This version authenticates nobody: with no `http.auth` configured
//! every request is the anonymous principal; with API keys or a JWT section configured, every request is
//! refused with 401, since nothing here can verify a bearer yet (fail closed rather than let anyone in).
//! It does not decide what a principal may do; the gateway's profile and identity binding do.

use crate::http::HttpError;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// Turns a request's headers into the principal that sent it.
pub(crate) struct Authenticator {
    /// Whether `http.auth` names any way to authenticate.
    configured: bool,
}

impl Authenticator {
    /// Loads what `auth` names; nothing to load while bearer verification is not built.
    pub(crate) fn new(auth: &config::HttpAuth) -> Result<Self, HttpError> {
        Ok(Self {
            configured: auth.any(),
        })
    }

    /// Whether anybody can authenticate at all (a non-loopback bind needs this).
    pub(crate) fn configured(&self) -> bool {
        self.configured
    }

    /// The caller of one request: `Principal::anonymous()` when no auth is configured; otherwise a refusal,
    /// since no bearer can be verified here.
    pub(crate) fn authenticate(&self, _headers: &HeaderMap) -> Result<Principal, Rejection> {
        if self.configured {
            return Err(Rejection {
                status: StatusCode::UNAUTHORIZED,
                www_authenticate: HeaderValue::from_static("Bearer"),
            });
        }
        Ok(Principal::anonymous())
    }
}

/// The caller of one request: its identity (`RequestMeta::identity`) and the profile its sessions run under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Principal {
    pub identity: Option<String>,
    pub profile: Option<String>,
}

impl Principal {
    /// Whoever reaches a server with no authentication configured (loopback only).
    pub(crate) fn anonymous() -> Self {
        Self {
            identity: None,
            profile: None,
        }
    }
}

/// A request nobody could authenticate: 401 with a `WWW-Authenticate` challenge.
#[derive(Debug)]
pub(crate) struct Rejection {
    status: StatusCode,
    www_authenticate: HeaderValue,
}

impl IntoResponse for Rejection {
    fn into_response(self) -> Response {
        let body = crate::http::reply::error_body(
            jsonrpc::INVALID_REQUEST,
            "authentication required: send a valid bearer token",
        );
        let mut response = (self.status, body).into_response();
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, self.www_authenticate);
        response
    }
}
