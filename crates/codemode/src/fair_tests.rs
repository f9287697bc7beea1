//! Admission order and shares of the fair gate, asserted as order rather than time.

use super::*;
use std::time::Duration;

async fn admitted_now(gate: &FairGate, identity: &str) -> Option<Permit> {
    tokio::time::timeout(Duration::from_millis(20), gate.acquire(identity))
        .await
        .ok()
        .and_then(Result::ok)
}

#[tokio::test]
async fn an_identity_holds_at_most_its_share_and_another_is_admitted_at_once() {
    let gate = FairGate::new(4, 2, 100);
    let _a1 = gate.acquire("key:flood").await.unwrap();
    let _a2 = gate.acquire("key:flood").await.unwrap();
    assert!(admitted_now(&gate, "key:flood").await.is_none());
    assert!(admitted_now(&gate, "key:quiet").await.is_some());
    assert_eq!(gate.running("key:flood"), 2);
}

#[tokio::test]
async fn when_slots_are_scarce_waiting_identities_are_served_in_turn() {
    let gate = FairGate::new(1, 1, 100);
    let first = gate.acquire("key:flood").await.unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut waiting = Vec::new();
    // The flood queues five requests before the quiet identity queues its one.
    for n in 0..5 {
        let (gate, order) = (gate.clone(), Arc::clone(&order));
        waiting.push(tokio::spawn(async move {
            let p = gate.acquire("key:flood").await.unwrap();
            order.lock().unwrap().push(format!("flood{n}"));
            tokio::time::sleep(Duration::from_millis(1)).await;
            drop(p);
        }));
        tokio::task::yield_now().await;
    }
    {
        let (gate, order) = (gate.clone(), Arc::clone(&order));
        waiting.push(tokio::spawn(async move {
            let p = gate.acquire("key:quiet").await.unwrap();
            order.lock().unwrap().push("quiet".to_owned());
            drop(p);
        }));
    }
    while gate.waiting("key:quiet") == 0 {
        tokio::task::yield_now().await;
    }
    drop(first);
    for w in waiting {
        w.await.unwrap();
    }
    let order = order.lock().unwrap().clone();
    // One of the flood's five went first (it asked first), then the quiet one's turn came.
    assert_eq!(order[..2], ["flood0".to_owned(), "quiet".to_owned()]);
    assert_eq!(order.len(), 6);
    assert_eq!(gate.in_use(), 0);
}

#[tokio::test]
async fn an_identity_over_its_waiting_bound_is_refused_with_the_bound() {
    let gate = FairGate::new(1, 1, 2);
    let _held = gate.acquire("key:a").await.unwrap();
    let w1 = tokio::spawn({
        let g = gate.clone();
        async move { g.acquire("key:a").await.map(drop) }
    });
    let w2 = tokio::spawn({
        let g = gate.clone();
        async move { g.acquire("key:a").await.map(drop) }
    });
    while gate.waiting("key:a") < 2 {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        gate.acquire("key:a").await.unwrap_err(),
        TooManyWaiting { limit: 2 }
    );
    // Another identity still queues.
    assert!(admitted_now(&gate, "key:b").await.is_none());
    w1.abort();
    w2.abort();
}

#[tokio::test]
async fn a_request_dropped_while_it_waits_takes_no_slot() {
    let gate = FairGate::new(1, 1, 10);
    let held = gate.acquire("key:a").await.unwrap();
    assert!(admitted_now(&gate, "key:b").await.is_none());
    drop(held);
    assert_eq!(gate.in_use(), 0);
    assert!(admitted_now(&gate, "key:c").await.is_some());
    assert_eq!(gate.in_use(), 0);
}

#[tokio::test]
async fn one_local_client_flooding_does_not_queue_another_local_client_behind_it() {
    // Every stdio client is the one local identity: within it, its clients are served in turn.
    let gate = FairGate::new(1, 1, 100);
    let first = gate.acquire_for("local", "stdio-1").await.unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut waiting = Vec::new();
    for n in 0..5 {
        let (gate, order) = (gate.clone(), Arc::clone(&order));
        waiting.push(tokio::spawn(async move {
            let p = gate.acquire_for("local", "stdio-1").await.unwrap();
            order.lock().unwrap().push(format!("flood{n}"));
            tokio::time::sleep(Duration::from_millis(1)).await;
            drop(p);
        }));
        tokio::task::yield_now().await;
    }
    {
        let (gate, order) = (gate.clone(), Arc::clone(&order));
        waiting.push(tokio::spawn(async move {
            let p = gate.acquire_for("local", "stdio-2").await.unwrap();
            order.lock().unwrap().push("quiet".to_owned());
            drop(p);
        }));
    }
    while gate.waiting("local") < 6 {
        tokio::task::yield_now().await;
    }
    drop(first);
    for w in waiting {
        w.await.unwrap();
    }
    let order = order.lock().unwrap().clone();
    // The flooding client's oldest request went first, then the other client's turn came.
    assert_eq!(order[..2], ["flood0".to_owned(), "quiet".to_owned()]);
    assert_eq!(order.len(), 6);
    assert_eq!(gate.in_use(), 0);
}
