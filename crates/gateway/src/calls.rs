//! The execute stage: what runs once a governed request is decided (and approved when it had to be) —
//! toolgate's intrinsic tools, its built-in workspace tools, and requests forwarded to the owning upstream with
//! the requester's progress token remapped. Deciding and recording are the pipeline's; nothing here decides.
//! Each step is a function of the `Stages` (the ports) and, where it reaches the requester, the call's `CallContext`.

use crate::approval;
use crate::bridge;
use crate::client::ClientEra;
use crate::guard::{Verdict, OWN_SERVER};
use crate::outbox::Stream;
use crate::outcome::{CallError, CallOutcome, Completion, Refusal, RefusalCode};
use crate::own::{OwnTool, Surface};
use crate::pipeline::context::CallContext;
use crate::pipeline::finish::Finish;
use crate::pipeline::request_id;
use crate::stages::Stages;
use crate::status;
use serde_json::{json, Value};
use std::sync::Arc;
use upstream::Era;

/// How many of the last audit records `toolgate_audit_recent` searches for an authenticated caller's own.
const OWN_RECORDS_SCAN: usize = 1000;

/// toolgate's own tools, after the policy allowed them (`toolgate_resume` is the pipeline's: it re-enters
/// it).
pub(crate) async fn intrinsic(
    gw: &Stages,
    ctx: &CallContext,
    tool: &OwnTool,
    arguments: &Value,
) -> CallOutcome {
    let result = match tool {
        OwnTool::Status => status::result(
            &gw.statuses(),
            &gw.aggregate().held,
            &gw.pins(),
            gw.opts.quarantine_asks,
            &gw.audit_health(),
        ),
        OwnTool::RequestStatus => {
            let principal = ctx.principal.as_deref();
            return approval::request_status(gw, principal, &request_id(arguments));
        }
        OwnTool::Capabilities if gw.opts.surface == Surface::ToolHub => {
            crate::toolhub::capabilities(&toolhub_limits(gw))
        }
        OwnTool::Capabilities => {
            let a = &gw.opts.approvals;
            crate::intrinsics::capabilities(
                approval_gated(gw, &ctx.guard),
                a.wait.value.as_secs(),
                a.expire.value.as_secs(),
                gw.opts.limits.max_message_bytes,
            )
        }
        OwnTool::Ping if gw.opts.surface == Surface::ToolHub => crate::toolhub::ping(arguments),
        OwnTool::Ping => json!({"content": [{"type": "text", "text": "pong"}]}),
        OwnTool::SearchTools => return crate::codemode::search(gw, &ctx.guard, arguments),
        OwnTool::AuditRecent => {
            let limit = arguments
                .get("limit")
                .and_then(Value::as_u64)
                .unwrap_or(20)
                .min(50) as usize;
            let records = match (&gw.state, &ctx.principal) {
                (None, _) => Vec::new(),
                (Some(s), None) => s.audit_tail(limit),
                // An authenticated HTTP caller sees its own calls only, never another identity's: its most
                // recent among the last records written.
                (Some(s), Some(me)) => {
                    let mine: Vec<Value> = s
                        .audit_tail(OWN_RECORDS_SCAN)
                        .into_iter()
                        .filter(|r| r.get("principal").and_then(Value::as_str) == Some(me))
                        .collect();
                    let skip = mine.len().saturating_sub(limit);
                    mine.into_iter().skip(skip).collect()
                }
            };
            crate::intrinsics::audit_recent(records)
        }
        OwnTool::Builtin(name) => {
            let caller = crate::codemode::bounds::identity(ctx);
            return run_builtin(gw, name, arguments.clone(), None, &caller).await;
        }
        // The pipeline's own: resume re-enters it, and a program runs in the call's context.
        OwnTool::Resume | OwnTool::ResumeOf(_) | OwnTool::RunCode => {
            let why = format!("{} is not run as an intrinsic", tool.name());
            return refused(RefusalCode::Failed, why);
        }
    };
    CallOutcome::Complete(result, Completion::Succeeded)
}

/// The public limits `toolhub.capabilities` reports: the workspace tools' as configured.
fn toolhub_limits(gw: &Stages) -> crate::toolhub::Limits {
    let config = gw.builtin.as_ref().map(|b| b.config().clone());
    let config = config.unwrap_or_else(|| builtin::BuiltinConfig::new("/"));
    crate::toolhub::Limits {
        max_read_file_bytes: config.limits.max_read_bytes,
        max_write_bytes: config.limits.max_write_bytes,
        max_patch_chars: config.limits.max_patch_bytes,
        max_shell_timeout_seconds: config.shell.max_timeout_seconds,
        output_retained: sandbox::MAX_CAPTURE_BYTES_PER_STREAM as u64,
        approval_expires_seconds: gw.opts.approvals.expire.value.as_secs(),
    }
}

