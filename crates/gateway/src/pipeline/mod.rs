//! The governed-call pipeline: one path for every request toolgate decides. A tool call — proxied, built-in,
//! intrinsic, a program's, or a resume — passes route → audit gate → pins → guard (schema, policy) → pre-hooks →
//! decision record → approval → audit gate again → execute, in the one order `tool::stages` writes, and leaves
//! through the finishing guard (`finish`), which writes exactly one decision record, at most one finished record,
//! and runs the post-hooks. Prompt gets, resource reads, subscribe and unsubscribe, and completions take the same
//! path without hooks (`reads`); so do the task methods (`task_methods`) and the requests an upstream sends toward
//! a client (`asks`), decided by `decide`. Approval decides and returns (`approval_stage`); an approved snapshot
//! re-enters at `after_approval`; only the execute stage (`execute`) runs anything. Each stage returns typed
//! values; the wire form is made once, in `wire`.
//!
//! The stages are functions of the `Stages` (the ports: catalog, state and recorder, hooks, upstreams, built-in
//! tools, code runner, the tables that outlive a request), the request and its `CallContext`: neither the
//! `Gateway` nor a client session stands behind them. What only the requester has (progress, a human to ask,
//! its grants, whether a held call waits, the client itself as `client::Client`) comes in the context, so a
//! client's request and a code-mode program's call take the same path.

pub(crate) mod asks;
pub(crate) mod context;
mod decide;
mod execute;
pub(crate) mod finish;
mod reads;
mod task_methods;
#[cfg(test)]
mod tests;
mod tool;

pub(crate) use asks::govern_upstream_request;
pub(crate) use context::{
    AskFuture, AskHuman, CallContext, GrantScope, HoldPolicy, HumanWait, Origin, Progress,
    ProgressSink, Requester,
};
pub(crate) use execute::{execute, Exec};
pub(crate) use finish::Finish;
pub(crate) use reads::govern_read;
pub(crate) use task_methods::govern_task;

use crate::approval::{self, Held, Snapshot};
use crate::errors::to_client;
use crate::guard::Verdict;
use crate::outcome::{CallError, CallOutcome, Refusal, RefusalCode};
use crate::record::{CallRecord, RecordDecision};
use crate::stages::Stages;
use serde_json::Value;
use std::sync::Arc;

/// Fail closed on evidence: while the audit log cannot be written nothing runs, because a call that runs must
/// leave a record. Only `toolgate_status` still answers, so an agent can see why.
pub(crate) fn audit_refusal(gateway: &crate::stages::Stages, what: &str) -> Option<Refusal> {
    let problem = gateway.state.as_ref()?.audit_problem()?;
    let message = format!(
        "toolgate refused {what}: its audit log cannot be written ({problem}); an administrator must repair it \
         (toolgate audit verify, toolgate audit recover)"
    );
    Some(Refusal::new(RefusalCode::AuditUnavailable, message))
}

/// The decision a verdict records.
fn record_decision(verdict: &Verdict) -> RecordDecision {
    match verdict {
        Verdict::Allow(d) | Verdict::Ask(d) => RecordDecision::of(d),
        Verdict::Refuse(r) => match &r.decision {
            Some(d) => RecordDecision::of(d),
            None => RecordDecision::refused(r.code),
        },
    }
}

