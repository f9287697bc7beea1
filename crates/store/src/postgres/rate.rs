//! Rate-limit token buckets on PostgreSQL, with the arithmetic of the SQLite store (`crate::rate`).
//!
//! A take is one transaction: prune a few stale buckets of the namespace (skipping rows another taker holds),
//! make sure the bucket's row exists, lock it (`FOR UPDATE`), step it and write it back; racing takers on any
//! replicas queue on the row lock, so no bucket ever gives more than it holds. Statements go through `query`,
//! uncounted, so a take notifies no waiter.

use super::pool::{col, Tx};
use crate::error::Result;
use crate::rate::{check, step, Bucket, Taken, PRUNE_BATCH};
use crate::time::Timestamp;

/// See `RateStore::take`.
pub(crate) fn take(
    tx: &mut Tx<'_>,
    ns: &str,
    key: &str,
    capacity: u32,
    refill_per_ms: f64,
    now: Timestamp,
) -> Result<Taken> {
    check(key, capacity, refill_per_ms)?;
    let now_ms = now.as_millis();
    tx.query(
        "DELETE FROM rate_buckets WHERE ns = $1 AND key IN
           (SELECT key FROM rate_buckets WHERE ns = $1 AND full_at <= $2 AND key <> $3
             LIMIT $4 FOR UPDATE SKIP LOCKED)",
        &[&ns, &now_ms, &key, &PRUNE_BATCH],
    )?;
    let full = f64::from(capacity);
    tx.query(
        "INSERT INTO rate_buckets (ns, key, tokens, updated_at, full_at) VALUES ($1, $2, $3, $4, $4)
         ON CONFLICT (ns, key) DO NOTHING",
        &[&ns, &key, &full, &now_ms],
    )?;
    let row = tx.one(
        "SELECT tokens, updated_at FROM rate_buckets WHERE ns = $1 AND key = $2 FOR UPDATE",
        &[&ns, &key],
    )?;
    let prev = Bucket {
        tokens: col(&row, 0)?,
        at_ms: col(&row, 1)?,
    };
    let s = step(Some(prev), capacity, refill_per_ms, now);
    tx.query(
        "UPDATE rate_buckets SET tokens = $3, updated_at = $4, full_at = $5 WHERE ns = $1 AND key = $2",
        &[&ns, &key, &s.bucket.tokens, &s.bucket.at_ms, &s.full_at_ms],
    )?;
    Ok(s.taken)
}
