//! Governed calls with no client session behind them: no grants, and — unless the caller brings one — no one
//! to ask; held at once or after the wait, and resumed. A code-mode program's calls are such calls (origin
//! `CodeRun`), except that they are never held: an ask runs under the run's approval or is refused. The gateway
//! has no upstream; the calls go to toolgate's own intrinsics, with a policy that asks for one and denies another.

use super::*;
use crate::contract;
use crate::gateway::Gateway;
use crate::gateway::Options;
use crate::guard::Guard;
use crate::guard::OWN_SERVER;
use crate::outcome::ApprovalState;
use crate::snapshot::Kind;
use crate::state::State;
use crate::wire::{self, Reply, Shape};
use serde_json::json;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use store::{ApprovalStatus, Timestamp};
use tokio_util::sync::CancellationToken;

const ALLOWED: &str = crate::intrinsics::PING_TOOL;
const ASKED: &str = crate::intrinsics::AUDIT_RECENT_TOOL;
const DENIED: &str = contract::CAPABILITIES_TOOL;

struct Fixture {
    _dir: tempfile::TempDir,
    gw: Arc<Gateway>,
    state: Arc<State>,
}

impl Fixture {
    /// toolgate's own tools under a policy that asks for `ASKED` and denies `DENIED`; `ALLOWED`, a read-only
    /// intrinsic no rule names, is allowed.
    fn new(approvals: impl FnOnce(&mut config::Approvals)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let ws = std::fs::canonicalize(ws).unwrap();
        let text = json!({"policy": {"default": "deny", "rules": [
            {"id": "ask-audit", "effect": "ask", "tools": [format!("{OWN_SERVER}__{ASKED}")]},
            {"id": "deny-capabilities", "effect": "deny", "tools": [format!("{OWN_SERVER}__{DENIED}")]}]}})
        .to_string();
        let config = config::parse_str(
            &text,
            config::Format::Json,
            std::path::Path::new("toolgate.json"),
            &|_| None,
            &config::Overrides::default(),
        )
        .unwrap();
        let guard = Guard::load(&config, &ws).unwrap();
        let mut opts = Options::from_config(&config, false);
        approvals(&mut opts.approvals);
        let state = Arc::new(State::open_in(&dir.path().join("state"), &ws).unwrap());
        let builtin = builtin::Builtin::new(builtin::BuiltinConfig::new(&ws)).unwrap();
        let gw = Gateway::start_with(
            &config,
            opts,
            Arc::new(guard),
            Some(Arc::clone(&state)),
            Some(Arc::new(builtin)),
        );
        Self {
            _dir: dir,
            gw,
            state,
        }
    }

    /// The audit records of one trace, by kind.
    fn records(&self, trace_id: &str) -> Vec<(String, Value)> {
        self.state.flush();
        self.state
            .audit_tail(1_000)
            .into_iter()
            .filter(|r| r["trace_id"] == trace_id)
            .map(|r| (r["kind"].as_str().unwrap_or_default().to_owned(), r))
            .collect()
    }

    fn count(&self, trace_id: &str, kind: &str) -> usize {
        self.records(trace_id)
            .iter()
            .filter(|(k, _)| k == kind)
            .count()
    }
}

/// A call of a code-mode run: its own trace id, the run's named as its origin, no grants, no asker.
fn code_run(gw: &Gateway, hold: HoldPolicy) -> CallContext {
    let origin = Origin::CodeRun {
        run_trace_id: "run-1".into(),
    };
    CallContext::new(origin, hold, CancellationToken::new(), gw.stages.guard())
}

/// A request with no session behind it (as a stateless front end's would be): no grants, no asker.
fn sessionless(gw: &Gateway, hold: HoldPolicy) -> CallContext {
    let origin = Origin::Client {
        session_id: String::new(),
    };
    CallContext::new(origin, hold, CancellationToken::new(), gw.stages.guard())
}

fn call(tool: &str) -> Value {
    json!({"name": tool, "arguments": {}})
}

