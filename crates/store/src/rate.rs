//! Token buckets for rate limits, kept in the store so every process and replica on one state shares them.
//!
//! A bucket holds up to `capacity` tokens and gains `refill_per_ms` tokens a millisecond; a call takes one, or is
//! refused with how long until one is there. The arithmetic is here, once (`step`); each backend reads the row,
//! steps it and writes it back in one atomic step (SQLite: one immediate transaction; PostgreSQL: one transaction
//! holding the row's lock), so racing takers on any handles never get more than the bucket holds. A bucket that
//! would be full by now is the same as none: such rows are pruned a few at a time as buckets are taken, so the
//! table holds only the buckets in use. Keys are the caller's (the gateway names and hashes them) and bounded in
//! length. This module never reads the clock: callers pass `now`.

use crate::error::{Error, Result};
use crate::time::Timestamp;

/// The longest bucket key a store accepts.
pub const MAX_BUCKET_KEY: usize = 200;
/// Stale buckets deleted at most per take, so pruning never makes one call slow.
pub(crate) const PRUNE_BATCH: i64 = 32;

/// What taking a token came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Taken {
    /// A token was there and is taken: the call may go ahead.
    pub allowed: bool,
    /// When refused, the milliseconds until a token is there (at least 1); 0 when allowed.
    pub retry_after_ms: u64,
    /// Whole tokens left after this take.
    pub remaining: u64,
}

/// A bucket's state as stored: its tokens as of `at_ms`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Bucket {
    pub tokens: f64,
    pub at_ms: i64,
}

/// The bucket written back: its state, and the instant it will be full again (when it may be pruned).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Stepped {
    pub bucket: Bucket,
    pub full_at_ms: i64,
    pub taken: Taken,
}

/// Refuses a key that is empty or too long, a capacity of 0 and a refill that is not a positive number.
pub(crate) fn check(key: &str, capacity: u32, refill_per_ms: f64) -> Result<()> {
    if key.is_empty() || key.len() > MAX_BUCKET_KEY {
        return Err(Error::InvalidBucket(format!(
            "a bucket key is 1 to {MAX_BUCKET_KEY} bytes, not {}",
            key.len()
        )));
    }
    if capacity == 0 || !(refill_per_ms.is_finite() && refill_per_ms > 0.0) {
        return Err(Error::InvalidBucket(format!(
            "a bucket holds at least one token and refills at a positive rate, not {capacity} at {refill_per_ms}/ms"
        )));
    }
    Ok(())
}

/// Refills `prev` (none: a full bucket) up to `now`, then takes one token if there is one. A clock behind the
/// bucket's (another replica's) refills nothing and never moves the bucket back.
pub(crate) fn step(
    prev: Option<Bucket>,
    capacity: u32,
    refill_per_ms: f64,
    now: Timestamp,
) -> Stepped {
    let cap = f64::from(capacity);
    let now_ms = now.as_millis();
    let (tokens, at_ms) = match prev {
        None => (cap, now_ms),
        Some(b) => {
            let elapsed = now_ms.saturating_sub(b.at_ms).max(0) as f64;
            let tokens = if b.tokens.is_finite() { b.tokens } else { 0.0 };
            (
                (tokens + elapsed * refill_per_ms).clamp(0.0, cap),
                b.at_ms.max(now_ms),
            )
        }
    };
    let (tokens, taken) = if tokens >= 1.0 {
        let left = tokens - 1.0;
        (
            left,
            Taken {
                allowed: true,
                retry_after_ms: 0,
                remaining: left.floor() as u64,
            },
        )
    } else {
        let wait = ((1.0 - tokens) / refill_per_ms).ceil().max(1.0) as u64;
        (
            tokens,
            Taken {
                allowed: false,
                retry_after_ms: wait,
                remaining: 0,
            },
        )
    };
    let to_full = ((cap - tokens) / refill_per_ms).ceil();
    let full_at_ms = at_ms.saturating_add(if to_full < i64::MAX as f64 {
        to_full as i64
    } else {
        i64::MAX
    });
    Stepped {
        bucket: Bucket { tokens, at_ms },
        full_at_ms,
        taken,
    }
}

