//! Loading errors name the offending key, rule or example; examples are checked at load.

use policy::{check_policy, Error, Severity};
use serde_json::json;

use crate::common::{ctx, sources, try_load};

fn err(doc: serde_json::Value) -> Error {
    match try_load(&doc) {
        Ok(_) => panic!("policy should not load"),
        Err(e) => e,
    }
}

#[test]
fn unknown_keys_name_the_rule_and_the_key() {
    let e = err(json!({"policy": {"rules": [{"id": "r1", "effect": "allow", "pathz": ["/x"]}]}}));
    let text = e.to_string();
    assert!(text.contains("r1") && text.contains("pathz"), "{text}");
    let e = err(json!({"policy": {"defualt": "allow"}}));
    assert!(e.to_string().contains("defualt"), "{e}");
    let e = err(json!({"permissions": {"allow": [], "defaultMode": "x"}}));
    assert!(
        e.to_string().starts_with("permissions:") && e.to_string().contains("defaultMode"),
        "{e}"
    );
    let e = err(
        json!({"policy": {"rules": [{"id": "r2", "effect": "allow", "operations": ["fs.exec"]}]}}),
    );
    assert!(
        e.to_string().contains("r2") && e.to_string().contains("fs.exec"),
        "{e}"
    );
}

#[test]
fn permission_strings_name_their_generated_id() {
    let e = err(json!({"permissions": {"allow": ["Read", "Bash(a && b)"]}}));
    assert_eq!(e.rule_id(), Some("Bash(a && b)"));
    assert!(e.to_string().contains("Bash(a && b)"), "{e}");
}

#[test]
fn failing_examples_name_rule_list_and_index() {
    let e = err(
        json!({"policy": {"rules": [{"id": "ws-read", "effect": "allow", "operations": ["fs.read"], "paths": ["${workspace}/**"],
        "match": [{"operation": "fs.read", "paths": ["${workspace}/a"]}, {"operation": "fs.read", "paths": ["/etc/passwd"]}]}]}}),
    );
    assert_eq!(
        e,
        Error::Example {
            rule: "ws-read".into(),
            list: "match",
            index: 1,
            message: "does not match ({\"field\":\"path\",\"path\":\"/etc/passwd\"})".into(),
        }
    );
    let e = err(
        json!({"policy": {"rules": [{"id": "no-env", "effect": "deny", "paths": ["**/.env"],
        "not_match": [{"operation": "fs.read", "paths": ["${workspace}/src/../.env"]}]}]}}),
    );
    assert!(
        matches!(e, Error::Example { ref rule, list: "not_match", index: 0, .. } if rule == "no-env"),
        "{e}"
    );
}

#[test]
fn duplicate_ids_and_conflicting_defaults_fail() {
    assert_eq!(
        err(
            json!({"policy": {"rules": [{"id": "a", "effect": "allow"}, {"id": "a", "effect": "deny"}]}})
        ),
        Error::DuplicateId("a".into())
    );
    let e = err(json!({"policy": {"default": "deny"}, "permissions": {"default": "allow"}}));
    assert_eq!(e.code(), "PARSE_ERROR");
    let e = err(
        json!({"policy": {"rules": [{"id": "x", "effect": "allow"}]}, "profiles": {"p": {"rules": [{"id": "x", "effect": "deny"}]}}}),
    );
    assert_eq!(e, Error::DuplicateId("x".into()));
}

#[test]
fn check_lists_every_error_with_codes() {
    let doc = json!({"policy": {"rules": [
        {"id": "a", "effect": "allow", "hosts": ["*.x.com"], "operations": ["net.request"], "methods": ["GET"]},
        {"id": "a", "effect": "allow", "operations": ["fs.read"]},
        {"id": "b", "effect": "allow", "paths": ["${project}/**"]},
        {"id": "c", "effect": "allow", "paths": ["relative/**"]},
        {"id": "d", "effect": "allow", "hosts": ["exa*mple.com"]},
    ]}});
    let found: Vec<(Severity, &str, Option<String>)> = check_policy(sources(&doc), &ctx())
        .into_iter()
        .map(|f| (f.severity, f.code, f.rule_id))
        .collect();
    assert_eq!(
        found,
        vec![
            (Severity::Error, "UNKNOWN_VARIABLE", Some("b".into())),
            (Severity::Error, "INVALID_RULE", Some("c".into())),
            (Severity::Error, "INVALID_RULE", Some("d".into())),
            (Severity::Error, "DUPLICATE_ID", Some("a".into())),
        ]
    );
}

#[test]
fn home_patterns_need_a_home() {
    let no_home = policy::Context {
        workspace: "/ws".into(),
        home: None,
    };
    let doc = json!({"permissions": {"deny": ["Read(~/.ssh/**)"]}});
    let e = policy::Policy::load(sources(&doc), &no_home).expect_err("needs home");
    assert_eq!(e.rule_id(), Some("Read(~/.ssh/**)"));
}

#[test]
fn context_must_be_canonical() {
    let doc = json!({"policy": {}});
    for bad in ["ws", "/ws/", "/ws/../x", "/ws//a"] {
        let ctx = policy::Context {
            workspace: bad.into(),
            home: None,
        };
        let e = policy::Policy::load(sources(&doc), &ctx).expect_err(bad);
        assert!(e.to_string().starts_with("context.workspace:"), "{e}");
    }
}

#[test]
fn examples_may_be_whole_calls_through_the_adapters() {
    let ok = json!({"policy": {"rules": [{"id": "npm", "effect": "allow", "command_prefixes": [["npm", "run", "test"]],
        "match": [{"call": {"server": "term", "tool": "run", "arguments": {"command": "npm run test --watch"}}}],
        "not_match": [
            {"call": {"server": "term", "tool": "run", "arguments": {"command": "npm run test-evil"}}},
            {"call": {"server": "term", "tool": "run", "arguments": {"command": "npm run test && id"}}},
        ]}],
        "mappings": [{"tool": "term__run", "operation": "shell.exec", "command": "command"}]}});
    try_load(&ok).unwrap();
    let read = json!({"policy": {"rules": [{"id": "ws", "effect": "allow", "paths": ["${workspace}/**"],
        "match": [{"call": {"server": "f", "tool": "read_file", "kind": "filesystem", "arguments": {"path": "${workspace}/../ws-evil/x"}}}]}]}});
    assert!(
        matches!(err(read), Error::Example { ref rule, list: "match", index: 0, .. } if rule == "ws")
    );
    let both = json!({"policy": {"rules": [{"id": "b", "effect": "allow",
        "match": [{"operation": "fs.read", "call": {"server": "f", "tool": "x"}}]}]}});
    assert!(err(both)
        .to_string()
        .contains("exactly one of `call` or `operation`"));
}
