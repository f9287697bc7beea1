//! Attacks on the stored state and its capacity: rows rewritten, forged or copied behind toolgate's back are
//! refused; a flood of asks cannot lock the store; cancelled requests stay dead.

use pretty_assertions::assert_eq;
use rusqlite::Connection;
use serde_json::json;
use store::{ApprovalStatus, Error, Limits, NewRequest, Store, Timestamp};

use crate::support::{snapshot, Env, DAY, MINUTE, T0};

fn raw(env: &Env) -> Connection {
    Connection::open(env.namespace().db_path()).unwrap()
}

#[test]
fn agent_rewrites_its_pending_row_to_approved_and_resume_refuses_it() {
    let env = Env::new();
    let mut s = env.store();
    let a = s
        .create_request("t", &snapshot(), T0, T0.plus_millis(MINUTE))
        .unwrap();
    raw(&env)
        .execute(
            "UPDATE approvals SET status = 'APPROVED', decided_at = ?2, decided_by = 'alice' WHERE id = ?1",
            rusqlite::params![a.id, T0.as_millis()],
        )
        .unwrap();
    assert!(matches!(s.consume(&a.id, T0), Err(Error::Tampered)));
    let seen = s.get_request(&a.id, T0).unwrap();
    assert!(!seen.authentic, "shown as tampered");
    assert!(matches!(s.approve(&a.id, "bob", T0), Err(Error::Tampered)));
    assert!(matches!(s.reject(&a.id, "bob", T0), Err(Error::Tampered)));
    assert_eq!(s.expire_due(T0.plus_millis(2 * MINUTE)).unwrap(), 0);
}

#[test]
fn seal_copied_from_an_approved_row_does_not_make_another_row_approved() {
    let env = Env::new();
    let mut s = env.store();
    let exp = T0.plus_millis(MINUTE);
    let good = s.create_request("t", &snapshot(), T0, exp).unwrap();
    let good = s.approve(&good.id, "alice", T0).unwrap();
    let evil = json!({"arguments": {"argv": ["rm", "-rf", "/"]}});
    let bad = s.create_request("t", &evil, T0, exp).unwrap();
    raw(&env)
        .execute(
            "UPDATE approvals SET (status, decided_at, decided_by, seal) =
                 (SELECT status, decided_at, decided_by, seal FROM approvals WHERE id = ?1)
             WHERE id = ?2",
            rusqlite::params![good.id, bad.id],
        )
        .unwrap();
    assert!(matches!(s.consume(&bad.id, T0), Err(Error::Tampered)));
    // The genuine row is untouched by the attempt.
    assert_eq!(
        s.consume(&good.id, T0).unwrap().status,
        ApprovalStatus::Consumed
    );
}

#[test]
fn row_inserted_by_another_program_is_refused() {
    let env = Env::new();
    let mut s = env.store();
    let text = serde_json::to_string(&snapshot()).unwrap();
    raw(&env)
        .execute(
            "INSERT INTO approvals (id, trace_id, status, snapshot, snapshot_sha256, snapshot_bytes, created_at,
                                    expires_at, decided_at, decided_by, seal)
             VALUES ('apr_forged', 't', 'APPROVED', ?1, ?2, ?3, ?4, ?5, ?4, 'alice', ?6)",
            rusqlite::params![
                text,
                jsonrpc::sha256_hex(text.as_bytes()),
                text.len() as i64,
                T0.as_millis(),
                T0.plus_millis(MINUTE).as_millis(),
                "00".repeat(32)
            ],
        )
        .unwrap();
    assert!(matches!(s.consume("apr_forged", T0), Err(Error::Tampered)));
    let listed = s.list_requests(None, T0).unwrap();
    assert_eq!(listed.len(), 1);
    assert!(!listed[0].authentic);
}

