//! The gateway's `ToolHost` without a worker: what a program's call may run (an ask only under the run's
//! approval of its literal name; never a deny, a control tool, an unknown name or a call after its run) and its
//! records under the run's trace id.

use super::host::Host;
use super::tests::harness;
use super::{RUN_TOOL, SEARCH_TOOL};
use crate::pipeline::context::RunApproval;
use crate::testkit::Harness;
use codemode::{CallFailure, NestedCall, ToolHost};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const RUN: &str = "run-trace-1";

/// The host of run `RUN`, approved for `approved` (none: no approval at all).
fn host(h: &Harness, approved: Option<&[&str]>) -> Host {
    Host {
        gw: Arc::clone(&h.gateway.stages),
        run_trace_id: RUN.to_owned(),
        cancel: CancellationToken::new(),
        approval: approved.map(|names| {
            let mut approval = RunApproval::default();
            for name in names {
                approval.approve(name, None);
            }
            Arc::new(approval)
        }),
        guard: h.gateway.stages.guard(),
        principal: None,
        traceparent: None,
        identity: super::bounds::LOCAL.to_owned(),
        party: RUN.to_owned(),
    }
}

async fn call(host: &Host, name: &str, arguments: Value) -> Result<Value, CallFailure> {
    host.call(NestedCall {
        seq: 1,
        name: name.to_owned(),
        arguments,
    })
    .await
}

/// The (kind, tool, decision reason or outcome) of every record whose parent is run `RUN`.
pub(super) fn under_run(h: &Harness) -> Vec<(String, String, String)> {
    h.audit()
        .iter()
        .filter(|r| r["parent_trace_id"] == RUN)
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap_or_default().to_owned();
            let what = match r["kind"].as_str() {
                Some("decision") => s("reason_code"),
                _ => s("outcome"),
            };
            (s("kind"), s("tool"), what)
        })
        .collect()
}

fn record(kind: &str, tool: &str, what: &str) -> (String, String, String) {
    (kind.to_owned(), tool.to_owned(), what.to_owned())
}

fn refused_code(outcome: &Result<Value, CallFailure>) -> String {
    match outcome {
        Err(CallFailure::Refused { code, .. }) => code.clone(),
        other => panic!("a refusal: {other:?}"),
    }
}

#[tokio::test]
async fn run_time_name_under_an_ask_rule_is_refused_when_the_run_was_not_approved_for_it() {
    let h = harness().await;
    // Approved for another tool only, as a run whose literal names did not include this one.
    let host = host(&h, Some(&["fx__add"]));
    let outcome = call(&host, "fx__echo", json!({"text": "hi"})).await;
    assert_eq!(refused_code(&outcome), "REFUSED");
    let Err(CallFailure::Refused { message, .. }) = outcome else {
        unreachable!()
    };
    assert!(message.contains("allow rule (for fx__echo)"), "{message}");
    assert_eq!(
        under_run(&h),
        [
            record("decision", "echo", "ASK_RULE"),
            record("execution", "echo", "REFUSED")
        ]
    );
    // Nothing was held for a human either.
    let pending = h
        .state
        .store(|s| {
            s.list_requests(
                Some(store::ApprovalStatus::Pending),
                store::Timestamp::now(),
            )
        })
        .unwrap();
    assert!(pending.is_empty(), "{pending:?}");
    h.stop(&[]).await;
}

#[tokio::test]
async fn approved_literal_name_runs_under_the_run_approval_by_either_name() {
    let h = harness().await;
    let host = host(&h, Some(&["fx__echo"]));
    let direct = call(&host, "fx__echo", json!({"text": "one"}))
        .await
        .unwrap();
    assert_eq!(direct["structuredContent"], json!({"text": "one"}));
    let toolscript = call(&host, "mcp__fx__echo", json!({"text": "two"}))
        .await
        .unwrap();
    assert_eq!(toolscript["structuredContent"], json!({"text": "two"}));
    let succeeded = record("execution", "echo", "SUCCEEDED");
    assert_eq!(under_run(&h).iter().filter(|r| **r == succeeded).count(), 2);
    h.stop(&[]).await;
}

#[tokio::test]
async fn denied_tool_is_refused_from_a_program_and_recorded_under_the_run() {
    let h = harness().await;
    let host = host(&h, Some(&["fx__env_keys"]));
    let outcome = call(&host, "fx__env_keys", json!({})).await;
    assert_eq!(refused_code(&outcome), "DENY_RULE");
    assert_eq!(
        under_run(&h),
        [
            record("decision", "env_keys", "DENY_RULE"),
            record("execution", "env_keys", "REFUSED")
        ]
    );
    h.stop(&[]).await;
}

#[tokio::test]
async fn program_cannot_resume_held_calls_or_start_a_run_inside_a_run() {
    let h = harness().await;
    let host = host(&h, None);
    for tool in [crate::contract::RESUME_TOOL, RUN_TOOL, SEARCH_TOOL] {
        let outcome = call(
            &host,
            tool,
            json!({"request_id": "x", "code": "1", "query": "q"}),
        )
        .await;
        assert_eq!(refused_code(&outcome), "REFUSED", "{tool}");
    }
    let refused = under_run(&h)
        .iter()
        .filter(|r| r.0 == "execution" && r.2 == "REFUSED")
        .count();
    assert_eq!(refused, 3);
    h.stop(&[]).await;
}

