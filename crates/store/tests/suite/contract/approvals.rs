//! The approval lifecycle as every backend keeps it: states, transitions, single consumption under races, caps.

use std::sync::{Arc, Barrier};

use store::{ApprovalStatus, Error, Limits, NewRequest, PruneMode, StateStore};

use super::{at, pending, snapshot, Backend, MINUTE, T0};

fn fresh<B: Backend>() -> (B, Arc<dyn StateStore>) {
    let b = B::fresh(Limits::DEFAULT);
    let s = b.handle();
    (b, s)
}

fn held<'a>(
    s: &dyn StateStore,
    n: u64,
    session: Option<&'a str>,
    owner: Option<&'a str>,
) -> store::Result<store::Approval> {
    let snapshot = snapshot(n);
    s.create_held_request(&NewRequest {
        trace_id: "trace",
        snapshot: &snapshot,
        session_id: session,
        owner,
        now: T0,
        held_until: T0,
        expires_at: at(MINUTE),
    })
}

pub fn pending_becomes_approved_rejected_or_cancelled_once<B: Backend>() {
    let (_b, s) = fresh::<B>();
    let (a, r, c) = (pending(&*s, 1), pending(&*s, 2), pending(&*s, 3));
    assert_eq!(
        s.get_request(&a, T0).unwrap().status,
        ApprovalStatus::Pending
    );
    let approved = s.approve(&a, "operator", at(1)).unwrap();
    assert_eq!(approved.status, ApprovalStatus::Approved);
    assert_eq!(approved.decided_by.as_deref(), Some("operator"));
    assert_eq!(approved.decided_at, Some(at(1)));
    assert_eq!(
        s.reject(&r, "operator", at(1)).unwrap().status,
        ApprovalStatus::Rejected
    );
    assert_eq!(
        s.cancel(&c, "gone", at(1)).unwrap().status,
        ApprovalStatus::Cancelled
    );
    for (id, now_is) in [
        (&a, ApprovalStatus::Approved),
        (&r, ApprovalStatus::Rejected),
        (&c, ApprovalStatus::Cancelled),
    ] {
        for decide in [
            ApprovalStatus::Approved,
            ApprovalStatus::Rejected,
            ApprovalStatus::Cancelled,
        ] {
            match s.decide(id, decide, "late", at(2)) {
                Err(Error::InvalidTransition(was)) => assert_eq!(was, now_is),
                other => panic!("a decided request was decided again: {other:?}"),
            }
        }
        assert_eq!(s.get_request(id, at(2)).unwrap().status, now_is);
    }
    let d = pending(&*s, 4);
    for not_a_decision in [
        ApprovalStatus::Consumed,
        ApprovalStatus::Expired,
        ApprovalStatus::Pending,
    ] {
        assert!(s.decide(&d, not_a_decision, "x", at(1)).is_err());
    }
    assert_eq!(
        s.get_request(&d, at(1)).unwrap().status,
        ApprovalStatus::Pending
    );
}

pub fn a_request_past_its_expiry_is_expired_and_cannot_be_decided<B: Backend>() {
    let (_b, s) = fresh::<B>();
    let id = pending(&*s, 1);
    assert_eq!(
        s.get_request(&id, at(MINUTE - 1)).unwrap().status,
        ApprovalStatus::Pending
    );
    assert_eq!(
        s.get_request(&id, at(MINUTE)).unwrap().status,
        ApprovalStatus::Expired
    );
    assert!(matches!(
        s.approve(&id, "operator", at(MINUTE)),
        Err(Error::Expired)
    ));
    // An approval not used before the expiry is expired too.
    let late = pending(&*s, 2);
    s.approve(&late, "operator", at(1)).unwrap();
    assert!(matches!(s.consume(&late, at(MINUTE)), Err(Error::Expired)));
    assert_eq!(
        s.get_request(&late, at(MINUTE)).unwrap().status,
        ApprovalStatus::Expired
    );
}

pub fn expire_due_persists_expiry<B: Backend>() {
    let (_b, s) = fresh::<B>();
    let (a, b) = (pending(&*s, 1), pending(&*s, 2));
    s.approve(&b, "operator", at(1)).unwrap();
    let decided = pending(&*s, 3);
    s.reject(&decided, "operator", at(1)).unwrap();
    assert_eq!(s.expire_due(at(1)).unwrap(), 0);
    assert_eq!(s.expire_due(at(MINUTE)).unwrap(), 2);
    assert_eq!(s.expire_due(at(MINUTE)).unwrap(), 0);
    // Stored as expired now: even a reader whose clock is behind sees it so.
    for id in [&a, &b] {
        assert_eq!(
            s.get_request(id, T0).unwrap().status,
            ApprovalStatus::Expired
        );
    }
    assert_eq!(
        s.get_request(&decided, T0).unwrap().status,
        ApprovalStatus::Rejected
    );
}

