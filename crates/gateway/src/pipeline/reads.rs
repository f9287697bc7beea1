//! The governed requests that are not tool calls: prompt gets, resource reads and subscriptions, and
//! completions. Each is routed, gated on the audit log, decided, recorded by the finishing guard, and only
//! then forwarded; hooks are for tool calls and do not run here. Their results cannot express a refusal, so
//! `wire` answers refusals and holds with JSON-RPC errors.
//!
//! What each is decided as: a prompt get as that prompt (`check_prompt`), a read as that resource
//! (`check_resource`); a subscription as a read of its resource, except that an ask does not hold it (it
//! delivers only "this URI changed"; the read that follows asks); a completion as its reference (the prompt, or
//! the resource), except that an ask refuses it: completions come while a person types, no one should be asked
//! about each, and their values can reveal what a read would. Unsubscribing stops this session's notifications
//! at once; it is decided as its resource (a deny keeps the upstream from being told) and recorded.

use super::{audit_refusal, execute, CallContext, Exec, Finish};
use crate::guard::Verdict;
use crate::outcome::{CallOutcome, Refusal, RefusalCode};
use crate::snapshot::{Kind, Snapshot};
use crate::stages::Stages;
use serde_json::{json, Value};
use std::sync::Arc;

/// What a non-tool request asks for, once routed.
enum Target {
    Prompt { name: String },
    Resource { uri: String },
}

/// What the governed request does after an allow (or an ask a human approved).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Then {
    /// Held on an ask, like a tool call.
    Hold,
    /// Goes ahead on an ask (a subscription).
    Proceed,
    /// Refused on an ask (a completion).
    Refuse,
}

/// `prompts/get`, `resources/read`, `resources/subscribe`, `resources/unsubscribe` and `completion/complete`.
pub(crate) async fn govern_read(
    gw: &Arc<Stages>,
    ctx: &CallContext,
    method: &str,
    params: Value,
) -> CallOutcome {
    if method == "resources/unsubscribe" {
        let mut finish = Finish::new(&gw.recorder, ctx, method, &json!({}));
        let outcome = unsubscribe(gw, ctx, &mut finish, params).await;
        finish.close(&outcome).await;
        return outcome;
    }
    // The retry of a prompt get or read that waits for the client's answers in the bridge: not decided again.
    if let (Some(state), Some(method)) = (
        crate::bridge::retry_state(&params),
        crate::bridge::BRIDGED
            .iter()
            .find(|m| **m == method && **m != "tools/call"),
    ) {
        return Box::pin(retry(gw, ctx, method, params, state)).await;
    }
    let arguments = params
        .get("arguments")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut finish = Finish::new(&gw.recorder, ctx, method, &arguments);
    let outcome = read_stages(gw, ctx, &mut finish, method, params).await;
    match &outcome {
        // The request goes on upstream: its records are written once, when it ends (`bridge`).
        CallOutcome::Bridged { state, .. } => Box::pin(gw.bridge.adopt(state, finish)).await,
        _ => finish.close(&outcome).await,
    }
    outcome
}

/// A modern client's retry of a prompt get or read bridged to a legacy upstream, routed as the first request
/// was; the bridge checks it against what its request state is bound to.
async fn retry(
    gw: &Arc<Stages>,
    ctx: &CallContext,
    method: &'static str,
    params: Value,
    state: String,
) -> CallOutcome {
    let (target, arguments) = crate::bridge::target_of(method, &params);
    let routed = match method {
        "prompts/get" => route(gw, method, &Target::Prompt { name: target }),
        _ => route(gw, method, &Target::Resource { uri: target }),
    };
    let retry = crate::bridge::Retry {
        method,
        shown: method.to_owned(),
        arguments,
        routed: routed.ok(),
    };
    crate::bridge::retry(gw, ctx, retry, params, state).await
}

