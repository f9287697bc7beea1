//! The approval lifecycle, expiry, reads that do not persist, and pruning.

use pretty_assertions::assert_eq;
use store::{ApprovalStatus, Error, PruneMode, Timestamp};

use crate::support::{snapshot, Env, DAY, MINUTE, T0};

#[test]
fn lifecycle_pending_approved_consumed() {
    let env = Env::new();
    let mut s = env.store();
    let exp = T0.plus_millis(10 * MINUTE);
    let created = s.create_request("trace-1", &snapshot(), T0, exp).unwrap();
    assert_eq!(created.status, ApprovalStatus::Pending);
    assert_eq!(created.trace_id, "trace-1");
    assert_eq!(created.snapshot, snapshot());
    assert_eq!(created.snapshot_sha256.len(), 64);

    let handle = serde_json::to_value(created.handle()).unwrap();
    assert_eq!(
        handle,
        serde_json::json!({
            "request_id": created.id,
            "status": "PENDING",
            "trace_id": "trace-1",
            "expires_at": exp.as_millis(),
        }),
        "the agent-facing handle carries no snapshot"
    );

    let t1 = T0.plus_millis(MINUTE);
    let approved = s.approve(&created.id, "alice", t1).unwrap();
    assert_eq!(approved.status, ApprovalStatus::Approved);
    assert_eq!(approved.decided_by.as_deref(), Some("alice"));
    assert_eq!(approved.decided_at, Some(t1));

    let t2 = T0.plus_millis(2 * MINUTE);
    let consumed = s.consume(&created.id, t2).unwrap();
    assert_eq!(consumed.status, ApprovalStatus::Consumed);
    assert_eq!(consumed.consumed_at, Some(t2));
    assert_eq!(consumed.snapshot, snapshot());
}

#[test]
fn consumed_approval_cannot_be_replayed() {
    let env = Env::new();
    let mut s = env.store();
    let a = s
        .create_request("t", &snapshot(), T0, T0.plus_millis(MINUTE))
        .unwrap();
    s.approve(&a.id, "alice", T0).unwrap();
    s.consume(&a.id, T0).unwrap();
    let again = s.consume(&a.id, T0).unwrap_err();
    assert!(matches!(
        again,
        Error::InvalidTransition(ApprovalStatus::Consumed)
    ));
}

#[test]
fn pending_request_cannot_be_consumed() {
    let env = Env::new();
    let mut s = env.store();
    let a = s
        .create_request("t", &snapshot(), T0, T0.plus_millis(MINUTE))
        .unwrap();
    assert!(matches!(
        s.consume(&a.id, T0),
        Err(Error::InvalidTransition(ApprovalStatus::Pending))
    ));
}

#[test]
fn rejected_request_cannot_be_approved_or_consumed() {
    let env = Env::new();
    let mut s = env.store();
    let a = s
        .create_request("t", &snapshot(), T0, T0.plus_millis(MINUTE))
        .unwrap();
    s.reject(&a.id, "bob", T0).unwrap();
    assert!(matches!(
        s.approve(&a.id, "alice", T0),
        Err(Error::InvalidTransition(ApprovalStatus::Rejected))
    ));
    assert!(matches!(
        s.consume(&a.id, T0),
        Err(Error::InvalidTransition(ApprovalStatus::Rejected))
    ));
}

#[test]
fn expired_pending_request_cannot_be_approved() {
    let env = Env::new();
    let mut s = env.store();
    let exp = T0.plus_millis(MINUTE);
    let a = s.create_request("t", &snapshot(), T0, exp).unwrap();
    // Expiry is exclusive: at exactly expires_at the request is already expired.
    assert!(matches!(
        s.approve(&a.id, "alice", exp),
        Err(Error::Expired)
    ));
}

#[test]
fn approved_request_expires_before_consumption() {
    let env = Env::new();
    let mut s = env.store();
    let exp = T0.plus_millis(MINUTE);
    let a = s.create_request("t", &snapshot(), T0, exp).unwrap();
    s.approve(&a.id, "alice", T0).unwrap();
    assert!(matches!(
        s.consume(&a.id, exp.plus_millis(1)),
        Err(Error::Expired)
    ));
    assert_eq!(
        s.get_request(&a.id, exp).unwrap().status,
        ApprovalStatus::Expired
    );
}

#[test]
fn status_read_never_persists_lazy_expiry() {
    let env = Env::new();
    let mut s = env.store();
    let exp = T0.plus_millis(MINUTE);
    let a = s.create_request("t", &snapshot(), T0, exp).unwrap();
    let late = exp.plus_millis(1);
    assert_eq!(
        s.get_request(&a.id, late).unwrap().status,
        ApprovalStatus::Expired
    );
    // Read-only: read at an earlier clock, it is still pending.
    assert_eq!(
        s.get_request(&a.id, T0).unwrap().status,
        ApprovalStatus::Pending
    );
    assert_eq!(s.expire_due(late).unwrap(), 1);
    assert_eq!(
        s.get_request(&a.id, T0).unwrap().status,
        ApprovalStatus::Expired
    );
}

#[test]
fn unknown_id_is_not_found() {
    let env = Env::new();
    let mut s = env.store();
    for id in [
        "apr_00000000000000000000000000000000",
        "",
        "'; DROP TABLE approvals; --",
    ] {
        assert!(matches!(s.get_request(id, T0), Err(Error::RequestNotFound)));
        assert!(matches!(
            s.approve(id, "a", T0),
            Err(Error::RequestNotFound)
        ));
        assert!(matches!(s.consume(id, T0), Err(Error::RequestNotFound)));
    }
}

