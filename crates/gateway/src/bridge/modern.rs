//! A legacy upstream asking while it serves a 2026-07-28 client's `tools/call`: the call runs in a task of its
//! own (`forward`); what the upstream asks becomes the `inputRequests` of an `input_required` result and the
//! call is parked under a fresh request state (`drive`); the client's retry (`retry`) is checked against what
//! the state is bound to, its `inputResponses` go upstream as the answers, in the legacy shape, and the call is
//! driven again to its next move: a result, or another round.
//!
//! It does not decide the call (the pipeline did, before `forward`); it only carries answers to it.

use super::{target_of, Asked, Binding, Exchange, ASK_CAPACITY, SETTLE, STATE_PREFIX};
use crate::client::needed_capability;
use crate::client::Client;
use crate::outcome::{CallOutcome, Refusal, RefusalCode};
use crate::pipeline::{audit_refusal, CallContext, Finish};
use crate::progress::ProgressGuard;
use crate::stages::Stages;
use jsonrpc::error_object;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use upstream::{Connection, Upstream, PROTOCOL_META_PREFIX};

/// The request state of a retry toolgate must answer itself, if `params` carry one.
pub(crate) fn retry_state(params: &Value) -> Option<String> {
    params
        .get("requestState")
        .and_then(Value::as_str)
        .filter(|s| s.starts_with(STATE_PREFIX))
        .map(str::to_owned)
}

/// Forwards `method` (`tools/call`, `prompts/get` or `resources/read`; `params` already name the upstream's tool
/// or prompt) to a legacy upstream for a modern client: the upstream call runs on its own task, so that it
/// outlives this request when the upstream asks something.
#[allow(clippy::too_many_arguments)] // The request, where it goes, and who asked: one call site, in `calls`.
pub(crate) async fn forward(
    gw: &Arc<Stages>,
    ctx: &CallContext,
    client: &dyn Client,
    up: &Upstream,
    conn: Arc<Connection>,
    method: &'static str,
    params: Value,
    progress: Option<ProgressGuard>,
) -> CallOutcome {
    let (server, timeout) = (up.name(), up.request_timeout());
    let (target, arguments) = target_of(method, &params);
    let binding = Binding::request(client.identity(), method, (server, &target), &arguments);
    let (sink, asks) = mpsc::channel(ASK_CAPACITY);
    let (tx, answer) = oneshot::channel();
    let cancel = CancellationToken::new();
    let call = gw.correlation.begin_bridged(server, sink);
    let (task_conn, task_cancel) = (Arc::clone(&conn), cancel.clone());
    // The call goes on in a task of its own: it carries the caller's credentials there.
    let granted = upstream::current_call_headers();
    tokio::spawn(async move {
        let request =
            task_conn.request_for(call.key(), method, Some(params), timeout, &task_cancel);
        let answer = upstream::with_call_headers(granted, request).await;
        drop(call);
        let _ = tx.send(answer);
    });
    let ex = Box::new(Exchange {
        binding,
        conn,
        answer,
        asks,
        asks_open: true,
        outstanding: Default::default(),
        next_key: 1,
        cancel,
        finish: None,
        progress,
    });
    drive(gw, ctx, &client.capabilities(), ex).await
}

/// Waits for the upstream's next move: its answer (the call's outcome; the parked finishing guard, if any, is
/// closed with it), or requests (parked as another `input_required` round), or the client's cancellation.
async fn drive(
    gw: &Arc<Stages>,
    ctx: &CallContext,
    caps: &Value,
    mut ex: Box<Exchange>,
) -> CallOutcome {
    loop {
        tokio::select! {
            biased;
            () = ctx.cancel.cancelled() => {
                ex.abandon("the client cancelled the call").await;
                return CallOutcome::Cancelled;
            }
            answer = &mut ex.answer => {
                let answer = answer.unwrap_or_else(|_| Err(upstream::CallError::Unavailable {
                    server: ex.binding.server.clone(),
                    why: "the call ended without an answer".to_owned(),
                }));
                let outcome = match answer {
                    // A task is not carried across the eras (`tasks`).
                    Ok(v) => match gw.refuse_task(&ex.binding.server, &v) {
                        Some(why) => CallOutcome::Refused(Refusal::new(RefusalCode::Failed, why)),
                        None => CallOutcome::from_upstream(Ok(v)),
                    },
                    Err(e) => CallOutcome::from_upstream(Err(e)),
                };
                if let Some(finish) = ex.finish.take() {
                    finish.close(&outcome).await;
                }
                return outcome;
            }
            asked = ex.asks.recv(), if ex.asks_open => {
                let Some(asked) = asked else {
                    ex.asks_open = false;
                    continue;
                };
                take(&mut ex, caps, asked).await;
                // Requests sent together are answered together: wait briefly for the rest of them (a bounded
                // number, so an upstream that keeps asking cannot hold the round open).
                for _ in 1..ASK_CAPACITY {
                    let Ok(more) = tokio::time::timeout(SETTLE, ex.asks.recv()).await else {
                        break;
                    };
                    match more {
                        Some(asked) => take(&mut ex, caps, asked).await,
                        None => {
                            ex.asks_open = false;
                            break;
                        }
                    }
                }
                if ex.outstanding.is_empty() {
                    continue;
                }
                match park(gw, ctx, ex) {
                    Ok(outcome) => return outcome,
                    Err(back) => ex = back,
                }
            }
        }
    }
}

