//! Snapshots of the text a model reads for each way a run ends, and the structured fields beside it.

use super::*;
use crate::run::{CallNote, LimitKind, RunEnd, RunReport};
use pretty_assertions::assert_eq;
use proptest::prelude::*;
use serde_json::json;
use std::time::Duration;

fn report(end: RunEnd) -> RunReport {
    RunReport {
        end,
        calls: vec![
            CallNote {
                seq: 1,
                name: "files__list_directory".to_owned(),
                error: None,
            },
            CallNote {
                seq: 2,
                name: "tracker__delete_issue".to_owned(),
                error: Some("POLICY_DENIED: denied by rule 2 (deny tracker__delete_*)".to_owned()),
            },
            CallNote {
                seq: 3,
                name: "files__read_text_file".to_owned(),
                error: Some("CALL_FAILED: ENOENT: no such file or directory".to_owned()),
            },
        ],
        log: "found 3 files\nreading a.txt\n".to_owned(),
        log_truncated: false,
        layers: vec![("seccomp".to_owned(), "active".to_owned())],
        elapsed: Duration::from_millis(12),
    }
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap()
}

#[test]
fn a_returned_value_with_calls_and_log() {
    let result = render(&report(RunEnd::Returned(
        json!({"count": 3, "names": ["a.txt", "b.txt"]}),
    )));
    assert_eq!(result["isError"], false);
    insta::assert_snapshot!(text(&result));
    assert_eq!(
        result["structuredContent"],
        json!({
            "result": {"count": 3, "names": ["a.txt", "b.txt"]},
            "ended": {"kind": "returned"},
            "calls": {"made": 3, "failed": 2, "first_failed": [
                {"seq": 2, "name": "tracker__delete_issue",
                 "error": "POLICY_DENIED: denied by rule 2 (deny tracker__delete_*)"},
                {"seq": 3, "name": "files__read_text_file",
                 "error": "CALL_FAILED: ENOENT: no such file or directory"},
            ]},
            "log": "found 3 files\nreading a.txt\n",
            "elapsed_ms": 12,
        })
    );
}

#[test]
fn a_plain_string_with_no_calls_is_just_the_string() {
    let mut r = report(RunEnd::Returned(json!("3 open issues")));
    r.calls.clear();
    r.log.clear();
    let result = render(&r);
    assert_eq!(text(&result), "3 open issues");
}

#[test]
fn a_large_value_is_projected_with_a_note_on_how_to_get_the_rest() {
    let rows: Vec<Value> = (0..500)
        .map(|i| json!({"id": i, "title": format!("issue {i}"), "body": "x".repeat(2000)}))
        .collect();
    let mut r = report(RunEnd::Returned(Value::Array(rows)));
    r.calls.truncate(1);
    r.log.clear();
    let result = render(&r);
    let shown = text(&result);
    assert!(
        shown.chars().count() < VALUE_CHARS + 1000,
        "{}",
        shown.len()
    );
    assert!(shown.contains("more items (of 500)"), "{shown}");
    assert!(
        shown.contains("recall(n)") && shown.contains("saveFile"),
        "{shown}"
    );
    assert_eq!(result["structuredContent"]["truncated"], true);
    let items = result["structuredContent"]["result"].as_array().unwrap();
    let note = format!("… {} more items (of 500)", 500 - (items.len() - 1));
    assert_eq!(items.last().unwrap(), &json!(note));
}

#[test]
fn a_throw_is_an_error_that_says_so() {
    let result = render(&report(RunEnd::Threw {
        message: "TypeError: x is undefined".to_owned(),
    }));
    assert_eq!(result["isError"], true);
    insta::assert_snapshot!(text(&result));
    assert_eq!(
        result["structuredContent"]["ended"],
        json!({"kind": "threw", "message": "TypeError: x is undefined"})
    );
}

#[test]
fn a_limit_is_an_error_that_names_the_limit() {
    let result = render(&report(RunEnd::Limit {
        kind: LimitKind::WallClock,
        message: "the program ran past its wall clock of 120 s; its worker was killed".to_owned(),
    }));
    assert_eq!(result["isError"], true);
    insta::assert_snapshot!(text(&result));
    assert_eq!(result["structuredContent"]["ended"]["limit"], "wall_clock");
}