pub fn an_approved_request_is_consumed_exactly_once<B: Backend>() {
    let (_b, s) = fresh::<B>();
    let id = pending(&*s, 1);
    assert!(matches!(
        s.consume(&id, at(1)),
        Err(Error::InvalidTransition(ApprovalStatus::Pending))
    ));
    s.approve(&id, "operator", at(1)).unwrap();
    let won = s.consume(&id, at(2)).unwrap();
    assert_eq!(won.status, ApprovalStatus::Consumed);
    assert_eq!(won.consumed_at, Some(at(2)));
    assert_eq!(
        won.snapshot,
        snapshot(1),
        "the winner gets the snapshot to run"
    );
    assert!(matches!(
        s.consume(&id, at(3)),
        Err(Error::InvalidTransition(ApprovalStatus::Consumed))
    ));
    assert!(s.approve(&id, "operator", at(3)).is_err());
    assert_eq!(
        s.get_request(&id, at(3)).unwrap().status,
        ApprovalStatus::Consumed
    );
}

/// `threads` consumers race for one approved request, each through the handle `handle(i)` gives; exactly one wins.
fn race<B: Backend>(threads: usize, handle: impl Fn(&B, usize) -> Arc<dyn StateStore>) {
    let b = B::fresh(Limits::DEFAULT);
    let s = b.handle();
    for round in 0..5 {
        let id = pending(&*s, round);
        s.approve(&id, "operator", at(1)).unwrap();
        let start = Arc::new(Barrier::new(threads));
        let racers: Vec<_> = (0..threads)
            .map(|i| {
                let (h, id, start) = (handle(&b, i), id.clone(), Arc::clone(&start));
                std::thread::spawn(move || {
                    start.wait();
                    h.consume(&id, at(2)).is_ok()
                })
            })
            .collect();
        let wins = racers
            .into_iter()
            .map(|r| r.join().unwrap())
            .filter(|won| *won)
            .count();
        assert_eq!(wins, 1, "round {round}: {wins} consumers won");
        assert_eq!(
            s.get_request(&id, at(3)).unwrap().status,
            ApprovalStatus::Consumed
        );
    }
}

pub fn racing_consumers_on_separate_handles_have_one_winner<B: Backend>() {
    race::<B>(6, |b, _| b.handle());
}

pub fn racing_consumers_on_one_shared_handle_have_one_winner<B: Backend>() {
    let shared = std::sync::OnceLock::new();
    race::<B>(6, |b, _| Arc::clone(shared.get_or_init(|| b.handle())));
}

pub fn per_session_cap_of_waiting_requests<B: Backend>() {
    let b = B::fresh(Limits {
        max_pending_per_session: 2,
        ..Limits::DEFAULT
    });
    let s = b.handle();
    let first = held(&*s, 1, Some("s1"), None).unwrap();
    held(&*s, 2, Some("s1"), None).unwrap();
    assert!(matches!(
        held(&*s, 3, Some("s1"), None),
        Err(Error::SessionPendingFull { limit: 2 })
    ));
    // Another session, and a request outside any session, are not counted against s1.
    held(&*s, 4, Some("s2"), None).unwrap();
    held(&*s, 5, None, None).unwrap();
    // A decision frees the slot: only waiting requests count.
    s.approve(&first.id, "operator", at(1)).unwrap();
    held(&*s, 6, Some("s1"), None).unwrap();
    // The cap holds over handles: another one sees the same count.
    assert!(matches!(
        held(&*b.handle(), 7, Some("s1"), None),
        Err(Error::SessionPendingFull { .. })
    ));
}

pub fn per_identity_cap_counts_every_session<B: Backend>() {
    let b = B::fresh(Limits {
        max_pending_per_identity: 3,
        ..Limits::DEFAULT
    });
    let s = b.handle();
    for (n, session) in ["s1", "s2", "s3"].into_iter().enumerate() {
        held(&*s, n as u64, Some(session), Some("alice")).unwrap();
    }
    assert!(matches!(
        held(&*s, 9, Some("s4"), Some("alice")),
        Err(Error::IdentityPendingFull { limit: 3 })
    ));
    held(&*s, 10, Some("s4"), Some("bob")).unwrap();
}

