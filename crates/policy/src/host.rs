//! Host names, host patterns and URL splitting for `net.request` matching.
//!
//! A URL is read the way HTTP clients read it: by the WHATWG URL parser (the `url` crate), which maps host names
//! with UTS #46 (`idna`: fullwidth letters, `。` and other dots, case), percent-decodes them, resolves IPv4 written
//! in decimal, octal or hex (`http://0x7f.1/` is `127.0.0.1`) and takes userinfo up to the last `@`. Rule hosts go
//! through the same host parser, so both sides compare in one canonical form: ASCII, lower case, no trailing dot,
//! IPv4 dotted decimal, IPv6 compressed in brackets, IPv4-mapped IPv6 as the IPv4 address.
//!
//! Where clients are known to disagree with WHATWG, the URL is refused instead of resolved: `\` (a path separator
//! to WHATWG, userinfo to others), control characters and spaces (which WHATWG silently strips), a missing `//`
//! or extra slashes after the scheme, empty labels, and port 0 (which httpx sends to the scheme's default port). A
//! host that fails UTS #46 is refused. This module does no DNS.

use url::{Host, Url};

/// A parsed `http(s)` URL target: everything a host rule looks at.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct NetTarget {
    pub scheme: String,
    pub host: String,
    pub port: u16,
}

/// Why a URL could not be turned into a [`NetTarget`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum UrlError {
    Malformed(&'static str),
    UnsupportedScheme,
}

/// Splits an absolute `http`/`https` URL as a WHATWG parser would. Anything parsers are known to disagree on is
/// refused.
pub(crate) fn parse_url(url: &str) -> Result<NetTarget, UrlError> {
    if url
        .chars()
        .any(|c| c.is_control() || c.is_whitespace() || c == '\\')
    {
        return Err(UrlError::Malformed("control, space or backslash in URL"));
    }
    let (scheme, rest) = url
        .split_once("://")
        .ok_or(UrlError::Malformed("missing scheme"))?;
    if !matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https") {
        return Err(UrlError::UnsupportedScheme);
    }
    if rest.starts_with('/') {
        // WHATWG skips any number of slashes after a special scheme; other parsers see an empty authority.
        return Err(UrlError::Malformed("extra slashes after the scheme"));
    }
    let parsed = Url::parse(url).map_err(|_| UrlError::Malformed("not a valid URL"))?;
    let host = parsed.host().ok_or(UrlError::Malformed("empty host"))?;
    let host = canonical_host(host).map_err(UrlError::Malformed)?;
    let port = parsed
        .port_or_known_default()
        .ok_or(UrlError::Malformed("no port"))?;
    if port == 0 {
        // WHATWG keeps port 0, while httpx (httpcore) and others connect to the scheme's default port instead.
        return Err(UrlError::Malformed("port 0"));
    }
    Ok(NetTarget {
        scheme: parsed.scheme().to_owned(),
        host,
        port,
    })
}

/// Normalises a host name or IP literal (as written in a rule) with the same host parser URLs go through.
pub(crate) fn normalise_host(host: &str) -> Result<String, &'static str> {
    if host.is_empty() {
        return Err("empty host");
    }
    if host
        .chars()
        .any(|c| c.is_control() || c.is_whitespace() || matches!(c, '\\' | '/' | '@' | '?' | '#'))
    {
        return Err("invalid character in host");
    }
    let parsed = Host::parse(host).map_err(|_| "not a valid host (UTS #46 / WHATWG)")?;
    canonical_host(parsed)
}

/// The one printed form both sides compare.
fn canonical_host<S: AsRef<str>>(host: Host<S>) -> Result<String, &'static str> {
    match host {
        Host::Domain(d) => {
            let d = d.as_ref();
            // DNS treats `example.com.` and `example.com` alike; any other empty label is not a host name.
            let d = d.strip_suffix('.').unwrap_or(d);
            if d.is_empty() || d.split('.').any(str::is_empty) {
                return Err("empty label in host");
            }
            if d.split('.').any(|l| l.len() > 63) {
                return Err("over-long label in host");
            }
            Ok(d.to_owned())
        }
        Host::Ipv4(v4) => Ok(v4.to_string()),
        // `[::ffff:169.254.169.254]` is the IPv4 address: compare it as one, or a deny on the IPv4 is bypassed.
        Host::Ipv6(v6) => Ok(match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => format!("[{v6}]"),
        }),
    }
}

fn split_port(hostport: &str) -> Result<(&str, Option<u16>), &'static str> {
    if hostport.starts_with('[') {
        let close = hostport.find(']').ok_or("unclosed IPv6 literal")?;
        let (host, tail) = hostport.split_at(close + 1);
        return match tail {
            "" => Ok((host, None)),
            t => t
                .strip_prefix(':')
                .and_then(|p| parse_port(p).ok())
                .map(|p| (host, Some(p)))
                .ok_or("bad port"),
        };
    }
    match hostport.rsplit_once(':') {
        None => Ok((hostport, None)),
        Some((h, p)) => Ok((h, Some(parse_port(p)?))),
    }
}

fn parse_port(p: &str) -> Result<u16, &'static str> {
    if p.is_empty() || p.len() > 5 || !p.bytes().all(|b| b.is_ascii_digit()) {
        return Err("bad port");
    }
    match p.parse::<u16>() {
        // Clients connect to the scheme's default port for port 0, so a rule on it would name nothing.
        Ok(0) => Err("port 0"),
        Ok(port) => Ok(port),
        Err(_) => Err("port out of range"),
    }
}

/// A host rule: exact, or `*.suffix` (strict subdomains only, label-aware), with an optional port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostPattern {
    /// Normalised host for exact patterns; for wildcards, the suffix including its leading dot.
    host: String,
    wildcard: bool,
    port: Option<u16>,
}

impl HostPattern {
    pub(crate) fn new(pattern: &str) -> Result<HostPattern, String> {
        let (wildcard, rest) = match pattern.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, pattern),
        };
        if rest.contains(['*', '/']) {
            return Err(format!(
                "host pattern `{pattern}`: only a leading `*.` wildcard is allowed"
            ));
        }
        let (host, port) =
            split_port(rest).map_err(|e| format!("host pattern `{pattern}`: {e}"))?;
        let host = normalise_host(host).map_err(|e| format!("host pattern `{pattern}`: {e}"))?;
        if wildcard && (host.starts_with('[') || host.parse::<std::net::Ipv4Addr>().is_ok()) {
            return Err(format!(
                "host pattern `{pattern}`: `*.` needs a domain name, not an IP address"
            ));
        }
        let host = if wildcard { format!(".{host}") } else { host };
        Ok(HostPattern {
            host,
            wildcard,
            port,
        })
    }

    pub(crate) fn matches(&self, target: &NetTarget) -> bool {
        if self.port.is_some_and(|p| p != target.port) {
            return false;
        }
        if self.wildcard {
            // The suffix starts with `.`, so `evilexample.com` can never end with `.example.com`.
            target.host.len() > self.host.len() && target.host.ends_with(&self.host)
        } else {
            target.host == self.host
        }
    }

    /// True when every host this pattern admits is admitted by `other` (used by the shadowing lint).
    pub(crate) fn within(&self, other: &HostPattern) -> bool {
        let port_ok = other.port.is_none() || other.port == self.port;
        let host_ok = if other.wildcard {
            self.host.len() > other.host.len() && self.host.ends_with(&other.host)
        } else {
            !self.wildcard && self.host == other.host
        };
        port_ok && host_ok
    }
}

#[cfg(test)]
#[path = "host_tests.rs"]
mod tests;
