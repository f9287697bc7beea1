//! Rate-limit token buckets as every backend keeps them: a burst of the bucket's capacity then a refusal with a
//! retry hint, refill over the time callers pass, buckets shared by every handle, racing takers on separate
//! handles never given more than the capacity, and keys and rates the store refuses.

use std::sync::{Arc, Barrier};

use pretty_assertions::assert_eq;
use store::{BucketSpec, Error, Limits, Taken, MAX_BUCKET_KEY};

use super::{at, Backend};

/// One token a second.
const PER_MS: f64 = 0.001;

fn allowed(remaining: u64) -> Taken {
    Taken {
        allowed: true,
        retry_after_ms: 0,
        remaining,
    }
}

pub fn a_burst_then_a_refusal_with_a_retry_hint<B: Backend>() {
    let b = B::fresh(Limits::DEFAULT);
    let (one, other) = (b.handle(), b.handle());
    assert_eq!(one.take("tool:a", 3, PER_MS, at(0)).unwrap(), allowed(2));
    // Another handle (another replica) takes from the same bucket.
    assert_eq!(other.take("tool:a", 3, PER_MS, at(0)).unwrap(), allowed(1));
    assert_eq!(one.take("tool:a", 3, PER_MS, at(100)).unwrap(), allowed(0));
    let refused = other.take("tool:a", 3, PER_MS, at(400)).unwrap();
    // 0.1 token was left at 100 ms and 0.3 came back since: 0.6 is missing, 600 ms at one a second.
    assert_eq!(
        refused,
        Taken {
            allowed: false,
            retry_after_ms: 600,
            remaining: 0
        }
    );
    // A refusal takes nothing: the hint still holds, and another bucket is untouched.
    assert_eq!(one.take("tool:a", 3, PER_MS, at(400)).unwrap(), refused);
    assert_eq!(one.take("tool:b", 3, PER_MS, at(400)).unwrap(), allowed(2));
}

pub fn a_bucket_refills_over_time_up_to_its_capacity<B: Backend>() {
    let b = B::fresh(Limits::DEFAULT);
    let s = b.handle();
    for _ in 0..2 {
        assert!(s.take("id:x", 2, PER_MS, at(0)).unwrap().allowed);
    }
    assert!(!s.take("id:x", 2, PER_MS, at(999)).unwrap().allowed);
    assert_eq!(s.take("id:x", 2, PER_MS, at(1000)).unwrap(), allowed(0));
    // An hour idle fills it to its capacity, never beyond (the bucket may have been pruned meanwhile).
    assert_eq!(
        s.take("id:x", 2, PER_MS, at(3_600_000)).unwrap(),
        allowed(1)
    );
    assert_eq!(
        s.take("id:x", 2, PER_MS, at(3_600_000)).unwrap(),
        allowed(0)
    );
    assert!(!s.take("id:x", 2, PER_MS, at(3_600_000)).unwrap().allowed);
    // A clock behind the bucket's (another replica's) gets no token back.
    assert!(!s.take("id:x", 2, PER_MS, at(3_500_000)).unwrap().allowed);
}

pub fn racing_takers_on_separate_handles_never_exceed_the_capacity<B: Backend>() {
    let b = B::fresh(Limits::DEFAULT);
    let start = Arc::new(Barrier::new(6));
    let racers: Vec<_> = (0..6)
        .map(|_| {
            let (h, start) = (b.handle(), Arc::clone(&start));
            std::thread::spawn(move || {
                start.wait();
                (0..5)
                    .filter(|_| h.take("server:fx", 7, PER_MS, at(0)).unwrap().allowed)
                    .count()
            })
        })
        .collect();
    let given: usize = racers.into_iter().map(|r| r.join().unwrap()).sum();
    assert_eq!(given, 7);
}

pub fn bad_bucket_keys_and_rates_are_refused<B: Backend>() {
    let b = B::fresh(Limits::DEFAULT);
    let s = b.handle();
    let long = "k".repeat(MAX_BUCKET_KEY + 1);
    for (key, capacity, rate) in [
        ("", 1, PER_MS),
        (long.as_str(), 1, PER_MS),
        ("k", 0, PER_MS),
        ("k", 1, 0.0),
    ] {
        let e = s.take(key, capacity, rate, at(0)).unwrap_err();
        assert!(matches!(e, Error::InvalidBucket(_)), "{e:?}");
    }
    assert!(
        s.take(&"k".repeat(MAX_BUCKET_KEY), 1, PER_MS, at(0))
            .unwrap()
            .allowed
    );
}

fn bucket(key: &str, capacity: u32) -> BucketSpec<'_> {
    BucketSpec {
        key,
        capacity,
        refill_per_ms: PER_MS,
    }
}

pub fn a_call_one_bucket_refuses_spends_nothing_of_the_others<B: Backend>() {
    let b = B::fresh(Limits::DEFAULT);
    let s = b.handle();
    let both = [bucket("identity:a", 3), bucket("tool:t", 1)];
    let first = s.take_all(&both, at(0)).unwrap();
    assert!(first.taken.allowed);
    assert_eq!(first.taken.remaining, 0, "the fewest left in any bucket");
    // The tool's bucket is empty: ten refused calls spend nothing of the identity's.
    for _ in 0..10 {
        let refused = s.take_all(&both, at(0)).unwrap();
        assert!(!refused.taken.allowed);
        assert_eq!((refused.limiting, refused.taken.retry_after_ms), (1, 1000));
    }
    assert_eq!(s.take("identity:a", 3, PER_MS, at(0)).unwrap(), allowed(1));
    // A key named twice, or no bucket at all, is refused.
    for bad in [&[][..], &[bucket("k", 1), bucket("k", 1)][..]] {
        let e = s.take_all(bad, at(0)).unwrap_err();
        assert!(matches!(e, Error::InvalidBucket(_)), "{e:?}");
    }
}

pub fn takers_of_the_same_buckets_in_any_order_all_finish_within_capacity<B: Backend>() {
    let b = B::fresh(Limits::DEFAULT);
    let start = Arc::new(Barrier::new(4));
    let racers: Vec<_> = (0..4)
        .map(|i| {
            let (h, start) = (b.handle(), Arc::clone(&start));
            std::thread::spawn(move || {
                // Half name the buckets one way round, half the other: no order may deadlock them.
                let (x, y) = (bucket("id:x", 6), bucket("tool:y", 6));
                let order = if i % 2 == 0 { [x, y] } else { [y, x] };
                start.wait();
                (0..4)
                    .filter(|_| h.take_all(&order, at(0)).unwrap().taken.allowed)
                    .count()
            })
        })
        .collect();
    let given: usize = racers.into_iter().map(|r| r.join().unwrap()).sum();
    assert_eq!(given, 6);
}