/// Adds an upstream's request to this round, or answers it with an error when the client cannot take it.
async fn take(ex: &mut Exchange, caps: &Value, asked: Asked) {
    let refusal = match needed_capability(&asked.method) {
        None => Some(format!(
            "toolgate does not relay {} to clients",
            asked.method
        )),
        Some(cap) if caps.get(cap).is_none() => Some(format!(
            "toolgate cannot relay {}: the client did not declare the {cap:?} capability",
            asked.method
        )),
        Some(_) => None,
    };
    if let Some(why) = refusal {
        let err = error_object(jsonrpc::METHOD_NOT_FOUND, why, None);
        let _ = ex.conn.respond(asked.upstream_id, Err(err)).await;
        return;
    }
    let kind = asked.method.split('/').next().unwrap_or("input").to_owned();
    let key = format!("{kind}-{}", ex.next_key);
    ex.next_key += 1;
    ex.outstanding.insert(key, asked);
}

/// Parks the call with its outstanding requests: the `input_required` result the client gets now. When it
/// cannot be parked, the requests are refused upstream and the call goes on (`Err`).
fn park(
    gw: &Arc<Stages>,
    ctx: &CallContext,
    ex: Box<Exchange>,
) -> Result<CallOutcome, Box<Exchange>> {
    // No client request waits on the call now: its progress goes nowhere until the retry.
    if let Some(route) = &ex.progress {
        route.redirect(None);
    }
    let requests: Map<String, Value> = ex
        .outstanding
        .iter()
        .map(|(key, a)| {
            let params = a.params.clone().unwrap_or_else(|| json!({}));
            (
                key.clone(),
                jsonrpc::object([("method", a.method.as_str().into()), ("params", params)]),
            )
        })
        .collect();
    match gw.bridge.park(ex) {
        Ok(state) => {
            let result = jsonrpc::object([
                ("resultType", "input_required".into()),
                ("inputRequests", Value::Object(requests)),
                ("requestState", state.as_str().into()),
            ]);
            Ok(CallOutcome::Bridged { result, state })
        }
        Err((mut ex, why)) => {
            tracing::warn!("{why}; the upstream's requests are refused");
            if let Some(route) = &ex.progress {
                route.redirect(ctx.progress.clone());
            }
            let err = error_object(jsonrpc::INTERNAL_ERROR, why, None);
            let conn = Arc::clone(&ex.conn);
            let refused: Vec<Asked> = std::mem::take(&mut ex.outstanding).into_values().collect();
            tokio::spawn(async move {
                for a in refused {
                    let _ = conn.respond(a.upstream_id, Err(err.clone())).await;
                }
            });
            Err(ex)
        }
    }
}

/// What a retry names once routed: the request, the name its records show, its arguments, and the upstream and
/// the upstream's own name of its target (`None`: nothing here has that name, refused as unknown).
pub(crate) struct Retry {
    pub method: &'static str,
    pub shown: String,
    pub arguments: Value,
    pub routed: Option<(String, String)>,
}