async fn read_stages(
    gw: &Arc<Stages>,
    ctx: &CallContext,
    finish: &mut Finish,
    method: &str,
    mut params: Value,
) -> CallOutcome {
    let (target, then, name_at) = match what(method, &params) {
        Ok(w) => w,
        Err(refused) => return refused,
    };
    let (server, upstream_name) = match route(gw, method, &target) {
        Ok(r) => r,
        Err(refused) => return refused,
    };
    finish.credentials(super::used_credentials(gw, ctx, &server));
    // The record names a prompt by its upstream name; a resource only among what the call touches (the audit
    // log redacts those), since a URI can carry secrets.
    let (what, verdict) = match &target {
        Target::Prompt { name } => {
            finish.routed(&server, &upstream_name);
            (
                format!("the prompt {name}"),
                ctx.guard.check_prompt(&server, &upstream_name),
            )
        }
        Target::Resource { uri } => {
            finish.routed(&server, method);
            finish.touches(vec![uri.clone()]);
            (
                format!("reading {uri}"),
                ctx.guard.check_resource(&server, uri),
            )
        }
    };
    if let Some(refused) = audit_refusal(gw, &what) {
        return CallOutcome::Refused(refused);
    }
    finish.decide(super::record_decision(&verdict));
    finish.commit();
    if !name_at.is_empty() {
        if let Some(slot) = params.pointer_mut(name_at) {
            *slot = Value::String(upstream_name.clone());
        }
    }
    let routed = (server.as_str(), upstream_name.as_str());
    let then = then_stages(gw, ctx, method, params, (target, then), routed, verdict);
    super::traced(finish.stage("execute"), Box::pin(then)).await
}