#[tokio::test]
async fn call_after_the_run_ended_is_refused_and_recorded_under_the_run() {
    let h = harness().await;
    let host = host(&h, Some(&["fx__add"]));
    host.cancel.cancel();
    let outcome = call(&host, "fx__add", json!({"a": 1, "b": 2})).await;
    assert_eq!(refused_code(&outcome), "REFUSED");
    assert_eq!(
        under_run(&h),
        [
            record("decision", "add", "REFUSED"),
            record("execution", "add", "REFUSED")
        ]
    );
    h.stop(&[]).await;
}

#[tokio::test]
async fn unknown_name_from_a_program_is_refused_and_recorded_under_the_run() {
    let h = harness().await;
    let host = host(&h, None);
    let outcome = call(&host, "mcp__fx__nope", json!({})).await;
    assert_eq!(refused_code(&outcome), "UNKNOWN_TARGET");
    assert_eq!(under_run(&h).len(), 2);
    h.stop(&[]).await;
}

/// A pre-hook that asks about every call of `add`.
struct AsksAboutAdd;

impl crate::hooks::CallHook for AsksAboutAdd {
    fn before(&self, call: &crate::hooks::HookCall) -> crate::hooks::HookDecision {
        match call.tool.as_str() {
            "add" => crate::hooks::HookDecision::Ask {
                reason: "these arguments need a look".into(),
            },
            _ => crate::hooks::HookDecision::Allow,
        }
    }
}

#[tokio::test]
async fn hook_ask_about_one_call_is_not_answered_by_the_run_approval() {
    let h = harness().await;
    h.gateway.set_hooks(vec![Arc::new(AsksAboutAdd)]);
    let host = host(&h, Some(&["fx__add", "fx__echo"]));
    let outcome = call(&host, "fx__add", json!({"a": 1, "b": 2})).await;
    assert_eq!(refused_code(&outcome), "REFUSED");
    assert_eq!(
        under_run(&h),
        [
            record("decision", "add", "HOOK_ASK"),
            record("execution", "add", "REFUSED")
        ]
    );
    h.stop(&[]).await;
}

/// How many calls of fx__cancelled's count the fixture has seen cancelled, asked through the host.
async fn cancelled_upstream(host: &Host) -> u64 {
    let seen = call(host, "fx__cancelled", json!({})).await.unwrap();
    seen["structuredContent"]["cancelled"].as_u64().unwrap()
}

#[tokio::test]
async fn call_dropped_by_a_returning_program_is_cancelled_upstream() {
    let h = harness().await;
    let host = host(&h, None);
    // The program returned while this call ran: the run's server drops the call's future, as here.
    let slow = call(&host, "fx__slow", json!({"steps": 400, "delay_ms": 25}));
    tokio::select! {
        done = slow => panic!("the slow call finished: {done:?}"),
        () = tokio::time::sleep(Duration::from_millis(300)) => {}
    }
    let deadline = tokio::time::Instant::now() + crate::testkit::WAIT;
    while cancelled_upstream(&host).await == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the upstream was never told"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let cancelled = record("execution", "slow", "CANCELLED");
    let deadline = tokio::time::Instant::now() + crate::testkit::WAIT;
    while !under_run(&h).contains(&cancelled) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{:?}",
            under_run(&h)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    h.stop(&[]).await;
}

#[tokio::test]
async fn run_code_fan_out_is_bounded() {
    let h = harness().await;
    let host = Arc::new(host(&h, None));
    let gate = h.gateway.stages.code_sessions.bounds.calls.clone();
    let share = gate.share();
    let fan_out = 6 * share;
    let peak = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let done = CancellationToken::new();
    let sampler = tokio::spawn({
        let (gate, peak, done) = (gate.clone(), Arc::clone(&peak), done.clone());
        async move {
            while !done.is_cancelled() {
                peak.fetch_max(
                    gate.running(super::bounds::LOCAL),
                    std::sync::atomic::Ordering::Relaxed,
                );
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
    });
    // One program's Promise.all of many slow calls.
    let started = std::time::Instant::now();
    let mut calls = tokio::task::JoinSet::new();
    for _ in 0..fan_out {
        let host = Arc::clone(&host);
        calls.spawn(
            async move { call(&host, "fx__slow", json!({"steps": 1, "delay_ms": 100})).await },
        );
    }
    let results = calls.join_all().await;
    let elapsed = started.elapsed();
    done.cancel();
    sampler.await.unwrap();
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    let peak = peak.load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        peak <= share,
        "{peak} calls of one identity in flight, over its share of {share}"
    );
    assert!(peak > 0);
    // At most `share` at a time: the calls took at least six rounds of the tool's 100 ms.
    assert!(
        elapsed >= Duration::from_millis(600),
        "{fan_out} calls took {elapsed:?}, so more than {share} ran at once"
    );
    h.stop(&[]).await;
}
