//! Crash safety: a process killed while holding the database, or right after committing,
//! loses nothing committed and makes nothing consumable twice.
//!
//! The test binary re-runs itself as the child: `crash_child` does nothing unless the
//! environment asks it to play the child's part, so it is harmless in a normal run.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use store::{ApprovalStatus, Error, Namespace, Store};

use crate::support::{snapshot, Env, MINUTE, T0};

const ROLE: &str = "STORE_SUITE_CRASH_ROLE";
const DIR: &str = "STORE_SUITE_CRASH_DIR";
const WS: &str = "STORE_SUITE_CRASH_WS";
const ID: &str = "STORE_SUITE_CRASH_ID";

/// The child's part. Roles:
/// - `hold`: start consuming inside an open write transaction, signal, then hang.
/// - `commit`: consume (committed), signal, then hang without any clean shutdown.
/// - `approve`: approve (committed), signal, then hang.
#[test]
fn crash_child() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    let state = PathBuf::from(std::env::var(DIR).unwrap());
    let ws = PathBuf::from(std::env::var(WS).unwrap());
    let id = std::env::var(ID).unwrap();
    let ns = Namespace::open(&state, &ws).unwrap();
    // Leak the handles so nothing is closed before the kill.
    match role.as_str() {
        "hold" => {
            let conn = Box::leak(Box::new(Connection::open(ns.db_path()).unwrap()));
            conn.execute_batch("BEGIN IMMEDIATE").unwrap();
            let n = conn
                .execute(
                    "UPDATE approvals SET status = 'CONSUMED', consumed_at = 1 \
                     WHERE id = ?1 AND status = 'APPROVED'",
                    [&id],
                )
                .unwrap();
            assert_eq!(n, 1);
        }
        "commit" => {
            let s = Box::leak(Box::new(Store::open(&ns).unwrap()));
            s.consume(&id, T0).unwrap();
        }
        "approve" => {
            let s = Box::leak(Box::new(Store::open(&ns).unwrap()));
            s.approve(&id, "alice", T0).unwrap();
        }
        other => panic!("unknown role {other}"),
    }
    std::fs::write(state.join(format!("ready-{role}")), b"").unwrap();
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

fn spawn_child(env: &Env, role: &str, id: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["crash::crash_child", "--exact", "--nocapture"])
        .env(ROLE, role)
        .env(DIR, &env.state_root)
        .env(WS, &env.workspace)
        .env(ID, id)
        .spawn()
        .unwrap()
}

fn wait_ready(state: &Path, role: &str, child: &mut Child) {
    let marker = state.join(format!("ready-{role}"));
    let deadline = Instant::now() + Duration::from_secs(60);
    while !marker.exists() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("child exited early: {status}");
        }
        assert!(Instant::now() < deadline, "child never became ready");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Kills with SIGKILL (no destructors, no clean SQLite close) and reaps.
fn kill(mut child: Child) {
    child.kill().unwrap();
    child.wait().unwrap();
}

fn approved_request(env: &Env) -> String {
    let mut s = env.store();
    let a = s
        .create_request("crash", &snapshot(), T0, T0.plus_millis(10 * MINUTE))
        .unwrap();
    s.approve(&a.id, "alice", T0).unwrap();
    a.id
}

#[test]
fn kill_mid_consume_transaction_keeps_approval_consumable_once() {
    let env = Env::new();
    let id = approved_request(&env);
    let mut child = spawn_child(&env, "hold", &id);
    wait_ready(&env.state_root, "hold", &mut child);
    kill(child);

    let mut s = env.store();
    assert_eq!(
        s.get_request(&id, T0).unwrap().status,
        ApprovalStatus::Approved,
        "an uncommitted consume must roll back"
    );
    s.consume(&id, T0).unwrap();
    assert!(matches!(
        s.consume(&id, T0),
        Err(Error::InvalidTransition(ApprovalStatus::Consumed))
    ));
}

#[test]
fn kill_after_committed_consume_never_allows_a_second_consume() {
    let env = Env::new();
    let id = approved_request(&env);
    let mut child = spawn_child(&env, "commit", &id);
    wait_ready(&env.state_root, "commit", &mut child);
    kill(child);

    let mut s = env.store();
    assert_eq!(
        s.get_request(&id, T0).unwrap().status,
        ApprovalStatus::Consumed
    );
    assert!(matches!(
        s.consume(&id, T0),
        Err(Error::InvalidTransition(ApprovalStatus::Consumed))
    ));
}

#[test]
fn kill_after_approve_loses_nothing() {
    let env = Env::new();
    let id = {
        let mut s = env.store();
        s.create_request("crash", &snapshot(), T0, T0.plus_millis(10 * MINUTE))
            .unwrap()
            .id
    };
    let mut child = spawn_child(&env, "approve", &id);
    wait_ready(&env.state_root, "approve", &mut child);
    kill(child);

    let mut s = env.store();
    let a = s.get_request(&id, T0).unwrap();
    assert_eq!(a.status, ApprovalStatus::Approved);
    assert_eq!(a.decided_by.as_deref(), Some("alice"));
    s.consume(&id, T0).unwrap();
}

#[test]
fn dropped_handles_without_shutdown_keep_committed_state() {
    let env = Env::new();
    let id = approved_request(&env);
    // Forget the connection: no close, no checkpoint; the WAL alone must carry the commit.
    let s = env.store();
    std::mem::forget(s);
    let mut s = env.store();
    assert_eq!(
        s.get_request(&id, T0).unwrap().status,
        ApprovalStatus::Approved
    );
    s.consume(&id, T0).unwrap();
}