/// A modern client's retry of a bridged call (`tools/call`, `prompts/get` or `resources/read` with toolgate's
/// `requestState`): checked against what the state is bound to, then its answers go upstream and the call goes
/// on. Not decided again (see the module's governance note); refused retries are recorded as refusals of their
/// own.
pub(crate) async fn retry(
    gw: &Arc<Stages>,
    ctx: &CallContext,
    r: Retry,
    params: Value,
    state: String,
) -> CallOutcome {
    let Retry {
        method,
        shown: name,
        arguments,
        routed,
    } = r;
    let refuse =
        |code, why: &str| Refusal::new(code, format!("toolgate refused this retry: {why}"));
    let Some(client) = ctx.requester.as_ref().and_then(|r| r.client()) else {
        let refusal = refuse(
            RefusalCode::RequestNotFound,
            "only a client's own request can retry a call waiting for its answers",
        );
        return refused(gw, ctx, &name, arguments, None, refusal).await;
    };
    let Some((server, target)) = routed else {
        let refusal = Refusal::new(
            RefusalCode::UnknownTarget,
            format!("unknown target of {method}: {name}"),
        );
        return refused(gw, ctx, &name, arguments, None, refusal).await;
    };
    // A resource's records name the method, never the URI (it can carry secrets).
    let recorded = match method {
        "resources/read" => method.to_owned(),
        _ => target.clone(),
    };
    // The audit gate, then the request state: either refusal is recorded as this retry's own.
    let binding = Binding::request(client.identity(), method, (&server, &target), &arguments);
    let taken = match audit_refusal(gw, &name) {
        Some(refusal) => Err(refusal),
        None => gw.bridge.take(&state, &binding),
    };
    let mut ex = match taken {
        Ok(ex) => ex,
        Err(refusal) => {
            let routed = Some((server.as_str(), recorded.as_str()));
            return refused(gw, ctx, &name, arguments, routed, refusal).await;
        }
    };
    // The upstream's progress now goes to the retry, under its own token (when it asked for progress).
    if let Some(route) = &ex.progress {
        route.redirect(ctx.progress.clone());
    }
    let responses = params.get("inputResponses");
    for (key, asked) in std::mem::take(&mut ex.outstanding) {
        let answer = legacy_answer(&asked.method, responses.and_then(|r| r.get(&key)));
        let _ = ex.conn.respond(asked.upstream_id, answer).await;
    }
    drive(gw, ctx, &client.capabilities(), ex).await
}

/// A refused retry: its own trace, one decision record (the refusal) and one finished record.
async fn refused(
    gw: &Arc<Stages>,
    ctx: &CallContext,
    name: &str,
    arguments: Value,
    routed: Option<(&str, &str)>,
    refusal: Refusal,
) -> CallOutcome {
    let mut finish = Finish::new(&gw.recorder, ctx, name, &arguments);
    if let Some((server, tool)) = routed {
        finish.routed(server, tool);
    }
    let outcome = CallOutcome::Refused(refusal);
    finish.close(&outcome).await;
    outcome
}

/// A modern client's answer to one input request, as the legacy upstream reads the answer to its request:
/// the modern-only fields go; a missing answer is a dismissed elicitation, or for sampling and roots the
/// rejection error the legacy protocol names.
fn legacy_answer(method: &str, answer: Option<&Value>) -> Result<Value, Value> {
    match answer {
        Some(Value::Object(m)) => {
            let mut m = m.clone();
            m.remove("resultType");
            if let Some(Value::Object(meta)) = m.get_mut("_meta") {
                meta.retain(|k, _| !k.starts_with(PROTOCOL_META_PREFIX));
            }
            Ok(Value::Object(m))
        }
        Some(_) => Err(error_object(
            jsonrpc::INVALID_PARAMS,
            "the client's answer is not an object",
            None,
        )),
        None if method == "elicitation/create" => Ok(json!({"action": "cancel"})),
        None => Err(error_object(
            -1,
            format!("the client declined {method}: it gave no answer"),
            None,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_answer_is_the_decline_the_legacy_upstream_expects() {
        assert_eq!(
            legacy_answer("elicitation/create", None),
            Ok(json!({"action": "cancel"}))
        );
        let err = legacy_answer("sampling/createMessage", None).unwrap_err();
        assert_eq!(err["code"], -1, "{err}");
        assert!(legacy_answer("roots/list", Some(&json!("roots"))).is_err());
    }

    #[test]
    fn modern_fields_of_an_answer_do_not_reach_a_legacy_upstream() {
        let answer = json!({"action": "accept", "content": {"ok": true}, "resultType": "complete",
                            "_meta": {"io.modelcontextprotocol/x": 1, "mine": 2}});
        assert_eq!(
            legacy_answer("elicitation/create", Some(&answer)),
            Ok(json!({"action": "accept", "content": {"ok": true}, "_meta": {"mine": 2}}))
        );
    }

    #[test]
    fn only_toolgates_own_request_states_are_taken_as_retries() {
        let ours = json!({"requestState": format!("{STATE_PREFIX}abc")});
        assert_eq!(retry_state(&ours), Some(format!("{STATE_PREFIX}abc")));
        assert_eq!(retry_state(&json!({"requestState": "fx-state-1"})), None);
        assert_eq!(retry_state(&json!({"requestState": 7})), None);
    }
}
