//! DNS-rebinding defence: the `Host` and `Origin` of every request are checked before anything else reads it.
//!
//! A web page can make a browser send requests to `http://127.0.0.1:PORT` (or to a name it re-points at
//! 127.0.0.1), so a server on loopback is reachable from any site its user visits. What such a request cannot
//! choose is its `Host` (the name the page used) and its `Origin` (the page's own origin). So `Host` must be a
//! loopback name on the listening port (or the listening address itself, or an `http.allowedHosts` entry), and
//! an `Origin`, when sent, must be a loopback origin on the listening port (or an `http.allowedOrigins` entry).
//!
//! Both are parsed by a strict grammar of our own, not a lenient URL parser: only `scheme://host[:port]` and
//! `host[:port]` with lower-case-folded letters, digits, `-` and `.` in names, dotted IPv4 or a bracketed IPv6
//! literal, and a decimal port. Anything else — userinfo, a path, `null`, percent escapes, non-ASCII, a second
//! header of the same name — is refused, so no spelling can make a foreign name compare equal to a loopback one.
//! Loopback is recognised by exact spelling (`localhost`, `127.0.0.1`, `[::1]`), not by resolving anything.
//! This module does not authenticate (`auth` does).

use axum::http::{header, HeaderMap, HeaderValue};
use std::collections::BTreeSet;
use std::net::SocketAddr;

/// The names that are loopback by spelling alone.
const LOOPBACK_HOSTS: &[&str] = &["localhost", "127.0.0.1", "[::1]"];

/// What the server accepts, fixed when it binds.
#[derive(Clone, Debug)]
pub(crate) struct OriginPolicy {
    port: u16,
    /// The listening address as a `Host` value (`ip:port`), when it is a specific address.
    own_host: Option<String>,
    allowed_hosts: BTreeSet<String>,
    allowed_origins: BTreeSet<String>,
}

/// Why a request was refused (the 403 body says it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    Host(&'static str),
    Origin(&'static str),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Host(why) => write!(f, "forbidden Host header: {why}"),
            Refused::Origin(why) => write!(f, "forbidden Origin header: {why}"),
        }
    }
}

impl OriginPolicy {
    pub(crate) fn new(
        listen: SocketAddr,
        allowed_hosts: &BTreeSet<String>,
        allowed_origins: &BTreeSet<String>,
    ) -> Self {
        let ip = listen.ip();
        let own_host = (!ip.is_unspecified() && !ip.is_loopback()).then(|| match ip {
            std::net::IpAddr::V4(v4) => format!("{v4}:{}", listen.port()),
            std::net::IpAddr::V6(v6) => format!("[{v6}]:{}", listen.port()),
        });
        Self {
            port: listen.port(),
            own_host,
            allowed_hosts: allowed_hosts.clone(),
            allowed_origins: allowed_origins.clone(),
        }
    }

    /// Checks `Host` (exactly one, required) and `Origin` (at most one).
    pub(crate) fn check(&self, headers: &HeaderMap) -> Result<(), Refused> {
        let host = single(headers, &header::HOST)
            .map_err(Refused::Host)?
            .ok_or(Refused::Host("missing"))?;
        self.check_host(host).map_err(Refused::Host)?;
        if let Some(origin) = single(headers, &header::ORIGIN).map_err(Refused::Origin)? {
            self.check_origin(origin).map_err(Refused::Origin)?;
        }
        Ok(())
    }

    fn check_host(&self, raw: &str) -> Result<(), &'static str> {
        let authority = Authority::parse(raw, None)?;
        let canonical = authority.canonical();
        if authority.is_loopback(self.port)
            || self.own_host.as_deref() == Some(canonical.as_str())
            || self.allowed_hosts.contains(&raw.to_ascii_lowercase())
        {
            return Ok(());
        }
        Err("not a loopback name on the listening port, and not in http.allowedHosts")
    }

    fn check_origin(&self, raw: &str) -> Result<(), &'static str> {
        let lower = raw.to_ascii_lowercase();
        let (scheme, rest) = lower
            .split_once("://")
            .ok_or("not an origin (scheme://host[:port])")?;
        let default_port = match scheme {
            "http" => 80,
            "https" => 443,
            _ => return Err("only http and https origins are accepted"),
        };
        let authority = Authority::parse(rest, Some(default_port))?;
        if authority.is_loopback(self.port) || self.allowed_origins.contains(&lower) {
            return Ok(());
        }
        Err("not a loopback origin on the listening port, and not in http.allowedOrigins")
    }
}

/// The one value of a header that must not repeat: `Ok(None)` when absent; an error for a second value or one
/// that is not visible ASCII.
fn single<'a>(
    headers: &'a HeaderMap,
    name: &header::HeaderName,
) -> Result<Option<&'a str>, &'static str> {
    let mut values = headers.get_all(name).iter();
    let Some(first) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err("sent more than once");
    }
    visible_ascii(first).map(Some)
}

/// A header value as text, when every byte is visible ASCII (no spaces, controls or bytes above 0x7E).
pub(crate) fn visible_ascii(value: &HeaderValue) -> Result<&str, &'static str> {
    let bytes = value.as_bytes();
    if bytes.is_empty() || !bytes.iter().all(|b| (0x21..=0x7e).contains(b)) {
        return Err("empty, or not visible ASCII");
    }
    std::str::from_utf8(bytes).map_err(|_| "not visible ASCII")
}

/// `host[:port]` by the strict grammar, lower-cased.
struct Authority {
    host: String,
    port: u16,
}

impl Authority {
    /// `default_port` is the scheme's port for an origin; a `Host` without a port means port 80.
    fn parse(raw: &str, default_port: Option<u16>) -> Result<Self, &'static str> {
        let lower = raw.to_ascii_lowercase();
        let (host, port) = if let Some(rest) = lower.strip_prefix('[') {
            let (inside, after) = rest.split_once(']').ok_or("unterminated IPv6 literal")?;
            if inside.is_empty()
                || !inside
                    .chars()
                    .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.')
            {
                return Err("malformed IPv6 literal");
            }
            let port = match after {
                "" => None,
                p => Some(p.strip_prefix(':').ok_or("junk after the IPv6 literal")?),
            };
            (format!("[{inside}]"), port)
        } else {
            let (host, port) = match lower.split_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (lower.as_str(), None),
            };
            let name_ok = !host.is_empty()
                && host.len() <= 253
                && host
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.');
            if !name_ok {
                return Err("malformed host name");
            }
            (host.to_owned(), port)
        };
        let port = match port {
            None => default_port.unwrap_or(80),
            Some(p) => parse_port(p)?,
        };
        Ok(Self { host, port })
    }

    fn is_loopback(&self, listening: u16) -> bool {
        self.port == listening && LOOPBACK_HOSTS.contains(&self.host.as_str())
    }

    fn canonical(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

/// A decimal port, 1–65535, in its one canonical spelling (digits only, no leading zero, no sign or spaces).
fn parse_port(p: &str) -> Result<u16, &'static str> {
    if p.is_empty() || p.len() > 5 || p.starts_with('0') || !p.bytes().all(|b| b.is_ascii_digit()) {
        return Err("malformed port");
    }
    match p.parse::<u16>() {
        Ok(0) | Err(_) => Err("malformed port"),
        Ok(n) => Ok(n),
    }
}

#[cfg(test)]
#[path = "origin_tests.rs"]
mod tests;