#[test]
fn a_worker_failure_is_an_error() {
    let mut r = report(RunEnd::WorkerFailed {
        message: "the sandbox layer seccomp is required but unavailable".to_owned(),
    });
    r.calls.clear();
    r.log.clear();
    let result = render(&r);
    assert_eq!(result["isError"], true);
    insta::assert_snapshot!(text(&result));
}

#[test]
fn a_long_log_and_many_calls_are_cut_with_a_note() {
    let mut r = report(RunEnd::Returned(json!(null)));
    r.calls = (1..=120)
        .map(|seq| CallNote {
            seq,
            name: "files__read_text_file".to_owned(),
            error: (seq % 10 == 0).then(|| "POLICY_DENIED: no".to_owned()),
        })
        .collect();
    r.log = "line\n".repeat(5000);
    r.log_truncated = true;
    let result = render(&r);
    let shown = text(&result);
    assert!(
        shown.contains("[120 calls, 12 without a result: #10 files__read_text_file refused: POLICY_DENIED: no; #20 ")
            && shown.contains("; … 9 more · 12 ms]"),
        "{shown}"
    );
    assert!(shown.ends_with("[The log was cut: it shows the first lines the program wrote; log less, or return what you need.]"));
    assert!(shown.chars().count() < LOG_CHARS + 1000);
    let calls = &result["structuredContent"]["calls"];
    assert_eq!(
        (&calls["made"], &calls["failed"]),
        (&json!(120), &json!(12))
    );
    assert_eq!(
        calls["first_failed"].as_array().unwrap().len(),
        FAILED_LISTED
    );
    assert_eq!(result["structuredContent"]["log_truncated"], true);
}

/// The answer reaches the context at about its own size, however many calls the run made.
#[test]
fn a_run_of_many_calls_adds_a_bounded_summary_to_its_answer() {
    for failing in [0, 1, 7] {
        let mut r = report(RunEnd::Returned(json!(300)));
        r.calls = (1..=300)
            .map(|seq| CallNote {
                seq,
                name: "files__list_directory".to_owned(),
                error: (seq % 40 == 0 && seq / 40 <= failing)
                    .then(|| format!("CALL_FAILED: {}", "e".repeat(5000))),
            })
            .collect();
        r.log.clear();
        let result = render(&r);
        let over = result.to_string().len() - json!(300).to_string().len();
        let bound = if failing == 0 { 300 } else { 1_500 };
        assert!(
            over <= bound,
            "{failing} failing: {over} bytes over the answer: {result}"
        );
        assert!(!result.to_string().contains("layers"), "{result}");
    }
}

#[test]
fn a_cut_value_shows_its_first_items_and_the_note() {
    let mut r = report(RunEnd::Returned(json!({
        "ids": (1..=30).collect::<Vec<u32>>(),
        "body": "y".repeat(1010),
    })));
    r.calls.truncate(1);
    r.log.clear();
    insta::assert_snapshot!(text(&render(&r)));
}

/// Any JSON: nested arrays and objects of strings, numbers, booleans and nulls.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        ".{0,1200}".prop_map(Value::String),
    ];
    leaf.prop_recursive(8, 600, 120, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..120).prop_map(Value::Array),
            proptest::collection::btree_map(".{0,20}", inner, 0..150)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Whatever a program returns, the text a model reads stays within the value's budget plus the notes.
    #[test]
    fn render_never_gives_a_wall(value in any_json()) {
        let result = render(&RunReport {
            end: RunEnd::Returned(value),
            calls: Vec::new(),
            log: String::new(),
            log_truncated: false,
            layers: Vec::new(),
            elapsed: Duration::ZERO,
        });
        let shown = text(&result).chars().count();
        prop_assert!(shown <= VALUE_CHARS + 1 + 2 + CUT_NOTE.len(), "{}", shown);
        let structured = result["structuredContent"]["result"].to_string().chars().count();
        prop_assert!(structured <= 4 * VALUE_CHARS, "{}", structured);
    }
}
