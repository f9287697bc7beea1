//! The task methods as governed requests: `tasks/get`, `tasks/result`, `tasks/cancel`, `tasks/update` and
//! `tasks/list` pass route → audit gate → decision (`decide::task`) → decision record → execute → finish, like
//! every other request. `tasks/result` delivers a tool's result, so it is decided as reading that tool's result
//! for its owner; a task of someone else is unknown, and that refusal is recorded too.
//!
//! The tasks table itself (ids, owners, forwarding under the upstream's id) is `tasks`'.

use super::{audit_refusal, decide, record_decision, CallContext, Finish};
use crate::client::Client;
use crate::guard::{Verdict, OWN_SERVER};
use crate::outcome::{CallError, CallOutcome, Refusal, RefusalCode};
use crate::stages::Stages;
use crate::wire::{self, Reply, Shape};
use serde_json::Value;
use std::sync::Arc;

/// One task method of the client behind `ctx` (a task belongs to its client: without one, every task is
/// unknown).
pub(crate) async fn govern_task(
    gw: &Arc<Stages>,
    ctx: &CallContext,
    method: &str,
    params: Value,
) -> Reply {
    let mut finish = Finish::new(&gw.recorder, ctx, method, &params);
    let client = ctx.requester.as_ref().and_then(|r| r.client());
    let (answer, outcome) =
        task_stages(gw, ctx, client.as_deref(), &mut finish, method, params).await;
    finish.close(&outcome).await;
    answer
}

/// The stages; the reply, and the outcome the records carry.
async fn task_stages(
    gw: &Arc<Stages>,
    ctx: &CallContext,
    client: Option<&dyn Client>,
    finish: &mut Finish,
    method: &str,
    params: Value,
) -> (Reply, CallOutcome) {
    // Route: toolgate's own list, or the caller's own task.
    let listing = method == "tasks/list";
    let routed = client.and_then(|client| match listing {
        true => Some((client, OWN_SERVER.to_owned(), method.to_owned())),
        false => {
            let ours = params.get("taskId").and_then(Value::as_str)?;
            let (server, tool) = gw.task_target(client, ours)?;
            Some((client, server, tool))
        }
    });
    let Some((client, server, tool)) = routed else {
        let ours = params
            .get("taskId")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let refused = Refusal::new(RefusalCode::UnknownTarget, format!("unknown task {ours:?}"));
        return (
            Reply::Error(crate::tasks::unknown(ours)),
            CallOutcome::Refused(refused),
        );
    };
    finish.routed(&server, &tool);
    // Audit gate, then the decision, recorded before anything is forwarded.
    if let Some(refused) = audit_refusal(gw, method) {
        return refusal(refused);
    }
    let verdict = match listing {
        true => decide::task_list(&ctx.guard),
        false => decide::task(&ctx.guard, &server, &tool),
    };
    finish.decide(record_decision(&verdict));
    finish.commit();
    if let Verdict::Refuse(refused) = verdict {
        return refusal(refused);
    }
    // Execute: the tasks table forwards under the upstream's id, with the caller's credentials for the task's
    // server (`credentials`), and the answer scrubbed of their values.
    let credentials = gw.credentials();
    let answer = match listing {
        true => gw.list_tasks(client, &ctx.cancel).await,
        false => {
            let headers = match credentials.call_headers(&server, ctx) {
                Ok(headers) => headers,
                Err(refused) => return refusal(refused),
            };
            let forwarded = gw.task_request(client, method, params, &ctx.cancel);
            let mut answer = upstream::with_call_headers(headers, forwarded).await;
            match &mut answer {
                Ok(v) | Err(v) => {
                    credentials.scrub(&server, v);
                }
            }
            answer
        }
    };
    let outcome = match &answer {
        Ok(v) => CallOutcome::complete(v.clone()),
        Err(e) => CallOutcome::Failed(CallError::BadRequest(e.to_string())),
    };
    (Reply::from_result(answer), outcome)
}

fn refusal(refused: Refusal) -> (Reply, CallOutcome) {
    let reply = wire::reply(CallOutcome::Refused(refused.clone()), Shape::RpcError, None);
    (reply, CallOutcome::Refused(refused))
}
