//! The documented precedence, step by step, and explain's trace of it.

use policy::{Effect, Mismatch, ReasonCode};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};

use crate::common::{action, call, decide, fs_read, load};

fn rules(default: &str, rules: Value) -> policy::Policy {
    load(&json!({"policy": {"default": default, "rules": rules}}))
}

#[test]
fn deny_wins_wherever_it_stands() {
    let allow = json!({"id": "allow-ws", "effect": "allow", "paths": ["${workspace}/**"]});
    let ask = json!({"id": "ask-ws", "effect": "ask", "paths": ["${workspace}/**"]});
    let deny = json!({"id": "deny-a", "effect": "deny", "paths": ["${workspace}/a"]});
    for order in [
        json!([allow, ask, deny]),
        json!([deny, allow, ask]),
        json!([ask, deny, allow]),
    ] {
        let d = decide(&rules("allow", order), &fs_read("/ws/a"));
        assert_eq!(
            (d.effect, d.reason, d.rule_id.as_deref()),
            (Effect::Deny, ReasonCode::DenyRule, Some("deny-a"))
        );
    }
}

#[test]
fn the_first_matching_deny_is_reported() {
    let p = rules(
        "allow",
        json!([
            {"id": "d1", "effect": "deny", "paths": ["/x/**"]},
            {"id": "d2", "effect": "deny", "paths": ["${workspace}/**"]},
            {"id": "d3", "effect": "deny", "operations": ["fs.read"]},
        ]),
    );
    assert_eq!(decide(&p, &fs_read("/ws/a")).rule_id.as_deref(), Some("d2"));
}

#[test]
fn ask_beats_allow_even_when_allow_comes_first() {
    let p = rules(
        "deny",
        json!([
            {"id": "allow-all-reads", "effect": "allow", "operations": ["fs.read"]},
            {"id": "ask-docs", "effect": "ask", "paths": ["${workspace}/docs/**"]},
        ]),
    );
    let d = decide(&p, &fs_read("/ws/docs/a.md"));
    assert_eq!(
        (d.effect, d.rule_id.as_deref()),
        (Effect::Ask, Some("ask-docs"))
    );
    assert_eq!(
        decide(&p, &fs_read("/ws/src/a.rs")).rule_id.as_deref(),
        Some("allow-all-reads")
    );
}

#[test]
fn unknown_is_denied_even_under_allow_everything() {
    let p = rules("allow", json!([{"id": "all", "effect": "allow"}]));
    let d = decide(&p, &fs_read("/ws/a\0"));
    assert_eq!(
        (d.effect, d.reason, d.rule_id),
        (Effect::Deny, ReasonCode::UnknownOperation, None)
    );
}

#[test]
fn default_applies_when_nothing_matches_and_defaults_to_deny() {
    for (default, reason) in [
        ("allow", ReasonCode::DefaultAllow),
        ("ask", ReasonCode::DefaultAsk),
        ("deny", ReasonCode::DefaultDeny),
    ] {
        let d = decide(&rules(default, json!([])), &fs_read("/ws/a"));
        assert_eq!(d.reason, reason);
        assert_eq!(d.effect.as_str(), default);
    }
    let d = decide(&load(&json!({"policy": {}})), &fs_read("/ws/a"));
    assert_eq!(
        (d.effect, d.reason),
        (Effect::Deny, ReasonCode::DefaultDeny)
    );
}

#[test]
fn every_resource_must_match_an_allow_but_one_denied_resource_denies() {
    let p = rules(
        "ask",
        json!([
            {"id": "src", "effect": "allow", "paths": ["${workspace}/src/**"]},
            {"id": "docs", "effect": "allow", "paths": ["${workspace}/docs/**"]},
        ]),
    );
    let both = call(
        "files",
        "read_multiple_files",
        json!({"paths": ["/ws/src/a", "/ws/docs/b"]}),
        Some(policy::ServerKind::Filesystem),
    );
    // Each allow rule alone must admit every path: two rules that split the batch do not combine.
    assert_eq!(decide(&p, &both).effect, Effect::Ask);
    let joined = rules(
        "ask",
        json!([{"id": "both", "effect": "allow", "paths": ["${workspace}/src/**", "${workspace}/docs/**"]}]),
    );
    assert_eq!(decide(&joined, &both).effect, Effect::Allow);
}

#[test]
fn explain_traces_every_rule_and_marks_the_decisive_one() {
    let p = rules(
        "ask",
        json!([
            {"id": "net", "effect": "allow", "operations": ["net.request"]},
            {"id": "src", "effect": "allow", "paths": ["${workspace}/src/**"]},
            {"id": "ws", "effect": "allow", "operations": ["fs.read"], "paths": ["${workspace}/**"]},
        ]),
    );
    let e = p.explain(&action(&p, &fs_read("/ws/README.md")));
    let trace: Vec<(String, bool, Option<Mismatch>, bool)> = e
        .rules
        .iter()
        .map(|r| (r.id.clone(), r.matched, r.why_not.clone(), r.decisive))
        .collect();
    assert_eq!(
        trace,
        vec![
            ("net".into(), false, Some(Mismatch::Operation), false),
            (
                "src".into(),
                false,
                Some(Mismatch::Path {
                    path: "/ws/README.md".into()
                }),
                false
            ),
            ("ws".into(), true, None, true),
        ]
    );
    let json = serde_json::to_value(&e).unwrap();
    assert_eq!(json["decision"]["reason"], "ALLOW_RULE");
    assert_eq!(
        json["rules"][1]["why_not"],
        json!({"field": "path", "path": "/ws/README.md"})
    );
    assert_eq!(json["action"]["operation"], "fs.read");
}

#[test]
fn decisions_print_on_one_line() {
    let p = rules(
        "ask",
        json!([{"id": "no-env", "effect": "deny", "paths": ["**/.env"]}]),
    );
    assert_eq!(
        decide(&p, &fs_read("/ws/.env")).to_string(),
        "deny (DENY_RULE, rule no-env)"
    );
    assert_eq!(
        decide(&p, &fs_read("/ws/a\0")).to_string(),
        "deny (UNKNOWN_OPERATION, NUL_BYTE)"
    );
    assert_eq!(
        p.rule_specs().map(|s| s.id.as_str()).collect::<Vec<_>>(),
        vec!["no-env"]
    );
}