fn held(outcome: &CallOutcome) -> &crate::outcome::HeldCall {
    match outcome {
        CallOutcome::Held(h) => h,
        other => panic!("not held: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_run_call_the_policy_allows_runs_with_no_session() {
    let f = Fixture::new(|_| {});
    let ctx = code_run(&f.gw, HoldPolicy::HandleNow);
    let outcome = govern_tool(&f.gw.stages, &ctx, call(ALLOWED)).await;
    let CallOutcome::Complete(result, _) = &outcome else {
        panic!("did not run: {outcome:?}");
    };
    assert_eq!(result["content"][0]["text"], "pong");
    assert_eq!(f.count(&ctx.trace_id, "decision"), 1);
    assert_eq!(f.count(&ctx.trace_id, "execution"), 1);
    f.gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessionless_ask_gets_a_contract_handle_at_once_and_one_decision_record() {
    // A wait a test would notice: the handle must come without it.
    let f = Fixture::new(|a| a.wait.value = Duration::from_secs(30));
    let ctx = sessionless(&f.gw, HoldPolicy::HandleNow);
    let started = Instant::now();
    let outcome = govern_tool(&f.gw.stages, &ctx, call(ASKED)).await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "waited {:?}",
        started.elapsed()
    );
    let h = held(&outcome);
    assert_eq!(h.state, ApprovalState::Required);
    assert_eq!(
        h.trace_id, ctx.trace_id,
        "the handle carries the call's trace"
    );
    let id = h.handle.request_id.clone();
    let request = f
        .state
        .store(|s| s.get_request(&id, Timestamp::now()))
        .unwrap();
    assert_eq!(request.status, ApprovalStatus::Pending);
    assert_eq!(request.session_id, None, "no session owns the request");
    // What a caller reads: a Contract V1 result naming the request and how to resume it.
    let Reply::Result(wire) = wire::reply(outcome, Shape::ToolResult, None) else {
        panic!("a tool result");
    };
    let contract = &wire["structuredContent"];
    assert_eq!(contract["outcome"], "APPROVAL_REQUIRED", "{wire}");
    assert_eq!(
        contract["approval"]["request_id"].as_str(),
        Some(id.as_str())
    );
    assert_eq!(contract["approval"]["resume_tool"], contract::RESUME_TOOL);
    assert_eq!(f.count(&ctx.trace_id, "decision"), 1);
    f.gw.shutdown().await;
}

/// A program's call that asks, in a run not approved for it, is refused at once: nothing is held for a human
/// and no request is created; the records say ask, then refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_run_ask_without_the_run_approval_is_refused_not_held() {
    let f = Fixture::new(|a| a.wait.value = Duration::from_secs(30));
    let ctx = code_run(&f.gw, HoldPolicy::HandleNow);
    let outcome = govern_tool(&f.gw.stages, &ctx, call(ASKED)).await;
    let CallOutcome::Refused(refusal) = &outcome else {
        panic!("not refused: {outcome:?}");
    };
    assert_eq!(refusal.code, RefusalCode::Refused);
    let pending = f
        .state
        .store(|s| s.list_requests(Some(ApprovalStatus::Pending), Timestamp::now()))
        .unwrap();
    assert!(pending.is_empty(), "{pending:?}");
    assert_eq!(f.count(&ctx.trace_id, "decision"), 1);
    assert_eq!(f.count(&ctx.trace_id, "execution"), 1);
    f.gw.shutdown().await;
}

/// Resuming a held call belongs to the client and its human, never to a program.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_run_cannot_resume_a_held_call() {
    let f = Fixture::new(|_| {});
    let outcome = govern_tool(
        &f.gw.stages,
        &sessionless(&f.gw, HoldPolicy::HandleNow),
        call(ASKED),
    )
    .await;
    let id = held(&outcome).handle.request_id.clone();
    f.state
        .store(|s| s.approve(&id, "operator", Timestamp::now()))
        .unwrap();
    let params = json!({"name": contract::RESUME_TOOL, "arguments": {"request_id": id}});
    let ran = govern_tool(
        &f.gw.stages,
        &code_run(&f.gw, HoldPolicy::HandleNow),
        params,
    )
    .await;
    assert!(matches!(ran, CallOutcome::Refused(_)), "{ran:?}");
    let row = f
        .state
        .store(|s| s.get_request(&id, Timestamp::now()))
        .unwrap();
    assert_eq!(
        row.status,
        ApprovalStatus::Approved,
        "still there for the client"
    );
    f.gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_run_call_the_policy_denies_is_refused_and_recorded_once() {
    let f = Fixture::new(|_| {});
    let ctx = code_run(&f.gw, HoldPolicy::HandleNow);
    let outcome = govern_tool(&f.gw.stages, &ctx, call(DENIED)).await;
    let CallOutcome::Refused(refusal) = &outcome else {
        panic!("not refused: {outcome:?}");
    };
    assert_eq!(
        refusal.code,
        RefusalCode::Policy(policy::ReasonCode::DenyRule)
    );
    let decisions: Vec<Value> = f
        .records(&ctx.trace_id)
        .into_iter()
        .filter(|(k, _)| k == "decision")
        .map(|(_, r)| r)
        .collect();
    assert_eq!(decisions.len(), 1, "{decisions:?}");
    assert_eq!(decisions[0]["decision"], "deny");
    assert_eq!(decisions[0]["rule_id"], "deny-capabilities");
    f.gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handle_now_answers_at_once_where_wait_blocks_for_the_wait() {
    const WAIT: Duration = Duration::from_millis(600);
    let f = Fixture::new(|a| a.wait.value = WAIT);
    let waited = Instant::now();
    let waiting = govern_tool(
        &f.gw.stages,
        &sessionless(&f.gw, HoldPolicy::Wait),
        call(ASKED),
    )
    .await;
    let waited = waited.elapsed();
    let at_once = Instant::now();
    let now = govern_tool(
        &f.gw.stages,
        &sessionless(&f.gw, HoldPolicy::HandleNow),
        call(ASKED),
    )
    .await;
    let at_once = at_once.elapsed();
    assert!(waited >= WAIT, "Wait answered after {waited:?}");
    assert!(at_once < WAIT, "HandleNow answered after {at_once:?}");
    // The same answer either way, one request each.
    assert_eq!(held(&waiting).state, ApprovalState::Required);
    assert_eq!(held(&now).state, ApprovalState::Required);
    assert_ne!(
        held(&waiting).handle.request_id,
        held(&now).handle.request_id
    );
    f.gw.shutdown().await;
}

/// The call was handed its handle and the run ended; a human approves, and a later call of the run resumes it:
/// it runs once, recorded under the trace of the call that was held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handle_now_call_resumes_after_approval_under_its_own_trace() {
    let f = Fixture::new(|_| {});
    let first = sessionless(&f.gw, HoldPolicy::HandleNow);
    let outcome = govern_tool(&f.gw.stages, &first, call(ASKED)).await;
    let id = held(&outcome).handle.request_id.clone();
    f.state
        .store(|s| s.approve(&id, "operator", Timestamp::now()))
        .unwrap();
    let resume = sessionless(&f.gw, HoldPolicy::HandleNow);
    let params = json!({"name": contract::RESUME_TOOL, "arguments": {"request_id": id}});
    let ran = govern_tool(&f.gw.stages, &resume, params).await;
    assert!(matches!(ran, CallOutcome::Complete(..)), "{ran:?}");
    let outcomes: Vec<(String, Value)> = f
        .records(&first.trace_id)
        .into_iter()
        .filter(|(k, _)| k != "approval")
        .map(|(k, r)| (k, r["outcome"].clone()))
        .collect();
    assert_eq!(
        outcomes,
        vec![
            ("decision".to_owned(), Value::Null),
            ("execution".to_owned(), json!("APPROVAL_REQUIRED")),
            ("execution".to_owned(), json!("SUCCEEDED")),
        ],
        "one decision, then one finished record per run, all under the held call's trace"
    );
    assert!(
        f.records(&resume.trace_id).is_empty(),
        "the resume is recorded as the call it ran"
    );
    let again = govern_tool(&f.gw.stages, &sessionless(&f.gw, HoldPolicy::HandleNow), {
        json!({"name": contract::RESUME_TOOL, "arguments": {"request_id": id}})
    })
    .await;
    assert_eq!(held(&again).state, ApprovalState::Consumed, "it runs once");
    f.gw.shutdown().await;
}

/// A call with no grant scope must not be let through by a grant stored under an empty session id (the value
/// a sessionless request's row carries): no session means no grant is looked up at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_session_grant_does_not_cover_a_call_without_a_session() {
    let f = Fixture::new(|_| {});
    let definition =
        f.gw.aggregate()
            .tool_definition(ASKED)
            .cloned()
            .map(|d| store::definition_hash(&d))
            .unwrap();
    let snapshot = Snapshot {
        kind: Kind::ToolCall,
        server: OWN_SERVER.into(),
        tool: ASKED.into(),
        exposed: ASKED.into(),
        arguments: json!({}),
        definition_sha256: definition.clone(),
        command: None,
        note: None,
    };
    f.state
        .store(|s| {
            s.grant_session(
                "",
                &snapshot.grant_target(),
                &definition,
                &snapshot.grant_scope(),
                Timestamp::now(),
            )
        })
        .unwrap();
    let outcome = govern_tool(
        &f.gw.stages,
        &sessionless(&f.gw, HoldPolicy::HandleNow),
        call(ASKED),
    )
    .await;
    assert_eq!(held(&outcome).state, ApprovalState::Required);
    f.gw.shutdown().await;
}

