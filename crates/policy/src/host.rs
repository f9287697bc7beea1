//! Host names, host patterns and URL splitting for `net.request` matching.
//!
//! Hosts are normalised the same way on both sides (rule and call): lower-cased, a trailing dot dropped, and each
//! non-ASCII label converted to its `xn--` Punycode form (RFC 3492). Unicode normalisation (NFC / UTS #46 mapping) is
//! NOT applied; a host whose spelling would need it simply fails to match an ASCII rule, which errs towards the
//! default. IPv4 addresses must be plain dotted decimal: the shorthand forms browsers accept (`0x7f.1`,
//! `2130706433`) are rejected so that no two spellings of one address can diverge; IPv6 literals are printed in
//! their canonical compressed form, and IPv4-mapped ones as the IPv4 address. This module does no DNS.

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

/// Splits an absolute `http`/`https` URL. Anything that parsers are known to disagree on is refused.
pub(crate) fn parse_url(url: &str) -> Result<NetTarget, UrlError> {
    if url
        .chars()
        .any(|c| c.is_control() || c.is_whitespace() || c == '\\')
    {
        // Browsers treat `\` as `/` in http URLs while naive parsers do not: refuse rather than guess.
        return Err(UrlError::Malformed("control, space or backslash in URL"));
    }
    let (scheme, rest) = url
        .split_once("://")
        .ok_or(UrlError::Malformed("missing scheme"))?;
    let scheme = scheme.to_ascii_lowercase();
    let default_port = match scheme.as_str() {
        "http" => 80,
        "https" => 443,
        _ => return Err(UrlError::UnsupportedScheme),
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    // Userinfo ends at the LAST `@`: `http://a@b@evil.com/` goes to evil.com.
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let (host, port) = split_port(hostport)?;
    let host = normalise_host(host).map_err(UrlError::Malformed)?;
    let port = match port {
        None => default_port,
        Some(p) => p,
    };
    Ok(NetTarget { scheme, host, port })
}

fn split_port(hostport: &str) -> Result<(&str, Option<u16>), UrlError> {
    if hostport.starts_with('[') {
        let close = hostport
            .find(']')
            .ok_or(UrlError::Malformed("unclosed IPv6 literal"))?;
        let (host, tail) = hostport.split_at(close + 1);
        return match tail {
            "" | ":" => Ok((host, None)),
            t => t
                .strip_prefix(':')
                .and_then(|p| parse_port(p).ok())
                .map(|p| (host, Some(p)))
                .ok_or(UrlError::Malformed("bad port")),
        };
    }
    match hostport.rsplit_once(':') {
        None => Ok((hostport, None)),
        Some((h, "")) => Ok((h, None)),
        Some((h, p)) => Ok((h, Some(parse_port(p).map_err(UrlError::Malformed)?))),
    }
}

fn parse_port(p: &str) -> Result<u16, &'static str> {
    if p.is_empty() || p.len() > 5 || !p.bytes().all(|b| b.is_ascii_digit()) {
        return Err("bad port");
    }
    p.parse::<u16>().map_err(|_| "port out of range")
}

/// Normalises a host name or IP literal; the error says what was wrong.
pub(crate) fn normalise_host(host: &str) -> Result<String, &'static str> {
    if host.is_empty() {
        return Err("empty host");
    }
    if let Some(inner) = host.strip_prefix('[') {
        let inner = inner.strip_suffix(']').ok_or("unclosed IPv6 literal")?;
        let addr: std::net::Ipv6Addr = inner.parse().map_err(|_| "bad IPv6 literal")?;
        // `[::ffff:169.254.169.254]` is the IPv4 address: compare it as one, or a deny on the IPv4 is bypassed.
        if let Some(v4) = addr.to_ipv4_mapped() {
            return Ok(v4.to_string());
        }
        // std prints the canonical compressed form, so every spelling of one address compares equal.
        return Ok(format!("[{addr}]"));
    }
    if host.contains('%') {
        return Err("percent-encoded host");
    }
    let trimmed = host.strip_suffix('.').unwrap_or(host);
    let mut labels = Vec::new();
    for label in trimmed.split('.') {
        let lower = label.to_lowercase();
        let ascii = if lower.is_ascii() {
            lower
        } else {
            format!("xn--{}", punycode(&lower)?)
        };
        if ascii.is_empty() || ascii.len() > 63 {
            return Err("empty or over-long label");
        }
        if !ascii
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err("invalid character in host");
        }
        labels.push(ascii);
    }
    let last_numeric = labels
        .last()
        .is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit()) || l.starts_with("0x"));
    if last_numeric && !is_dotted_quad(&labels) {
        return Err("non-canonical IPv4 address");
    }
    Ok(labels.join("."))
}

fn is_dotted_quad(labels: &[String]) -> bool {
    labels.len() == 4
        && labels.iter().all(|l| {
            !l.is_empty()
                && l.len() <= 3
                && l.bytes().all(|b| b.is_ascii_digit())
                && (l == "0" || !l.starts_with('0'))
                && l.parse::<u16>().is_ok_and(|n| n <= 255)
        })
}

