//! `toolgate approvals list | show | approve | reject | prune`: what the operator sees and what each decision does.

use super::Env;
use pretty_assertions::assert_eq;
use serde_json::json;
use std::time::Duration;
use store::{ApprovalStatus, Store, Timestamp};

#[test]
fn list_shows_requests_and_filters_by_status() {
    let env = Env::new();
    let a = env.request(json!({"path": "a.txt"}));
    let out = env.run(&["approvals", "list"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let row: Vec<&str> = out
        .stdout
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .collect();
    let (created, expires) = (a.created_at.to_rfc3339(), a.expires_at.to_rfc3339());
    // No call is held for a request made outside a session: it is listed as stale, with its age.
    assert!(row[3].ends_with('s'), "{row:?}");
    let row: Vec<&str> = row[..3].iter().chain(&row[4..]).copied().collect();
    assert_eq!(
        row,
        [
            a.id.as_str(),
            "PENDING",
            "(resumable)",
            &created,
            &expires,
            "fs",
            "write_file",
            "trace-7",
            "writes",
            "(RULE_ASK)"
        ]
    );
    let approved = env.run(&["approvals", "list", "--status", "approved"]);
    assert_eq!(approved.stdout, "no APPROVED approval requests\n");
}

#[test]
fn show_prints_each_argument_json_escaped_on_its_own_line() {
    let env = Env::new();
    let a = env.request(
        json!({"path": "notes.txt", "content": "ok\nrm -rf ~ \u{202e}txt.exe", "mode": 420}),
    );
    let out = env.run(&["approvals", "show", &a.id]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    for expected in [
        format!("request     {}", a.id),
        "status      PENDING (resumable)".to_owned(),
        "trace       trace-7".to_owned(),
        format!("created     {}", a.created_at),
        "server      fs".to_owned(),
        "tool        write_file".to_owned(),
        "arguments (3)".to_owned(),
        r#"  path = "notes.txt""#.to_owned(),
        r#"  content = "ok\nrm -rf ~ \u202etxt.exe""#.to_owned(),
        "  mode = 420".to_owned(),
        r#"  rule_id = "writes""#.to_owned(),
    ] {
        assert!(
            lines.contains(&expected.as_str()),
            "missing {expected:?} in\n{}",
            out.stdout
        );
    }
    assert!(lines
        .iter()
        .any(|l| l.starts_with(&format!("expires     {} (in ", a.expires_at))));
    // What the operator reads, with this run's id and times put by.
    let expires_line = lines
        .iter()
        .find(|l| l.starts_with("expires"))
        .copied()
        .unwrap_or_default();
    let asked_line = lines
        .iter()
        .find(|l| l.starts_with("asked "))
        .copied()
        .unwrap_or_default();
    let shown = out
        .stdout
        .replace(asked_line, "asked       <age> ago")
        .replace(&a.id, "<id>")
        .replace(&a.created_at.to_string(), "<created>")
        .replace(expires_line, "expires     <expires> (in <left>)");
    insta::assert_snapshot!("approvals_show", shown);
    assert!(
        !out.stdout.contains('\u{202e}'),
        "a bidi override reached the terminal"
    );
    assert!(
        !out.stdout.contains("\nrm -rf"),
        "an argument's newline reached the terminal"
    );
}

#[test]
fn approve_needs_approve_typed_exactly_on_the_terminal() {
    let env = Env::new();
    let a = env.request(json!({"path": "a.txt"}));
    // ^D ends the line with nothing typed.
    for typed in [&b"approve\n"[..], b"\x04", b"APPROVE \n", b"yes\nAPPROVE\n"] {
        let out = env.run_on_terminal(&["approvals", "approve", &a.id], typed);
        assert_eq!(out.code, 1, "{typed:?}: {}", out.stderr);
        assert!(out.stderr.contains("not approved"), "{}", out.stderr);
        assert_eq!(env.status(&a.id), ApprovalStatus::Pending, "{typed:?}");
    }
    let out = env.run_on_terminal(&["approvals", "approve", &a.id], b"APPROVE\n");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.terminal
            .contains(&format!("Type APPROVE to approve {}", a.id)),
        "the prompt is on the terminal: {}",
        out.terminal
    );
    assert!(
        out.stdout.contains(r#"  path = "a.txt""#),
        "the request is shown before approval"
    );
    assert!(
        out.stdout
            .ends_with(&format!("APPROVED {} by alice\n", a.id)),
        "{}",
        out.stdout
    );
    let stored = env.store().get_request(&a.id, Timestamp::now()).unwrap();
    assert_eq!(
        (stored.status, stored.decided_by.as_deref()),
        (ApprovalStatus::Approved, Some("alice"))
    );
    // The decision is in the audit log, with who made it.
    let events = env.audit_log().tail(10).unwrap();
    let last = events.last().unwrap();
    assert_eq!(
        (
            &last["kind"],
            &last["outcome"],
            &last["actor"],
            &last["request_id"]
        ),
        (
            &json!("approval"),
            &json!("APPROVED"),
            &json!("alice"),
            &json!(a.id)
        )
    );
}

#[test]
fn reject_rejects_without_typing() {
    let env = Env::new();
    let a = env.request(json!({}));
    let out = env.run(&["approvals", "reject", &a.id]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, format!("REJECTED {} by alice\n", a.id));
    assert_eq!(env.status(&a.id), ApprovalStatus::Rejected);
}

#[test]
fn expired_or_decided_requests_cannot_be_approved() {
    let env = Env::new();
    let expired = env.request_in(&env.ws, json!({}), 1);
    std::thread::sleep(Duration::from_millis(5));
    let out = env.run_as_operator(&["approvals", "approve", &expired.id]);
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("has expired"), "{}", out.stderr);

    let decided = env.request(json!({}));
    assert_eq!(env.run(&["approvals", "reject", &decided.id]).code, 0);
    for out in [
        env.run_as_operator(&["approvals", "approve", &decided.id]),
        env.run(&["approvals", "reject", &decided.id]),
    ] {
        assert_eq!(out.code, 1);
        assert!(out.stderr.contains("is already REJECTED"), "{}", out.stderr);
    }
    assert_eq!(env.status(&decided.id), ApprovalStatus::Rejected);
}

#[test]
fn an_id_from_another_workspace_reads_as_unknown() {
    let env = Env::new();
    let foreign = env.request_in(&env.other_ws, json!({"path": "secret"}), 600_000);
    let unknown = format!("apr_{}", "0".repeat(32));
    for verb in ["show", "approve", "reject"] {
        let run = |id: &str| match verb {
            "approve" => env.run_as_operator(&["approvals", verb, id]),
            _ => env.run(&["approvals", verb, id]),
        };
        let (a, b) = (run(&foreign.id), run(&unknown));
        assert_eq!((a.code, b.code), (1, 1));
        assert_eq!(
            a.stderr.replace(&foreign.id, "ID"),
            b.stderr.replace(&unknown, "ID")
        );
        assert!(a.stderr.contains("no approval request"), "{}", a.stderr);
        assert!(!a.stdout.contains("secret"));
    }
    let other = Store::open(&env.namespace(&env.other_ws)).unwrap();
    assert_eq!(
        other
            .get_request(&foreign.id, Timestamp::now())
            .unwrap()
            .status,
        ApprovalStatus::Pending
    );
}

#[test]
fn prune_is_a_dry_run_unless_applied() {
    let env = Env::new();
    let done = env.request(json!({}));
    env.store()
        .reject(&done.id, "bob", Timestamp::now())
        .unwrap();
    let live = env.request(json!({}));
    let dry = env.run(&["approvals", "prune", "--older-than-days", "0"]);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    assert!(
        dry.stdout
            .starts_with("would delete 1 approval requests (dry run"),
        "{}",
        dry.stdout
    );
    assert!(dry.stdout.contains(&done.id) && !dry.stdout.contains(&live.id));
    assert_eq!(env.status(&done.id), ApprovalStatus::Rejected);
    let applied = env.run(&["approvals", "prune", "--older-than-days", "0", "--apply"]);
    assert!(
        applied.stdout.starts_with("deleted 1 approval requests"),
        "{}",
        applied.stdout
    );
    let store = env.store();
    assert!(matches!(
        store.get_request(&done.id, Timestamp::now()),
        Err(store::Error::RequestNotFound)
    ));
    assert_eq!(env.status(&live.id), ApprovalStatus::Pending);
}
