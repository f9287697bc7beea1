//! The gateway's `ToolHost`: each call a program makes becomes a governed call of the pipeline, in a context of
//! its own (origin the run, so its records name the run's trace id as their parent; no session grants, since
//! a program's call must not ride on what a human granted the client; no one to ask; a hold answered at once;
//! the run's cancellation, and the call's own when the program drops it; and the run's approval, which covers
//! only the calls a human approved). Each call waits for a slot in flight in its identity's turn.
//!
//! It decides nothing: the pipeline refuses, holds or runs each call, and the one map from its outcome to what
//! the program sees is `to_program`.

use super::resolve;
use crate::outcome::{CallError, CallOutcome};
use crate::pipeline::context::{CallContext, HoldPolicy, Origin, RunApproval};
use crate::pipeline::govern_tool;
use crate::stages::Stages;
use codemode::{CallFailure, HostFuture, NestedCall, ToolHost};
use serde_json::json;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The calls of one run.
pub(crate) struct Host {
    pub gw: Arc<Stages>,
    pub run_trace_id: String,
    /// Cancelled when the run ends (answer, deadline, error), so a call still in flight stops and one made
    /// after the end is refused.
    pub cancel: CancellationToken,
    pub approval: Option<Arc<RunApproval>>,
    /// The run's profile and identity: its calls are decided and recorded as the client's that started it.
    pub guard: Arc<crate::guard::Guard>,
    pub principal: Option<String>,
    /// The run's execute stage as a `traceparent` (telemetry on): each call's span is its child, in the run's
    /// trace.
    pub traceparent: Option<String>,
    /// Whose shares of calls in flight its calls take (`bounds::identity`), and in whose turn within that
    /// identity they wait (`bounds::party`).
    pub identity: String,
    pub party: String,
}

impl ToolHost for Host {
    fn call(&self, call: NestedCall) -> HostFuture<'_> {
        Box::pin(async move {
            let calls = &self.gw.code_sessions.bounds.calls;
            // A slot in flight in its identity's turn, so a program's fan-out waits behind itself.
            let slot = match calls.acquire_for(&self.identity, &self.party).await {
                Ok(slot) => slot,
                Err(full) => {
                    let refused = super::bounds::calls_waiting(&self.identity, full, calls);
                    return to_program(CallOutcome::Refused(refused));
                }
            };
            // A name that resolves to nothing goes to the pipeline as written, which refuses and records it.
            let name = resolve(&self.gw.aggregate(), &call.name).unwrap_or(call.name);
            let origin = Origin::CodeRun {
                run_trace_id: self.run_trace_id.clone(),
            };
            // The call's own cancellation: the run's end, or the program dropping the call (it returned without
            // awaiting it), either of which the pipeline passes upstream as `notifications/cancelled`.
            let cancel = self.cancel.child_token();
            let mut ctx = CallContext::new(
                origin,
                HoldPolicy::HandleNow,
                cancel.clone(),
                Arc::clone(&self.guard),
            );
            ctx.run_approval = self.approval.clone();
            ctx.principal = self.principal.clone();
            ctx.traceparent = self.traceparent.clone();
            let params = json!({"name": name, "arguments": call.arguments});
            let gw = Arc::clone(&self.gw);
            // Its own task, so a call the program drops still runs its cancellation to the end (the upstream told,
            // the record finished) instead of vanishing mid-flight; the slot is held until then.
            let task = tokio::spawn(async move {
                let outcome = govern_tool(&gw, &ctx, params).await;
                drop(slot);
                outcome
            });
            let _dropped = cancel.drop_guard();
            match task.await {
                Ok(outcome) => to_program(outcome),
                Err(e) => to_program(CallOutcome::Failed(CallError::BadRequest(format!(
                    "the call did not finish: {e}"
                )))),
            }
        })
    }
}

/// What a program's `await call(...)` gets for a governed call's outcome: the tool's whole result, or a failure
/// it can catch.
pub(crate) fn to_program(outcome: CallOutcome) -> Result<serde_json::Value, CallFailure> {
    let refused = |code: &str, message: String| CallFailure::Refused {
        code: code.to_owned(),
        message,
    };
    match outcome {
        CallOutcome::Complete(result, _) => Ok(result),
        CallOutcome::Refused(r) => Err(refused(r.code.as_str(), r.message)),
        // A program's calls are never held (an ask runs under the run's approval or is refused), so a handle
        // here is a refusal that says what happened.
        CallOutcome::Held(h) => Err(refused(h.state.as_str(), h.message)),
        CallOutcome::InputRequired(_) | CallOutcome::Bridged { .. } => Err(CallFailure::Failed {
            message: "the tool asked for input, which a program cannot give".to_owned(),
        }),
        CallOutcome::Failed(CallError::BadRequest(why)) => {
            Err(CallFailure::Failed { message: why })
        }
        CallOutcome::Failed(CallError::Upstream(e)) => Err(CallFailure::Failed {
            message: format!("the tool's server failed: {e}"),
        }),
        CallOutcome::Cancelled => Err(refused(
            "CANCELLED",
            "the call was cancelled: its run ended".to_owned(),
        )),
    }
}
