//! The `"telemetry"` section: OpenTelemetry traces sent over OTLP/HTTP, and Prometheus metrics served on the
//! admin surface. Both are off unless configured. Nothing here exports or serves anything: the `telemetry` crate
//! does, from what this validated.
//!
//! ```json
//! "telemetry": {
//!   "otlp": {"endpoint": "http://127.0.0.1:4318", "headers": {"authorization": "Bearer ${OTLP_TOKEN}"},
//!            "serviceName": "toolgate"},
//!   "metrics": true
//! }
//! ```
//!
//! `endpoint` is the collector's OTLP/HTTP base address; spans go to `{endpoint}/v1/traces` as protobuf.
//! `headers` values may name `${VAR}`s, expanded from toolgate's environment like a server's headers.

use crate::error::{ConfigError, Result};
use crate::expand::expand;
use crate::load::{section, Validator};
use serde::Deserialize;
use std::collections::BTreeMap;

/// The validated `"telemetry"` section; `Default` is everything off.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Telemetry {
    /// `"otlp"`: where spans are exported; `None`: no spans are made at all.
    pub otlp: Option<Otlp>,
    /// `"metrics": true`: `GET /metrics` on the admin surface (which needs `http.admin`).
    pub metrics: bool,
}

impl Telemetry {
    /// Whether anything is on: off, the pipeline pays one branch per call and nothing more.
    pub fn any(&self) -> bool {
        self.otlp.is_some() || self.metrics
    }
}

/// Where OTLP/HTTP spans go.
#[derive(Clone, PartialEq, Eq)]
pub struct Otlp {
    /// The collector's base address (`http://host:4318`), without the signal's path.
    pub endpoint: String,
    /// Headers sent with every export (an API key, a tenant); values are secrets and never shown.
    pub headers: BTreeMap<String, String>,
    /// `service.name` of the exported resource.
    pub service_name: String,
}

impl std::fmt::Debug for Otlp {
    /// Header values are left out: they are credentials.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Otlp")
            .field("endpoint", &self.endpoint)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("service_name", &self.service_name)
            .finish()
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawTelemetry {
    otlp: Option<RawOtlp>,
    #[serde(default)]
    metrics: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawOtlp {
    endpoint: String,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    service_name: Option<String>,
}

impl Validator<'_> {
    pub(crate) fn telemetry(&mut self, value: serde_json::Value) -> Result<()> {
        let raw: RawTelemetry = section(value, "telemetry")?;
        let otlp = match raw.otlp {
            None => None,
            Some(o) => Some(Otlp {
                endpoint: endpoint(&o.endpoint)?,
                headers: o
                    .headers
                    .iter()
                    .map(|(k, v)| {
                        let at = format!("telemetry.otlp.headers.{k}");
                        header_name(&at, k)?;
                        Ok((k.clone(), expand(v, &at, &self.vars())?))
                    })
                    .collect::<Result<_>>()?,
                service_name: match o.service_name {
                    Some(s) if s.trim().is_empty() => {
                        return Err(ConfigError::invalid(
                            "telemetry.otlp.serviceName",
                            "must not be empty (leave it out for \"toolgate\")",
                        ))
                    }
                    Some(s) => s,
                    None => "toolgate".to_owned(),
                },
            }),
        };
        self.config.telemetry = Telemetry {
            otlp,
            metrics: raw.metrics,
        };
        Ok(())
    }
}

/// Metrics are served only behind the admin key, so asking for them without one is refused rather than ignored.
pub(crate) fn check_metrics(config: &crate::Config) -> Result<()> {
    if config.telemetry.metrics && config.http.admin.is_none() {
        return Err(ConfigError::invalid(
            "telemetry.metrics",
            "GET /metrics is served behind the admin key: configure http.admin.keySha256 as well",
        ));
    }
    Ok(())
}

/// An `http://` or `https://` base address with a host and nothing after its path.
fn endpoint(raw: &str) -> Result<String> {
    let key = "telemetry.otlp.endpoint";
    let url = url::Url::parse(raw)
        .map_err(|e| ConfigError::invalid(key, format!("{raw:?} is not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(ConfigError::invalid(
            key,
            format!("{raw:?} must be an http:// or https:// address of an OTLP/HTTP collector (port 4318 by default)"),
        ));
    }
    if url.query().is_some() || url.fragment().is_some() || !url.username().is_empty() {
        return Err(ConfigError::invalid(
            key,
            "give the collector's base address without credentials, query or fragment (send credentials in headers)",
        ));
    }
    Ok(url.as_str().trim_end_matches('/').to_owned())
}

/// A header name as HTTP allows it (RFC 9110 token characters).
fn header_name(at: &str, name: &str) -> Result<()> {
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || !name.chars().all(token) {
        return Err(ConfigError::invalid(at, "is not a valid HTTP header name"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::{parse_str, Format, Overrides};

    fn parse(section: &str) -> crate::Result<crate::Config> {
        let admin = format!(r#"{{"keySha256": "{}"}}"#, "ab".repeat(32));
        let text = format!(
            r#"{{"mcpServers": {{}}, "http": {{"admin": {admin}}}, "telemetry": {section}}}"#
        );
        let env = |v: &str| (v == "OTLP_TOKEN").then(|| "s3cret".to_owned());
        parse_str(
            &text,
            Format::Json,
            std::path::Path::new("/etc/toolgate.json"),
            &env,
            &Overrides::default(),
        )
    }

    #[test]
    fn a_full_section_is_read_with_its_headers_expanded() {
        let c = parse(
            r#"{"otlp": {"endpoint": "http://127.0.0.1:4318/", "headers": {"authorization": "Bearer ${OTLP_TOKEN}"}}, "metrics": true}"#,
        )
        .unwrap();
        let otlp = c.telemetry.otlp.unwrap();
        assert_eq!(otlp.endpoint, "http://127.0.0.1:4318");
        assert_eq!(otlp.headers["authorization"], "Bearer s3cret");
        assert_eq!(otlp.service_name, "toolgate");
        assert!(c.telemetry.metrics);
        assert!(!format!("{otlp:?}").contains("s3cret"));
    }

    #[test]
    fn telemetry_is_off_by_default() {
        let c = parse_str(
            r#"{"mcpServers": {}}"#,
            Format::Json,
            std::path::Path::new("/etc/toolgate.json"),
            &|_| None,
            &Overrides::default(),
        )
        .unwrap();
        assert!(!c.telemetry.any());
    }

    #[test]
    fn metrics_without_the_admin_key_are_refused() {
        let e = parse_str(
            r#"{"mcpServers": {}, "telemetry": {"metrics": true}}"#,
            Format::Json,
            std::path::Path::new("/etc/toolgate.json"),
            &|_| None,
            &Overrides::default(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("http.admin.keySha256"), "{e}");
    }

    #[test]
    fn unknown_keys_and_bad_endpoints_are_refused() {
        for bad in [
            r#"{"otlp": {"endpoint": "http://127.0.0.1:4318", "protocol": "grpc"}}"#,
            r#"{"tracing": true}"#,
            r#"{"otlp": {"endpoint": "127.0.0.1:4318"}}"#,
            r#"{"otlp": {"endpoint": "ftp://collector"}}"#,
            r#"{"otlp": {"endpoint": "http://user:pw@collector:4318"}}"#,
            r#"{"otlp": {"endpoint": "http://c:4318", "headers": {"bad name": "x"}}}"#,
            r#"{"otlp": {"endpoint": "http://c:4318", "serviceName": " "}}"#,
            r#"{"metrics": "yes"}"#,
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains("telemetry"), "{bad}: {e}");
        }
    }
}
