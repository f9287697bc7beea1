//! The stages of one tool call, in their order: route → audit gate → pins → guard → pre-hooks → decision record
//! (→ `toolgate_resume` re-entering after the approval stage) → audit gate again → rate limits (`rate`) →
//! approval → execute. Each stage is a function here or in the module named; `stages` is the one place their
//! order is written for tool calls.

use super::{
    approval_stage, audit_refusal, execute, record_decision, resume_stage, traced, CallContext,
    Finish, Origin,
};
use crate::calls;
use crate::guard::{Verdict, OWN_SERVER};
use crate::hooks::Hooked;
use crate::outcome::{CallOutcome, Refusal, RefusalCode};
use crate::own::OwnTool;
use crate::record::RecordDecision;
use crate::snapshot::{Kind, Snapshot};
use crate::stages::Stages;
use serde_json::Value;
use std::sync::Arc;

/// A tool call once routed.
struct Routed {
    /// The exposed name (any spelling resolved).
    name: String,
    server: String,
    tool: String,
}

impl Routed {
    /// `toolgate_status` answers even while the audit log cannot be written, so an agent can see why.
    fn audit_exempt(&self) -> bool {
        OwnTool::parse(&self.server, &self.tool).is_some_and(|t| t.is_audit_exempt())
    }
}

pub(super) async fn stages(
    gw: &Arc<Stages>,
    ctx: &CallContext,
    finish: &mut Finish,
    name: String,
    params: Value,
    arguments: Value,
) -> CallOutcome {
    let routing = finish.stage("route");
    let (r, catalog) = match route(gw, &name, &params) {
        Ok(routed) => routed,
        Err(refused) => return CallOutcome::Refused(refused),
    };
    // Read in the catalog the call was routed in, not copied.
    let definition = catalog.tool_definition(&r.name);
    drop(routing);
    finish.routed(&r.server, &r.tool);
    // The caller's credentials for the server (`credentials`): named in the records; one granted only to others
    // refuses the call once it is decided, before it runs or asks anyone.
    let granted = gw.credentials().for_caller(&r.server, ctx);
    if let Ok(used) = &granted {
        finish.credentials(used.names.clone());
    }
    if let Some(refused) =
        crate::codemode::route_refusal(gw.opts.code.on(), ctx, &r.server, &r.tool, &r.name)
    {
        return CallOutcome::Refused(refused);
    }
    if let Some(refused) = audit_refusal(gw, &r.name).filter(|_| !r.audit_exempt()) {
        return CallOutcome::Refused(refused);
    }
    let deciding = finish.stage("decide");
    let (verdict, note, hooked) = match decide(gw, ctx, finish, &r, definition, &arguments).await {
        Ok(decided) => decided,
        Err(refused) => return CallOutcome::Refused(refused),
    };
    drop(deciding);
    finish.decide(record_decision(&verdict));
    // Post-hooks see calls that went ahead (ran or were held), not ones refused before running.
    if !matches!(verdict, Verdict::Refuse(_)) {
        finish.post_hooks(&gw.recorder, hooked);
    }
    if let (Verdict::Allow(_), Some(only)) = (
        &verdict,
        OwnTool::parse(&r.server, &r.tool).and_then(|t| t.resumes()),
    ) {
        // A resume may wait for the human's decision: the catalog is not kept meanwhile.
        drop(catalog);
        let stage = finish.stage("execute");
        let resumed = resume_stage(gw, ctx, finish, &arguments, only);
        return traced(stage, Box::pin(resumed)).await;
    }
    let recording = finish.stage("record");
    finish.commit();
    drop(recording);
    // Writing the decision may have found the audit writer stalled (bounded wait): then nothing runs.
    let refused_now = matches!(verdict, Verdict::Refuse(_)) || r.audit_exempt();
    if let Some(refused) = audit_refusal(gw, &r.name).filter(|_| !refused_now) {
        return CallOutcome::Refused(refused);
    }
    if let (Err(refused), false) = (granted, refused_now) {
        return CallOutcome::Refused(refused);
    }
    if let Some(refused) = rate_stage(gw, ctx, &r).filter(|_| !refused_now) {
        return CallOutcome::Refused(refused);
    }
    // A held call's snapshot binds the definition's hash. Nothing later reads the catalog, which is not kept
    // while the call runs or waits for a human (a long wait would keep an old catalog alive).
    let definition_sha256 = matches!(verdict, Verdict::Ask(_))
        .then(|| definition.map(store::definition_hash).unwrap_or_default());
    drop(catalog);
    let exec = || execute::tool(&r.server, &r.tool, params, &arguments);
    match verdict {
        Verdict::Refuse(refused) => CallOutcome::Refused(refused),
        Verdict::Allow(_) => traced(finish.stage("execute"), execute(gw, ctx, exec())).await,
        // A program's call is never held: an ask runs under the run's approval, or is refused.
        Verdict::Ask(d) if matches!(ctx.origin, Origin::CodeRun { .. }) => {
            let call = (r.name.as_str(), &arguments);
            match crate::codemode::program_ask(ctx, call, &r.server, &r.tool, &d) {
                Ok(()) => traced(finish.stage("execute"), execute(gw, ctx, exec())).await,
                Err(refused) => CallOutcome::Refused(refused),
            }
        }
        Verdict::Ask(d) => match snapshot(gw, &r, &arguments, note, definition_sha256) {
            // The approval stage runs the approved call too, so an upstream's spans are its children.
            Ok(snapshot) => {
                let held = approval_stage(gw, ctx, snapshot, d);
                traced(finish.stage("approval"), Box::pin(held)).await
            }
            Err(answer) => answer,
        },
    }
}

