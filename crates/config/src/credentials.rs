//! The `credentials` section: upstream secrets toolgate holds and grants to callers. Each entry names one
//! server, where its secret goes (an HTTP `header` of an HTTP server, or an `env` variable of a stdio server),
//! the secret (`value`, with `${VAR}` expanded, or `valueFile`, read whole at load and at every reload), and
//! whom it is granted to (`grantedTo`: identities such as `key:ci` or `jwt:<iss>#<sub>` (`local` on stdio),
//! and profiles). Without `grantedTo` a credential is the server's own, used for its connection and every call.
//!
//! ```json
//! "credentials": {
//!   "gh-alice": {"server": "github", "header": "Authorization", "value": "Bearer ${ALICE_GH}",
//!                "grantedTo": {"identities": ["key:alice"]}},
//!   "search":   {"server": "search", "env": "API_KEY", "valueFile": "/run/secrets/search"}
//! }
//! ```
//!
//! What a caller may use is decided per call by the gateway (`gateway::credentials`); this module validates the
//! section whole: names and values HTTP or a process can carry, no header or variable the server entry or
//! another credential already sets for the same caller, and a stdio server's process has one environment, so
//! one value per variable. Env credentials (and header credentials granted to everyone) are merged into the
//! server's launch spec here, so a changed value restarts that server on reload. Values never appear in
//! messages or `Debug`.

use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;

use crate::error::{ConfigError, Result};
use crate::expand::Vars;
use crate::load::section;
use crate::model::{Config, Transport};

mod secret;

use secret::{check_value, secret};

/// Headers toolgate or the protocol sets on every request: a credential may not replace them.
const RESERVED_HEADERS: &[&str] = &[
    "accept",
    "connection",
    "content-length",
    "content-type",
    "host",
    "last-event-id",
    "mcp-method",
    "mcp-name",
    "mcp-protocol-version",
    "mcp-session-id",
    "traceparent",
    "tracestate",
    "transfer-encoding",
];

/// A secret value: compared, never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: String) -> Self {
        Self(value)
    }

    /// The value, for the one place it goes: the upstream's header or environment (and scrubbing).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[secret]")
    }
}

/// Where a credential's secret goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CredentialTarget {
    /// An HTTP header of every request toolgate sends the server for a granted caller (name in lower case).
    Header(String),
    /// An environment variable of the server's process.
    Env(String),
}

/// Whom a credential is granted to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Grant {
    /// No `grantedTo`: the server's own, for its connection and every caller.
    Everyone,
    /// Callers with one of these identities, or whose session runs under one of these profiles.
    To {
        identities: Vec<String>,
        profiles: Vec<String>,
    },
}

impl Grant {
    /// How specifically `identity` (a principal, or `local`) under `profile` is granted: identity 2, profile 1,
    /// everyone 0; `None`: not granted.
    pub fn rank(&self, identity: &str, profile: Option<&str>) -> Option<u8> {
        match self {
            Grant::Everyone => Some(0),
            Grant::To {
                identities,
                profiles,
            } => {
                if identities.iter().any(|i| i == identity) {
                    Some(2)
                } else if profile.is_some_and(|p| profiles.iter().any(|q| q == p)) {
                    Some(1)
                } else {
                    None
                }
            }
        }
    }
}

/// Whom, for `doctor` and status: "every caller", or the identities and profiles.
impl std::fmt::Display for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Grant::Everyone => f.write_str("every caller"),
            Grant::To {
                identities,
                profiles,
            } => {
                let mut parts: Vec<String> = identities.clone();
                parts.extend(profiles.iter().map(|p| format!("profile {p}")));
                f.write_str(&parts.join(", "))
            }
        }
    }
}

