//! What `search_tools` and `run_code` do once the pipeline let them through.
//!
//! `run_code` checks the program first (`prepare`, over `prerun`): a refused name stops it before it starts; a
//! call that asks makes the whole run ask a human once, which the pipeline's approval stage holds — through the
//! client's elicitation when it can ask and each call that asks could be approved there (the call waits), else
//! out of band at once: the program is stored as a held `code_run` snapshot, the client gets a Contract V1
//! handle, and `toolgate_resume` runs exactly that program (`run_approved`) with the approval in hand. The run
//! itself goes to the `codemode` runner with the gateway's `ToolHost`, once its identity's turn for a worker
//! came (`bounds`).

use super::bounds;
use super::host::Host;
use super::prerun::{self, PreRun};
use super::{DEFAULT_HITS, MAX_HITS, MAX_PROGRAM_BYTES, RUN_TOOL};
use crate::elicit;
use crate::guard::OWN_SERVER;
use crate::outcome::{CallOutcome, Completion, Refusal};
use crate::pipeline::context::{CallContext, HoldPolicy, RunApproval};
use crate::snapshot::Kind;
use crate::snapshot::Snapshot;
use crate::stages::Stages;
use serde_json::{json, Value};
use std::fmt::Write;
use std::sync::Arc;
use upstream::State as UpstreamState;

/// `search_tools`: the best hits for the query, as signatures to call from, and the servers that are not
/// connected, with why.
pub(crate) fn search(
    gw: &Stages,
    guard: &Arc<crate::guard::Guard>,
    arguments: &Value,
) -> CallOutcome {
    let index = gw.search_index(guard);
    let query = arguments
        .get("query")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let limit = arguments
        .get("limit")
        .and_then(Value::as_u64)
        .unwrap_or(DEFAULT_HITS)
        .clamp(1, MAX_HITS) as usize;
    let hits = index.search(query, limit);
    let mut text = String::new();
    for hit in &hits {
        let _ = writeln!(text, "{}", hit.signature);
        if !hit.description.is_empty() {
            let _ = writeln!(text, "  {}", hit.description);
        }
    }
    if hits.is_empty() {
        let _ = writeln!(text, "no tool matches {query:?}");
    }
    let unavailable: Vec<Value> = gw
        .statuses()
        .into_iter()
        .filter(|s| s.state != UpstreamState::Ready)
        .map(|s| {
            let reason = s
                .last_error
                .clone()
                .unwrap_or_else(|| s.state.as_str().to_owned());
            json!({"server": s.server, "state": s.state.as_str(), "reason": reason})
        })
        .collect();
    for u in &unavailable {
        let _ = writeln!(
            text,
            "server {} is not connected ({}): {}",
            u["server"].as_str().unwrap_or_default(),
            u["state"].as_str().unwrap_or_default(),
            u["reason"].as_str().unwrap_or_default()
        );
    }
    let tools: Vec<Value> = hits
        .iter()
        .map(|h| json!({"name": h.name, "signature": h.signature, "description": h.description}))
        .collect();
    let result = json!({
        "content": [{"type": "text", "text": text}],
        "structuredContent": {"tools": tools, "unavailable": unavailable},
    });
    CallOutcome::Complete(result, Completion::Succeeded)
}

/// What `run_code` the policy allowed is to do, after the pre-run check: stop, run, or first have its run
/// approved (the pipeline's approval stage holds it; this module never does).
pub(crate) enum Prepared<'a> {
    Stop(Refusal),
    /// Nothing asked: the run starts with no approval, so any call that asks at run time is refused.
    Run(&'a str),
    /// A literal call asks: the run is held as this snapshot, under this decision, waiting or not as `hold`.
    Ask {
        snapshot: Box<Snapshot>,
        decision: policy::Decision,
        hold: HoldPolicy,
    },
}

/// The pre-run check of `run_code` the policy allowed.
pub(crate) fn prepare<'a>(gw: &Stages, ctx: &CallContext, arguments: &'a Value) -> Prepared<'a> {
    let program = match program(arguments) {
        Ok(p) => p,
        Err(refused) => return Prepared::Stop(refused),
    };
    let plan = match prerun::check(gw, &ctx.guard, &codemode::scan(program)) {
        PreRun::Stop(refused) => return Prepared::Stop(refused.with_trace(&ctx.trace_id)),
        PreRun::Start(plan) => plan,
    };
    let Some(decision) = plan.ask.clone() else {
        return Prepared::Run(program);
    };
    let snapshot = Snapshot {
        kind: Kind::CodeRun,
        server: OWN_SERVER.to_owned(),
        tool: RUN_TOOL.to_owned(),
        exposed: RUN_TOOL.to_owned(),
        arguments: json!({"code": program}),
        definition_sha256: String::new(),
        command: None,
        note: plan.note(),
    };
    // A human the client can reach is asked while the call waits, when each call could be approved there;
    // otherwise the handle goes back at once, and the run waits for `toolgate approvals approve` and
    // `toolgate_resume`.
    let can_elicit = ctx
        .asker
        .as_ref()
        .is_some_and(|a| elicit::may_elicit(gw, a.as_ref(), plan.in_band));
    let hold = if can_elicit {
        ctx.hold
    } else {
        HoldPolicy::HandleNow
    };
    Prepared::Ask {
        snapshot: Box::new(snapshot),
        decision,
        hold,
    }
}

