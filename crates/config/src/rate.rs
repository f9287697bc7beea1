//! The `rateLimits` section: token buckets a call must find a token in before it runs, per identity (every call
//! of one caller), per tool (every call of one exposed tool, whoever calls) and per server (every call to one
//! upstream, whoever calls). Each is `{"rate": N, "per": "1s" | "500ms" | "1m" | "1h", "burst": M}`: a bucket
//! holds `burst` tokens (default `rate`) and gains `rate` every `per`. Any scope may be left out.
//!
//! This module validates the section; it counts nothing (the gateway takes the tokens, from the store).

use serde::Deserialize;
use serde_json::Value;

use crate::error::{ConfigError, Result};
use crate::load::section;

/// The largest `rate` or `burst`.
const MAX_TOKENS: u64 = 1_000_000;
/// The longest `per`: a day.
const MAX_PER_MS: u64 = 86_400_000;

/// One bucket's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimit {
    /// Tokens gained every `per_ms`.
    pub rate: u32,
    /// The refill period, in milliseconds.
    pub per_ms: u64,
    /// The bucket's capacity: how many calls may come at once.
    pub burst: u32,
}

impl RateLimit {
    /// Tokens gained a millisecond.
    pub fn refill_per_ms(&self) -> f64 {
        f64::from(self.rate) / self.per_ms as f64
    }
}

/// `rateLimits`: none set means no limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateLimits {
    pub per_identity: Option<RateLimit>,
    pub per_tool: Option<RateLimit>,
    pub per_server: Option<RateLimit>,
}

impl RateLimits {
    /// True when any scope is limited.
    pub fn any(&self) -> bool {
        self.per_identity.is_some() || self.per_tool.is_some() || self.per_server.is_some()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRateLimits {
    #[serde(rename = "perIdentity", alias = "per_identity")]
    per_identity: Option<Value>,
    #[serde(rename = "perTool", alias = "per_tool")]
    per_tool: Option<Value>,
    #[serde(rename = "perServer", alias = "per_server")]
    per_server: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRateLimit {
    rate: Value,
    per: Value,
    burst: Option<Value>,
}

/// Validates `rateLimits`.
pub(crate) fn parse(value: Value) -> Result<RateLimits> {
    let raw: RawRateLimits = section(value, "rateLimits")?;
    let one = |v: Option<Value>, key: &str| {
        v.map(|v| limit(v, &format!("rateLimits.{key}")))
            .transpose()
    };
    Ok(RateLimits {
        per_identity: one(raw.per_identity, "perIdentity")?,
        per_tool: one(raw.per_tool, "perTool")?,
        per_server: one(raw.per_server, "perServer")?,
    })
}

fn limit(value: Value, at: &str) -> Result<RateLimit> {
    let raw: RawRateLimit = section(value, at)?;
    let rate = tokens(&raw.rate, &format!("{at}.rate"))?;
    let burst = match &raw.burst {
        None => rate,
        Some(v) => tokens(v, &format!("{at}.burst"))?,
    };
    let per_ms = period(&raw.per, &format!("{at}.per"))?;
    Ok(RateLimit {
        rate,
        per_ms,
        burst,
    })
}

fn tokens(v: &Value, at: &str) -> Result<u32> {
    v.as_u64()
        .filter(|n| (1..=MAX_TOKENS).contains(n))
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| {
            ConfigError::invalid(at, format!("must be a whole number from 1 to {MAX_TOKENS}"))
        })
}

/// `"500ms"`, `"1s"`, `"10s"`, `"1m"`, `"1h"`: a whole number and a unit.
fn period(v: &Value, at: &str) -> Result<u64> {
    let bad = || {
        ConfigError::invalid(
            at,
            "must be a period such as \"500ms\", \"1s\", \"1m\" or \"1h\" (at most a day)",
        )
    };
    let s = v.as_str().ok_or_else(bad)?.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (n, unit) = s.split_at(split);
    let n: u64 = n.parse().map_err(|_| bad())?;
    let scale = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return Err(bad()),
    };
    n.checked_mul(scale)
        .filter(|ms| (1..=MAX_PER_MS).contains(ms))
        .ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_scope_is_read_and_burst_defaults_to_the_rate() {
        let got = parse(json!({
            "perIdentity": {"rate": 10, "per": "1s", "burst": 20},
            "perTool": {"rate": 2, "per": "1m"},
        }))
        .unwrap();
        assert_eq!(
            got.per_identity,
            Some(RateLimit {
                rate: 10,
                per_ms: 1_000,
                burst: 20
            })
        );
        assert_eq!(
            got.per_tool,
            Some(RateLimit {
                rate: 2,
                per_ms: 60_000,
                burst: 2
            })
        );
        assert_eq!(got.per_server, None);
        assert!(got.any());
        assert!((got.per_identity.unwrap().refill_per_ms() - 0.01).abs() < 1e-12);
    }

    #[test]
    fn bad_rates_periods_and_keys_are_refused_by_name() {
        for (value, key) in [
            (
                json!({"perTool": {"rate": 0, "per": "1s"}}),
                "rateLimits.perTool.rate",
            ),
            (
                json!({"perTool": {"rate": 1, "per": "1s", "burst": -1}}),
                "rateLimits.perTool.burst",
            ),
            (
                json!({"perTool": {"rate": 1, "per": "1 fortnight"}}),
                "rateLimits.perTool.per",
            ),
            (
                json!({"perTool": {"rate": 1, "per": "0s"}}),
                "rateLimits.perTool.per",
            ),
            (
                json!({"perTool": {"rate": 1, "per": "2d"}}),
                "rateLimits.perTool.per",
            ),
            (
                json!({"perTool": {"rate": 1, "per": 5}}),
                "rateLimits.perTool.per",
            ),
            (
                json!({"perTool": {"rate": 1, "per": "1s", "brust": 2}}),
                "rateLimits.perTool.brust",
            ),
            (
                json!({"perUser": {"rate": 1, "per": "1s"}}),
                "rateLimits.perUser",
            ),
        ] {
            let e = parse(value.clone()).unwrap_err().to_string();
            assert!(e.contains(key), "{value}: {e}");
        }
    }
}