/// A caller's own way to ask a human: answers "allow once" and notes what it was asked.
struct Approves {
    asked: Mutex<Vec<Value>>,
}

impl AskHuman for Approves {
    fn can_ask(&self) -> bool {
        true
    }
    fn ask(&self, params: Value) -> AskFuture<'_> {
        self.asked.lock().unwrap().push(params);
        Box::pin(async { Ok(json!({"action": "accept", "content": {"decision": "allow_once"}})) })
    }
}

/// A caller that brings its own asker: the human's "allow once" releases the waiting call, and with no session
/// behind it the question offers no session grant.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessionless_call_with_its_own_asker_runs_once_its_human_allows() {
    let f = Fixture::new(|a| {
        a.wait.value = Duration::from_secs(30);
        a.elicitation.value = true;
        a.elicitation_for_writes.value = true;
    });
    let asker = Arc::new(Approves {
        asked: Mutex::new(Vec::new()),
    });
    let mut ctx = sessionless(&f.gw, HoldPolicy::Wait);
    ctx.asker = Some(asker.clone());
    let outcome = tokio::time::timeout(
        Duration::from_secs(10),
        govern_tool(&f.gw.stages, &ctx, call(ASKED)),
    )
    .await
    .expect("released by the answer, long before the wait ends");
    assert!(matches!(outcome, CallOutcome::Complete(..)), "{outcome:?}");
    let asked = asker.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    let choices = &asked[0]["requestedSchema"]["properties"]["decision"]["enum"];
    assert_eq!(choices, &json!(["allow_once", "reject"]));
    f.gw.shutdown().await;
}

/// An intrinsic a rule asks for used to be sent to the workspace tools once approved, which do not know it: the
/// approved call failed as an unknown tool. It runs as it does when the policy allows it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approved_intrinsic_runs_instead_of_failing_as_an_unknown_workspace_tool() {
    let f = Fixture::new(|_| {});
    let outcome = govern_tool(
        &f.gw.stages,
        &sessionless(&f.gw, HoldPolicy::HandleNow),
        call(ASKED),
    )
    .await;
    let id = held(&outcome).handle.request_id.clone();
    f.state
        .store(|s| s.approve(&id, "operator", Timestamp::now()))
        .unwrap();
    let params = json!({"name": contract::RESUME_TOOL, "arguments": {"request_id": id}});
    let ran = govern_tool(
        &f.gw.stages,
        &sessionless(&f.gw, HoldPolicy::HandleNow),
        params,
    )
    .await;
    let CallOutcome::Complete(result, _) = &ran else {
        panic!("the approved call did not run: {ran:?}");
    };
    assert!(result["structuredContent"]["events"].is_array(), "{result}");
    f.gw.shutdown().await;
}