/// RFC 3492 Punycode encoder (the part after `xn--`).
fn punycode(input: &str) -> Result<String, &'static str> {
    const BASE: u32 = 36;
    const TMIN: u32 = 1;
    const TMAX: u32 = 26;
    const SKEW: u32 = 38;
    const DAMP: u32 = 700;
    fn adapt(mut delta: u32, numpoints: u32, first: bool) -> u32 {
        delta /= if first { DAMP } else { 2 };
        delta += delta / numpoints;
        let mut k = 0;
        while delta > ((BASE - TMIN) * TMAX) / 2 {
            delta /= BASE - TMIN;
            k += BASE;
        }
        k + (BASE - TMIN + 1) * delta / (delta + SKEW)
    }
    fn digit(d: u32) -> char {
        // 0..25 -> a..z, 26..35 -> 0..9
        char::from_u32(if d < 26 { d + 97 } else { d + 22 }).unwrap_or('?')
    }
    let cps: Vec<u32> = input.chars().map(u32::from).collect();
    let mut out: String = input.chars().filter(char::is_ascii).collect();
    let basic = out.len() as u32;
    let mut handled = basic;
    if basic > 0 {
        out.push('-');
    }
    let (mut n, mut delta, mut bias) = (128u32, 0u32, 72u32);
    let total = cps.len() as u32;
    while handled < total {
        let m = cps
            .iter()
            .copied()
            .filter(|&c| c >= n)
            .min()
            .ok_or("punycode")?;
        delta = delta
            .checked_add(
                (m - n)
                    .checked_mul(handled + 1)
                    .ok_or("punycode overflow")?,
            )
            .ok_or("punycode overflow")?;
        n = m;
        for &c in &cps {
            if c < n {
                delta = delta.checked_add(1).ok_or("punycode overflow")?;
            }
            if c == n {
                let mut q = delta;
                let mut k = BASE;
                loop {
                    let t = if k <= bias {
                        TMIN
                    } else if k >= bias + TMAX {
                        TMAX
                    } else {
                        k - bias
                    };
                    if q < t {
                        break;
                    }
                    out.push(digit(t + (q - t) % (BASE - t)));
                    q = (q - t) / (BASE - t);
                    k += BASE;
                }
                out.push(digit(q));
                bias = adapt(delta, handled + 1, handled == basic);
                delta = 0;
                handled += 1;
            }
        }
        delta += 1;
        n += 1;
    }
    Ok(out)
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
            split_port(rest).map_err(|_| format!("host pattern `{pattern}`: bad port"))?;
        let host = normalise_host(host).map_err(|e| format!("host pattern `{pattern}`: {e}"))?;
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
mod tests {
    use super::*;

    fn t(url: &str) -> NetTarget {
        parse_url(url).unwrap()
    }

    #[test]
    fn urls_split_into_scheme_host_port() {
        assert_eq!(
            t("https://API.Example.com./x?y"),
            NetTarget {
                scheme: "https".into(),
                host: "api.example.com".into(),
                port: 443
            }
        );
        assert_eq!(t("http://u:p@h.com:8080").port, 8080);
        assert_eq!(t("http://a@b@evil.com/").host, "evil.com");
        assert_eq!(t("http://[::1]:9/").host, "[::1]");
        assert_eq!(t("http://[0:0:0:0:0:0:0:1]/").host, "[::1]");
        assert_eq!(t("http://[::ffff:a9fe:a9fe]/").host, "169.254.169.254");
        assert!(parse_url("http://[fe80::1%25eth0]/").is_err());
    }

    #[test]
    fn ambiguous_urls_are_refused() {
        for bad in [
            "http://evil.com\\@good.com/",
            "ftp://x.com",
            "http://",
            "http://2130706433/",
            "http://0x7f.0.0.1/",
            "http://a b/",
            "http://h:99999/",
            "example.com",
        ] {
            assert!(parse_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn punycode_matches_rfc_examples() {
        assert_eq!(normalise_host("bücher.de").unwrap(), "xn--bcher-kva.de");
        assert_eq!(normalise_host("MÜNCHEN.de").unwrap(), "xn--mnchen-3ya.de");
    }

    #[test]
    fn wildcard_is_label_aware() {
        let p = HostPattern::new("*.example.com").unwrap();
        assert!(p.matches(&t("https://a.example.com")));
        assert!(p.matches(&t("https://a.b.example.com")));
        assert!(!p.matches(&t("https://example.com")));
        assert!(!p.matches(&t("https://evilexample.com")));
    }

    #[test]
    fn ports_are_optional_but_exact_when_given() {
        let p = HostPattern::new("api.example.com:443").unwrap();
        assert!(p.matches(&t("https://api.example.com/")));
        assert!(!p.matches(&t("http://api.example.com/")));
        assert!(HostPattern::new("api.example.com")
            .unwrap()
            .matches(&t("http://api.example.com:8080/")));
    }
}
