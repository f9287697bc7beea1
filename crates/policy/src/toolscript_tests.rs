//! The translation against toolscript-mcp's own reading (first match, default ask) over many tool names, and the
//! order findings.

use super::*;
use crate::action::ToolCall;
use crate::load::{Policy, PolicySources};
use crate::path::Context;
use pretty_assertions::assert_eq;
use proptest::prelude::*;

const SERVERS: [&str; 3] = ["files", "tracker", "my-db"];

fn policy(list: &Value) -> Policy {
    let structured = translate_toolscript(list, &SERVERS).unwrap();
    let ctx = Context {
        workspace: "/ws".into(),
        home: None,
    };
    Policy::load(
        PolicySources {
            policy: Some(&structured),
            ..Default::default()
        },
        &ctx,
    )
    .unwrap()
}

fn decide(p: &Policy, server: &str, tool: &str) -> Effect {
    let call = ToolCall::new(server, tool, json!({}), None);
    p.decide_call(&call, &|s: &str| Some(s.to_owned())).effect
}

/// toolscript-mcp's reading: the first entry whose glob (only `*` special) matches `mcp__server__tool`.
fn first_match(list: &Value, server: &str, tool: &str) -> Effect {
    let name = format!("mcp__{server}__{tool}");
    for e in entries(list).unwrap() {
        if star_match(&e.pattern, &name.chars().collect::<Vec<_>>()) {
            return e.action;
        }
    }
    Effect::Ask
}

fn star_match(p: &[char], s: &[char]) -> bool {
    match p.split_first() {
        None => s.is_empty(),
        Some(('*', rest)) => (0..=s.len()).any(|k| star_match(rest, &s[k..])),
        Some((c, rest)) => s.first() == Some(c) && star_match(rest, &s[1..]),
    }
}

#[test]
fn the_readme_example_translates_to_server_rules_with_ask_by_default() {
    let list = json!([
        {"match": "mcp__tracker__delete_*", "action": "deny"},
        {"match": "mcp__tracker__*", "action": "allow"},
        {"match": "mcp__files__read_*", "action": "allow"},
    ]);
    assert_eq!(
        translate_toolscript(&list, &SERVERS).unwrap(),
        json!({"default": "ask", "rules": [
            {"id": "policy[0]", "effect": "deny", "tools": ["tracker__delete_*"],
             "description": "toolscript-mcp policy[0]: mcp__tracker__delete_* → deny"},
            {"id": "policy[1]", "effect": "allow", "tools": ["tracker__*"],
             "description": "toolscript-mcp policy[1]: mcp__tracker__* → allow"},
            {"id": "policy[2]", "effect": "allow", "tools": ["files__read_*"],
             "description": "toolscript-mcp policy[2]: mcp__files__read_* → allow"},
        ]})
    );
    let p = policy(&list);
    assert_eq!(decide(&p, "tracker", "delete_issue"), Effect::Deny);
    assert_eq!(decide(&p, "tracker", "list_issues"), Effect::Allow);
    assert_eq!(decide(&p, "files", "read_text_file"), Effect::Allow);
    assert_eq!(decide(&p, "files", "write_file"), Effect::Ask);
    assert!(toolscript_findings(&list, &SERVERS).is_empty());
}

#[test]
fn toolscript_star_does_not_reach_toolgates_own_tools() {
    let list = json!([{"match": "*", "action": "allow"}]);
    let p = policy(&list);
    assert_eq!(decide(&p, "files", "write_file"), Effect::Allow);
    assert_eq!(decide(&p, "toolgate", "shell_run"), Effect::Ask);
    assert_eq!(decide(&p, "unlisted", "x"), Effect::Ask);
}

#[test]
fn toolscript_glob_characters_other_than_star_are_literal() {
    let list = json!([{"match": "mcp__files__read_?[ab]{c,d}!(x)", "action": "allow"}]);
    let p = policy(&list);
    assert_eq!(decide(&p, "files", "read_?[ab]{c,d}!(x)"), Effect::Allow);
    assert_eq!(decide(&p, "files", "read_x_a_c"), Effect::Ask);
    assert_eq!(decide(&p, "files", "read_xac"), Effect::Ask);
}

#[test]
fn patterns_that_straddle_the_prefix_are_derived_exactly() {
    // `*__delete` matches mcp__tracker__delete under toolscript (the star takes `mcp__tracker`).
    let list = json!([
        {"match": "*__delete", "action": "deny"},
        {"match": "mcp_*s__*", "action": "allow"},
        {"match": "m*p__my-db__*", "action": "allow"},
    ]);
    let p = policy(&list);
    for (server, tool) in [
        ("tracker", "delete"),
        ("files", "read"),
        ("files", "delete"),
        ("my-db", "q"),
        ("tracker", "x"),
    ] {
        assert_eq!(
            decide(&p, server, tool),
            first_match(&list, server, tool),
            "{server}__{tool}"
        );
    }
}