#[test]
fn approved_row_copied_from_another_workspace_is_refused() {
    let env = Env::new();
    let other_ws = env._tmp.path().join("other-ws");
    std::fs::create_dir(&other_ws).unwrap();
    let other_ns = store::Namespace::open(&env.state_root, &other_ws).unwrap();
    let mut other = Store::open(&other_ns).unwrap();
    let a = other
        .create_request("t", &snapshot(), T0, T0.plus_millis(MINUTE))
        .unwrap();
    other.approve(&a.id, "alice", T0).unwrap();
    let mut s = env.store();
    let conn = raw(&env);
    conn.execute(
        "ATTACH DATABASE ?1 AS other",
        [other_ns.db_path().to_str().unwrap()],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO approvals SELECT * FROM other.approvals WHERE id = ?1",
        [&a.id],
    )
    .unwrap();
    assert!(matches!(s.consume(&a.id, T0), Err(Error::Tampered)));
    assert_eq!(
        other.consume(&a.id, T0).unwrap().status,
        ApprovalStatus::Consumed
    );
}

#[test]
fn forged_session_grant_row_is_no_grant() {
    let env = Env::new();
    let mut s = env.store();
    raw(&env)
        .execute(
            "INSERT INTO session_grants (session_id, tool, definition_sha256, scope, granted_at, seal)
             VALUES ('sess', 'toolgate__shell_run', 'h', 'any', 0, 'ab')",
            [],
        )
        .unwrap();
    assert!(!s
        .session_grant_valid("sess", "toolgate__shell_run", "h", "any")
        .unwrap());
    s.grant_session("sess", "toolgate__shell_run", "h", "exact", T0)
        .unwrap();
    assert!(s
        .session_grant_valid("sess", "toolgate__shell_run", "h", "exact")
        .unwrap());
    // A genuine grant's seal moved onto another scope does not carry over.
    raw(&env)
        .execute(
            "UPDATE session_grants SET scope = 'wider' WHERE scope = 'exact'",
            [],
        )
        .unwrap();
    assert!(!s
        .session_grant_valid("sess", "toolgate__shell_run", "h", "wider")
        .unwrap());
}

fn held(session: &'static str, now: Timestamp) -> NewRequest<'static> {
    static SNAPSHOT: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
    NewRequest {
        trace_id: "t",
        snapshot: SNAPSHOT.get_or_init(snapshot),
        session_id: Some(session),
        owner: Some(session),
        now,
        held_until: now.plus_millis(MINUTE),
        expires_at: now.plus_millis(10 * MINUTE),
    }
}

#[test]
fn flood_of_asks_from_one_session_hits_the_per_session_cap_not_the_store() {
    let env = Env::new();
    let limits = Limits {
        max_pending_per_session: 3,
        ..Limits::DEFAULT
    };
    let mut s = env.store_with(limits);
    let ids: Vec<String> = (0..3)
        .map(|_| s.create_held_request(&held("flood", T0)).unwrap().id)
        .collect();
    let refused = s.create_held_request(&held("flood", T0)).unwrap_err();
    assert!(matches!(refused, Error::SessionPendingFull { limit: 3 }));
    let message = refused.to_string();
    assert!(
        message.contains("3 approval requests") && message.contains("per-session cap"),
        "{message}"
    );
    // Another session still gets through, and a decision frees a slot.
    s.create_held_request(&held("other", T0)).unwrap();
    s.reject(&ids[0], "alice", T0).unwrap();
    s.create_held_request(&held("flood", T0)).unwrap();
}

fn held_by(session: &'static str, owner: &'static str, now: Timestamp) -> NewRequest<'static> {
    NewRequest {
        owner: Some(owner),
        ..held(session, now)
    }
}

#[test]
fn one_identity_pending_approvals_do_not_block_another_identitys_ask() {
    let env = Env::new();
    let limits = Limits {
        max_approval_records: 10,
        max_pending_per_session: 16,
        max_pending_per_identity: 4,
        ..Limits::DEFAULT
    };
    let mut s = env.store_with(limits);
    // A fresh session per ask (a 2026-07-28 request is one) gives the flood no fresh share.
    let sessions = ["r1", "r2", "r3", "r4", "r5", "r6"];
    let mut flood = Vec::new();
    for (i, session) in sessions.iter().enumerate() {
        match s.create_held_request(&held_by(session, "key:flood", T0)) {
            Ok(a) => flood.push(a.id),
            Err(e) => {
                assert_eq!(i, 4, "refused at the {i}th ask: {e}");
                assert!(matches!(e, Error::IdentityPendingFull { limit: 4 }));
                assert!(e.to_string().contains("per-identity cap"), "{e}");
                break;
            }
        }
    }
    assert_eq!(flood.len(), 4);
    // Another identity's ask goes through while the flood's wait.
    s.create_held_request(&held_by("q1", "key:quiet", T0))
        .unwrap();
    // A decision frees the flood's share.
    s.reject(&flood[0], "alice", T0).unwrap();
    s.create_held_request(&held_by("r7", "key:flood", T0))
        .unwrap();
}

