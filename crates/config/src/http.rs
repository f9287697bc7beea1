//! The `"http"` section: how `toolgate serve --http` listens and whom it lets in. Where it listens, which
//! `Origin` and `Host` values it accepts besides loopback, how callers authenticate (static API keys stored as
//! SHA-256 digests, JWTs checked against a JWKS file), the optional admin key, and the transport's limits.
//! Nothing here listens or verifies a token: the front end does, from what this validated.
//!
//! ```json
//! "http": {
//!   "listen": "127.0.0.1:8787",
//!   "allowedOrigins": ["http://localhost:6274"],
//!   "allowedHosts": ["toolgate.internal:8787"],
//!   "advertise": "10.0.0.11:8787",
//!   "auth": {
//!     "apiKeys": [{"name": "ci", "sha256": "<64 hex digits>", "profile": "review"}],
//!     "jwt": {"jwksFile": "jwks.json", "issuer": "https://idp.example", "audience": "https://toolgate.example/mcp",
//!             "profileClaim": "toolgate_profile", "profile": "readonly"},
//!     "resource": "https://toolgate.example/mcp",
//!     "authorizationServers": ["https://idp.example"]
//!   },
//!   "admin": {"keySha256": "<64 hex digits>"},
//!   "limits": {"maxBodyBytes": 4194304, "maxSessions": 256, "maxSessionsPerIdentity": 32,
//!              "maxConcurrentRequests": 256, "maxConcurrentRequestsPerIdentity": 32,
//!              "sessionIdleSeconds": 1800, "headerTimeoutSeconds": 5, "keepAliveSeconds": 30,
//!              "bodyTimeoutSeconds": 10,
//!              "maxPendingConnections": 256, "maxConnectionsPerIdentity": 128}
//! }
//! ```

use crate::error::{ConfigError, Result};
use crate::load::{check_range, section, Validator};
use serde::Deserialize;
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// The validated `"http"` section. `Default` is what `serve --http` uses with no section: loopback only, no
/// authentication (so a non-loopback address is refused at start), no admin surface, default limits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HttpConfig {
    /// `"listen"`: the address when `--http` gives none.
    pub listen: Option<SocketAddr>,
    /// Exact origins (`scheme://host[:port]`, lower-cased) accepted besides loopback origins on the listening port.
    pub allowed_origins: BTreeSet<String>,
    /// `Host` values (`host[:port]`, lower-cased) accepted besides loopback names on the listening port.
    pub allowed_hosts: BTreeSet<String>,
    /// `"advertise"`: the `host:port` the other replicas of a team reach this one at (where a retry of a bridged
    /// call is sent on to); by default the listening address, unless that is unspecified (`0.0.0.0`, `::`).
    pub advertise: Option<String>,
    pub auth: HttpAuth,
    /// `"admin"`: the admin surface, off unless a key is configured.
    pub admin: Option<AdminKey>,
    pub limits: HttpLimits,
}

/// How callers authenticate. With neither keys nor a JWT section, nobody is authenticated: allowed on loopback
/// only.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HttpAuth {
    pub api_keys: Vec<ApiKey>,
    pub jwt: Option<JwtAuth>,
    /// The protected resource's identifier advertised at `/.well-known/oauth-protected-resource`; by default the
    /// endpoint's own URL as the request reached it.
    pub resource: Option<String>,
    /// Authorization servers advertised in the protected resource metadata.
    pub authorization_servers: Vec<String>,
}

impl HttpAuth {
    /// Whether any way to authenticate is configured.
    pub fn any(&self) -> bool {
        !self.api_keys.is_empty() || self.jwt.is_some()
    }
}

/// One static API key. Only its SHA-256 digest is stored; the bearer token is the key itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiKey {
    /// A name for the audit log and errors (`"ci"`); the identity is `key:<name>`.
    pub name: String,
    pub sha256: [u8; 32],
    /// The profile this key's sessions run under; `None`: the profile `serve` applies.
    pub profile: Option<String>,
}