#[test]
fn an_entry_that_matches_no_configured_server_is_reported_and_not_a_rule() {
    let list = json!([{"match": "tracker__delete_*", "action": "deny"}, {"match": "mcp__gone__*", "action": "allow"}]);
    assert_eq!(
        translate_toolscript(&list, &SERVERS).unwrap()["rules"],
        json!([])
    );
    let findings = toolscript_findings(&list, &SERVERS);
    let codes: Vec<_> = findings
        .iter()
        .map(|f| (f.code, f.rule_id.clone().unwrap()))
        .collect();
    assert_eq!(
        codes,
        [
            ("NO_TOOL_MATCHES", "policy[0]".to_owned()),
            ("NO_TOOL_MATCHES", "policy[1]".to_owned())
        ]
    );
}

#[test]
fn first_match_order_is_reported_where_deny_overrides_changes_the_meaning() {
    let list = json!([
        {"match": "mcp__files__*", "action": "allow"},
        {"match": "mcp__files__delete", "action": "deny"},
        {"match": "mcp__tracker__list_*", "action": "allow"},
        {"match": "mcp__tracker__*", "action": "ask"},
        {"match": "mcp__files__read_*", "action": "allow"},
    ]);
    let findings = toolscript_findings(&list, &SERVERS);
    let pairs: Vec<_> = findings
        .iter()
        .map(|f| f.rule_id.clone().unwrap())
        .collect();
    assert_eq!(pairs, ["policy[1]", "policy[3]"]);
    assert!(
        findings[0].message.contains("`mcp__files__delete`"),
        "{}",
        findings[0].message
    );
    assert!(
        findings[0]
            .message
            .contains("move policy[1] above policy[0]"),
        "{}",
        findings[0].message
    );
    assert!(
        findings[1].message.contains("e.g. `mcp__tracker__list_`"),
        "{}",
        findings[1].message
    );
    assert!(findings
        .iter()
        .all(|f| f.severity == Severity::Warning && f.code == "FIRST_MATCH_ORDER"));
    // Where no pair is reported, the two readings agree on every tool.
    let agreeing = json!([
        {"match": "mcp__files__delete", "action": "deny"},
        {"match": "mcp__files__*", "action": "allow"},
        {"match": "mcp__tracker__*", "action": "ask"},
        {"match": "mcp__tracker__list_*", "action": "allow"},
    ]);
    assert!(toolscript_findings(&agreeing, &SERVERS).is_empty());
}

#[test]
fn malformed_entries_are_refused_with_their_index() {
    for (list, key) in [
        (json!({"match": "x"}), "policy"),
        (json!(["x"]), "policy[0]"),
        (
            json!([{"match": "x", "action": "allow"}, {"match": "", "action": "deny"}]),
            "policy[1].match",
        ),
        (
            json!([{"match": "x", "action": "block"}]),
            "policy[0].action",
        ),
        (
            json!([{"match": "x", "action": "deny", "why": "no"}]),
            "policy[0]",
        ),
    ] {
        match translate_toolscript(&list, &SERVERS) {
            Err(Error::Parse { key: got, .. }) => assert_eq!(got, key, "{list}"),
            other => panic!("{list}: {other:?}"),
        }
    }
}

fn pattern() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just("*"),
            Just("mcp__"),
            Just("files"),
            Just("tracker"),
            Just("__"),
            Just("_"),
            Just("read"),
            Just("a"),
            Just("?"),
            Just("[")
        ],
        1..6,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    /// Where `toolscript_findings` reports no pair, toolgate decides every tool as toolscript-mcp did; and the
    /// translation alone (one entry at a time) always agrees.
    #[test]
    fn translation_agrees_with_first_match_unless_reported(
        rules in proptest::collection::vec((pattern(), 0..3u8), 1..4),
        tools in proptest::collection::vec(
            (prop_oneof![Just("files"), Just("tracker"), Just("my-db"), Just("toolgate")],
             "(read|a|_|files|__|\\?|\\[){0,4}"),
            1..8,
        ),
    ) {
        let list = Value::Array(rules.iter().map(|(m, a)| {
            { let action = ["allow", "ask", "deny"][*a as usize]; json!({"match": m, "action": action}) }
        }).collect());
        let p = policy(&list);
        let reported = toolscript_findings(&list, &SERVERS).iter().any(|f| f.code == "FIRST_MATCH_ORDER");
        for (server, tool) in &tools {
            let ours = decide(&p, server, tool);
            let theirs = if *server == "toolgate" { Effect::Ask } else { first_match(&list, server, tool) };
            if !reported {
                prop_assert_eq!(ours, theirs, "{}__{} under {}", server, tool, list);
            }
            // Deny-overrides is never more permissive than the first match.
            prop_assert!(ours >= theirs, "{}__{} under {}", server, tool, list);
        }
    }
}
