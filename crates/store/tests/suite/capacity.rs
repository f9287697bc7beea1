//! Fixed ceilings: a full store refuses new requests, keeps every existing record, and
//! still allows transitions and pruning.

use pretty_assertions::assert_eq;
use serde_json::json;
use store::{ApprovalStatus, Error, Limits, PruneMode};

use crate::support::{snapshot, Env, DAY, MINUTE, T0};

fn small(records: u64, snapshot_bytes: u64, total: u64) -> Limits {
    Limits {
        max_approval_records: records,
        max_snapshot_bytes: snapshot_bytes,
        max_total_snapshot_bytes: total,
        ..Limits::DEFAULT
    }
}

#[test]
fn full_store_refuses_new_requests_and_evicts_nothing() {
    let env = Env::new();
    let mut s = env.store_with(small(3, 4096, 1 << 20));
    let exp = T0.plus_millis(MINUTE);
    let ids: Vec<String> = (0..3)
        .map(|i| {
            s.create_request(&format!("t{i}"), &snapshot(), T0, exp)
                .unwrap()
                .id
        })
        .collect();
    let refused = s.create_request("t4", &snapshot(), T0, exp).unwrap_err();
    assert!(matches!(refused, Error::StoreFull { limit: 3 }));
    let left: Vec<String> = s
        .list_requests(None, T0)
        .unwrap()
        .into_iter()
        .map(|a| a.id)
        .collect();
    assert_eq!(left.len(), 3);
    for id in &ids {
        assert!(left.contains(id));
    }
    // Existing requests still move through their lifecycle while the store is full.
    s.approve(&ids[0], "alice", T0).unwrap();
    assert_eq!(
        s.consume(&ids[0], T0).unwrap().status,
        ApprovalStatus::Consumed
    );
    // Pruning old terminal records makes room again.
    let later = T0.plus_millis(2 * DAY);
    assert_eq!(
        s.prune_approvals(1, later, PruneMode::Apply).unwrap().len(),
        3
    );
    s.create_request("t5", &snapshot(), later, later.plus_millis(MINUTE))
        .unwrap();
}

#[test]
fn snapshot_exactly_at_limit_is_allowed_and_one_byte_over_is_refused() {
    let env = Env::new();
    let at = json!("x".repeat(98)); // 98 chars + 2 quotes = 100 bytes serialized
    let over = json!("x".repeat(99));
    let mut s = env.store_with(small(10, 100, 1 << 20));
    let exp = T0.plus_millis(MINUTE);
    s.create_request("t", &at, T0, exp).unwrap();
    assert!(matches!(
        s.create_request("t", &over, T0, exp),
        Err(Error::SnapshotTooLarge {
            size: 101,
            limit: 100
        })
    ));
}

#[test]
fn total_snapshot_bytes_ceiling_fails_closed() {
    let env = Env::new();
    let fifty = json!("y".repeat(48));
    let mut s = env.store_with(small(10, 100, 100));
    let exp = T0.plus_millis(MINUTE);
    s.create_request("a", &fifty, T0, exp).unwrap();
    s.create_request("b", &fifty, T0, exp).unwrap();
    assert!(matches!(
        s.create_request("c", &json!(1), T0, exp),
        Err(Error::StoreBytesFull { limit: 100 })
    ));
    assert_eq!(s.list_requests(None, T0).unwrap().len(), 2);
}

#[test]
fn stats_report_occupancy_against_the_ceilings() {
    let env = Env::new();
    let mut s = env.store_with(small(10, 4096, 1 << 20));
    let a = s
        .create_request("a", &json!("xx"), T0, T0.plus_millis(MINUTE))
        .unwrap();
    s.create_request("b", &json!("yy"), T0, T0.plus_millis(MINUTE))
        .unwrap();
    s.approve(&a.id, "alice", T0).unwrap();
    s.grant_session("sess", "tool", "h", "scope", T0).unwrap();
    let stats = s.stats(T0).unwrap();
    assert_eq!(stats.approval_records, 2);
    assert_eq!(stats.snapshot_bytes, 8);
    assert_eq!(stats.approvals_by_status.get("APPROVED"), Some(&1));
    assert_eq!(stats.approvals_by_status.get("PENDING"), Some(&1));
    assert_eq!(stats.session_grants, 1);
    assert_eq!(stats.limits.max_approval_records, 10);
    assert_eq!(stats.schema_version, 11);
    let later = s.stats(T0.plus_millis(MINUTE)).unwrap();
    assert_eq!(later.approvals_by_status.get("EXPIRED"), Some(&2));
}

/// ToolHub's ceilings are the store's own defaults: 10,000 records and 16 MiB of snapshots, exactly at either
/// allowed. Filled to 16 MiB for real (the record ceiling's refusal is `full_store_refuses_new_requests_and_evicts
/// _nothing`, at a small ceiling: ten thousand committed transactions take half a minute), a new request fails
/// closed and leaves the store as it was.
#[test]
fn at_the_default_ceilings_of_10000_records_and_16_mib_a_new_request_fails_closed() {
    assert_eq!(Limits::DEFAULT.max_approval_records, 10_000);
    assert_eq!(Limits::DEFAULT.max_total_snapshot_bytes, 16 * 1024 * 1024);
    let env = Env::new();
    let mut s = env.store();
    let exp = T0.plus_millis(MINUTE);
    // 256 snapshots of 64 KiB (the per-snapshot ceiling) fill 16 MiB exactly.
    let big = json!("z".repeat(64 * 1024 - 2));
    for i in 0..256 {
        s.create_request(&format!("b{i}"), &big, T0, exp).unwrap();
    }
    let before = s.stats(T0).unwrap();
    assert_eq!(
        before.snapshot_bytes,
        16 * 1024 * 1024,
        "exactly at the ceiling is allowed"
    );
    assert!(matches!(
        s.create_request("b", &json!(1), T0, exp),
        Err(Error::StoreBytesFull { .. })
    ));
    let after = s.stats(T0).unwrap();
    assert_eq!(
        (after.approval_records, after.snapshot_bytes),
        (before.approval_records, before.snapshot_bytes)
    );
}
