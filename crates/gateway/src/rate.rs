//! The rate-limit stage: before a decided call runs, it takes a token from each bucket `rateLimits` configures
//! for it — its identity's (the caller's principal, or `local`), its exposed tool's and its server's — from the
//! store, in one atomic step, so every replica on one store shares the buckets. When any bucket has no token the
//! call takes none (a call one limit refuses spends nothing of the others) and is refused with `RATE_LIMITED`
//! and the milliseconds until every bucket has one (`retryAfterMs`). Without a store, or when the store cannot answer, a call under a limit is
//! refused: a limit nobody can count is not a limit to skip.
//!
//! Bucket keys are the scope and a SHA-256 of its value, so a long principal never exceeds the store's bound.
//! Each rate-limited refusal is counted (`rate_limited_total`, and `toolgate_rate_limited_total{limit}` on
//! `/metrics` when metrics are on). This stage decides nothing else and records nothing: the finishing guard
//! records the refusal like any other.

use std::sync::atomic::{AtomicU64, Ordering};

use config::{RateLimit, RateLimits};
use store::{BucketSpec, Timestamp};

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

/// Takes a token from each configured bucket of `subject`, or from none; the refusal names the bucket that
/// waits longest.
pub(crate) fn check(
    limits: &RateLimits,
    state: Option<&State>,
    telemetry: &telemetry::Telemetry,
    subject: &Subject<'_>,
    now: Timestamp,
) -> Option<Refusal> {
    let scopes: Vec<(&'static str, RateLimit, String)> = [
        ("identity", limits.per_identity, subject.identity),
        ("tool", limits.per_tool, subject.tool),
        ("server", limits.per_server, subject.server),
    ]
    .into_iter()
    .filter_map(|(scope, limit, value)| {
        let key = format!("{scope}:{}", jsonrpc::sha256_hex(value.as_bytes()));
        Some((scope, limit?, key))
    })
    .collect();
    let first = scopes.first()?.0;
    let unavailable = |why: String| {
        Refusal::new(
            RefusalCode::Refused,
            format!(
                "toolgate refused this call: a rate limit per {first} applies and {why}; the call did not run"
            ),
        )
    };
    let Some(state) = state else {
        return Some(unavailable(
            "there is no state store to count it in (give toolgate a usable state directory or store)".to_owned(),
        ));
    };
    let buckets: Vec<BucketSpec<'_>> = scopes
        .iter()
        .map(|(_, limit, key)| BucketSpec {
            key,
            capacity: limit.burst,
            refill_per_ms: limit.refill_per_ms(),
        })
        .collect();
    let taken = match state.store(|s| s.take_all(&buckets, now)) {
        Ok(t) if t.taken.allowed => return None,
        Ok(t) => t,
        Err(e) => return Some(unavailable(format!("the store could not count it ({e})"))),
    };
    let (scope, limit, _) = &scopes[taken.limiting.min(scopes.len() - 1)];
    let retry = taken.taken.retry_after_ms;
    RATE_LIMITED.fetch_add(1, Ordering::Relaxed);
    telemetry.rate_limited(scope);
    tracing::info!(
        scope,
        retry_after_ms = retry,
        "call refused by a rate limit"
    );
    Some(
        Refusal::new(
            RefusalCode::RateLimited,
            format!(
                "toolgate refused this call: the rate limit per {scope} ({} calls per {} ms, bursts of {}) is \
                 reached; retry in {retry} ms",
                limit.rate, limit.per_ms, limit.burst
            ),
        )
        .retry_after(retry),
    )
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
