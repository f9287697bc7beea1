//! Races: many consumers, each with its own connection, on one approved request.

use std::sync::{Arc, Barrier};
use std::thread;

use store::{ApprovalStatus, Error, Store};

use crate::support::{snapshot, Env, MINUTE, T0};

const CONSUMERS: usize = 100;

#[test]
fn double_resume_race_consumes_once() {
    let env = Env::new();
    let ns = env.namespace();
    let id = {
        let mut s = Store::open(&ns).unwrap();
        let a = s
            .create_request("race", &snapshot(), T0, T0.plus_millis(10 * MINUTE))
            .unwrap();
        s.approve(&a.id, "alice", T0).unwrap();
        a.id
    };
    let barrier = Arc::new(Barrier::new(CONSUMERS));
    let handles: Vec<_> = (0..CONSUMERS)
        .map(|_| {
            let ns = ns.clone();
            let id = id.clone();
            let barrier = Arc::clone(&barrier);
            thread::spawn(move || {
                let opened = Store::open(&ns);
                barrier.wait();
                opened
                    .expect("each handle opens the store")
                    .consume(&id, T0.plus_millis(MINUTE))
            })
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let winners = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(winners, 1, "exactly one consumer may win");
    for r in results.iter().filter_map(|r| r.as_ref().err()) {
        assert!(
            matches!(r, Error::InvalidTransition(ApprovalStatus::Consumed)),
            "loser saw {r:?}"
        );
    }
    let s = Store::open(&ns).unwrap();
    assert_eq!(
        s.get_request(&id, T0).unwrap().status,
        ApprovalStatus::Consumed
    );
}

#[test]
fn concurrent_creation_never_exceeds_the_record_ceiling() {
    let env = Env::new();
    let ns = env.namespace();
    let limits = store::Limits {
        max_approval_records: 10,
        ..store::Limits::DEFAULT
    };
    let barrier = Arc::new(Barrier::new(30));
    let handles: Vec<_> = (0..30)
        .map(|i| {
            let ns = ns.clone();
            let barrier = Arc::clone(&barrier);
            thread::spawn(move || {
                // Every thread reaches the barrier, opened or not: a failed open fails the test, never hangs it.
                let opened = Store::open_with_limits(&ns, limits);
                barrier.wait();
                let mut s = opened.expect("each handle opens the store");
                s.create_request(&format!("t{i}"), &snapshot(), T0, T0.plus_millis(MINUTE))
            })
        })
        .collect();
    let ok = handles
        .into_iter()
        .map(|h| h.join().unwrap())
        .filter(|r| r.is_ok())
        .count();
    assert_eq!(ok, 10);
    let s = Store::open(&ns).unwrap();
    assert_eq!(s.list_requests(None, T0).unwrap().len(), 10);
}

/// Regression: two `toolgate serve` processes started at once on a fresh workspace state (two clients' entries)
/// made one fail with "database is locked" while the other created and migrated the database.
#[test]
fn processes_opening_a_fresh_database_at_once_all_open_it() {
    for _ in 0..20 {
        let env = Env::new();
        let ns = env.namespace();
        let barrier = Arc::new(Barrier::new(8));
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let (ns, barrier) = (ns.clone(), Arc::clone(&barrier));
                thread::spawn(move || {
                    barrier.wait();
                    Store::open(&ns).map(drop)
                })
            })
            .collect();
        for h in handles {
            if let Err(e) = h.join().unwrap() {
                panic!("a concurrent open failed: {e}");
            }
        }
    }
}