pub(crate) fn request_id(arguments: &Value) -> String {
    arguments
        .get("request_id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// Runs one tool call (`tools/call` params) through every stage and the finishing guard.
pub(crate) async fn govern_tool(gw: &Arc<Stages>, ctx: &CallContext, params: Value) -> CallOutcome {
    // The retry of a call that waits for the client's answers in the bridge: not decided again (`bridge`).
    if let Some(state) = crate::bridge::retry_state(&params) {
        let (shown, arguments) = crate::bridge::target_of("tools/call", &params);
        let routed = gw
            .aggregate()
            .route_tool(&shown)
            .map(|r| (r.server.clone(), r.name.clone()));
        let retry = crate::bridge::Retry {
            method: "tools/call",
            shown,
            arguments,
            routed,
        };
        // Boxed, as are the other paths few calls take: a call's future is as large as its largest path.
        return Box::pin(crate::bridge::retry(gw, ctx, retry, params, state)).await;
    }
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let arguments = params
        .get("arguments")
        .cloned()
        .unwrap_or_else(|| Value::Object(Default::default()));
    let mut finish = Finish::new(&gw.recorder, ctx, &name, &arguments);
    if let Origin::CodeRun { run_trace_id } = &ctx.origin {
        finish.parent(run_trace_id);
    }
    // ToolHub's clients read a trace id and request id that toolgate's answers leave out (`toolhub`).
    let toolhub = (gw.opts.surface == crate::own::Surface::ToolHub)
        .then(|| (name.clone(), request_id(&arguments)));
    let outcome = tool::stages(gw, ctx, &mut finish, name, params, arguments).await;
    let outcome = match &toolhub {
        None => outcome,
        Some((name, id)) => crate::toolhub::complete(outcome, name, finish.trace_id(), id),
    };
    tracing::debug!(trace = %ctx.trace_id, origin = ?ctx.origin, outcome = outcome.name(), "tool call");
    match &outcome {
        // The call goes on upstream: its records are written once, when it ends (`bridge`).
        CallOutcome::Bridged { state, .. } => Box::pin(gw.bridge.adopt(state, finish)).await,
        _ => finish.close(&outcome).await,
    }
    outcome
}

/// The approval stage and what follows it: an `ask` is held until a human decides (or a grant covers it);
/// approved, it passes the audit gate again and runs.
pub(crate) async fn approval_stage(
    gw: &Arc<Stages>,
    ctx: &CallContext,
    snapshot: Snapshot,
    decision: policy::Decision,
) -> CallOutcome {
    let waiting = (ctx.human_wait.start(), gw.opts.telemetry.held());
    let held = approval::hold(gw, ctx, snapshot, decision).await;
    drop(waiting);
    match held {
        Held::Approved(snapshot) => after_approval(gw, ctx, &snapshot).await,
        Held::Answer(outcome) => outcome,
        Held::Cancelled => CallOutcome::Cancelled,
    }
}

/// An approved snapshot (approved while held, covered by a grant, or claimed by `toolgate_resume`) re-enters
/// here: the audit gate again, since the log may have become unwritable during the wait, then the execute stage.
pub(crate) async fn after_approval(
    gw: &Arc<Stages>,
    ctx: &CallContext,
    snapshot: &Snapshot,
) -> CallOutcome {
    if let Some(refused) = audit_refusal(gw, &snapshot.exposed) {
        return CallOutcome::Refused(refused);
    }
    execute::approved(gw, ctx, snapshot).await
}

/// Runs stage `stage`'s work: an upstream's spans are children of the stage that sent its request (`telemetry`).
/// The work comes boxed, so a call's future holds a pointer to it and not, at each stage, a copy of its state.
pub(super) async fn traced(stage: telemetry::Stage, run: execute::ExecFuture<'_>) -> CallOutcome {
    let outcome = upstream::with_traceparent(stage.traceparent(), run).await;
    drop(stage);
    outcome
}

/// The names of the credentials a call of `ctx`'s caller to `server` goes with, for its records (`credentials`;
/// one the caller is not granted is refused when the call is forwarded).
pub(super) fn used_credentials(gw: &Stages, ctx: &CallContext, server: &str) -> Vec<String> {
    gw.credentials()
        .for_caller(server, ctx)
        .map(|used| used.names)
        .unwrap_or_default()
}

/// Quarantined and flagged definitions: `Ok(true)` when a quarantined tool's calls must ask instead.
pub(super) fn pin_stage(
    gw: &Stages,
    server: &str,
    tool: &str,
    name: &str,
) -> Result<bool, Refusal> {
    let pins = gw.pins();
    let Some(pin) = pins.get(&format!("{server}__{tool}")) else {
        return Ok(false);
    };
    let mut quarantined = false;
    if pin.quarantined && !gw.recheck_pin(server, tool) {
        if !gw.opts.quarantine_asks {
            return Err(Refusal::quarantined(name, server, pin.new));
        }
        quarantined = true;
    }
    // Flags block unless a human accepted this definition despite them, possibly since the view was built.
    if pin.blocked_by_flags() && gw.flags_still_block(server, tool) {
        return Err(Refusal::flagged(name, &pin.flags));
    }
    Ok(quarantined)
}

/// `toolgate_resume` the policy allowed: the approved call is claimed and re-enters after the approval
/// stage, recorded under the held call's trace id and tool name, with its post-hooks. A request that cannot
/// be claimed is answered, and recorded as the `toolgate_resume` call it was. A resume bound to one tool
/// (`only`) claims only that tool's requests.
pub(super) async fn resume_stage(
    gw: &Arc<Stages>,
    ctx: &CallContext,
    finish: &mut Finish,
    arguments: &Value,
    only: Option<&str>,
) -> CallOutcome {
    let request_id = request_id(arguments);
    let claimed = match approval::claim(gw, ctx.principal.as_deref(), &request_id, only) {
        Ok(c) => c,
        Err(answer) => {
            finish.commit();
            return answer;
        }
    };
    let ctx = ctx.resumed(&claimed.trace_id);
    let s = &claimed.snapshot;
    let decision = RecordDecision::from_snapshot(&claimed.stored)
        .unwrap_or_else(|| RecordDecision::refused(RefusalCode::Failed));
    let hooked = gw.hook_call(
        &ctx,
        &s.exposed,
        &s.server,
        &s.tool,
        &decision,
        &s.arguments,
    );
    let (_, resources) = ctx.guard.check(&s.server, &s.tool, None, &s.arguments);
    finish.resumed(
        &ctx.trace_id,
        CallRecord {
            trace_id: ctx.trace_id.clone(),
            profile: ctx.guard.profile().unwrap_or("default").to_owned(),
            principal: ctx.principal.clone(),
            server: s.server.clone(),
            tool: s.tool.clone(),
            arguments: audit::Digest::of_json(&s.arguments),
            decision,
            resources,
            request_id: Some(request_id),
            parent_trace_id: None,
            credentials: used_credentials(gw, &ctx, &s.server),
        },
    );
    finish.post_hooks(&gw.recorder, hooked);
    match after_approval(gw, &ctx, s).await {
        // The resume itself succeeded; what failed is the call it ran, which the agent reads as a result.
        CallOutcome::Failed(CallError::Upstream(e)) => match to_client(e) {
            Some(error) => CallOutcome::Refused(Refusal::new(
                RefusalCode::Failed,
                format!("the approved call failed upstream: {error}"),
            )),
            None => CallOutcome::Cancelled,
        },
        other => other,
    }
}

#[cfg(test)]
mod governed_tests;
#[cfg(test)]
mod order_tests;
#[cfg(test)]
mod table_tests;
