//! Advisory path leases as every backend keeps them: one holder among racing acquirers on any handles, renewal
//! only by the holder, release only by the holder, lapse at expiry, no lease id readable back, and a ceiling.

use std::sync::{Arc, Barrier};

use pretty_assertions::assert_eq;
use store::{Acquired, Error, Limits, LockCheck, Released};

use super::{at, Backend, MINUTE};

const TTL: u64 = MINUTE as u64;

/// The lease id of an acquire that must have succeeded.
fn held(outcome: Acquired) -> String {
    match outcome {
        Acquired::Held { lease_id, .. } => lease_id,
        other => panic!("expected the lease, got {other:?}"),
    }
}

pub fn a_lease_is_held_renewed_and_released_by_its_holder_alone<B: Backend>() {
    let b = B::fresh(Limits::DEFAULT);
    let (a, other) = (b.handle(), b.handle());
    let id = held(
        a.acquire_lock("src/app.py", "local", "agent-a", None, TTL, at(0))
            .unwrap(),
    );
    assert!(id.starts_with("lease_") && id.len() > 32, "{id}");
    // Another process sees it, and who holds it until when, but never its id.
    match other
        .acquire_lock("src/app.py", "local", "agent-b", None, TTL, at(1))
        .unwrap()
    {
        Acquired::Conflict(lease) => {
            assert_eq!(
                (lease.owner.as_str(), lease.expires_at),
                ("agent-a", at(MINUTE))
            );
        }
        wrong => panic!("{wrong:?}"),
    }
    let listed = other.list_locks(at(1)).unwrap();
    assert_eq!(listed.len(), 1);
    assert!(!format!("{listed:?}").contains(&id[6..]), "{listed:?}");
    assert_eq!(
        other.check_lock("src/app.py", None, at(1)).unwrap(),
        LockCheck::Other(listed[0].clone())
    );
    assert!(matches!(
        other.check_lock("src/app.py", Some(&id), at(1)).unwrap(),
        LockCheck::Mine(_)
    ));
    assert_eq!(
        other.check_lock("src/other.py", Some(&id), at(1)).unwrap(),
        LockCheck::Free
    );
    // Renewal by the holder moves the expiry and keeps the id; a guessed id renews nothing.
    match other
        .acquire_lock("src/app.py", "local", "agent-a", Some(&id), TTL, at(30_000))
        .unwrap()
    {
        Acquired::Held {
            lease_id,
            lease,
            renewed,
        } => {
            assert_eq!((lease_id.as_str(), renewed), (id.as_str(), true));
            assert_eq!(
                (lease.acquired_at, lease.expires_at),
                (at(0), at(30_000 + MINUTE))
            );
        }
        wrong => panic!("{wrong:?}"),
    }
    let guess = "lease_00000000000000000000000000000000";
    assert!(matches!(
        a.acquire_lock("src/app.py", "local", "agent-b", Some(guess), TTL, at(2))
            .unwrap(),
        Acquired::Conflict(_)
    ));
    assert!(matches!(
        a.release_lock("src/app.py", guess, at(2)).unwrap(),
        Released::Conflict(_)
    ));
    assert_eq!(
        a.release_lock("src/app.py", &id, at(3)).unwrap(),
        Released::Released
    );
    assert_eq!(
        a.release_lock("src/app.py", &id, at(4)).unwrap(),
        Released::NotHeld
    );
    assert_eq!(
        other.check_lock("src/app.py", None, at(4)).unwrap(),
        LockCheck::Free
    );
    held(
        other
            .acquire_lock("src/app.py", "local", "agent-b", None, TTL, at(5))
            .unwrap(),
    );
}

pub fn a_lapsed_lease_is_no_lease<B: Backend>() {
    let b = B::fresh(Limits::DEFAULT);
    let s = b.handle();
    let id = held(
        s.acquire_lock("a.txt", "local", "agent-a", None, TTL, at(0))
            .unwrap(),
    );
    assert_eq!(
        s.check_lock("a.txt", Some(&id), at(MINUTE)).unwrap(),
        LockCheck::Free
    );
    assert_eq!(s.list_locks(at(MINUTE)).unwrap(), vec![]);
    assert_eq!(
        s.acquire_lock("a.txt", "local", "agent-a", Some(&id), TTL, at(MINUTE))
            .unwrap(),
        Acquired::Missing,
        "a lapsed lease cannot be renewed: whoever held it must read again"
    );
    let next = held(
        b.handle()
            .acquire_lock("a.txt", "local", "agent-b", None, TTL, at(MINUTE))
            .unwrap(),
    );
    assert_ne!(next, id);
}

pub fn racing_acquirers_on_separate_handles_get_one_lease<B: Backend>() {
    let b = B::fresh(Limits::DEFAULT);
    for round in 0..4 {
        let path = format!("file-{round}");
        let start = Arc::new(Barrier::new(6));
        let racers: Vec<_> = (0..6)
            .map(|i| {
                let (h, path, start) = (b.handle(), path.clone(), Arc::clone(&start));
                std::thread::spawn(move || {
                    start.wait();
                    let owner = format!("agent-{i}");
                    matches!(
                        h.acquire_lock(&path, "local", &owner, None, TTL, at(0))
                            .unwrap(),
                        Acquired::Held { .. }
                    )
                })
            })
            .collect();
        let wins = racers
            .into_iter()
            .map(|r| r.join().unwrap())
            .filter(|w| *w)
            .count();
        assert_eq!(wins, 1, "round {round}: {wins} acquirers hold {path}");
    }
}

pub fn live_leases_are_bounded<B: Backend>() {
    let b = B::fresh(Limits {
        max_locks: 3,
        ..Limits::DEFAULT
    });
    let s = b.handle();
    for n in 0..3 {
        held(
            s.acquire_lock(&format!("f{n}"), "local", "a", None, TTL, at(0))
                .unwrap(),
        );
    }
    assert!(matches!(
        s.acquire_lock("f3", "local", "a", None, TTL, at(1)),
        Err(Error::LocksFull { limit: 3 })
    ));
    // Lapsed leases hold no place.
    held(
        s.acquire_lock("f3", "local", "a", None, TTL, at(MINUTE))
            .unwrap(),
    );
}

/// One identity taking leases stops at its share, and another identity still takes one: a share per identity under
/// the ceiling, as every other bound of toolgate.
pub fn one_identity_cannot_take_every_lease<B: Backend>() {
    let b = B::fresh(Limits {
        max_locks: 10,
        max_locks_per_holder: 2,
        ..Limits::DEFAULT
    });
    let s = b.handle();
    for n in 0..2 {
        held(
            s.acquire_lock(&format!("f{n}"), "key:greedy", "a", None, TTL, at(0))
                .unwrap(),
        );
    }
    assert!(matches!(
        s.acquire_lock("f2", "key:greedy", "a", None, TTL, at(1)),
        Err(Error::LocksShareFull { limit: 2 })
    ));
    held(
        s.acquire_lock("f2", "key:other", "b", None, TTL, at(1))
            .unwrap(),
    );
}
