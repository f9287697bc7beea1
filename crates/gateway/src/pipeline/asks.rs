//! Requests an upstream sends toward a client (`sampling/createMessage`, `elicitation/create`, `roots/list`) as
//! governed requests: route (`route::route_request`: the session, or the bridged call, whose call caused it) →
//! audit gate → decision (`decide::upstream_request`, operations `mcp.sample`, `mcp.elicit`, `mcp.roots`, under
//! the guard of the client it goes to) → decision record → relay → finish. One decision record each; the finished
//! record is written when the client answers (or the relay ends unanswered: withdrawn, undeliverable, session
//! closed), or, for a bridged call, when the request is handed to it as an input request.
//!
//! What is refused is answered to the upstream with a JSON-RPC error and never reaches a client.

use super::{audit_refusal, decide, record_decision, CallContext, Finish, HoldPolicy, Origin};
use crate::bridge::{AskSink, Asked};
use crate::client::{Client, Relay, RelayEnd};
use crate::guard::{Guard, Verdict};
use crate::outcome::{CallOutcome, Refusal, RefusalCode};
use crate::stages::Stages;
use jsonrpc::{error_object, Id};
use serde_json::{json, Value};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use tokio_util::sync::CancellationToken;

/// Where an upstream's request goes (`route::route_request` finds it: the route stage of these requests).
pub(crate) enum Target {
    /// Relayed to this client, on the stream of the client request that caused it (when one did).
    Client(Arc<dyn Client>, Option<Id>),
    /// Caught for a call bridged for a modern client (of this client, whose guard decides it).
    Bridge(AskSink, Option<Weak<dyn Client>>),
}

/// One request an upstream sent toward a client.
pub(crate) struct UpstreamRequest<'a> {
    pub server: &'a str,
    /// The upstream's id of the request.
    pub id: Value,
    pub method: String,
    pub params: Option<Value>,
    /// The trace of the call during which it was sent, when one call caused it.
    pub parent: Option<String>,
}

/// One request an upstream sent toward a client, and where the route stage found it goes (or the error the
/// upstream is answered with).
pub(crate) async fn govern_upstream_request(
    gw: &Stages,
    asked: UpstreamRequest<'_>,
    routed: Result<Target, Value>,
) {
    let UpstreamRequest {
        server,
        id,
        method,
        params,
        parent,
    } = asked;
    let params = crate::elicit::label_relayed(server, &method, params);
    let client = match &routed {
        Ok(Target::Client(client, _)) => Some(Arc::clone(client)),
        Ok(Target::Bridge(_, client)) => client.as_ref().and_then(Weak::upgrade),
        Err(_) => None,
    };
    let guard = client.as_ref().map_or_else(|| gw.guard(), |c| c.guard());
    let principal = client.as_ref().and_then(|c| c.identity());
    let arguments = params.clone().unwrap_or_else(|| json!({}));
    let by = (guard, principal);
    let (ctx, mut finish) = opened(gw, server, &method, arguments, by, parent.as_deref());
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

/// The input requests of an upstream's `input_required` result (`{key: {method, params}}`) are requests that
/// upstream sends toward the client in the 2026-07-28 form: each is governed as one before the client sees it
/// (audit gate, decision under the caller's guard, decision record, the call that caused it as its parent).
/// Their finished records are written when the caller closes what this returns: with the client's answer, or
/// as handed to the client. The first refusal refuses the whole round, and nothing of it reaches the client.
pub(crate) async fn govern_input_requests(
    gw: &Stages,
    ctx: &CallContext,
    server: &str,
    requests: &serde_json::Map<String, Value>,
) -> Result<Vec<(String, Finish)>, Refusal> {
    let mut governed = Vec::with_capacity(requests.len());
    for (key, request) in requests {
        let method = request
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let arguments = request.get("params").cloned().unwrap_or_else(|| json!({}));
        let by = (Arc::clone(&ctx.guard), ctx.principal.clone());
        let (asked, mut finish) = opened(gw, server, method, arguments, by, Some(&ctx.trace_id));
        if let Some(refused) = decided(gw, &asked, &mut finish, server, method) {
            tracing::info!(
                server,
                method,
                "an upstream's input request refused by toolgate"
            );
            finish.close(&CallOutcome::Refused(refused.clone())).await;
            return Err(refused);
        }
        governed.push((key.clone(), finish));
    }
    Ok(governed)
}

/// The context and finishing guard of one request `server` sends toward a client: a trace of its own, decided
/// under the guard and for the identity of the client it goes to, recorded under the call that caused it.
fn opened(
    gw: &Stages,
    server: &str,
    method: &str,
    arguments: Value,
    (guard, principal): (Arc<Guard>, Option<String>),
    parent: Option<&str>,
) -> (CallContext, Finish) {
    let origin = Origin::Upstream {
        server: server.to_owned(),
    };
    let never = CancellationToken::new();
    let mut ctx = CallContext::new(origin, HoldPolicy::HandleNow, never, guard);
    ctx.principal = principal;
    let mut finish = Finish::new(&gw.recorder, &ctx, method, &arguments);
    finish.routed(server, method);
    if let Some(parent) = parent {
        finish.parent(parent);
    }
    (ctx, finish)
}

/// The audit gate and the decision, recorded; the refusal when the request must not reach the client.
fn decided(
    gw: &Stages,
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
    gw: &Stages,
    server: &str,
    target: Target,
    id: Value,
    method: String,
    params: Option<Value>,
    finish: Finish,
) {
    match target {
        Target::Client(client, cause) => {
            let relay = Relay {
                server: server.to_owned(),
                upstream_id: id,
                method,
                params,
                cause,
                records: Box::new(finish),
            };
            client.relay(relay).await
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

/// A relayed request's records close with the client's answer.
impl RelayEnd for Finish {
    fn answered(
        self: Box<Self>,
        answer: &Result<Value, Value>,
    ) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        let outcome = relay_outcome(answer);
        Box::pin(async move { self.close(&outcome).await })
    }
}
