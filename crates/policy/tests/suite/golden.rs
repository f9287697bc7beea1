//! Golden decision fixtures: every `tests/fixtures/decisions/*.json` holds a policy, a call and the expected
//! decision (effect, reason code, rule id). Adding a case is adding a file.

use std::path::Path;

use policy::{Lexical, ToolCall};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};

use crate::common::load;

#[test]
fn every_fixture_decides_as_recorded() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/decisions");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(
        files.len() >= 20,
        "expected the fixture set, found {}",
        files.len()
    );
    for file in files {
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let mut p = load(&doc);
        if let Some(profile) = doc.get("profile").and_then(Value::as_str) {
            p = p.with_profile(profile).unwrap();
        }
        let call: ToolCall = serde_json::from_value(doc["call"].clone()).unwrap();
        let d = p.decide_call(&call, &Lexical);
        let got = json!({"effect": d.effect, "reason": d.reason, "rule_id": d.rule_id});
        assert_eq!(got, doc["expect"], "fixture {}", file.display());
        // explain must agree with decide on every fixture.
        assert_eq!(
            p.explain(&p.action_for(&call, &Lexical)).decision,
            d,
            "explain disagrees on {}",
            file.display()
        );
    }
}