#[test]
fn list_filters_by_effective_status() {
    let env = Env::new();
    let mut s = env.store();
    let a = s
        .create_request("a", &snapshot(), T0, T0.plus_millis(MINUTE))
        .unwrap();
    let b = s
        .create_request("b", &snapshot(), T0, T0.plus_millis(10 * MINUTE))
        .unwrap();
    let now = T0.plus_millis(2 * MINUTE);
    let pending: Vec<String> = s
        .list_requests(Some(ApprovalStatus::Pending), now)
        .unwrap()
        .into_iter()
        .map(|x| x.id)
        .collect();
    assert_eq!(pending, vec![b.id.clone()]);
    let expired = s.list_requests(Some(ApprovalStatus::Expired), now).unwrap();
    assert_eq!(expired.len(), 1);
    assert_eq!(expired[0].id, a.id);
    assert_eq!(s.list_requests(None, now).unwrap().len(), 2);
}

#[test]
fn prune_is_dry_run_by_default_and_spares_live_requests() {
    let env = Env::new();
    let mut s = env.store();
    let long = T0.plus_millis(365 * DAY);
    let consumed = s.create_request("c", &snapshot(), T0, long).unwrap();
    s.approve(&consumed.id, "a", T0).unwrap();
    s.consume(&consumed.id, T0).unwrap();
    let rejected = s.create_request("r", &snapshot(), T0, long).unwrap();
    s.reject(&rejected.id, "a", T0).unwrap();
    let expired = s
        .create_request("e", &snapshot(), T0, T0.plus_millis(MINUTE))
        .unwrap();
    let live_pending = s.create_request("p", &snapshot(), T0, long).unwrap();
    let live_approved = s.create_request("ap", &snapshot(), T0, long).unwrap();
    s.approve(&live_approved.id, "a", T0).unwrap();
    let recent = s.create_request("recent", &snapshot(), T0, long).unwrap();
    let now = T0.plus_millis(31 * DAY);
    s.reject(&recent.id, "a", now).unwrap();

    let plan = s.prune_approvals(30, now, PruneMode::DryRun).unwrap();
    let mut ids: Vec<&str> = plan.iter().map(|p| p.id.as_str()).collect();
    ids.sort_unstable();
    let mut want = vec![
        consumed.id.as_str(),
        rejected.id.as_str(),
        expired.id.as_str(),
    ];
    want.sort_unstable();
    assert_eq!(ids, want);
    assert_eq!(
        s.list_requests(None, now).unwrap().len(),
        6,
        "dry run deleted"
    );

    let applied = s.prune_approvals(30, now, PruneMode::Apply).unwrap();
    assert_eq!(applied.len(), 3);
    let left: Vec<String> = s
        .list_requests(None, now)
        .unwrap()
        .into_iter()
        .map(|a| a.id)
        .collect();
    assert_eq!(left.len(), 3);
    for id in [&live_pending.id, &live_approved.id, &recent.id] {
        assert!(left.contains(id));
    }
}

#[test]
fn prune_cutoff_is_inclusive() {
    let env = Env::new();
    let mut s = env.store();
    let a = s
        .create_request("t", &snapshot(), T0, T0.plus_millis(DAY))
        .unwrap();
    s.reject(&a.id, "a", T0).unwrap();
    let exactly = T0.plus_millis(7 * DAY);
    assert_eq!(
        s.prune_approvals(7, exactly, PruneMode::DryRun)
            .unwrap()
            .len(),
        1
    );
    let before = Timestamp::from_millis(exactly.as_millis() - 1);
    assert!(s
        .prune_approvals(7, before, PruneMode::DryRun)
        .unwrap()
        .is_empty());
}

#[test]
fn labels_are_capped() {
    let env = Env::new();
    let mut s = env.store();
    let long = "x".repeat(10_000);
    let a = s
        .create_request(&long, &snapshot(), T0, T0.plus_millis(MINUTE))
        .unwrap();
    assert_eq!(a.trace_id.len(), 128);
    let a = s.approve(&a.id, &long, T0).unwrap();
    assert_eq!(a.decided_by.map(|d| d.len()), Some(128));
}

#[test]
fn snapshot_edited_behind_the_store_is_never_consumed() {
    let env = Env::new();
    let ns = env.namespace();
    let mut s = store::Store::open(&ns).unwrap();
    let a = s
        .create_request("t", &snapshot(), T0, T0.plus_millis(MINUTE))
        .unwrap();
    s.approve(&a.id, "alice", T0).unwrap();
    let conn = rusqlite::Connection::open(ns.db_path()).unwrap();
    conn.execute(
        "UPDATE approvals SET snapshot = '{\"arguments\":{\"argv\":[\"rm\",\"-rf\",\"/\"]}}'",
        [],
    )
    .unwrap();
    assert!(matches!(s.consume(&a.id, T0), Err(Error::Tampered)));
    assert!(!s.get_request(&a.id, T0).unwrap().authentic);
}

#[test]
fn concurrent_first_use_of_a_namespace_binds_once() {
    let env = std::sync::Arc::new(Env::new());
    let handles: Vec<_> = (0..16)
        .map(|_| {
            let env = std::sync::Arc::clone(&env);
            std::thread::spawn(move || {
                store::Namespace::open(&env.state_root, &env.workspace).map(|n| n.id().to_owned())
            })
        })
        .collect();
    let ids: Vec<String> = handles
        .into_iter()
        .map(|h| h.join().unwrap().unwrap())
        .collect();
    assert!(ids.windows(2).all(|w| w[0] == w[1]));
}