/// For `shell_run`, resolves the command now, so the approval binds the executable's identity; a command
/// that cannot be resolved is refused before anyone is asked.
pub(crate) fn prepare_command(
    gw: &Stages,
    server: &str,
    tool: &str,
    arguments: &Value,
) -> Result<Option<Value>, CallOutcome> {
    let (OWN_SERVER, builtin::SHELL_RUN, Some(b)) = (server, tool, &gw.builtin) else {
        return Ok(None);
    };
    match b.prepare_command(arguments.clone()) {
        Ok(snapshot) => serde_json::to_value(snapshot).map(Some).map_err(|e| {
            refused(
                RefusalCode::Failed,
                format!("cannot record the command: {e}"),
            )
        }),
        Err(e) => Err(builtin::ToolOutcome::from_error(&e)
            .map(builtin_outcome)
            .unwrap_or_else(|| refused(RefusalCode::Refused, e.to_string()))),
    }
}

/// Runs one of toolgate's workspace tools for `caller` (after the policy, and the approval when one was needed).
pub(crate) async fn run_builtin(
    gw: &Stages,
    tool: &str,
    arguments: Value,
    command: Option<Value>,
    caller: &str,
) -> CallOutcome {
    let Some(b) = &gw.builtin else {
        return refused(RefusalCode::Failed, format!("toolgate has no tool {tool}"));
    };
    let outcome = match command {
        Some(c) => match serde_json::from_value::<builtin::CommandSnapshot>(c) {
            Ok(snapshot) => b.run_approved(snapshot).await,
            Err(e) => {
                return refused(
                    RefusalCode::Failed,
                    format!("the approved command is unreadable: {e}"),
                )
            }
        },
        None => b.call_as(tool, arguments, caller).await,
    };
    match outcome {
        Ok(o) => builtin_outcome(o),
        Err(e) => builtin::ToolOutcome::from_error(&e)
            .map(builtin_outcome)
            .unwrap_or_else(|| refused(RefusalCode::Failed, e.to_string())),
    }
}

/// Exposed names of tools whose calls the policy would not simply allow with empty arguments: a hint for
/// agents, not a promise (the decision depends on the arguments).
fn approval_gated(gw: &Stages, guard: &crate::guard::Guard) -> Vec<String> {
    let agg = gw.aggregate();
    let empty = Value::Object(Default::default());
    agg.tools
        .iter()
        .zip(&agg.tool_owners)
        .filter(|(_, (server, _))| server != OWN_SERVER)
        .filter_map(|(def, (server, tool))| {
            let verdict = guard.decide_only(server, tool, &empty);
            matches!(verdict, Verdict::Ask(_))
                .then(|| def["name"].as_str().unwrap_or_default().to_owned())
        })
        .collect()
}

/// Sends a request to `server` on behalf of the call's requester, with its progress token replaced by a
/// gateway token, and waits.
pub(crate) async fn forward(
    gw: &Arc<Stages>,
    ctx: &CallContext,
    server: &str,
    method: &str,
    params: Value,
) -> CallOutcome {
    // The caller's credentials for this server (`credentials`): refused when they are granted to others only;
    // header ones go on this request to this server, and the answer is scrubbed of every one's value.
    let credentials = gw.credentials();
    let headers = match credentials.call_headers(server, ctx) {
        Ok(headers) => headers,
        Err(refused) => return CallOutcome::Refused(refused),
    };
    let forwarded = forward_as_granted(gw, ctx, server, method, params);
    let mut outcome = upstream::with_call_headers(headers, forwarded).await;
    credentials.scrub_outcome(server, &mut outcome);
    outcome
}

