//! A 2026-07-28 upstream answering `input_required` to a legacy client's request: each input request goes to
//! the client as the equivalent server→client request (on the stream of the request that caused it, under
//! toolgate's own ids, only when the client declared the capability), the answers are gathered, and toolgate
//! retries the upstream request with `inputResponses` and the upstream's `requestState`, for at most
//! `MAX_ROUNDS` rounds. The client sees only the final result.
//!
//! It decides nothing: the request was decided before it was forwarded; the retries repeat it unchanged but for
//! the answers.

use crate::client::{needed_capability, Client};
use crate::outbox::Stream;
use crate::outcome::{CallOutcome, Refusal, RefusalCode};
use crate::pipeline::asks::relay_outcome;
use crate::pipeline::context::CallContext;
use crate::pipeline::finish::Finish;
use crate::stages::Stages;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinSet;
use upstream::Connection;

/// Rounds of input toolgate gathers for one request before it gives up.
pub(crate) const MAX_ROUNDS: usize = 16;

/// Input requests of one round toolgate puts to a client.
const MAX_ROUND_REQUESTS: usize = 16;

fn failed(why: String) -> CallOutcome {
    CallOutcome::Refused(Refusal::new(RefusalCode::Failed, why))
}

/// The input requests of an upstream's answer that asks for input (`None` for any other answer, or a malformed
/// one, which is not carried).
pub(crate) fn input_requests(answer: &Value) -> Option<&Map<String, Value>> {
    is_input_required(answer)
        .then(|| answer.get("inputRequests"))
        .flatten()
        .and_then(Value::as_object)
}

/// Whether an upstream's answer asks for input.
pub(crate) fn is_input_required(answer: &Value) -> bool {
    answer.get("resultType").and_then(Value::as_str) == Some("input_required")
}

/// The upstream answered `method` with `answer`, which asks for input: asks the client on `stream`,
/// retries, and returns the final outcome.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn answer_for_legacy(
    gw: &Stages,
    ctx: &CallContext,
    client: &Arc<dyn Client>,
    stream: Stream,
    conn: &Connection,
    timeout: Duration,
    method: &str,
    mut params: Value,
    mut answer: Value,
) -> CallOutcome {
    for _ in 0..MAX_ROUNDS {
        if !is_input_required(&answer) {
            return CallOutcome::complete(answer);
        }
        let requests = match answer.get("inputRequests") {
            None => Map::new(),
            Some(Value::Object(m)) => m.clone(),
            Some(_) => return failed("the upstream's inputRequests is not an object".to_owned()),
        };
        let responses = match ask_all(gw, ctx, client, &stream, conn.server(), requests).await {
            Ok(r) => r,
            Err(outcome) => return outcome,
        };
        if let Value::Object(p) = &mut params {
            p.remove("inputResponses");
            p.remove("requestState");
            if !responses.is_empty() {
                p.insert("inputResponses".into(), Value::Object(responses));
            }
            if let Some(state) = answer.get("requestState") {
                p.insert("requestState".into(), state.clone());
            }
        }
        answer = match conn
            .request(method, Some(params.clone()), timeout, &ctx.cancel)
            .await
        {
            Ok(v) => v,
            Err(e) => return CallOutcome::from_upstream(Err(e)),
        };
    }
    if is_input_required(&answer) {
        return failed(format!(
            "toolgate gave up: the upstream still asked for input after {MAX_ROUNDS} rounds"
        ));
    }
    CallOutcome::complete(answer)
}

/// Asks the client every input request of one round at once; the answers by key, or the outcome that ends
/// the request (a request the client cannot take, an error it answered with, its cancellation).
async fn ask_all(
    gw: &Stages,
    ctx: &CallContext,
    client: &Arc<dyn Client>,
    stream: &Stream,
    server: &str,
    requests: Map<String, Value>,
) -> Result<Map<String, Value>, CallOutcome> {
    if requests.len() > MAX_ROUND_REQUESTS {
        return Err(failed(format!(
            "the upstream asked for {} inputs at once; toolgate carries at most {MAX_ROUND_REQUESTS}",
            requests.len()
        )));
    }
    // Every request is checked before any is asked: a round the client cannot answer whole is not begun.
    let mut checked = Vec::new();
    for (key, request) in requests {
        let method = request
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let Some(cap) = needed_capability(&method) else {
            return Err(failed(format!(
                "the upstream asked for input toolgate cannot carry to this client ({method:?})"
            )));
        };
        // The client's roots would replace the directories the policy resolves this server's paths in.
        if cap == "roots" && gw.guard().keeps_own_directories(server) {
            return Err(failed(format!(
                "toolgate does not relay {method} to {server}: its policy resolves paths in the directories the \
                 server was started with"
            )));
        }
        if let Some(why) = client.relay_refusal(&method, cap) {
            return Err(failed(why));
        }
        let params = request
            .get("params")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new()));
        let params = crate::elicit::label_relayed(server, &method, Some(params))
            .unwrap_or_else(|| Value::Object(Map::new()));
        checked.push((key, method, params));
    }
    // Each is a request the upstream sends toward the client: decided and recorded before the client is asked.
    let shown: Map<String, Value> = checked
        .iter()
        .map(|(key, method, params)| (key.clone(), json!({"method": method, "params": params})))
        .collect();
    let governed = match crate::pipeline::asks::govern_input_requests(gw, ctx, server, &shown).await
    {
        Ok(governed) => governed,
        Err(refused) => return Err(CallOutcome::Refused(refused)),
    };
    let mut records: std::collections::HashMap<String, Finish> = governed.into_iter().collect();
    let mut asks = JoinSet::new();
    for (key, method, params) in checked {
        let (client, stream) = (Arc::clone(client), stream.clone());
        asks.spawn(async move {
            let answer = client.ask(stream, &method, params).await;
            (key, method, answer)
        });
    }
    let mut responses = Map::new();
    loop {
        let next = tokio::select! {
            () = ctx.cancel.cancelled() => return Err(CallOutcome::Cancelled),
            next = asks.join_next() => next,
        };
        match next {
            None => return Ok(responses),
            Some(Ok((key, _, Ok(answer)))) => {
                if let Some(finish) = records.remove(&key) {
                    finish.close(&relay_outcome(&Ok(answer.clone()))).await;
                }
                responses.insert(key, answer);
            }
            Some(Ok((key, method, Err(error)))) => {
                if let Some(finish) = records.remove(&key) {
                    finish.close(&relay_outcome(&Err(error.clone()))).await;
                }
                let message = error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("no message");
                return Err(failed(format!(
                    "the client answered the upstream's {method} with an error: {message}"
                )));
            }
            Some(Err(e)) => return Err(failed(format!("asking the client failed: {e}"))),
        }
    }
}