/// Where the secret was read from, for `doctor` (never the value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SecretSource {
    /// `value` in the config (variables expanded).
    Value,
    /// `valueFile`: read at load and at every reload.
    File(PathBuf),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credential {
    pub name: String,
    pub server: String,
    pub target: CredentialTarget,
    pub secret: Secret,
    pub grant: Grant,
    pub source: SecretSource,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCredential {
    server: Value,
    header: Option<Value>,
    env: Option<Value>,
    value: Option<Value>,
    #[serde(rename = "valueFile", alias = "value_file")]
    value_file: Option<Value>,
    #[serde(rename = "grantedTo", alias = "granted_to")]
    granted_to: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGrant {
    #[serde(default)]
    identities: Vec<String>,
    #[serde(default)]
    profiles: Vec<String>,
}

/// Validates `credentials` against the servers `config` starts, and merges what belongs in a server's launch
/// spec into it.
pub(crate) fn apply(value: Value, config: &mut Config, vars: &Vars) -> Result<()> {
    let Value::Object(entries) = value else {
        return Err(ConfigError::invalid(
            "credentials",
            "must be an object of credential name to {server, header or env, value or valueFile}",
        ));
    };
    let mut out = Vec::new();
    for (name, entry) in entries {
        let at = format!("credentials.{name}");
        check_name(&at, &name)?;
        let raw: RawCredential = section(entry, &at)?;
        if let Some(credential) = one(&at, name, raw, config, vars)? {
            out.push(credential);
        }
    }
    check_overlaps(&out)?;
    merge(config, &out)?;
    config.credentials = out;
    Ok(())
}

fn check_name(at: &str, name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(ConfigError::invalid(
            at,
            "a credential's name is 1 to 64 letters, digits, '_', '-' or '.'",
        ))
    }
}

/// One entry; `None` for a credential of a server that is listed but not started (a warning says so).
fn one(
    at: &str,
    name: String,
    raw: RawCredential,
    config: &mut Config,
    vars: &Vars,
) -> Result<Option<Credential>> {
    let server = raw
        .server
        .as_str()
        .ok_or_else(|| ConfigError::invalid(format!("{at}.server"), "must be a server name"))?
        .to_owned();
    let Some(entry) = config.servers.iter().find(|s| s.name == server) else {
        if config.disabled.iter().any(|d| d.name == server) {
            config.warnings.push(format!(
                "{at}: server {server:?} is not started, so this credential is not used"
            ));
            return Ok(None);
        }
        return Err(ConfigError::invalid(
            format!("{at}.server"),
            format!("{server:?} is not a server of this config"),
        ));
    };
    let target = match (&raw.header, &raw.env, &entry.transport) {
        (Some(h), None, Transport::Http { .. }) => CredentialTarget::Header(header_name(at, h)?),
        (None, Some(e), Transport::Stdio { .. }) => CredentialTarget::Env(env_name(at, e)?),
        (Some(_), None, Transport::Stdio { .. }) => {
            return Err(ConfigError::invalid(
                format!("{at}.header"),
                format!("{server:?} is a stdio server: give its secret as \"env\""),
            ))
        }
        (None, Some(_), Transport::Http { .. }) => {
            return Err(ConfigError::invalid(
                format!("{at}.env"),
                format!("{server:?} is an HTTP server: give its secret as a \"header\""),
            ))
        }
        _ => {
            return Err(ConfigError::invalid(
                at,
                "give exactly one of \"header\" (an HTTP server) or \"env\" (a stdio server)",
            ))
        }
    };
    if let (CredentialTarget::Header(_), Transport::Http { url, .. }) = (&target, &entry.transport)
    {
        if plain_http_off_machine(url) {
            config.warnings.push(format!(
                "{at}: server {server:?} is reached over plain http at {url}, so this credential crosses the \
                 network unencrypted; use https"
            ));
        }
    }
    let (secret, source) = secret(at, raw.value, raw.value_file, vars)?;
    check_value(at, &target, &secret)?;
    let grant = match raw.granted_to {
        None => Grant::Everyone,
        Some(v) => grant(&format!("{at}.grantedTo"), v, config)?,
    };
    Ok(Some(Credential {
        name,
        server,
        target,
        secret: Secret(secret),
        grant,
        source,
    }))
}

/// An `http://` URL whose host is not this machine.
fn plain_http_off_machine(url: &str) -> bool {
    let Ok(url) = url::Url::parse(url) else {
        return false;
    };
    if url.scheme() != "http" {
        return false;
    }
    match url.host() {
        Some(url::Host::Domain(d)) => !d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => !ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => !ip.is_loopback(),
        None => false,
    }
}

fn header_name(at: &str, v: &Value) -> Result<String> {
    let key = format!("{at}.header");
    let name = v
        .as_str()
        .filter(|n| {
            !n.is_empty()
                && n.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
        })
        .ok_or_else(|| ConfigError::invalid(&key, "must be an HTTP header name"))?
        .to_ascii_lowercase();
    if RESERVED_HEADERS.contains(&name.as_str()) {
        return Err(ConfigError::invalid(
            key,
            format!("{name:?} is set by toolgate or the protocol on every request"),
        ));
    }
    Ok(name)
}

fn env_name(at: &str, v: &Value) -> Result<String> {
    let ok = |n: &&str| {
        let mut bytes = n.bytes();
        bytes
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
    };
    v.as_str()
        .filter(ok)
        .map(str::to_owned)
        .ok_or_else(|| {
            ConfigError::invalid(
                format!("{at}.env"),
                "must be an environment variable name (letters, digits, '_', not starting with a digit)",
            )
        })
}

fn grant(at: &str, v: Value, config: &Config) -> Result<Grant> {
    let raw: RawGrant = section(v, at)?;
    if raw.identities.is_empty() && raw.profiles.is_empty() {
        return Err(ConfigError::invalid(
            at,
            "grants to no one: name identities or profiles, or leave grantedTo out to grant to every caller",
        ));
    }
    if let Some(bad) = raw
        .identities
        .iter()
        .find(|i| i.is_empty() || i.len() > 512)
    {
        return Err(ConfigError::invalid(
            format!("{at}.identities"),
            format!("{bad:?} is not an identity (key:NAME, jwt:ISSUER#SUBJECT, or local)"),
        ));
    }
    let known = profile_names(config);
    let unknown = known
        .as_ref()
        .and_then(|known| raw.profiles.iter().find(|p| !known.contains(p.as_str())));
    if let Some(bad) = unknown {
        return Err(ConfigError::invalid(
            format!("{at}.profiles"),
            format!("{bad:?} is not a profile of this config"),
        ));
    }
    Ok(Grant::To {
        identities: raw.identities,
        profiles: raw.profiles,
    })
}

/// The profiles the config defines, when it defines them itself (stored and bundled profiles are not known
/// here: then any name is taken).
fn profile_names(config: &Config) -> Option<std::collections::BTreeSet<&str>> {
    if config.profile_store.is_some() {
        return None;
    }
    let map = config.policy.profiles.as_ref()?.as_object()?;
    Some(map.keys().map(String::as_str).collect())
}

/// Within one server and target, who is granted must be unambiguous: at most one credential for everyone, for
/// an identity, or for a profile; a stdio server's variable has one value.
fn check_overlaps(all: &[Credential]) -> Result<()> {
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            if a.server != b.server || a.target != b.target {
                continue;
            }
            let clash = match (&a.target, &a.grant, &b.grant) {
                (CredentialTarget::Env(_), _, _) => {
                    Some("a process has one environment".to_owned())
                }
                (_, Grant::Everyone, Grant::Everyone) => {
                    Some("both are granted to everyone".to_owned())
                }
                (
                    _,
                    Grant::To {
                        identities: ia,
                        profiles: pa,
                    },
                    Grant::To {
                        identities: ib,
                        profiles: pb,
                    },
                ) => ia
                    .iter()
                    .find(|x| ib.contains(x))
                    .map(|x| format!("both are granted to identity {x:?}"))
                    .or_else(|| {
                        pa.iter()
                            .find(|x| pb.contains(x))
                            .map(|x| format!("both are granted to profile {x:?}"))
                    }),
                _ => None,
            };
            if let Some(why) = clash {
                return Err(ConfigError::invalid(
                    format!("credentials.{}", b.name),
                    format!(
                        "sets {} of server {:?} like credentials.{}, and {why}",
                        b.target, b.server, a.name
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// `header "authorization"`, `env "API_KEY"`.
impl std::fmt::Display for CredentialTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CredentialTarget::Header(h) => write!(f, "header {h:?}"),
            CredentialTarget::Env(e) => write!(f, "env {e:?}"),
        }
    }
}

/// Env credentials go into the server's environment, header credentials granted to everyone into its headers;
/// the entry may not set the same name itself.
fn merge(config: &mut Config, all: &[Credential]) -> Result<()> {
    for c in all {
        let Some(server) = config.servers.iter().find(|s| s.name == c.server) else {
            continue;
        };
        let taken = match (&server.transport, &c.target) {
            (Transport::Stdio { env, .. }, CredentialTarget::Env(name)) => env.contains_key(name),
            (Transport::Http { headers, .. }, CredentialTarget::Header(name)) => {
                headers.keys().any(|k| k.eq_ignore_ascii_case(name))
            }
            _ => false,
        };
        if taken {
            return Err(ConfigError::invalid(
                format!("credentials.{}", c.name),
                format!(
                    "server {:?}'s entry already sets {}: give it in one place",
                    c.server, c.target
                ),
            ));
        }
    }
    for c in all {
        let Some(server) = config.servers.iter_mut().find(|s| s.name == c.server) else {
            continue;
        };
        let value = c.secret.expose().to_owned();
        match (&mut server.transport, &c.target) {
            (Transport::Stdio { env, .. }, CredentialTarget::Env(name)) => {
                env.insert(name.clone(), value);
            }
            (Transport::Http { headers, .. }, CredentialTarget::Header(name))
                if c.grant == Grant::Everyone =>
            {
                headers.insert(name.clone(), value);
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "credentials_tests.rs"]
mod tests;