/// Runs a program that asked nothing.
pub(crate) async fn run_unapproved(
    gw: &Arc<Stages>,
    ctx: &CallContext,
    program: &str,
) -> CallOutcome {
    run(gw, ctx, program, None).await
}

/// A held run a human approved (through elicitation, the admin CLI or a session grant): exactly the stored
/// program, checked again (a deny added since stops it), with the calls that asked approved for the run.
pub(crate) async fn run_approved(
    gw: &Arc<Stages>,
    ctx: &CallContext,
    snapshot: &Snapshot,
) -> CallOutcome {
    let program = match program(&snapshot.arguments) {
        Ok(p) => p,
        Err(refused) => return CallOutcome::Refused(refused),
    };
    match prerun::check(gw, &ctx.guard, &codemode::scan(program)) {
        PreRun::Stop(refused) => CallOutcome::Refused(refused.with_trace(&ctx.trace_id)),
        PreRun::Start(plan) => run(gw, ctx, program, Some(Arc::new(plan.approval))).await,
    }
}

/// How a held run may be answered through the client: as its calls that ask could be (`prerun::Plan`); a run
/// that would not start now is offered nothing in band.
pub(crate) fn offer(
    gw: &Stages,
    guard: &crate::guard::Guard,
    snapshot: &Snapshot,
) -> elicit::Offer {
    match prerun::check(gw, guard, &snapshot.code_scan()) {
        PreRun::Start(plan) => elicit::Offer {
            in_band: plan.in_band,
            session_grant: plan.grantable,
        },
        PreRun::Stop(_) => elicit::Offer {
            in_band: false,
            session_grant: false,
        },
    }
}

fn program(arguments: &Value) -> Result<&str, Refusal> {
    let program = arguments
        .get("code")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            Refusal::invalid_arguments("run_code needs the program as a string \"code\"")
        })?;
    if program.len() > MAX_PROGRAM_BYTES {
        return Err(Refusal::invalid_arguments(&format!(
            "the program is {} bytes; run_code takes at most {MAX_PROGRAM_BYTES}",
            program.len()
        )));
    }
    Ok(program)
}

/// Runs `program` in a worker, its calls governed under the run's trace id, and projects the report.
async fn run(
    gw: &Arc<Stages>,
    ctx: &CallContext,
    program: &str,
    approval: Option<Arc<RunApproval>>,
) -> CallOutcome {
    let identity = bounds::identity(ctx);
    let party = bounds::party(ctx);
    let workers = &gw.code_sessions.bounds.workers;
    // A worker slot in its identity's turn, and its session's turn within the identity: one identity's runs
    // wait behind each other, not another's; one local client's behind its own, not another local client's.
    let _worker = tokio::select! {
        slot = workers.acquire_for(&identity, &party) => match slot {
            Ok(slot) => slot,
            Err(full) => {
                let refused = bounds::runs_waiting(&identity, full, workers);
                return CallOutcome::Refused(refused.with_trace(&ctx.trace_id));
            }
        },
        () = ctx.cancel.cancelled() => return CallOutcome::Cancelled,
    };
    let session = gw.code_sessions.get(gw, ctx.grants.session(), &identity);
    let runner = &gw.code_runner;
    let host = Host {
        gw: Arc::clone(gw),
        run_trace_id: ctx.trace_id.clone(),
        cancel: ctx.cancel.child_token(),
        approval,
        guard: Arc::clone(&ctx.guard),
        principal: ctx.principal.clone(),
        traceparent: upstream::current_traceparent(),
        identity,
        party,
    };
    // The run ends here whatever way it ends: calls still in flight are cancelled, later ones refused.
    let _ended = host.cancel.clone().drop_guard();
    let report = tokio::select! {
        report = runner.run(program, &host, &session) => report,
        // The client cancelled run_code or left: dropping the run ends its worker.
        () = ctx.cancel.cancelled() => return CallOutcome::Cancelled,
    };
    tracing::debug!(trace = %ctx.trace_id, calls = report.calls.len(), end = ?report.end, "code run ended");
    CallOutcome::complete(codemode::project::render(&report))
}
