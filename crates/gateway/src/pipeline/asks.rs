//! Requests an upstream sends toward a client (`sampling/createMessage`, `elicitation/create`, `roots/list`) as
//! governed requests: route (`route::route_request`: the session, or the bridged call, whose call caused it) →
//! audit gate → decision (`decide::upstream_request`, operations `mcp.sample`, `mcp.elicit`, `mcp.roots`, under
//! the guard of the client it goes to) → decision record → relay → finish. One decision record each; the finished
//! record is written when the client answers (or the relay ends unanswered: withdrawn, undeliverable, session
//! closed), or, for a bridged call, when the request is handed to it as an input request.
//!
//! What is refused is answered to the upstream with a JSON-RPC error and never reaches a client.

use super::{audit_refusal, decide, record_decision, CallContext, Finish, HoldPolicy, Origin};
use crate::bridge::Asked;
use crate::gateway::Gateway;
use crate::guard::Verdict;
use crate::outcome::{CallOutcome, Refusal, RefusalCode};
use crate::route::Target;
use jsonrpc::error_object;
use serde_json::{json, Value};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// One request `server` sent toward a client, with the upstream's id.
pub(crate) async fn govern_upstream_request(
    gw: &Gateway,
    server: &str,
    id: Value,
    method: String,
    params: Option<Value>,
    caller: Option<u64>,
) {
    let params = crate::elicit::label_relayed(server, &method, params);
    let routed = gw.route_request(server, &method, caller);
    let session = match &routed {
        Ok(Target::Session(session, _)) => Some(Arc::clone(session)),
        Ok(Target::Bridge(_, session)) => session.upgrade(),
        Err(_) => None,
    };
    let guard = session
        .as_ref()
        .map_or_else(|| Arc::clone(&gw.guard), |s| Arc::clone(&s.guard));
    let origin = Origin::Upstream {
        server: server.to_owned(),
    };
    let never = CancellationToken::new();
    let mut ctx = CallContext::new(origin, HoldPolicy::HandleNow, never, guard);
    ctx.principal = session.as_ref().and_then(|s| s.identity());
    let arguments = params.clone().unwrap_or_else(|| json!({}));
    let mut finish = Finish::new(gw, &ctx, &method, arguments);
    finish.routed(server, &method);
    let target = match routed {
        Ok(target) => target,
        Err(err) => {
            tracing::info!(server, method, error = %err, "upstream request refused");
            let why = err["message"].as_str().unwrap_or("not relayed").to_owned();
            let refused = Refusal::new(RefusalCode::UnknownTarget, why);
            finish.close(&CallOutcome::Refused(refused)).await;
            return gw.answer_upstream(server, id, Err(err)).await;
        }
    };
    if let Some(refused) = decided(gw, &ctx, &mut finish, server, &method) {
        let err = error_object(jsonrpc::INTERNAL_ERROR, refused.message.clone(), None);
        tracing::info!(server, method, "upstream request refused by toolgate");
        finish.close(&CallOutcome::Refused(refused)).await;
        return gw.answer_upstream(server, id, Err(err)).await;
    }
    relay(gw, server, target, id, method, params, finish).await;
}

/// The audit gate and the decision, recorded; the refusal when the request must not reach the client.
fn decided(
    gw: &Gateway,
    ctx: &CallContext,
    finish: &mut Finish,
    server: &str,
    method: &str,
) -> Option<Refusal> {
    if let Some(refused) = audit_refusal(gw, method) {
        return Some(refused);
    }
    let verdict = decide::upstream_request(&ctx.guard, server, method);
    finish.decide(record_decision(&verdict));
    finish.commit();
    match verdict {
        Verdict::Refuse(refused) => Some(refused),
        Verdict::Allow(_) | Verdict::Ask(_) => None,
    }
}

/// The execute step of an upstream's request: to the session (its answer closes the records), or to the
/// bridged call as one of its input requests.
async fn relay(
    gw: &Gateway,
    server: &str,
    target: Target,
    id: Value,
    method: String,
    params: Option<Value>,
    finish: Finish,
) {
    match target {
        Target::Session(session, cause) => {
            session
                .relay(server, id, method, params, cause, finish)
                .await
        }
        Target::Bridge(sink, _) => {
            let asked = Asked {
                upstream_id: id,
                method,
                params,
            };
            let shown = asked.params.clone().unwrap_or_else(|| json!({}));
            match sink.try_send(asked) {
                Ok(()) => finish.close(&CallOutcome::InputRequired(shown)).await,
                Err(refused) => {
                    let asked = refused.into_inner();
                    let why = "toolgate cannot take more requests for this call now";
                    let err = error_object(jsonrpc::INTERNAL_ERROR, why, None);
                    let outcome =
                        CallOutcome::Refused(Refusal::new(RefusalCode::LimitReached, why));
                    finish.close(&outcome).await;
                    gw.answer_upstream(server, asked.upstream_id, Err(err))
                        .await;
                }
            }
        }
    }
}

/// What the client answered a relayed request, as its finished record shows it.
pub(crate) fn relay_outcome(answer: &Result<Value, Value>) -> CallOutcome {
    match answer {
        Ok(v) => CallOutcome::complete(v.clone()),
        Err(e) => CallOutcome::Failed(crate::outcome::CallError::BadRequest(e.to_string())),
    }
}
