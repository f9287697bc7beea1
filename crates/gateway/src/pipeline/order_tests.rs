//! The order of the stages where a wait sits between deciding and running: a call approved while it was held
//! passes the audit gate again before it runs.

use crate::testkit::{Harness, WAIT};
use serde_json::json;
use std::time::{Duration, Instant};
use test_support::FixtureOptions;

/// Cuts the last audit record off: the next write finds the log shorter than the store's head.
fn cut_audit_log(h: &Harness) {
    let lines = h.audit().len();
    let path = h.state.audit_log().path().to_path_buf();
    let text = std::fs::read_to_string(&path).unwrap();
    let kept: String = text
        .lines()
        .take(lines - 1)
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&path, kept).unwrap();
}

#[tokio::test]
async fn call_approved_while_held_does_not_run_when_the_audit_log_became_unwritable_meanwhile() {
    let policy = json!({
        "permissions": {"default": "allow", "ask": ["mcp__fx__echo"]},
        "approvals": {"wait_seconds": 15, "elicitation": false},
        "pins": {"newTools": "accept"},
    });
    let h = Harness::start(policy, FixtureOptions::default()).await;
    let mut held = h.client();
    held.initialize(json!({})).await;
    let mut other = h.client();
    other.initialize(json!({})).await;
    let id = held
        .send_request(
            "tools/call",
            json!({"name": "fx__echo", "arguments": {"text": "must not run"}}),
        )
        .await;
    let pending = h.pending_request().await;
    // While the call waits for its human, the audit log is cut; another call's write notices.
    cut_audit_log(&h);
    other.call("fx__add", json!({"a": 1, "b": 1})).await;
    let deadline = Instant::now() + WAIT;
    while h.state.audit_problem().is_none() {
        assert!(Instant::now() < deadline, "the cut log is noticed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut admin = store::Store::open(h.state.namespace()).unwrap();
    admin
        .approve(&pending.id, "test operator", store::Timestamp::now())
        .unwrap();
    let answer = held.response(&id).await;
    let text = answer.to_string();
    assert!(!text.contains("must not run"), "the echo ran: {answer}");
    assert!(text.contains("AUDIT_UNAVAILABLE"), "{answer}");
    h.stop(&[&held, &other]).await;
}