async fn forward_as_granted(
    gw: &Arc<Stages>,
    ctx: &CallContext,
    server: &str,
    method: &str,
    mut params: Value,
) -> CallOutcome {
    let Some(up) = gw.upstream(server) else {
        return CallOutcome::Failed(CallError::BadRequest(format!("unknown upstream {server}")));
    };
    let conn = match up.connection() {
        Ok(c) => c,
        Err(e) => return CallOutcome::from_upstream(Err(e)),
    };
    // The 2026-07-28 era removed both; its equivalent is a `subscriptions/listen` stream (`bridge::listen`).
    if let (Some(Era::Modern), "resources/subscribe" | "resources/unsubscribe") =
        (conn.era(), method)
    {
        if let Some(outcome) = gw
            .listens
            .forward(&up, Arc::clone(&conn), method, &params)
            .await
        {
            return outcome;
        }
    }
    let progress = replace_progress_token(gw, ctx, server, &mut params);
    let requester = ctx.requester.as_ref().and_then(|r| Some((r.client()?, r)));
    let client_era = requester.as_ref().map(|(c, _)| c.era());
    // A modern client's tool call, prompt get or read on a legacy upstream: what the upstream asks meanwhile
    // becomes input_required (`bridge`).
    let bridged = bridge::BRIDGED.iter().find(|m| **m == method);
    if let (Some((client, _)), Some(ClientEra::Modern), Some(Era::Legacy(_)), Some(method)) =
        (&requester, &client_era, conn.era(), bridged)
    {
        let bridged = bridge::forward(
            gw,
            ctx,
            client.as_ref(),
            &up,
            conn,
            method,
            params,
            progress,
        );
        // Boxed, as are the other paths few calls take: a call's future is as large as its largest path.
        return Box::pin(bridged).await;
    }
    // What the upstream sends on its own while this request runs belongs to `ctx.requester` (the session and
    // client request that caused it); with no client behind the call it goes nowhere (`route`).
    let call = match &requester {
        Some((client, r)) => gw.correlation.begin_logging(
            server,
            client,
            Some(r.request.clone()),
            r.log_level,
            &ctx.trace_id,
        ),
        None => gw.correlation.begin_unowned(server, &ctx.trace_id),
    };
    let answer = conn
        .request_for(
            call.key(),
            method,
            Some(params.clone()),
            up.request_timeout(),
            &ctx.cancel,
        )
        .await;
    // A task the call created is the requester's, under toolgate's id (`tasks`).
    let tool = params
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let answer = match (answer, method) {
        (Ok(v), "tools/call") => {
            match gw.adopt_task((server, tool), requester.as_ref().map(|(c, _)| c), v) {
                Ok(v) => Ok(v),
                Err(why) => return refused(RefusalCode::Failed, why),
            }
        }
        (answer, _) => answer,
    };
    // A modern upstream's input_required for a legacy client: toolgate asks the client and retries (`bridge`).
    match (answer, &requester, client_era) {
        (Ok(answer), Some((client, r)), Some(ClientEra::Legacy(_)))
            if bridge::is_input_required(&answer) =>
        {
            let stream = Stream::Request(r.request.clone());
            let timeout = up.request_timeout();
            Box::pin(bridge::answer_for_legacy(
                gw, ctx, client, stream, &conn, timeout, method, params, answer,
            ))
            .await
        }
        (answer, _, _) => passed_through(gw, ctx, server, answer).await,
    }
}

/// An upstream's answer as the requester receives it. A modern client gets the upstream's input requests as
/// they are, but for the label naming who asks, once each is governed as the request it stands for; the first
/// one refused refuses the call.
async fn passed_through(
    gw: &Stages,
    ctx: &CallContext,
    server: &str,
    mut answer: upstream::Result<Value>,
) -> CallOutcome {
    if let Ok(a) = &mut answer {
        crate::elicit::label_input_requests(server, a);
        if let Some(requests) = bridge::input_requests(a) {
            let governed = crate::pipeline::asks::govern_input_requests(gw, ctx, server, requests);
            match Box::pin(governed).await {
                Err(refused) => return CallOutcome::Refused(refused),
                Ok(governed) => Box::pin(handed(governed, requests)).await,
            }
        }
    }
    CallOutcome::from_upstream(answer)
}

/// The requester's token never reaches the upstream: with a way back it is replaced by a gateway token routed to
/// the requester for as long as the call runs; without one it is dropped.
fn replace_progress_token(
    gw: &Arc<Stages>,
    ctx: &CallContext,
    server: &str,
    params: &mut Value,
) -> Option<crate::progress::ProgressGuard> {
    match (jsonrpc::meta_field(params, "progressToken"), &ctx.progress) {
        (None, _) => None,
        (Some(_), Some(progress)) => {
            let route = gw
                .progress
                .register(progress.clone(), server, gw.credentials());
            params["_meta"]["progressToken"] = Value::String(route.token.clone());
            Some(route)
        }
        (Some(_), None) => {
            if let Some(meta) = params.get_mut("_meta").and_then(Value::as_object_mut) {
                meta.remove("progressToken");
            }
            None
        }
    }
}

/// Input requests handed to the client in a result: their records end there (the answers come with a retry,
/// which is a request of its own).
async fn handed(governed: Vec<(String, Finish)>, requests: &serde_json::Map<String, Value>) {
    for (key, finish) in governed {
        let shown = requests.get(&key).cloned().unwrap_or_default();
        finish.close(&CallOutcome::InputRequired(shown)).await;
    }
}

/// A toolgate refusal as an outcome.
fn refused(code: RefusalCode, message: String) -> CallOutcome {
    CallOutcome::Refused(Refusal::new(code, message))
}

/// A built-in tool's answer, its outcome typed where the tool made it.
fn builtin_outcome(o: builtin::ToolOutcome) -> CallOutcome {
    let completion = match (o.outcome.as_str(), o.is_error) {
        (store::OUTCOME_SUCCEEDED, false) => Completion::Succeeded,
        (name, _) => Completion::Failed(crate::contract::outcome_name(name)),
    };
    CallOutcome::Complete(o.to_call_result(), completion)
}
