//! `policy test`: declarative cases with readable diffs.

use policy::{parse_cases, run_cases, Lexical};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::common::load;

#[test]
fn cases_pass_and_fail_with_a_readable_diff() {
    let p = load(&json!({"policy": {"default": "ask", "rules": [
        {"id": "ws-read", "effect": "allow", "operations": ["fs.read"], "paths": ["${workspace}/**"]},
    ]}}));
    let cases = parse_cases(&json!({"cases": [
        {"name": "reads src", "call": {"server": "files", "tool": "read_file", "arguments": {"path": "src/a"}, "kind": "filesystem"}, "expect": "allow", "rule": "ws-read"},
        {"name": "etc is denied", "call": {"server": "f", "tool": "read_file", "arguments": {"path": "/etc/passwd"}, "kind": "filesystem"}, "expect": "deny", "rule": "ws-read", "reason": "DEFAULT_DENY"},
        {"name": "bad profile", "call": {"server": "f", "tool": "x"}, "expect": "deny", "profile": "ghost"},
    ]})).unwrap();
    let report = run_cases(&p, &cases, &Lexical);
    assert_eq!((report.passed, report.failed), (1, 2));
    assert_eq!(
        report.results[1].diff,
        vec![
            "- expected decision: deny",
            "+ actual   decision: ask",
            "- expected rule: ws-read",
            "+ actual   rule: ",
            "- expected reason: DEFAULT_DENY",
            "+ actual   reason: DEFAULT_ASK",
        ]
    );
    assert_eq!(report.results[2].diff, vec!["! unknown profile `ghost`"]);
}

#[test]
fn malformed_cases_name_their_index() {
    let e = parse_cases(
        &json!([{"name": "a", "call": {"server": "s", "tool": "t"}, "expect": "maybe"}]),
    )
    .unwrap_err();
    assert!(e.to_string().starts_with("cases[0]:"), "{e}");
}