pub fn store_ceilings_refuse_what_does_not_fit<B: Backend>() {
    let b = B::fresh(Limits {
        max_approval_records: 2,
        max_snapshot_bytes: 200,
        ..Limits::DEFAULT
    });
    let s = b.handle();
    let big = serde_json::json!({"pad": "x".repeat(300)});
    assert!(matches!(
        s.create_request("t", &big, T0, at(MINUTE)),
        Err(Error::SnapshotTooLarge { limit: 200, .. })
    ));
    let first = pending(&*s, 1);
    pending(&*s, 2);
    assert!(matches!(
        s.create_request("t", &snapshot(3), T0, at(MINUTE)),
        Err(Error::StoreFull { limit: 2 })
    ));
    // A finished request makes room; the live one stays.
    s.reject(&first, "operator", at(1)).unwrap();
    s.create_request("t", &snapshot(3), at(2), at(MINUTE))
        .unwrap();
    assert_eq!(
        s.list_requests(Some(ApprovalStatus::Pending), at(2))
            .unwrap()
            .len(),
        2
    );
}

pub fn unknown_ids_are_not_found<B: Backend>() {
    let (_b, s) = fresh::<B>();
    let missing = "apr_00000000000000000000000000000000";
    assert!(matches!(
        s.get_request(missing, T0),
        Err(Error::RequestNotFound)
    ));
    assert!(matches!(
        s.approve(missing, "o", T0),
        Err(Error::RequestNotFound)
    ));
    assert!(matches!(
        s.consume(missing, T0),
        Err(Error::RequestNotFound)
    ));
}

pub fn listing_filters_by_effective_status_newest_first<B: Backend>() {
    let (_b, s) = fresh::<B>();
    let older = s
        .create_request("t", &snapshot(1), T0, at(MINUTE))
        .unwrap()
        .id;
    let newer = s
        .create_request("t", &snapshot(2), at(5), at(10 * MINUTE))
        .unwrap()
        .id;
    let ids = |status| -> Vec<String> {
        s.list_requests(status, at(MINUTE))
            .unwrap()
            .into_iter()
            .map(|a| a.id)
            .collect()
    };
    assert_eq!(ids(None), [newer.clone(), older.clone()]);
    assert_eq!(ids(Some(ApprovalStatus::Pending)), [newer]);
    assert_eq!(ids(Some(ApprovalStatus::Expired)), [older]);
}

pub fn find_approved_names_only_an_approved_request_of_that_session<B: Backend>() {
    let (_b, s) = fresh::<B>();
    let a = held(&*s, 1, Some("s1"), None).unwrap();
    assert_eq!(
        s.find_approved("s1", &a.snapshot_sha256, at(1)).unwrap(),
        None
    );
    s.approve(&a.id, "operator", at(1)).unwrap();
    assert_eq!(
        s.find_approved("s1", &a.snapshot_sha256, at(2)).unwrap(),
        Some(a.id.clone())
    );
    assert_eq!(
        s.find_approved("s2", &a.snapshot_sha256, at(2)).unwrap(),
        None
    );
    assert_eq!(s.find_approved("s1", &"0".repeat(64), at(2)).unwrap(), None);
    assert_eq!(
        s.find_approved("s1", &a.snapshot_sha256, at(MINUTE))
            .unwrap(),
        None
    );
    s.consume(&a.id, at(3)).unwrap();
    assert_eq!(
        s.find_approved("s1", &a.snapshot_sha256, at(4)).unwrap(),
        None
    );
}

pub fn prune_removes_only_finished_requests<B: Backend>() {
    let (_b, s) = fresh::<B>();
    let day = 86_400_000;
    let live = s
        .create_request("t", &snapshot(1), T0, at(30 * day))
        .unwrap()
        .id;
    let finished = pending(&*s, 2);
    s.reject(&finished, "operator", at(1)).unwrap();
    let later = at(3 * day);
    let dry = s.prune_approvals(1, later, PruneMode::DryRun).unwrap();
    assert_eq!(
        dry.iter().map(|p| p.id.as_str()).collect::<Vec<_>>(),
        [finished.as_str()]
    );
    assert!(
        s.get_request(&finished, later).is_ok(),
        "a dry run removes nothing"
    );
    s.prune_approvals(1, later, PruneMode::Apply).unwrap();
    assert!(matches!(
        s.get_request(&finished, later),
        Err(Error::RequestNotFound)
    ));
    assert_eq!(
        s.get_request(&live, later).unwrap().status,
        ApprovalStatus::Pending
    );
}
