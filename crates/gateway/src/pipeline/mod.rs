//! The governed-call pipeline: one path for every request toolgate decides. A tool call — proxied, built-in,
//! intrinsic, or a resume — passes route → audit gate → pins → guard (schema, policy) → pre-hooks → decision
//! record → approval → execute, and leaves through the finishing guard (`finish`), which writes exactly one
//! decision record, at most one finished record, and runs the post-hooks. Prompt gets, resource reads and
//! subscriptions, and completions take the same path without hooks (`reads`). Each stage returns typed values;
//! the wire form is made once, in `wire`.
//!
//! The stages are functions of the request and its `CallContext`; what a session provides (holding for a human,
//! progress, forwarding) is reached through the session the front end passes in.

mod context;
mod finish;
mod reads;

pub(crate) use context::CallContext;
use finish::Finish;

use crate::approval::Snapshot;
use crate::contract;
use crate::errors::to_client;
use crate::guard::{Verdict, OWN_SERVER};
use crate::outcome::{CallError, CallOutcome, Refusal, RefusalCode};
use crate::record::{CallRecord, RecordDecision};
use crate::session::Session;
use crate::snapshot::Kind;
use crate::status;
use crate::wire::{self, Reply, Shape};
use serde_json::Value;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Fail closed on evidence: while the audit log cannot be written nothing runs, because a call that runs must
/// leave a record. Only `toolgate_status` still answers, so an agent can see why.
fn audit_refusal(gateway: &crate::Gateway, what: &str) -> Option<Refusal> {
    let problem = gateway.state.as_ref()?.audit_problem()?;
    let message = format!(
        "toolgate refused {what}: its audit log cannot be written ({problem}); an administrator must repair it \
         (toolgate audit verify, toolgate audit recover)"
    );
    Some(Refusal::new(RefusalCode::AuditUnavailable, message))
}

/// The decision a verdict records.
fn record_decision(verdict: &Verdict) -> RecordDecision {
    match verdict {
        Verdict::Allow(d) | Verdict::Ask(d) => RecordDecision::of(d),
        Verdict::Refuse(r) => match &r.decision {
            Some(d) => RecordDecision::of(d),
            None => RecordDecision::refused(r.code),
        },
    }
}