/// JWT bearer tokens, verified against the keys of a JWKS file (signature, `iss`, `aud`, `exp`, `nbf`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JwtAuth {
    /// Resolved against the config file's directory.
    pub jwks_file: PathBuf,
    pub issuer: String,
    pub audience: String,
    /// A claim naming the profile a token's sessions run under (it must name a configured profile).
    pub profile_claim: Option<String>,
    /// The profile of tokens without that claim; `None`: the profile `serve` applies.
    pub profile: Option<String>,
}

/// The admin key, stored as a SHA-256 digest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdminKey {
    pub sha256: [u8; 32],
}

/// Bounds of the HTTP transport. Each scarce thing (sessions, requests in flight) has a ceiling across all
/// callers and a share per identity no larger than it, so one identity reaching its share leaves the rest to
/// the others; the time bounds keep a connection from holding anything while it sends nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HttpLimits {
    /// Largest request body accepted (413 above).
    pub max_body_bytes: usize,
    /// Legacy sessions open at once across all callers (503 above).
    pub max_sessions: usize,
    /// Legacy sessions one identity may hold at once (429 above).
    pub max_sessions_per_identity: usize,
    /// Requests handled at once across all callers (503 above).
    pub max_concurrent_requests: usize,
    /// Requests one identity may have handled at once (429 above).
    pub max_concurrent_requests_per_identity: usize,
    /// A legacy session that received no request for this long is ended, open GET stream or not.
    pub session_idle: Duration,
    /// How long a connection may stay open before it authenticated a request (so its first request head must
    /// arrive within it).
    pub header_timeout: Duration,
    /// How long an authenticated connection may sit between requests, or take to send a later request's head.
    /// Longer than clients keep idle connections (5 s is common), so none reuses one the server is closing.
    pub keep_alive: Duration,
    /// How long a request body may take to arrive once its head did (408 past it).
    pub body_timeout: Duration,
    /// Connections accepted that have not yet authenticated a request; one more closes the oldest of them.
    pub max_pending_connections: usize,
    /// Connections one identity may hold open at once (429 and closed above).
    pub max_connections_per_identity: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self {
            max_body_bytes: 4 << 20,
            max_sessions: 256,
            max_sessions_per_identity: 32,
            max_concurrent_requests: 256,
            max_concurrent_requests_per_identity: 32,
            session_idle: Duration::from_secs(30 * 60),
            header_timeout: Duration::from_secs(5),
            keep_alive: Duration::from_secs(30),
            body_timeout: Duration::from_secs(10),
            max_pending_connections: 256,
            max_connections_per_identity: 128,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawHttp {
    listen: Option<String>,
    #[serde(default)]
    allowed_origins: Vec<String>,
    #[serde(default)]
    allowed_hosts: Vec<String>,
    advertise: Option<String>,
    auth: Option<RawAuth>,
    admin: Option<RawAdmin>,
    limits: Option<RawLimits>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawAuth {
    #[serde(default)]
    api_keys: Vec<RawApiKey>,
    jwt: Option<RawJwt>,
    resource: Option<String>,
    #[serde(default)]
    authorization_servers: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawApiKey {
    name: String,
    sha256: String,
    profile: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawJwt {
    jwks_file: String,
    issuer: String,
    audience: String,
    profile_claim: Option<String>,
    profile: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawAdmin {
    key_sha256: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawLimits {
    max_body_bytes: Option<usize>,
    max_sessions: Option<usize>,
    max_sessions_per_identity: Option<usize>,
    max_concurrent_requests: Option<usize>,
    max_concurrent_requests_per_identity: Option<usize>,
    session_idle_seconds: Option<u64>,
    header_timeout_seconds: Option<u64>,
    keep_alive_seconds: Option<u64>,
    body_timeout_seconds: Option<u64>,
    max_pending_connections: Option<usize>,
    max_connections_per_identity: Option<usize>,
}

impl Validator<'_> {
    pub(crate) fn http(&mut self, value: serde_json::Value) -> Result<()> {
        let raw: RawHttp = section(value, "http")?;
        let listen = raw
            .listen
            .map(|l| {
                l.parse::<SocketAddr>().map_err(|_| {
                    ConfigError::invalid(
                        "http.listen",
                        format!("{l:?} is not an IP address and port"),
                    )
                })
            })
            .transpose()?;
        let allowed_origins = raw
            .allowed_origins
            .iter()
            .map(|o| origin("http.allowedOrigins", o))
            .collect::<Result<_>>()?;
        let allowed_hosts = raw
            .allowed_hosts
            .iter()
            .map(|h| host("http.allowedHosts", h))
            .collect::<Result<_>>()?;
        let advertise = raw
            .advertise
            .map(|a| {
                let a = host("http.advertise", &a)?;
                if a.rsplit_once(':')
                    .is_none_or(|(_, p)| p.parse::<u16>().is_err())
                    || a.ends_with(']')
                {
                    return Err(ConfigError::invalid(
                        "http.advertise",
                        format!("{a:?} names no port: give host:port"),
                    ));
                }
                Ok(a)
            })
            .transpose()?;
        let auth = match raw.auth {
            Some(a) => self.http_auth(a)?,
            None => HttpAuth::default(),
        };
        let admin = raw
            .admin
            .map(|a| {
                Ok::<_, ConfigError>(AdminKey {
                    sha256: digest("http.admin.keySha256", &a.key_sha256)?,
                })
            })
            .transpose()?;
        if let Some(admin) = &admin {
            if auth.api_keys.iter().any(|k| k.sha256 == admin.sha256) {
                return Err(ConfigError::invalid(
                    "http.admin.keySha256",
                    "the admin key must differ from every API key",
                ));
            }
        }
        self.config.http = HttpConfig {
            listen,
            allowed_origins,
            allowed_hosts,
            advertise,
            auth,
            admin,
            limits: limits(raw.limits)?,
        };
        Ok(())
    }

    fn http_auth(&self, raw: RawAuth) -> Result<HttpAuth> {
        let mut names = BTreeSet::new();
        let mut digests = BTreeSet::new();
        let mut api_keys = Vec::new();
        for (i, k) in raw.api_keys.into_iter().enumerate() {
            let at = format!("http.auth.apiKeys[{i}]");
            if k.name.is_empty()
                || !k
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            {
                return Err(ConfigError::invalid(
                    format!("{at}.name"),
                    "must be non-empty letters, digits, '-', '_' or '.'",
                ));
            }
            if !names.insert(k.name.clone()) {
                return Err(ConfigError::invalid(
                    format!("{at}.name"),
                    format!("{:?} is listed twice", k.name),
                ));
            }
            let sha256 = digest(&format!("{at}.sha256"), &k.sha256)?;
            if !digests.insert(sha256) {
                return Err(ConfigError::invalid(
                    format!("{at}.sha256"),
                    "the same key is listed twice",
                ));
            }
            api_keys.push(ApiKey {
                name: k.name,
                sha256,
                profile: k.profile,
            });
        }
        let jwt = match raw.jwt {
            Some(j) => {
                if j.issuer.is_empty() || j.audience.is_empty() {
                    return Err(ConfigError::invalid(
                        "http.auth.jwt",
                        "issuer and audience must both be given and non-empty",
                    ));
                }
                Some(JwtAuth {
                    jwks_file: self
                        .origin
                        .parent()
                        .unwrap_or(std::path::Path::new(""))
                        .join(&j.jwks_file),
                    issuer: j.issuer,
                    audience: j.audience,
                    profile_claim: j.profile_claim,
                    profile: j.profile,
                })
            }
            None => None,
        };
        Ok(HttpAuth {
            api_keys,
            jwt,
            resource: raw.resource,
            authorization_servers: raw.authorization_servers,
        })
    }
}

fn limits(raw: Option<RawLimits>) -> Result<HttpLimits> {
    let d = HttpLimits::default();
    let Some(raw) = raw else { return Ok(d) };
    let pick = |key: &str, v: Option<usize>, def: usize, hi: usize| -> Result<usize> {
        match v {
            None => Ok(def),
            Some(v) => check_range(&format!("http.limits.{key}"), v, 1, hi).map(|()| v),
        }
    };
    let seconds = |key: &str, v: Option<u64>, def: Duration, hi: u64| -> Result<Duration> {
        match v {
            None => Ok(def),
            Some(s) => check_range(&format!("http.limits.{key}"), s, 1, hi)
                .map(|()| Duration::from_secs(s)),
        }
    };
    let max_sessions = pick("maxSessions", raw.max_sessions, d.max_sessions, 100_000)?;
    let max_concurrent_requests = pick(
        "maxConcurrentRequests",
        raw.max_concurrent_requests,
        d.max_concurrent_requests,
        100_000,
    )?;
    Ok(HttpLimits {
        max_body_bytes: pick(
            "maxBodyBytes",
            raw.max_body_bytes,
            d.max_body_bytes,
            64 << 20,
        )?,
        max_sessions,
        // A share left at its default follows a smaller ceiling down; one given larger than the ceiling is
        // refused, since it could never be reached and says something the server would not do.
        max_sessions_per_identity: pick(
            "maxSessionsPerIdentity",
            raw.max_sessions_per_identity,
            d.max_sessions_per_identity.min(max_sessions),
            max_sessions,
        )?,
        max_concurrent_requests,
        max_concurrent_requests_per_identity: pick(
            "maxConcurrentRequestsPerIdentity",
            raw.max_concurrent_requests_per_identity,
            d.max_concurrent_requests_per_identity
                .min(max_concurrent_requests),
            max_concurrent_requests,
        )?,
        session_idle: seconds(
            "sessionIdleSeconds",
            raw.session_idle_seconds,
            d.session_idle,
            7 * 86_400,
        )?,
        header_timeout: seconds(
            "headerTimeoutSeconds",
            raw.header_timeout_seconds,
            d.header_timeout,
            300,
        )?,
        keep_alive: seconds(
            "keepAliveSeconds",
            raw.keep_alive_seconds,
            d.keep_alive,
            3_600,
        )?,
        body_timeout: seconds(
            "bodyTimeoutSeconds",
            raw.body_timeout_seconds,
            d.body_timeout,
            600,
        )?,
        max_pending_connections: pick(
            "maxPendingConnections",
            raw.max_pending_connections,
            d.max_pending_connections,
            100_000,
        )?,
        max_connections_per_identity: pick(
            "maxConnectionsPerIdentity",
            raw.max_connections_per_identity,
            d.max_connections_per_identity,
            100_000,
        )?,
    })
}

/// A SHA-256 digest written as 64 hex digits.
fn digest(key: &str, hex_digits: &str) -> Result<[u8; 32]> {
    let mut out = [0u8; 32];
    hex::decode_to_slice(hex_digits, &mut out).map_err(|_| {
        ConfigError::invalid(
            key,
            "must be the key's SHA-256 digest as 64 hex digits (e.g. `printf %s \"$KEY\" | sha256sum`)",
        )
    })?;
    Ok(out)
}

/// An origin as browsers send it: `scheme://host[:port]`, nothing after, lower-cased.
fn origin(key: &str, raw: &str) -> Result<String> {
    let lower = raw.to_ascii_lowercase();
    let ok = url::Url::parse(&lower).ok().is_some_and(|u| {
        matches!(u.scheme(), "http" | "https")
            && u.host_str().is_some()
            && u.path() == "/"
            && u.query().is_none()
            && u.fragment().is_none()
            && u.username().is_empty()
            && !lower.ends_with('/')
    });
    if !ok {
        return Err(ConfigError::invalid(
            key,
            format!("{raw:?} is not an origin (scheme://host[:port], nothing after)"),
        ));
    }
    Ok(lower)
}

/// A `Host` header value: `host[:port]`, lower-cased.
fn host(key: &str, raw: &str) -> Result<String> {
    let lower = raw.to_ascii_lowercase();
    let ok = url::Url::parse(&format!("http://{lower}/"))
        .ok()
        .is_some_and(|u| {
            u.host_str().is_some()
                && u.path() == "/"
                && u.username().is_empty()
                && !lower.contains('/')
        });
    if !ok {
        return Err(ConfigError::invalid(
            key,
            format!("{raw:?} is not a host[:port]"),
        ));
    }
    Ok(lower)
}

#[cfg(test)]
#[path = "http_tests.rs"]
mod tests;