/// Rate limits (`rate`): a call that goes ahead takes its tokens first.
fn rate_stage(gw: &Stages, ctx: &CallContext, r: &Routed) -> Option<Refusal> {
    let limits = &gw.opts.rate_limits;
    if !limits.any() {
        return None;
    }
    let identity = crate::codemode::bounds::identity(ctx);
    let subject = crate::rate::Subject {
        identity: &identity,
        tool: &r.name,
        server: &r.server,
    };
    crate::rate::check(
        limits,
        gw.state.as_deref(),
        &gw.opts.telemetry,
        &subject,
        store::Timestamp::now(),
    )
}

/// Route: any spelling of a tool names it (`spellings`); one that could mean two tools names none.
fn route(
    gw: &Stages,
    name: &str,
    params: &Value,
) -> Result<(Routed, Arc<crate::aggregate::Aggregate>), Refusal> {
    let unknown = |why: String| Refusal::new(RefusalCode::UnknownTarget, why);
    if params.get("name").and_then(Value::as_str).is_none() {
        return Err(unknown("tools/call needs a string \"name\"".to_owned()));
    }
    let agg = gw.aggregate();
    let name = match agg.spelled(name) {
        crate::aggregate::Spelled::Tool(exposed) => exposed.to_owned(),
        crate::aggregate::Spelled::Collision(why) => {
            return Err(unknown(format!("toolgate did not call {name:?}: {why}")));
        }
        crate::aggregate::Spelled::Unknown => name.to_owned(),
    };
    let (server, tool) = match agg.route_tool(&name) {
        Some(route) => (route.server.clone(), route.name.clone()),
        None if agg.tool_definition(&name).is_some() => (OWN_SERVER.to_owned(), name.clone()),
        None => return Err(unknown(format!("unknown tool: {name}"))),
    };
    Ok((Routed { name, server, tool }, agg))
}

/// Pins, then the guard (argument schema and policy), then the pre-hooks, which may only make the call
/// stricter (a hook's decision replaces the policy's in the records): the verdict, the hook's note for a held
/// call, and the post-hooks to run.
async fn decide(
    gw: &Arc<Stages>,
    ctx: &CallContext,
    finish: &mut Finish,
    r: &Routed,
    definition: Option<&Value>,
    arguments: &Value,
) -> Result<(Verdict, Option<String>, Option<Hooked>), Refusal> {
    let quarantined = super::pin_stage(gw, &r.server, &r.tool, &r.name)?;
    let (mut verdict, resources) = ctx.guard.check(&r.server, &r.tool, definition, arguments);
    finish.touches(resources);
    if let (true, Verdict::Allow(d)) = (quarantined, &verdict) {
        // `"pins": {"onChange": "ask"}`: a changed definition is shown, and each call asks a human.
        let mut d = d.clone();
        d.effect = policy::Effect::Ask;
        d.reason = policy::ReasonCode::AskRule;
        verdict = Verdict::Ask(d.ruled_by(Some(crate::pins::QUARANTINE_RULE.to_owned())));
    }
    let hooked = match &verdict {
        Verdict::Refuse(_) => None,
        Verdict::Allow(d) | Verdict::Ask(d) => {
            let decision = RecordDecision::of(d);
            gw.hook_call(ctx, &r.name, &r.server, &r.tool, &decision, arguments)
        }
    };
    Ok(match &hooked {
        Some(h) => {
            let t = gw.pre_hooks(h, verdict, arguments).await;
            (t.verdict, t.note, hooked)
        }
        None => (verdict, None, None),
    })
}

/// What a held tool call stores for its human: for `shell_run` the command is resolved first, so the approval
/// binds it.
fn snapshot(
    gw: &Stages,
    r: &Routed,
    arguments: &Value,
    note: Option<String>,
    definition_sha256: Option<String>,
) -> Result<Snapshot, CallOutcome> {
    let command = calls::prepare_command(gw, &r.server, &r.tool, arguments)?;
    Ok(Snapshot {
        kind: Kind::ToolCall,
        server: r.server.clone(),
        tool: r.tool.clone(),
        exposed: r.name.clone(),
        arguments: arguments.clone(),
        definition_sha256: definition_sha256.unwrap_or_default(),
        command,
        note,
    })
}