pub(crate) fn request_id(arguments: &Value) -> String {
    arguments
        .get("request_id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

impl Session {
    /// `tools/call` from this session's client, as the client receives it. toolgate's own answers (a refusal,
    /// a hold, an approval outcome) are fitted to the called tool's `outputSchema`, so that official clients,
    /// which validate structured content, show them.
    pub(crate) async fn call_tool(
        self: &Arc<Self>,
        id: &jsonrpc::Id,
        params: Value,
        cancel: &CancellationToken,
    ) -> Reply {
        let definition = params
            .get("name")
            .and_then(Value::as_str)
            .and_then(|name| self.gateway.aggregate().tool_definition(name).cloned());
        let stream = crate::outbox::Stream::Request(id.clone());
        let ctx = CallContext::client(stream, &params, cancel);
        let outcome = self.govern_call(&ctx, params).await;
        wire::reply(outcome, Shape::ToolResult, definition.as_ref())
    }

    /// Runs one tool call through every stage and the finishing guard.
    pub(crate) async fn govern_call(
        self: &Arc<Self>,
        ctx: &CallContext,
        params: Value,
    ) -> CallOutcome {
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let arguments = params
            .get("arguments")
            .cloned()
            .unwrap_or_else(|| Value::Object(Default::default()));
        let mut finish = Finish::new(&self.gateway, &ctx.trace_id, &name, arguments.clone());
        let outcome = self
            .tool_stages(ctx, &mut finish, name, params, arguments)
            .await;
        tracing::debug!(trace = %ctx.trace_id, origin = ?ctx.origin, outcome = outcome.name(), "tool call");
        finish.close(&outcome).await;
        outcome
    }

    async fn tool_stages(
        self: &Arc<Self>,
        ctx: &CallContext,
        finish: &mut Finish,
        name: String,
        mut params: Value,
        arguments: Value,
    ) -> CallOutcome {
        // Route.
        if params.get("name").and_then(Value::as_str).is_none() {
            let why = "tools/call needs a string \"name\"";
            return CallOutcome::Refused(Refusal::new(RefusalCode::UnknownTarget, why));
        }
        let agg = self.gateway.aggregate();
        let definition = agg.tool_definition(&name).cloned();
        let (server, tool) = match agg.route_tool(&name) {
            Some(route) => (route.server.clone(), route.name.clone()),
            None if definition.is_some() => (OWN_SERVER.to_owned(), name.clone()),
            None => {
                let why = format!("unknown tool: {name}");
                return CallOutcome::Refused(Refusal::new(RefusalCode::UnknownTarget, why));
            }
        };
        drop(agg);
        finish.routed(&server, &tool);
        // Audit gate.
        if !(server == OWN_SERVER && tool == status::TOOL_NAME) {
            if let Some(refused) = audit_refusal(&self.gateway, &name) {
                return CallOutcome::Refused(refused);
            }
        }
        // Pins, then the guard: argument schema and policy.
        let quarantined = match self.pin_stage(&server, &tool, &name) {
            Ok(q) => q,
            Err(refused) => return CallOutcome::Refused(refused),
        };
        let (mut verdict, resources) =
            self.gateway
                .guard
                .check(&server, &tool, definition.as_ref(), &arguments);
        finish.touches(resources);
        if let (true, Verdict::Allow(d)) = (quarantined, &verdict) {
            // `"pins": {"onChange": "ask"}`: a changed definition is shown, and each call asks a human.
            let mut d = d.clone();
            d.effect = policy::Effect::Ask;
            d.reason = policy::ReasonCode::AskRule;
            d.rule_id = Some("pins.quarantine".to_owned());
            verdict = Verdict::Ask(d);
        }
        // Pre-hooks may only make the call stricter; a hook's decision replaces the policy's in the records.
        let hooked = match &verdict {
            Verdict::Refuse(_) => None,
            Verdict::Allow(d) | Verdict::Ask(d) => self.gateway.hook_call(
                &ctx.trace_id,
                &name,
                &server,
                &tool,
                &RecordDecision::of(d),
                &arguments,
            ),
        };
        let (verdict, note) = match &hooked {
            Some(h) => {
                let t = self.gateway.pre_hooks(h, verdict, &arguments).await;
                (t.verdict, t.note)
            }
            None => (verdict, None),
        };
        finish.decide(record_decision(&verdict));
        // Post-hooks see calls that went ahead (ran or were held), not ones refused before running.
        if !matches!(verdict, Verdict::Refuse(_)) {
            finish.post_hooks(hooked);
        }
        if let (Verdict::Allow(_), OWN_SERVER, contract::RESUME_TOOL) =
            (&verdict, server.as_str(), tool.as_str())
        {
            return self.resume_stage(ctx, finish, &arguments).await;
        }
        finish.commit();
        // Writing the decision may have found the audit writer stalled (bounded wait): then nothing runs.
        let exempt = server == OWN_SERVER && tool == status::TOOL_NAME;
        if !exempt && !matches!(verdict, Verdict::Refuse(_)) {
            if let Some(refused) = audit_refusal(&self.gateway, &name) {
                return CallOutcome::Refused(refused);
            }
        }
        match verdict {
            Verdict::Refuse(refused) => CallOutcome::Refused(refused),
            Verdict::Allow(_) if server == OWN_SERVER => self.intrinsic(&tool, &arguments).await,
            Verdict::Allow(_) => {
                params["name"] = Value::String(tool.clone());
                self.forward(&server, "tools/call", params, &ctx.cancel)
                    .await
            }
            Verdict::Ask(d) => {
                // Approval: for `shell_run` the command is resolved first, so the approval binds it.
                let command = match self.prepare_command(&server, &tool, &arguments) {
                    Ok(c) => c,
                    Err(refused) => return refused,
                };
                let snapshot = Snapshot {
                    kind: Kind::ToolCall,
                    server: server.clone(),
                    tool: tool.clone(),
                    exposed: name.clone(),
                    arguments: arguments.clone(),
                    definition_sha256: definition
                        .as_ref()
                        .map(store::definition_hash)
                        .unwrap_or_default(),
                    command,
                    note,
                };
                self.hold(
                    &ctx.trace_id,
                    snapshot,
                    d,
                    ctx.progress.clone(),
                    &ctx.stream,
                    &ctx.cancel,
                )
                .await
                .into_outcome()
            }
        }
    }

    /// Quarantined and flagged definitions: `Ok(true)` when a quarantined tool's calls must ask instead.
    fn pin_stage(&self, server: &str, tool: &str, name: &str) -> Result<bool, Refusal> {
        let pins = self.gateway.pins();
        let Some(pin) = pins.get(&format!("{server}__{tool}")) else {
            return Ok(false);
        };
        let mut quarantined = false;
        if pin.quarantined && !self.gateway.recheck_pin(server, tool) {
            if !self.gateway.opts.quarantine_asks {
                return Err(Refusal::quarantined(name));
            }
            quarantined = true;
        }
        // Flags block unless a human accepted this definition despite them, possibly since the view was built.
        if pin.blocked_by_flags() && self.gateway.flags_still_block(server, tool) {
            return Err(Refusal::flagged(name, &pin.flags));
        }
        Ok(quarantined)
    }

    /// `toolgate_resume` the policy allowed: the approved call is claimed and re-enters after the approval
    /// stage, recorded under the held call's trace id and tool name, with its post-hooks. A request that cannot
    /// be claimed is answered, and recorded as the `toolgate_resume` call it was.
    async fn resume_stage(
        self: &Arc<Self>,
        ctx: &CallContext,
        finish: &mut Finish,
        arguments: &Value,
    ) -> CallOutcome {
        let request_id = request_id(arguments);
        let claimed = match self.claim(&request_id) {
            Ok(c) => c,
            Err(answer) => {
                finish.commit();
                return answer;
            }
        };
        let ctx = ctx.resumed(&claimed.trace_id);
        let s = &claimed.snapshot;
        let decision = RecordDecision::from_snapshot(&claimed.stored)
            .unwrap_or_else(|| RecordDecision::refused(RefusalCode::Failed));
        let hooked = self.gateway.hook_call(
            &ctx.trace_id,
            &s.exposed,
            &s.server,
            &s.tool,
            &decision,
            &s.arguments,
        );
        let (_, resources) = self
            .gateway
            .guard
            .check(&s.server, &s.tool, None, &s.arguments);
        finish.resumed(
            &ctx.trace_id,
            CallRecord {
                trace_id: ctx.trace_id.clone(),
                profile: self.gateway.guard.profile().unwrap_or("default").to_owned(),
                server: s.server.clone(),
                tool: s.tool.clone(),
                arguments: s.arguments.clone(),
                decision,
                resources,
                request_id: Some(request_id),
            },
        );
        finish.post_hooks(hooked);
        match self.execute(s, &ctx.cancel).await {
            // The resume itself succeeded; what failed is the call it ran, which the agent reads as a result.
            CallOutcome::Failed(CallError::Upstream(e)) => match to_client(e) {
                Some(error) => CallOutcome::Refused(Refusal::new(
                    RefusalCode::Failed,
                    format!("the approved call failed upstream: {error}"),
                )),
                None => CallOutcome::Cancelled,
            },
            other => other,
        }
    }
}
