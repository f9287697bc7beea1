//! Rate-limit token buckets on PostgreSQL, with the arithmetic of the SQLite store (`crate::rate`).
//!
//! A take is one transaction: prune a few stale buckets of the namespace (skipping rows another taker holds),
//! make sure each bucket's row exists, lock them (`FOR UPDATE`, in key order), step them together and write them
//! back; racing takers on any
//! replicas queue on the row lock, so no bucket ever gives more than it holds. Statements go through `query`,
//! uncounted, so a take notifies no waiter.

use super::pool::{col, Tx};
use crate::error::Result;
use crate::rate::{check_all, step_all, Bucket, BucketSpec, TakenAll, PRUNE_BATCH};
use crate::time::Timestamp;

/// See `RateStore::take_all`. The rows are locked in key order, so two takers of overlapping buckets never wait
/// on each other in a circle.
pub(crate) fn take(
    tx: &mut Tx<'_>,
    ns: &str,
    buckets: &[BucketSpec<'_>],
    now: Timestamp,
) -> Result<TakenAll> {
    check_all(buckets)?;
    let now_ms = now.as_millis();
    let keys: Vec<&str> = buckets.iter().map(|b| b.key).collect();
    tx.query(
        "DELETE FROM rate_buckets WHERE ns = $1 AND key IN
           (SELECT key FROM rate_buckets WHERE ns = $1 AND full_at <= $2 AND NOT (key = ANY($3))
             LIMIT $4 FOR UPDATE SKIP LOCKED)",
        &[&ns, &now_ms, &keys, &PRUNE_BATCH],
    )?;
    let mut order: Vec<usize> = (0..buckets.len()).collect();
    order.sort_by_key(|&i| buckets[i].key);
    let mut prevs = vec![None; buckets.len()];
    for i in order {
        let b = &buckets[i];
        let full = f64::from(b.capacity);
        tx.query(
            "INSERT INTO rate_buckets (ns, key, tokens, updated_at, full_at) VALUES ($1, $2, $3, $4, $4)
             ON CONFLICT (ns, key) DO NOTHING",
            &[&ns, &b.key, &full, &now_ms],
        )?;
        let row = tx.one(
            "SELECT tokens, updated_at FROM rate_buckets WHERE ns = $1 AND key = $2 FOR UPDATE",
            &[&ns, &b.key],
        )?;
        prevs[i] = Some(Bucket {
            tokens: col(&row, 0)?,
            at_ms: col(&row, 1)?,
        });
    }
    let (stepped, outcome) = step_all(&prevs, buckets, now);
    for (b, s) in buckets.iter().zip(&stepped) {
        tx.query(
            "UPDATE rate_buckets SET tokens = $3, updated_at = $4, full_at = $5 WHERE ns = $1 AND key = $2",
            &[&ns, &b.key, &s.bucket.tokens, &s.bucket.at_ms, &s.full_at_ms],
        )?;
    }
    Ok(outcome)
}