#[test]
fn store_full_of_expired_asks_makes_room_automatically() {
    let env = Env::new();
    let limits = Limits {
        max_approval_records: 4,
        max_total_snapshot_bytes: 1 << 20,
        ..Limits::DEFAULT
    };
    let mut s = env.store_with(limits);
    for i in 0..4 {
        s.create_request(&format!("t{i}"), &snapshot(), T0, T0.plus_millis(MINUTE))
            .unwrap();
    }
    // All four expired a minute later: no manual prune is needed for the next ask.
    let later = T0.plus_millis(2 * MINUTE);
    let fresh = s
        .create_request("next", &snapshot(), later, later.plus_millis(MINUTE))
        .unwrap();
    let left = s.list_requests(None, later).unwrap();
    assert_eq!(left.len(), 4);
    assert!(left.iter().any(|a| a.id == fresh.id));
}

#[test]
fn byte_ceiling_full_of_finished_asks_makes_room_automatically() {
    let env = Env::new();
    let big = json!("z".repeat(998)); // 1000 bytes serialized
    let limits = Limits {
        max_snapshot_bytes: 1000,
        max_total_snapshot_bytes: 3000,
        ..Limits::DEFAULT
    };
    let mut s = env.store_with(limits);
    let exp = T0.plus_millis(10 * MINUTE);
    let first = s.create_request("a", &big, T0, exp).unwrap();
    s.create_request("b", &big, T0, exp).unwrap();
    s.create_request("c", &big, T0, exp).unwrap();
    assert!(matches!(
        s.create_request("d", &big, T0, exp),
        Err(Error::StoreBytesFull { .. })
    ));
    s.reject(&first.id, "alice", T0).unwrap();
    s.create_request("d", &big, T0, exp).unwrap();
    assert!(matches!(
        s.get_request(&first.id, T0),
        Err(Error::RequestNotFound)
    ));
}

#[test]
fn finished_requests_past_retention_are_deleted_on_the_next_ask() {
    let env = Env::new();
    let mut s = env.store();
    let done = s
        .create_request("t", &snapshot(), T0, T0.plus_millis(MINUTE))
        .unwrap();
    s.reject(&done.id, "alice", T0).unwrap();
    let live = s
        .create_request("t", &snapshot(), T0, T0.plus_millis(2 * DAY))
        .unwrap();
    let next_day = T0.plus_millis(DAY + MINUTE);
    s.create_request("t", &snapshot(), next_day, next_day.plus_millis(MINUTE))
        .unwrap();
    assert!(matches!(
        s.get_request(&done.id, next_day),
        Err(Error::RequestNotFound)
    ));
    assert_eq!(
        s.get_request(&live.id, next_day).unwrap().status,
        ApprovalStatus::Pending
    );
}

#[test]
fn cancelled_request_can_never_be_approved_or_resumed() {
    let env = Env::new();
    let mut s = env.store();
    let a = s.create_held_request(&held("sess", T0)).unwrap();
    let c = s.cancel(&a.id, "the call was cancelled", T0).unwrap();
    assert_eq!(c.status, ApprovalStatus::Cancelled);
    assert_eq!(c.session_id.as_deref(), Some("sess"));
    assert!(matches!(
        s.approve(&a.id, "alice", T0),
        Err(Error::InvalidTransition(ApprovalStatus::Cancelled))
    ));
    assert!(matches!(
        s.consume(&a.id, T0),
        Err(Error::InvalidTransition(ApprovalStatus::Cancelled))
    ));
}