impl crate::handle::Store {
    /// Takes a token from bucket `key` (see `RateStore::take`): one immediate transaction that prunes a few
    /// stale buckets, reads this one, steps it and writes it back. The commit is not synced to disk (the
    /// connection's next synced commit carries it): a bucket is no evidence, and a power cut that forgets a few
    /// takes costs less than a sync on every call. The connection is back to full sync whatever happened.
    pub fn take_token(
        &mut self,
        key: &str,
        capacity: u32,
        refill_per_ms: f64,
        now: Timestamp,
    ) -> Result<Taken> {
        check(key, capacity, refill_per_ms)?;
        self.conn.pragma_update(None, "synchronous", "NORMAL")?;
        let out = self.take_unsynced(key, capacity, refill_per_ms, now);
        let restored = self.conn.pragma_update(None, "synchronous", "FULL");
        let out = out?;
        restored?;
        Ok(out)
    }

    fn take_unsynced(
        &mut self,
        key: &str,
        capacity: u32,
        refill_per_ms: f64,
        now: Timestamp,
    ) -> Result<Taken> {
        use rusqlite::{params, OptionalExtension, TransactionBehavior};
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "DELETE FROM rate_buckets WHERE key IN
               (SELECT key FROM rate_buckets WHERE full_at <= ?1 AND key <> ?2 LIMIT ?3)",
            params![now.as_millis(), key, PRUNE_BATCH],
        )?;
        let prev = tx
            .query_row(
                "SELECT tokens, updated_at FROM rate_buckets WHERE key = ?1",
                params![key],
                |r| {
                    Ok(Bucket {
                        tokens: r.get(0)?,
                        at_ms: r.get(1)?,
                    })
                },
            )
            .optional()?;
        let s = step(prev, capacity, refill_per_ms, now);
        tx.execute(
            "INSERT INTO rate_buckets (key, tokens, updated_at, full_at) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (key) DO UPDATE SET tokens = excluded.tokens, updated_at = excluded.updated_at,
                                             full_at = excluded.full_at",
            params![key, s.bucket.tokens, s.bucket.at_ms, s.full_at_ms],
        )?;
        tx.commit()?;
        Ok(s.taken)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: i64 = 1_000_000;

    fn at(ms: i64) -> Timestamp {
        Timestamp::from_millis(T + ms)
    }

    #[test]
    fn a_fresh_bucket_gives_its_burst_then_a_retry_hint() {
        let mut b = None;
        let mut got = Vec::new();
        for _ in 0..3 {
            let s = step(b, 2, 0.001, at(0));
            b = Some(s.bucket);
            got.push(s.taken);
        }
        assert_eq!(
            got[0],
            Taken {
                allowed: true,
                retry_after_ms: 0,
                remaining: 1
            }
        );
        assert_eq!(
            got[1],
            Taken {
                allowed: true,
                retry_after_ms: 0,
                remaining: 0
            }
        );
        assert_eq!(
            got[2],
            Taken {
                allowed: false,
                retry_after_ms: 1000,
                remaining: 0
            }
        );
        let later = step(b, 2, 0.001, at(1000));
        assert!(later.taken.allowed);
    }

    #[test]
    fn a_clock_behind_the_bucket_refills_nothing() {
        let s = step(
            Some(Bucket {
                tokens: 0.5,
                at_ms: T + 500,
            }),
            2,
            0.001,
            at(0),
        );
        assert_eq!(
            s.bucket,
            Bucket {
                tokens: 0.5,
                at_ms: T + 500
            }
        );
        assert_eq!(s.taken.retry_after_ms, 500);
        assert_eq!(s.full_at_ms, T + 500 + 1500);
    }

    #[test]
    fn a_take_leaves_the_connection_synced_in_full() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = crate::handle::Store {
            conn: crate::db::open(&dir.path().join("t.db")).unwrap(),
            limits: crate::handle::Limits::DEFAULT,
            key: crate::seal::SealKey::load_or_create(dir.path()).unwrap(),
            namespace_id: "ns".to_owned(),
        };
        let synchronous = |s: &crate::handle::Store| -> i64 {
            s.conn
                .query_row("PRAGMA synchronous", [], |r| r.get(0))
                .unwrap()
        };
        assert_eq!(synchronous(&store), 2, "FULL to begin with");
        assert!(store.take_token("k", 1, 0.001, at(0)).unwrap().allowed);
        assert!(!store.take_token("k", 1, 0.001, at(0)).unwrap().allowed);
        assert_eq!(synchronous(&store), 2, "FULL again after a take");
    }

    #[test]
    fn bad_keys_and_rates_are_refused() {
        assert!(check("", 1, 1.0).is_err());
        assert!(check(&"k".repeat(MAX_BUCKET_KEY + 1), 1, 1.0).is_err());
        assert!(check("k", 0, 1.0).is_err());
        assert!(check("k", 1, 0.0).is_err());
        assert!(check("k", 1, f64::NAN).is_err());
        assert!(check("k", 1, 1.0).is_ok());
    }
}
