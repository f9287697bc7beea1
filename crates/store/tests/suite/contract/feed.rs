//! The change feed held calls and the watch terminal wait on, as every backend keeps it.

use std::time::{Duration, Instant};

use store::{ApprovalStatus, Limits};

use super::{at, pending, Backend};

/// Far enough that a wait ending near it means the change did not wake the waiter.
const DEADLINE: Duration = Duration::from_secs(20);

pub fn a_change_by_another_handle_wakes_a_waiter_before_its_deadline<B: Backend>() {
    let b = B::fresh(Limits::DEFAULT);
    let (waiter, writer) = (b.handle(), b.handle());
    let id = pending(&*writer, 1);
    let mut mark = waiter.change_mark().unwrap();
    let started = Instant::now();
    let approve = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(150));
        writer.approve(&id, "operator", at(1)).unwrap();
        id
    });
    assert!(waiter
        .wait_for_change(&mut mark, started + DEADLINE)
        .unwrap());
    let waited = started.elapsed();
    let id = approve.join().unwrap();
    assert!(waited < DEADLINE / 4, "woken after {waited:?}");
    assert_eq!(
        waiter.get_request(&id, at(2)).unwrap().status,
        ApprovalStatus::Approved
    );
    // The mark moved on: with nothing new, a short wait sees no change.
    let soon = Instant::now() + Duration::from_millis(120);
    assert!(!waiter.wait_for_change(&mut mark, soon).unwrap());
}

pub fn a_write_through_the_same_handle_wakes_its_waiter<B: Backend>() {
    let b = B::fresh(Limits::DEFAULT);
    let s = b.handle();
    let id = pending(&*s, 1);
    let mut mark = s.change_mark().unwrap();
    let started = Instant::now();
    let writer = std::sync::Arc::clone(&s);
    let cancel = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        writer.cancel(&id, "gone", at(1)).unwrap();
    });
    assert!(s.wait_for_change(&mut mark, started + DEADLINE).unwrap());
    assert!(started.elapsed() < DEADLINE / 4);
    cancel.join().unwrap();
}

pub fn without_a_change_the_wait_lasts_until_the_deadline<B: Backend>() {
    let b = B::fresh(Limits::DEFAULT);
    let s = b.handle();
    let id = pending(&*s, 1);
    let mut mark = s.change_mark().unwrap();
    // Reads, here and elsewhere, are no change.
    s.get_request(&id, at(1)).unwrap();
    b.handle().list_requests(None, at(1)).unwrap();
    let started = Instant::now();
    let wait = Duration::from_millis(300);
    assert!(!s.wait_for_change(&mut mark, started + wait).unwrap());
    assert!(
        started.elapsed() >= wait,
        "returned early after {:?}",
        started.elapsed()
    );
    assert!(!s.changed_since(&mut mark).unwrap());
}

pub fn own_writes_count_writes_not_reads_or_refusals<B: Backend>() {
    let b = B::fresh(Limits::DEFAULT);
    let s = b.handle();
    let id = pending(&*s, 1);
    let after_create = s.own_writes();
    assert!(after_create > 0);
    s.get_request(&id, at(1)).unwrap();
    s.list_pins().unwrap();
    assert_eq!(s.own_writes(), after_create, "reads are not writes");
    s.reject(&id, "operator", at(1)).unwrap();
    let after_reject = s.own_writes();
    assert!(after_reject > after_create);
    assert!(s.approve(&id, "late", at(2)).is_err());
    assert_eq!(
        s.own_writes(),
        after_reject,
        "a refused transition wrote nothing"
    );
    let mut mark = s.change_mark().unwrap();
    assert!(s.approve(&id, "late", at(2)).is_err());
    assert!(!s.changed_since(&mut mark).unwrap());
}