/// What the request names, how an ask is treated, and where its name sits in the params.
fn what(method: &str, params: &Value) -> Result<(Target, Then, &'static str), CallOutcome> {
    let str_at = |p: &Value, at: &str| {
        p.pointer(at)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    // Route: which prompt or resource, owned by which upstream; a completion names its reference.
    let (target, then, name_at) = match method {
        "prompts/get" => (
            Target::Prompt {
                name: str_at(params, "/name"),
            },
            Then::Hold,
            "/name",
        ),
        "resources/read" => (
            Target::Resource {
                uri: str_at(params, "/uri"),
            },
            Then::Hold,
            "",
        ),
        "resources/subscribe" => (
            Target::Resource {
                uri: str_at(params, "/uri"),
            },
            Then::Proceed,
            "",
        ),
        _ => match params.pointer("/ref/type").and_then(Value::as_str) {
            Some("ref/prompt") => (
                Target::Prompt {
                    name: str_at(params, "/ref/name"),
                },
                Then::Refuse,
                "/ref/name",
            ),
            Some("ref/resource") => (
                Target::Resource {
                    uri: str_at(params, "/ref/uri"),
                },
                Then::Refuse,
                "",
            ),
            _ => {
                let why = "completion/complete needs ref.type ref/prompt or ref/resource";
                return Err(CallOutcome::Refused(Refusal::new(
                    RefusalCode::UnknownTarget,
                    why,
                )));
            }
        },
    };
    Ok((target, then, name_at))
}

/// Route: the upstream that owns the prompt or resource, and its own name there.
fn route(gw: &Stages, method: &str, target: &Target) -> Result<(String, String), CallOutcome> {
    let agg = gw.aggregate();
    let routed = match &target {
        Target::Prompt { name } => agg
            .route_prompt(name)
            .map(|r| (r.server.clone(), r.name.clone())),
        Target::Resource { uri } => agg.route_resource(uri).map(|s| (s.to_owned(), uri.clone())),
    };
    drop(agg);
    routed.ok_or_else(|| match target {
        Target::Prompt { name } if method == "prompts/get" => CallOutcome::Refused(Refusal::new(
            RefusalCode::UnknownTarget,
            format!("unknown prompt: {name}"),
        )),
        Target::Prompt { .. } => CallOutcome::Refused(Refusal::new(
            RefusalCode::UnknownTarget,
            "no upstream owns the completion reference",
        )),
        Target::Resource { uri } => no_resource(uri),
    })
}

/// After the decision: refused, forwarded (an ask of a subscription proceeds), refused on an ask (a completion),
/// or held for a human (the approval stage).
async fn then_stages(
    gw: &Arc<Stages>,
    ctx: &CallContext,
    method: &str,
    params: Value,
    (target, then): (Target, Then),
    (server, upstream_name): (&str, &str),
    verdict: Verdict,
) -> CallOutcome {
    match (verdict, then) {
            (Verdict::Refuse(refused), _) => CallOutcome::Refused(refused),
            (Verdict::Allow(_), _) | (Verdict::Ask(_), Then::Proceed) => {
                let exec = Exec::Upstream { server, method, params };
                let outcome = execute(gw, ctx, exec).await;
                // Updates of a resource reach only the sessions whose subscription the upstream accepted.
                if let (Target::Resource { uri }, CallOutcome::Complete(..), "resources/subscribe") =
                    (&target, &outcome, method)
                {
                    if let Some(session) = ctx.requester.as_ref().and_then(|r| r.client()) {
                        session.subscribed(server, uri);
                    }
                }
                outcome
            }
            (Verdict::Ask(d), Then::Refuse) => CallOutcome::Refused(
                Refusal::new(
                    RefusalCode::Policy(d.reason),
                    format!(
                        "toolgate refused this completion: its reference needs a human's approval ({}), and \
                         completions are not held for one",
                        d.reason.as_str()
                    ),
                )
                .with_decision(d),
            ),
            (Verdict::Ask(d), Then::Hold) => {
                let (kind, target, exposed) = match &target {
                    Target::Prompt { name } => (Kind::Prompt, upstream_name.to_owned(), name.clone()),
                    Target::Resource { uri } => (Kind::Resource, uri.clone(), uri.clone()),
                };
                let arguments = match kind {
                    Kind::Prompt => params.get("arguments").cloned().unwrap_or_else(|| json!({})),
                    Kind::ToolCall | Kind::Resource | Kind::CodeRun => json!({}),
                };
                let snapshot = Snapshot {
                    kind,
                    server: server.to_owned(),
                    tool: target,
                    exposed,
                    arguments,
                    definition_sha256: String::new(),
                    command: None,
                    note: None,
                };
                super::approval_stage(gw, ctx, snapshot, d).await
            }
        }
}

/// `resources/unsubscribe`: this session stops hearing of the URI at once (stopping notifications reveals and
/// runs nothing); the upstream's subscription is shared, so it is told only when no other session is still
/// subscribed there, and only when the policy does not refuse the resource. Recorded like every request.
async fn unsubscribe(
    gw: &Arc<Stages>,
    ctx: &CallContext,
    finish: &mut Finish,
    params: Value,
) -> CallOutcome {
    let uri = params
        .get("uri")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let Some(server) = gw.aggregate().route_resource(&uri).map(str::to_owned) else {
        return no_resource(&uri);
    };
    finish.routed(&server, "resources/unsubscribe");
    finish.touches(vec![uri.clone()]);
    let session = ctx.requester.as_ref().and_then(|r| r.client());
    let last = session.is_none_or(|s| s.unsubscribe(&server, &uri));
    if let Some(refused) = audit_refusal(gw, &format!("unsubscribing from {uri}")) {
        return CallOutcome::Refused(refused);
    }
    let verdict = ctx.guard.check_resource(&server, &uri);
    finish.decide(super::record_decision(&verdict));
    finish.commit();
    match verdict {
        Verdict::Refuse(refused) => CallOutcome::Refused(refused),
        _ if !last => CallOutcome::complete(json!({})),
        _ => {
            let method = "resources/unsubscribe";
            let exec = Exec::Upstream {
                server: &server,
                method,
                params,
            };
            execute(gw, ctx, exec).await
        }
    }
}

fn no_resource(uri: &str) -> CallOutcome {
    CallOutcome::Refused(Refusal::new(
        RefusalCode::UnknownTarget,
        format!("no upstream offers the resource {uri:?}"),
    ))
}
