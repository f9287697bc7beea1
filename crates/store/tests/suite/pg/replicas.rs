//! Replicas sharing one database: separate pools racing on one approval, wake-ups through NOTIFY, and a server
//! that goes away and comes back.

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use store::{AuditHead, Error, PostgresStore, StateStore, WitnessStore};
use test_support::postgres::Cluster;

use crate::contract::{at, pending};
use crate::support::Env;

fn replica(url: &str, env: &Env) -> Arc<dyn StateStore> {
    Arc::new(PostgresStore::open(url, &env.namespace()).unwrap())
}

#[test]
fn replicas_racing_to_consume_one_approval_have_exactly_one_winner_each_time() {
    let url = super::url();
    let env = Env::new();
    let replicas: Vec<_> = (0..6).map(|_| replica(&url, &env)).collect();
    for round in 0..10 {
        let id = pending(&*replicas[0], round);
        replicas[1].approve(&id, "operator", at(1)).unwrap();
        let start = Arc::new(Barrier::new(replicas.len()));
        let racers: Vec<_> = replicas
            .iter()
            .map(|r| {
                let (r, id, start) = (Arc::clone(r), id.clone(), Arc::clone(&start));
                std::thread::spawn(move || {
                    start.wait();
                    r.consume(&id, at(2))
                })
            })
            .collect();
        let results: Vec<_> = racers.into_iter().map(|t| t.join().unwrap()).collect();
        let winners = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(winners, 1, "round {round}: {results:?}");
        for lost in results.iter().filter_map(|r| r.as_ref().err()) {
            assert!(
                matches!(
                    lost,
                    Error::InvalidTransition(store::ApprovalStatus::Consumed)
                ),
                "{lost:?}"
            );
        }
    }
}

#[test]
fn a_write_in_another_namespace_wakes_nobody_here() {
    let url = super::url();
    let (here, there) = (Env::new(), Env::new());
    let waiter = replica(&url, &here);
    let other = replica(&url, &there);
    let mut mark = waiter.change_mark().unwrap();
    pending(&*other, 1);
    let started = Instant::now();
    assert!(!waiter
        .wait_for_change(&mut mark, started + Duration::from_millis(400))
        .unwrap());
    // And one in this namespace by another replica does, through NOTIFY.
    let writer = replica(&url, &here);
    pending(&*writer, 2);
    assert!(waiter
        .wait_for_change(&mut mark, Instant::now() + Duration::from_secs(10))
        .unwrap());
}

#[test]
fn a_restarted_server_fails_calls_closed_then_serves_them_again() {
    let cluster = Cluster::start();
    cluster.create_database("restart");
    let url = cluster.url("restart");
    PostgresStore::migrate(&url).unwrap();
    let env = Env::new();
    let store = replica(&url, &env);
    let id = pending(&*store, 1);
    let mut mark = store.change_mark().unwrap();
    cluster.stop();
    let e = store.get_request(&id, at(1)).unwrap_err();
    assert!(matches!(e, Error::Unavailable(_)), "{e:?}");
    assert!(
        e.to_string().contains("refused until it answers again"),
        "{e}"
    );
    assert!(matches!(
        store.approve(&id, "operator", at(1)),
        Err(Error::Unavailable(_))
    ));
    // Losing the listener counts as a change: a waiter re-reads rather than sleep through a decision.
    assert!(store
        .wait_for_change(&mut mark, Instant::now() + Duration::from_secs(10))
        .unwrap());
    cluster.resume();
    let deadline = Instant::now() + Duration::from_secs(20);
    let approved = loop {
        match store.approve(&id, "operator", at(1)) {
            Ok(a) => break a,
            Err(Error::Unavailable(_)) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => panic!("not back after the restart: {e:?}"),
        }
    };
    assert_eq!(approved.status, store::ApprovalStatus::Approved);
    // The listener is back too: another replica's write wakes this one.
    let other = replica(&url, &env);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut mark = store.change_mark().unwrap();
        pending(&*other, 2);
        if store
            .wait_for_change(&mut mark, Instant::now() + Duration::from_secs(2))
            .unwrap()
        {
            break;
        }
        assert!(Instant::now() < deadline, "no wake-up after the restart");
    }
}

/// Each replica witnesses its own audit chain: one replica's head never moves another's (they would otherwise
/// conflict, and a replica whose log is behind another's head would refuse every call), and every chain of the
/// namespace is listed for `audit verify`.
#[test]
fn each_replica_witnesses_its_own_audit_chain_and_all_are_listed() {
    let url = super::url();
    let env = Env::new();
    let ns = env.namespace();
    let a = PostgresStore::open_chain(&url, &ns, "a").unwrap();
    let b = PostgresStore::open_chain(&url, &ns, "b").unwrap();
    let head = |seq, hash: &str| AuditHead {
        seq,
        hash: hash.into(),
    };
    a.advance_audit_head(&head(10, "a10"), at(1)).unwrap();
    b.advance_audit_head(&head(3, "b3"), at(2)).unwrap();
    // Forward only, per chain.
    b.advance_audit_head(&head(2, "b2"), at(3)).unwrap();
    a.record_audit_anchor("anchor-a", 5, "p", at(4)).unwrap();
    assert_eq!(a.audit_head().unwrap(), Some(head(10, "a10")));
    assert_eq!(b.audit_head().unwrap(), Some(head(3, "b3")));
    assert!(b.audit_anchors().unwrap().is_empty());
    let chains = b.audit_chains().unwrap();
    let names: Vec<_> = chains.iter().map(|c| c.chain.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(chains[0].anchors.len(), 1);
    assert_eq!(chains[1].head, Some(head(3, "b3")));
}
