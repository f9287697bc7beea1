//! Every kind of message toolgate governs, in both eras, through real forwarding to the fixture (`testkit`): each
//! leaves exactly one decision record and at most one finished record per trace, and its decision names the rule
//! that matched it, so the policy was consulted (a rule that allows everything, under a deny default). A deny
//! rule on upstream sampling stops it before the client.

use crate::outcome::CallOutcome;
use crate::pipeline::{self, CallContext, HoldPolicy, Origin};
use crate::testkit::{Client, Harness};
// Own tools (intrinsics, workspace tools) are rows of `pipeline::tests` and the suites that serve them.
use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use test_support::FixtureOptions;
use tokio_util::sync::CancellationToken;

/// What one trace left: its decisions' rule ids, its finished records, and the name it was recorded under.
#[derive(Debug, Default)]
struct Left {
    rules: Vec<String>,
    finished: usize,
    tool: String,
}

fn policy(extra: Value) -> Value {
    let mut rules = vec![json!({"id": "table", "effect": "allow"})];
    rules.extend(extra.as_array().cloned().unwrap_or_default());
    json!({"policy": {"default": "deny", "rules": rules},
           "approvals": {"wait_seconds": 0, "elicitation": false},
           "pins": {"newTools": "accept"}})
}

/// The records since `skip`, by trace; waits a little for the writer behind the calls.
async fn left_since(h: &Harness, skip: usize, traces: usize) -> BTreeMap<String, Left> {
    let deadline = tokio::time::Instant::now() + crate::testkit::WAIT;
    loop {
        let mut by: BTreeMap<String, Left> = BTreeMap::new();
        for r in h.audit().iter().skip(skip) {
            let s = |k: &str| r[k].as_str().unwrap_or_default().to_owned();
            let entry = by.entry(s("trace_id")).or_default();
            match r["kind"].as_str() {
                Some("decision") => entry.rules.push(s("rule_id")),
                Some("execution") => entry.finished += 1,
                _ => continue,
            }
            entry.tool = s("tool");
        }
        by.retain(|_, l| !l.rules.is_empty() || l.finished > 0);
        let done = by.len() >= traces && by.values().all(|l| l.finished > 0);
        if done || tokio::time::Instant::now() >= deadline {
            return by;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Each of `traces` traces since `skip` has one decision, by `rule`, and one finished record; `names` are the
/// names they were recorded under.
async fn governed(h: &Harness, skip: usize, row: &str, names: &[&str], rule: &str) {
    let left = left_since(h, skip, names.len()).await;
    let mut seen: Vec<&str> = left.values().map(|l| l.tool.as_str()).collect();
    seen.sort_unstable();
    let mut want = names.to_vec();
    want.sort_unstable();
    assert_eq!(seen, want, "{row}: {left:#?}");
    for l in left.values() {
        assert_eq!(
            l.rules,
            vec![rule.to_owned()],
            "{row}: one decision, by the policy: {left:#?}"
        );
        assert!(
            l.finished <= 1,
            "{row}: at most one finished record: {left:#?}"
        );
    }
}

async fn legacy(h: &Harness, capabilities: Value) -> Client {
    let mut c = h.client();
    c.initialize(capabilities).await;
    c
}

/// Answers the one request the upstream sends the client while `tool` runs, and waits for the call's answer.
async fn answered(c: &mut Client, tool: &str, method: &str, answer: Value) -> Value {
    let id = c
        .send_request("tools/call", json!({"name": tool, "arguments": {}}))
        .await;
    let asked = c.wait_for(|m| m["method"] == method).await;
    c.respond(&asked["id"], answer).await;
    c.response(&id).await
}

#[tokio::test]
async fn every_message_kind_leaves_one_decision_by_the_policy_and_at_most_one_finished_record() {
    let h = Harness::start(policy(json!([])), FixtureOptions::default()).await;
    let mut old = legacy(&h, json!({"sampling": {}, "elicitation": {}})).await;
    let mut new = h.client();
    let uri = json!({"uri": "fixture://static/1"});
    let completion = json!({"ref": {"type": "ref/prompt", "name": "fx__greet"},
                            "argument": {"name": "name", "value": "a"}});
    let rows: [(&str, Value, &str); 4] = [
        (
            "tools/call",
            json!({"name": "fx__add", "arguments": {"a": 1, "b": 2}}),
            "add",
        ),
        (
            "prompts/get",
            json!({"name": "fx__greet", "arguments": {"name": "a"}}),
            "greet",
        ),
        ("resources/read", uri.clone(), "resources/read"),
        ("completion/complete", completion, "greet"),
    ];
    for (method, params, name) in rows {
        let before = h.audit().len();
        let answer = old.request(method, params.clone()).await;
        assert!(answer.get("result").is_some(), "legacy {method}: {answer}");
        governed(&h, before, &format!("legacy {method}"), &[name], "table").await;
        let before = h.audit().len();
        let answer = new.modern(method, params).await;
        assert!(answer.get("result").is_some(), "modern {method}: {answer}");
        governed(&h, before, &format!("modern {method}"), &[name], "table").await;
    }
    for method in ["resources/subscribe", "resources/unsubscribe"] {
        let before = h.audit().len();
        let answer = old.request(method, uri.clone()).await;
        assert!(answer.get("result").is_some(), "{method}: {answer}");
        governed(&h, before, method, &[method], "table").await;
    }
    // What an upstream asks during a legacy client's call: the call and the request, each governed.
    let sampled =
        json!({"role": "assistant", "content": {"type": "text", "text": "s"}, "model": "m"});
    for (tool, method, answer) in [
        ("fx__sample", "sampling/createMessage", sampled),
        (
            "fx__elicit",
            "elicitation/create",
            json!({"action": "decline"}),
        ),
    ] {
        let before = h.audit().len();
        let result = answered(&mut old, tool, method, answer).await;
        assert!(result.get("result").is_some(), "{tool}: {result}");
        let called = tool.trim_start_matches("fx__");
        governed(&h, before, method, &[called, method], "table").await;
    }
    // A program's call, with no client session behind it.
    let before = h.audit().len();
    let origin = Origin::CodeRun {
        run_trace_id: "run-table".into(),
    };
    let guard = h.gateway.stages.guard();
    let ctx = CallContext::new(
        origin,
        HoldPolicy::HandleNow,
        CancellationToken::new(),
        guard,
    );
    let params = json!({"name": "fx__add", "arguments": {"a": 2, "b": 2}});
    let outcome = pipeline::govern_tool(&h.gateway.stages, &ctx, params).await;
    assert!(matches!(outcome, CallOutcome::Complete(..)), "{outcome:?}");
    governed(&h, before, "a program's call", &["add"], "table").await;
    h.stop(&[&old, &new]).await;
}

#[tokio::test]
async fn held_call_and_its_resume_keep_one_decision_and_one_finished_record_each() {
    let hold = json!([{"id": "hold-echo", "effect": "ask", "tools": ["fx__echo"]}]);
    let h = Harness::start(policy(hold), FixtureOptions::default()).await;
    let mut c = legacy(&h, json!({})).await;
    let before = h.audit().len();
    let held = c.call("fx__echo", json!({"text": "later"})).await;
    governed(&h, before, "held tools/call", &["echo"], "hold-echo").await;
    let pending = h.pending_request().await;
    let mut admin = store::Store::open(h.state.namespace()).unwrap();
    admin
        .approve(&pending.id, "operator", store::Timestamp::now())
        .unwrap();
    let before = h.audit().len();
    let resumed = c
        .call("toolgate_resume", json!({"request_id": pending.id}))
        .await;
    assert!(
        resumed.to_string().contains("later"),
        "{held} then {resumed}"
    );
    // The resume continues the held trace, decided once when it was first seen: no second decision.
    let left = left_since(&h, before, 1).await;
    let trace = left
        .get(&pending.trace_id)
        .unwrap_or_else(|| panic!("{left:#?}"));
    assert_eq!((trace.rules.len(), trace.finished), (0, 1), "{left:#?}");
    assert_eq!(left.len(), 1, "{left:#?}");
    h.stop(&[&c]).await;
}

async fn legacy_upstream(extra: Value) -> Harness {
    let fixture = FixtureOptions {
        era: "legacy".into(),
        bridging: true,
        ..FixtureOptions::default()
    };
    Harness::start(policy(extra), fixture).await
}

#[tokio::test]
async fn task_methods_and_roots_and_bridged_requests_are_governed_like_every_message() {
    let h = legacy_upstream(json!([])).await;
    let mut c = legacy(&h, json!({"roots": {"listChanged": false}})).await;
    let params =
        json!({"name": "fx__task_work", "arguments": {"delay_ms": 50}, "task": {"ttl": 60000}});
    let created = c.request("tools/call", params).await;
    let id = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    for method in ["tasks/get", "tasks/result", "tasks/list", "tasks/cancel"] {
        let before = h.audit().len();
        c.request(method, json!({"taskId": id})).await;
        let name = if method == "tasks/list" {
            method
        } else {
            "task_work"
        };
        governed(&h, before, method, &[name], "table").await;
    }
    let before = h.audit().len();
    let result = answered(&mut c, "fx__roots", "roots/list", json!({"roots": []})).await;
    assert!(result.get("result").is_some(), "{result}");
    governed(&h, before, "roots/list", &["roots", "roots/list"], "table").await;
    // A modern client's call on the legacy upstream: what it asks is bridged, and governed the same way.
    let mut modern = h.client();
    let before = h.audit().len();
    let meta = crate::testkit::modern_meta(json!({"roots": {}}));
    let params = json!({"name": "fx__roots", "arguments": {}, "_meta": meta});
    let id = modern.send_request("tools/call", params).await;
    let answer = modern.response(&id).await;
    assert_eq!(answer["result"]["resultType"], "input_required", "{answer}");
    let left = left_since(&h, before, 1).await;
    let asked: Vec<_> = left.values().filter(|l| l.tool == "roots/list").collect();
    assert_eq!(asked.len(), 1, "{left:#?}");
    assert_eq!(
        (asked[0].rules.clone(), asked[0].finished),
        (vec!["table".to_owned()], 1)
    );
    h.stop(&[&c, &modern]).await;
}

#[tokio::test]
async fn a_deny_rule_on_upstream_sampling_stops_it_and_records_the_refusal() {
    let deny = json!([{"id": "no-sampling", "effect": "deny", "operations": ["mcp.sample"]}]);
    let h = Harness::start(policy(deny), FixtureOptions::default()).await;
    let mut c = legacy(&h, json!({"sampling": {}})).await;
    let before = h.audit().len();
    c.request("tools/call", json!({"name": "fx__sample", "arguments": {}}))
        .await;
    assert!(!c.kept(|m| m["method"] == "sampling/createMessage"));
    let left = left_since(&h, before, 2).await;
    let sampled: Vec<_> = left
        .values()
        .filter(|l| l.tool == "sampling/createMessage")
        .collect();
    assert_eq!(sampled.len(), 1, "{left:#?}");
    assert_eq!(
        sampled[0].rules,
        vec!["no-sampling".to_owned()],
        "{left:#?}"
    );
    h.stop(&[&c]).await;
}

/// A modern upstream asks in its result (`input_required`), not with a request: those input requests are the
/// same requests toward the client, so a deny rule on `mcp.sample` stops them too. Handed to a legacy client as
/// requests (toolgate asks and retries), or passed through to a modern client in the result, the round with a
/// refused request never reaches the client, the call is refused, and each request asked is recorded under the
/// call that caused it.
#[tokio::test]
async fn a_deny_rule_on_sampling_stops_a_modern_upstreams_input_requests_for_either_client() {
    let deny = json!([{"id": "no-sampling", "effect": "deny", "operations": ["mcp.sample"]}]);
    let fixture = FixtureOptions {
        era: "modern".into(),
        bridging: true,
        ..FixtureOptions::default()
    };
    let h = Harness::start(policy(deny), fixture).await;
    let both = json!({"name": "fx__confirm", "arguments": {"message": "go?", "both": true}});
    let mut old = legacy(&h, json!({"sampling": {}, "elicitation": {}})).await;
    let before = h.audit().len();
    let answer = old.request("tools/call", both.clone()).await;
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(!old
        .kept(|m| m["method"] == "sampling/createMessage" || m["method"] == "elicitation/create"));
    let mut new = h.client();
    let answer = new.modern("tools/call", both).await;
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(answer["result"].get("inputRequests").is_none(), "{answer}");
    let left = left_since(&h, before, 2).await;
    let sampled: Vec<_> = left
        .values()
        .filter(|l| l.tool == "sampling/createMessage")
        .collect();
    assert_eq!(sampled.len(), 2, "one refused round per client: {left:#?}");
    for s in sampled {
        assert_eq!(
            (s.rules.clone(), s.finished),
            (vec!["no-sampling".to_owned()], 1),
            "{left:#?}"
        );
    }
    h.stop(&[&old, &new]).await;
}

/// Allowed, a modern upstream's input requests are governed like every message: one decision and one finished
/// record each, whether toolgate asks a legacy client or hands them to a modern one.
#[tokio::test]
async fn a_modern_upstreams_input_requests_leave_one_decision_and_one_finished_record_each() {
    let fixture = FixtureOptions {
        era: "modern".into(),
        bridging: true,
        ..FixtureOptions::default()
    };
    let h = Harness::start(policy(json!([])), fixture).await;
    let both = json!({"name": "fx__confirm", "arguments": {"message": "go?", "both": true}});
    let mut new = h.client();
    let before = h.audit().len();
    let answer = new.modern("tools/call", both).await;
    assert_eq!(answer["result"]["resultType"], "input_required", "{answer}");
    let left = left_since(&h, before, 3).await;
    let mut asked: Vec<&str> = left
        .values()
        .filter(|l| l.tool != "confirm")
        .map(|l| l.tool.as_str())
        .collect();
    asked.sort_unstable();
    assert_eq!(
        asked,
        ["elicitation/create", "sampling/createMessage"],
        "{left:#?}"
    );
    for l in left.values() {
        assert_eq!(
            (l.rules.clone(), l.finished),
            (vec!["table".to_owned()], 1),
            "{left:#?}"
        );
    }
    h.stop(&[&new]).await;
}

/// What an upstream asks during a call is recorded under that call: its records name the call's trace as their
/// parent, as a program's calls name their run's.
#[tokio::test]
async fn an_upstreams_request_during_a_call_names_the_call_as_its_parent() {
    let h = Harness::start(policy(json!([])), FixtureOptions::default()).await;
    let mut c = legacy(&h, json!({"sampling": {}})).await;
    let before = h.audit().len();
    let answer = answered(
        &mut c,
        "fx__sample",
        "sampling/createMessage",
        json!({
        "role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "table"}),
    )
    .await;
    assert!(answer.get("result").is_some(), "{answer}");
    left_since(&h, before, 2).await;
    let records: Vec<Value> = h.audit().into_iter().skip(before).collect();
    let call = records
        .iter()
        .find(|r| r["tool"] == "sample")
        .expect("the call's records");
    let asked: Vec<&Value> = records
        .iter()
        .filter(|r| r["tool"] == "sampling/createMessage")
        .collect();
    assert!(!asked.is_empty(), "{records:#?}");
    for r in asked {
        assert_eq!(r["parent_trace_id"], call["trace_id"], "{r}");
    }
    h.stop(&[&c]).await;
}
