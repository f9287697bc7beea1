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

/// One bucket a call must find a token in: its key, how many tokens it holds, how fast it refills.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BucketSpec<'a> {
    pub key: &'a str,
    pub capacity: u32,
    pub refill_per_ms: f64,
}

/// What taking a token from each of several buckets came to: all of them, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TakenAll {
    /// Allowed: a token was taken from every bucket (`remaining` is the fewest left in any). Refused: none was
    /// taken, and `retry_after_ms` is when every bucket has one.
    pub taken: Taken,
    /// When refused, the bucket (its index among those asked) with the longest wait.
    pub limiting: usize,
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

/// Refuses a set of buckets that is empty, names a key twice, or holds a bucket `check` refuses.
pub(crate) fn check_all(buckets: &[BucketSpec<'_>]) -> Result<()> {
    if buckets.is_empty() {
        return Err(Error::InvalidBucket("no bucket to take from".to_owned()));
    }
    for (i, b) in buckets.iter().enumerate() {
        check(b.key, b.capacity, b.refill_per_ms)?;
        if buckets[..i].iter().any(|a| a.key == b.key) {
            return Err(Error::InvalidBucket(format!(
                "bucket {:?} is named twice",
                b.key
            )));
        }
    }
    Ok(())
}

/// Refills `prev` (none: a full bucket) up to `now`, then takes one token if there is one. A clock behind the
/// bucket's (another replica's) refills nothing and never moves the bucket back.
#[cfg(test)]
pub(crate) fn step(
    prev: Option<Bucket>,
    capacity: u32,
    refill_per_ms: f64,
    now: Timestamp,
) -> Stepped {
    let spec = BucketSpec {
        key: "k",
        capacity,
        refill_per_ms,
    };
    step_all(&[prev], &[spec], now).0.remove(0)
}

/// Refills every bucket up to `now`, then takes a token from each if each has one, else from none: a call
/// refused by one limit spends nothing of the others. `prevs[i]` is `buckets[i]`'s stored state.
pub(crate) fn step_all(
    prevs: &[Option<Bucket>],
    buckets: &[BucketSpec<'_>],
    now: Timestamp,
) -> (Vec<Stepped>, TakenAll) {
    let refilled: Vec<(f64, i64)> = prevs
        .iter()
        .zip(buckets)
        .map(|(prev, b)| refill(*prev, b, now))
        .collect();
    let all = refilled.iter().all(|(tokens, _)| *tokens >= 1.0);
    let mut outcome = TakenAll {
        taken: Taken {
            allowed: all,
            retry_after_ms: 0,
            remaining: u64::MAX,
        },
        limiting: 0,
    };
    let mut stepped = Vec::with_capacity(buckets.len());
    for (i, ((tokens, at_ms), b)) in refilled.into_iter().zip(buckets).enumerate() {
        let tokens = match all {
            true => tokens - 1.0,
            false => tokens,
        };
        let taken = match (all, tokens >= 1.0) {
            (true, _) => Taken {
                allowed: true,
                retry_after_ms: 0,
                remaining: tokens.floor() as u64,
            },
            (false, true) => Taken {
                allowed: false,
                retry_after_ms: 0,
                remaining: 0,
            },
            (false, false) => Taken {
                allowed: false,
                retry_after_ms: ((1.0 - tokens) / b.refill_per_ms).ceil().max(1.0) as u64,
                remaining: 0,
            },
        };
        if all {
            outcome.taken.remaining = outcome.taken.remaining.min(taken.remaining);
        } else if taken.retry_after_ms > outcome.taken.retry_after_ms {
            outcome.taken.retry_after_ms = taken.retry_after_ms;
            outcome.limiting = i;
        }
        let to_full = ((f64::from(b.capacity) - tokens) / b.refill_per_ms).ceil();
        let full_at_ms = at_ms.saturating_add(if to_full < i64::MAX as f64 {
            to_full as i64
        } else {
            i64::MAX
        });
        stepped.push(Stepped {
            bucket: Bucket { tokens, at_ms },
            full_at_ms,
            taken,
        });
    }
    if !all {
        outcome.taken.remaining = 0;
    }
    (stepped, outcome)
}

/// A bucket's tokens and time once refilled up to `now`.
fn refill(prev: Option<Bucket>, b: &BucketSpec<'_>, now: Timestamp) -> (f64, i64) {
    let cap = f64::from(b.capacity);
    let now_ms = now.as_millis();
    match prev {
        None => (cap, now_ms),
        Some(p) => {
            let elapsed = now_ms.saturating_sub(p.at_ms).max(0) as f64;
            let tokens = if p.tokens.is_finite() { p.tokens } else { 0.0 };
            (
                (tokens + elapsed * b.refill_per_ms).clamp(0.0, cap),
                p.at_ms.max(now_ms),
            )
        }
    }
}

impl crate::handle::Store {
    /// Takes a token from each bucket, or from none (see `RateStore::take_all`): one immediate transaction that
    /// prunes a few stale buckets, reads these, steps them together and writes them back. The commit is not
    /// synced to disk (the connection's next synced commit carries it): a bucket is no evidence, and a power
    /// cut that forgets a few takes costs less than a sync on every call. The connection is back to full sync
    /// whatever happened.
    pub fn take_tokens(&mut self, buckets: &[BucketSpec<'_>], now: Timestamp) -> Result<TakenAll> {
        check_all(buckets)?;
        self.conn.pragma_update(None, "synchronous", "NORMAL")?;
        let out = self.take_unsynced(buckets, now);
        let restored = self.conn.pragma_update(None, "synchronous", "FULL");
        let out = out?;
        restored?;
        Ok(out)
    }

    fn take_unsynced(&mut self, buckets: &[BucketSpec<'_>], now: Timestamp) -> Result<TakenAll> {
        use rusqlite::{params, OptionalExtension, TransactionBehavior};
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        // Stale buckets other than these (pruning one of these would refill it early, which changes nothing).
        tx.execute(
            "DELETE FROM rate_buckets WHERE key IN
               (SELECT key FROM rate_buckets WHERE full_at <= ?1 LIMIT ?2)",
            params![now.as_millis(), PRUNE_BATCH],
        )?;
        let mut prevs = Vec::with_capacity(buckets.len());
        for b in buckets {
            let prev = tx
                .query_row(
                    "SELECT tokens, updated_at FROM rate_buckets WHERE key = ?1",
                    params![b.key],
                    |r| {
                        Ok(Bucket {
                            tokens: r.get(0)?,
                            at_ms: r.get(1)?,
                        })
                    },
                )
                .optional()?;
            prevs.push(prev);
        }
        let (stepped, outcome) = step_all(&prevs, buckets, now);
        for (b, s) in buckets.iter().zip(&stepped) {
            tx.execute(
                "INSERT INTO rate_buckets (key, tokens, updated_at, full_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (key) DO UPDATE SET tokens = excluded.tokens, updated_at = excluded.updated_at,
                                                 full_at = excluded.full_at",
                params![b.key, s.bucket.tokens, s.bucket.at_ms, s.full_at_ms],
            )?;
        }
        tx.commit()?;
        Ok(outcome)
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
        let k = [BucketSpec {
            key: "k",
            capacity: 1,
            refill_per_ms: 0.001,
        }];
        assert!(store.take_tokens(&k, at(0)).unwrap().taken.allowed);
        assert!(!store.take_tokens(&k, at(0)).unwrap().taken.allowed);
        assert_eq!(synchronous(&store), 2, "FULL again after a take");
    }

    #[test]
    fn a_call_one_bucket_refuses_spends_nothing_of_the_others() {
        let specs = [
            BucketSpec {
                key: "identity",
                capacity: 5,
                refill_per_ms: 0.001,
            },
            BucketSpec {
                key: "tool",
                capacity: 1,
                refill_per_ms: 0.002,
            },
        ];
        let (first, ok) = step_all(&[None, None], &specs, at(0));
        assert!(ok.taken.allowed);
        assert_eq!(ok.taken.remaining, 0, "the fewest left in any bucket");
        let prevs: Vec<Option<Bucket>> = first.iter().map(|s| Some(s.bucket)).collect();
        let (second, refused) = step_all(&prevs, &specs, at(100));
        assert!(!refused.taken.allowed);
        assert_eq!(refused.limiting, 1);
        // 0.2 of the tool's token is back at 100 ms; 0.8 more takes 400 ms.
        assert_eq!(refused.taken.retry_after_ms, 400);
        assert_eq!(
            second[0].bucket.tokens,
            4.0 + 0.1,
            "the identity's bucket kept its token"
        );
    }

    #[test]
    fn bad_keys_and_rates_are_refused() {
        assert!(check("", 1, 1.0).is_err());
        assert!(check(&"k".repeat(MAX_BUCKET_KEY + 1), 1, 1.0).is_err());
        assert!(check("k", 0, 1.0).is_err());
        assert!(check("k", 1, 0.0).is_err());
        assert!(check("k", 1, f64::NAN).is_err());
        assert!(check("k", 1, 1.0).is_ok());
        let k = |key| BucketSpec {
            key,
            capacity: 1,
            refill_per_ms: 1.0,
        };
        assert!(check_all(&[]).is_err());
        assert!(check_all(&[k("a"), k("a")]).is_err());
        assert!(check_all(&[k("a"), k("b")]).is_ok());
    }
}
