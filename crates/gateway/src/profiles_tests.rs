//! Sessions under profiles of their own, as HTTP callers get them: each lists and calls only what its profile
//! allows, its records name its identity and profile, and a call it had held is nobody else's to read or resume.

use crate::testkit::{Client, Harness};
use serde_json::{json, Value};
use test_support::FixtureOptions;

fn policy() -> Value {
    json!({
        "permissions": {"default": "allow", "ask": ["mcp__fx__slow"]},
        "profiles": {
            "a": {"tools": {"blocked": ["fx__echo"]}},
            "b": {"tools": {"blocked": ["fx__add"]}},
            "coder": {"mode": "code"},
        },
        "approvals": {"wait_seconds": 0, "elicitation": false},
        "pins": {"newTools": "accept"},
    })
}

async fn harness() -> Harness {
    Harness::start(policy(), FixtureOptions::default()).await
}

async fn listed(client: &mut Client) -> Vec<String> {
    let answer = client.request("tools/list", json!({})).await;
    answer["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("a list: {answer}"))
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

fn ran(answer: &Value) -> bool {
    answer["result"]["isError"] != json!(true) && answer.get("error").is_none()
}

#[tokio::test]
async fn key_for_profile_a_cannot_list_or_call_profile_b_tools() {
    let h = harness().await;
    let mut a = h.client_as(Some("a"), Some("key:a"));
    let mut b = h.client_as(Some("b"), Some("key:b"));
    let mut served = h.client();
    for c in [&mut a, &mut b, &mut served] {
        c.initialize(json!({})).await;
    }
    let (in_a, in_b, in_served) = (
        listed(&mut a).await,
        listed(&mut b).await,
        listed(&mut served).await,
    );
    assert!(!in_a.contains(&"fx__echo".to_owned()), "{in_a:?}");
    assert!(in_a.contains(&"fx__add".to_owned()), "{in_a:?}");
    assert!(!in_b.contains(&"fx__add".to_owned()), "{in_b:?}");
    assert!(in_b.contains(&"fx__echo".to_owned()), "{in_b:?}");
    assert!(
        in_served.contains(&"fx__echo".to_owned()) && in_served.contains(&"fx__add".to_owned())
    );
    let echo = json!({"text": "hi"});
    let add = json!({"a": 1, "b": 2});
    assert!(
        !ran(&a.call("fx__echo", echo.clone()).await),
        "profile a blocks echo"
    );
    assert!(ran(&a.call("fx__add", add.clone()).await));
    assert!(
        !ran(&b.call("fx__add", add.clone()).await),
        "profile b blocks add"
    );
    assert!(ran(&b.call("fx__echo", echo.clone()).await));
    assert!(ran(&served.call("fx__echo", echo).await));
    // The records name who called, under which profile; stdio's name nobody.
    let audit = h.audit();
    let by = |principal: Option<&str>, tool: &str| {
        audit.iter().any(|r| {
            r["kind"] == "decision"
                && r["tool"] == tool
                && r.get("principal").and_then(Value::as_str) == principal
                && (principal.is_none()
                    || r["profile"] == principal.unwrap().trim_start_matches("key:"))
        })
    };
    assert!(
        by(Some("key:a"), "add") && by(Some("key:a"), "echo"),
        "{audit:#?}"
    );
    assert!(by(Some("key:b"), "echo") && by(None, "echo"), "{audit:#?}");
    h.stop(&[&a, &b, &served]).await;
}

#[tokio::test]
async fn unknown_profile_or_one_of_the_other_mode_cannot_open_a_session() {
    let h = harness().await;
    let unknown = crate::Session::open_as(&h.gateway, Some("nobody")).err();
    assert!(
        matches!(unknown, Some(crate::Error::Profile { .. })),
        "{unknown:?}"
    );
    let other_mode = crate::Session::open_as(&h.gateway, Some("coder")).err();
    assert!(
        matches!(other_mode, Some(crate::Error::ProfileMode { .. })),
        "{other_mode:?}"
    );
    assert!(h.gateway.check_profile("a").is_ok());
    assert!(h.gateway.check_profile("nobody").is_err());
    h.stop(&[]).await;
}

#[tokio::test]
async fn held_call_of_one_identity_cannot_be_resumed_by_another() {
    let h = harness().await;
    let mut owner = h.client_as(Some("a"), Some("key:a"));
    let mut other = h.client_as(Some("a"), Some("key:other"));
    let mut stdio = h.client();
    for c in [&mut owner, &mut other, &mut stdio] {
        c.initialize(json!({})).await;
    }
    let held = owner
        .call("fx__slow", json!({"steps": 1, "delay_ms": 1}))
        .await;
    let handle = &held["result"]["structuredContent"];
    assert_eq!(handle["outcome"], "APPROVAL_REQUIRED", "{held}");
    let request_id = handle["approval"]["request_id"]
        .as_str()
        .unwrap()
        .to_owned();
    store::Store::open(h.state.namespace())
        .unwrap()
        .approve(&request_id, "test operator", store::Timestamp::now())
        .unwrap();
    let args = json!({"request_id": request_id});
    for c in [&mut other, &mut stdio] {
        for tool in ["toolgate_request_status", "toolgate_resume"] {
            let answer = c.call(tool, args.clone()).await;
            let text = answer.to_string();
            assert!(text.contains("REQUEST_NOT_FOUND"), "{tool}: {answer}");
            assert!(
                !text.contains("slow") && !text.contains("APPROVED"),
                "{tool}: {answer}"
            );
        }
    }
    let status = owner.call("toolgate_request_status", args.clone()).await;
    assert!(status.to_string().contains("APPROVED"), "{status}");
    let resumed = owner.call("toolgate_resume", args).await;
    assert!(ran(&resumed), "{resumed}");
    h.stop(&[&owner, &other, &stdio]).await;
}

#[tokio::test]
async fn recent_audit_of_one_identity_shows_nothing_of_another() {
    let h = Harness::start_with_workspace_tools(policy()).await;
    let mut a = h.client_as(Some("a"), Some("key:a"));
    let mut b = h.client_as(Some("b"), Some("key:b"));
    for c in [&mut a, &mut b] {
        c.initialize(json!({})).await;
    }
    assert!(ran(&a.call("fx__add", json!({"a": 1, "b": 2})).await));
    let tools_in = |answer: &Value| -> Vec<String> {
        answer["result"]["structuredContent"]["events"]
            .as_array()
            .unwrap_or_else(|| panic!("events: {answer}"))
            .iter()
            .filter_map(|e| e["tool"].as_str().map(str::to_owned))
            .collect()
    };
    let seen_by_b = tools_in(&b.call("toolgate_audit_recent", json!({})).await);
    assert!(!seen_by_b.contains(&"add".to_owned()), "{seen_by_b:?}");
    let seen_by_a = tools_in(&a.call("toolgate_audit_recent", json!({})).await);
    assert!(seen_by_a.contains(&"add".to_owned()), "{seen_by_a:?}");
    h.stop(&[&a, &b]).await;
}
