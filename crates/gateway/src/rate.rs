//! The rate-limit stage: before a decided call runs, it takes a token from each bucket `rateLimits` configures
//! for it — its identity's (the caller's principal, or `local`), its exposed tool's and its server's, in that
//! order — from the store, so every replica on one store shares the buckets. A bucket with no token refuses the
//! call with `RATE_LIMITED` and the milliseconds until one is there (`retryAfterMs`); tokens already taken from
//! the buckets before it stay taken. Without a store, or when the store cannot answer, a call under a limit is
//! refused: a limit nobody can count is not a limit to skip.
//!
//! Bucket keys are the scope and a SHA-256 of its value, so a long principal never exceeds the store's bound.
//! Each rate-limited refusal is counted (`rate_limited_total`, and `toolgate_rate_limited_total{limit}` on
//! `/metrics` when metrics are on). This stage decides nothing else and records nothing: the finishing guard
//! records the refusal like any other.

use std::sync::atomic::{AtomicU64, Ordering};

use config::{RateLimit, RateLimits};
use store::Timestamp;

use crate::outcome::{Refusal, RefusalCode};
use crate::state::State;

/// Calls refused by a rate limit since the process started.
static RATE_LIMITED: AtomicU64 = AtomicU64::new(0);

/// Calls refused by a rate limit since the process started: the counter a metrics endpoint exports.
pub fn rate_limited_total() -> u64 {
    RATE_LIMITED.load(Ordering::Relaxed)
}

/// What a call is counted against.
pub(crate) struct Subject<'a> {
    /// The caller's principal, or `local`.
    pub identity: &'a str,
    /// The exposed tool name.
    pub tool: &'a str,
    pub server: &'a str,
}

/// Takes a token from each configured bucket of `subject`; the refusal of the first bucket without one.
pub(crate) fn check(
    limits: &RateLimits,
    state: Option<&State>,
    telemetry: &telemetry::Telemetry,
    subject: &Subject<'_>,
    now: Timestamp,
) -> Option<Refusal> {
    let scopes = [
        ("identity", limits.per_identity, subject.identity),
        ("tool", limits.per_tool, subject.tool),
        ("server", limits.per_server, subject.server),
    ];
    for (scope, limit, value) in scopes {
        let Some(limit) = limit else { continue };
        if let Some(refused) = take(state, telemetry, scope, &limit, value, now) {
            return Some(refused);
        }
    }
    None
}

fn take(
    state: Option<&State>,
    telemetry: &telemetry::Telemetry,
    scope: &'static str,
    limit: &RateLimit,
    value: &str,
    now: Timestamp,
) -> Option<Refusal> {
    let unavailable = |why: String| {
        Refusal::new(
            RefusalCode::Refused,
            format!(
                "toolgate refused this call: a rate limit per {scope} applies and {why}; the call did not run"
            ),
        )
    };
    let Some(state) = state else {
        return Some(unavailable(
            "there is no state store to count it in (give toolgate a usable state directory or store)".to_owned(),
        ));
    };
    let key = format!("{scope}:{}", jsonrpc::sha256_hex(value.as_bytes()));
    let taken = state.store(|s| s.take(&key, limit.burst, limit.refill_per_ms(), now));
    match taken {
        Ok(t) if t.allowed => None,
        Ok(t) => {
            RATE_LIMITED.fetch_add(1, Ordering::Relaxed);
            telemetry.rate_limited(scope);
            tracing::info!(
                scope,
                retry_after_ms = t.retry_after_ms,
                "call refused by a rate limit"
            );
            Some(
                Refusal::new(
                    RefusalCode::RateLimited,
                    format!(
                        "toolgate refused this call: the rate limit per {scope} ({} calls per {} ms, bursts of {}) is \
                         reached; retry in {} ms",
                        limit.rate, limit.per_ms, limit.burst, t.retry_after_ms
                    ),
                )
                .retry_after(t.retry_after_ms),
            )
        }
        Err(e) => Some(unavailable(format!("the store could not count it ({e})"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUBJECT: Subject<'static> = Subject {
        identity: "local",
        tool: "fx__echo",
        server: "fx",
    };

    #[test]
    fn a_limit_nobody_can_count_refuses_the_call_and_no_limit_refuses_nothing() {
        let limited = RateLimits {
            per_server: Some(RateLimit {
                rate: 1,
                per_ms: 1_000,
                burst: 1,
            }),
            ..RateLimits::default()
        };
        let refused = check(
            &limited,
            None,
            &telemetry::Telemetry::off(),
            &SUBJECT,
            Timestamp::now(),
        )
        .unwrap_or_else(|| panic!("a limit without a store let the call through"));
        assert_eq!(refused.code, RefusalCode::Refused);
        assert!(
            refused.message.contains("per server"),
            "{}",
            refused.message
        );
        assert!(
            refused.message.contains("no state store"),
            "{}",
            refused.message
        );
        assert!(check(
            &RateLimits::default(),
            None,
            &telemetry::Telemetry::off(),
            &SUBJECT,
            Timestamp::now()
        )
        .is_none());
    }
}
