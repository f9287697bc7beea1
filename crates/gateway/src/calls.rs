//! The governed requests: each is routed to its owner, decided by the policy stage (and, for tool calls, by the
//! pre-call hooks, which may only tighten that decision), and only then forwarded.
//! A refused tool call is an ordinary error result that explains itself; a refused read or prompt is a JSON-RPC
//! error with the same explanation. An `ask` holds tool calls, prompts and resource reads alike for a human
//! (see `approval`). Nothing refused reaches an upstream.

use crate::approval::Snapshot;
use crate::contract;
use crate::errors::{invalid_params, to_client};
use crate::guard::{Verdict, OWN_SERVER};
use crate::record::{outcome_of, CallRecord};
use crate::session::Session;
use crate::snapshot::Kind;
use crate::status;
use jsonrpc::error_object;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Instant;
use tokio_util::sync::CancellationToken;

type Outcome = Option<Result<Value, Value>>;

/// A refusal as a JSON-RPC error, for methods whose results have no error shape.
pub(crate) fn refusal_error(result: Value) -> Value {
    let message = result
        .pointer("/content/0/text")
        .and_then(Value::as_str)
        .unwrap_or("refused")
        .to_owned();
    error_object(
        jsonrpc::INVALID_REQUEST,
        message,
        result.get("structuredContent").cloned(),
    )
}

/// A prompt or resource read the policy asks about, as the snapshot a human approves.
fn read_snapshot(
    kind: Kind,
    server: &str,
    target: &str,
    exposed: &str,
    params: &Value,
) -> Snapshot {
    Snapshot {
        kind,
        server: server.to_owned(),
        tool: target.to_owned(),
        exposed: exposed.to_owned(),
        arguments: match kind {
            Kind::Prompt => params
                .get("arguments")
                .cloned()
                .unwrap_or_else(|| json!({})),
            Kind::ToolCall | Kind::Resource => json!({}),
        },
        definition_sha256: String::new(),
        command: None,
        note: None,
    }
}

/// Fail closed on evidence: while the audit log cannot be written nothing runs, because a call that runs must
/// leave a record. Only `toolgate_status` still answers, so an agent can see why.
fn audit_refusal(gateway: &crate::Gateway, what: &str) -> Option<Value> {
    let problem = gateway.state.as_ref()?.audit_problem()?;
    let message = format!(
        "toolgate refused {what}: its audit log cannot be written ({problem}); an administrator must repair it \
         (toolgate audit verify, toolgate audit recover)"
    );
    Some(contract::refused("AUDIT_UNAVAILABLE", message, None))
}

fn request_id(arguments: &Value) -> String {
    arguments
        .get("request_id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

impl Session {
    /// A tool call, its answer fitted to the tool's `outputSchema` when toolgate wrote that answer itself (a
    /// refusal, a hold, an approval outcome), so that official clients, which validate structured content, show it.
    pub(crate) async fn call_tool(
        self: &Arc<Self>,
        params: Value,
        cancel: &CancellationToken,
    ) -> Outcome {
        let definition = params
            .get("name")
            .and_then(Value::as_str)
            .and_then(|name| self.gateway.aggregate().tool_definition(name).cloned());
        let answer = self.govern_call(params, cancel).await;
        answer.map(|a| a.map(|result| contract::fit_to_tool(result, definition.as_ref())))
    }

    async fn govern_call(
        self: &Arc<Self>,
        mut params: Value,
        cancel: &CancellationToken,
    ) -> Outcome {
        let Some(name) = params
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            return Some(Err(invalid_params("tools/call needs a string \"name\"")));
        };
        let agg = self.gateway.aggregate();
        let definition = agg.tool_definition(&name).cloned();
        let arguments = params
            .get("arguments")
            .cloned()
            .unwrap_or_else(|| Value::Object(Default::default()));
        let (server, tool) = match agg.route_tool(&name) {
            Some(route) => (route.server.clone(), route.name.clone()),
            None if definition.is_some() => (OWN_SERVER.to_owned(), name.clone()),
            None => return Some(Err(invalid_params(format!("unknown tool: {name}")))),
        };
        drop(agg);
        if !(server == OWN_SERVER && tool == status::TOOL_NAME) {
            if let Some(refused) = audit_refusal(&self.gateway, &name) {
                return Some(Ok(refused));
            }
        }
        let mut quarantined = false;
        if let Some(pin) = self.gateway.pins().get(&format!("{server}__{tool}")) {
            if pin.quarantined && !self.gateway.recheck_pin(&server, &tool) {
                if !self.gateway.opts.quarantine_asks {
                    return Some(Ok(contract::quarantined(&name)));
                }
                quarantined = true;
            }
            // Flags block unless a human accepted this definition despite them, possibly since the view was built.
            if pin.blocked_by_flags() && self.gateway.flags_still_block(&server, &tool) {
                return Some(Ok(contract::flagged(&name, &pin.flags)));
            }
        }
        let (mut verdict, resources) =
            self.gateway
                .guard
                .check(&server, &tool, definition.as_ref(), &arguments);
        if let (true, Verdict::Allow(d)) = (quarantined, &verdict) {
            // `"pins": {"onChange": "ask"}`: a changed definition is shown, and each call asks a human.
            let mut d = d.clone();
            d.effect = policy::Effect::Ask;
            d.reason = policy::ReasonCode::AskRule;
            d.rule_id = Some("pins.quarantine".to_owned());
            verdict = Verdict::Ask(d);
        }
        let decision = match &verdict {
            Verdict::Allow(d) | Verdict::Ask(d) | Verdict::Refuse(_, Some(d)) => Some(d.clone()),
            Verdict::Refuse(_, None) => None,
        };
        let trace_id = crate::ids::trace_id();

        let record = decision.as_ref().map(|d| CallRecord {
            trace_id: &trace_id,
            profile: self.gateway.guard.profile().unwrap_or("default"),
            server: &server,
            tool: &tool,
            arguments: &arguments,
            decision: d,
            resources,
        });
        if let (Some(r), Some(state)) = (&record, &self.gateway.state) {
            r.decided(state);
            // Queuing the decision may have found the audit writer stalled (bounded wait): then nothing runs.
            let exempt = server == OWN_SERVER && tool == status::TOOL_NAME;
            if let Some(refused) = audit_refusal(&self.gateway, &name).filter(|_| !exempt) {
                return Some(Ok(refused));
            }
        }
        // Pre-hooks may only make the call stricter; a hook's decision replaces the policy's in the records.
        let hooked = self.hook_call(&trace_id, &name, &server, &tool, &verdict, &arguments);
        let (verdict, hook_decision, hook_note) = match &hooked {
            Some(h) => {
                let t = self.pre_hooks(h, verdict, &arguments).await;
                (t.verdict, t.decision, t.note)
            }
            None => (verdict, None, None),
        };
        let record = match (record, &hook_decision) {
            (Some(r), Some(d)) => Some(CallRecord { decision: d, ..r }),
            (r, _) => r,
        };
        if let (Some(r), Some(state), Some(_)) = (&record, &self.gateway.state, &hook_decision) {
            r.decided(state);
        }
        // Post-hooks see calls that went ahead (ran or were held), not ones refused before running.
        let post = hooked.filter(|_| !matches!(verdict, Verdict::Refuse(..)));
        let started = Instant::now();
        let answer = match verdict {
            Verdict::Refuse(refused, _) => Some(Ok(refused)),
            Verdict::Allow(_) if server == OWN_SERVER => {
                Some(Ok(self.intrinsic(&tool, &arguments, cancel).await?))
            }
            Verdict::Allow(_) => {
                params["name"] = Value::String(tool.clone());
                self.forward(&server, "tools/call", params, cancel).await
            }
            Verdict::Ask(d) => {
                let command = match self.prepare_command(&server, &tool, &arguments) {
                    Ok(c) => c,
                    Err(refused) => return Some(Ok(refused)),
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
                    note: hook_note,
                };
                let progress = params.pointer("/_meta/progressToken").cloned();
                self.hold(snapshot, d, progress, cancel)
                    .await
                    .into_tool_outcome()
            }
        };
        if let (Some(r), Some(state)) = (&record, &self.gateway.state) {
            let result = answer.as_ref().and_then(|a| a.as_ref().ok());
            r.finished(state, outcome_of(&answer), result, started.elapsed());
        }
        if let Some(h) = &post {
            let result = answer.as_ref().and_then(|a| a.as_ref().ok());
            self.post_hooks(h, outcome_of(&answer), result, started.elapsed())
                .await;
        }
        answer
    }

    /// toolgate's own tools, after the policy allowed them.
    async fn intrinsic(
        self: &Arc<Self>,
        tool: &str,
        arguments: &Value,
        cancel: &CancellationToken,
    ) -> Option<Value> {
        let gw = &self.gateway;
        Some(match tool {
            status::TOOL_NAME => {
                status::result(&gw.statuses(), &gw.aggregate().held, &gw.audit_health())
            }
            contract::STATUS_TOOL => self.request_status(&request_id(arguments)),
            contract::RESUME_TOOL => match self.resume(&request_id(arguments), cancel).await? {
                Ok(v) => v,
                Err(e) => contract::refused(
                    "FAILED",
                    format!("the approved call failed upstream: {e}"),
                    None,
                ),
            },
            contract::CAPABILITIES_TOOL => {
                let a = &gw.opts.approvals;
                crate::intrinsics::capabilities(
                    self.approval_gated(),
                    a.wait.value.as_secs(),
                    a.expire.value.as_secs(),
                    gw.opts.limits.max_message_bytes,
                )
            }
            crate::intrinsics::PING_TOOL => json!({"content": [{"type": "text", "text": "pong"}]}),
            crate::intrinsics::AUDIT_RECENT_TOOL => {
                let limit = arguments
                    .get("limit")
                    .and_then(Value::as_u64)
                    .unwrap_or(20)
                    .min(50) as usize;
                crate::intrinsics::audit_recent(
                    gw.state
                        .as_ref()
                        .map(|s| s.audit_tail(limit))
                        .unwrap_or_default(),
                )
            }
            other => self.run_builtin(other, arguments.clone(), None).await,
        })
    }

    /// For `shell_run`, resolves the command now, so the approval binds the executable's identity; a command
    /// that cannot be resolved is refused before anyone is asked.
    fn prepare_command(
        &self,
        server: &str,
        tool: &str,
        arguments: &Value,
    ) -> Result<Option<Value>, Value> {
        let (OWN_SERVER, builtin::SHELL_RUN, Some(b)) = (server, tool, &self.gateway.builtin)
        else {
            return Ok(None);
        };
        match b.prepare_command(arguments.clone()) {
            Ok(snapshot) => serde_json::to_value(snapshot).map(Some).map_err(|e| {
                contract::refused("FAILED", format!("cannot record the command: {e}"), None)
            }),
            Err(e) => Err(builtin::ToolOutcome::from_error(&e)
                .map(|o| o.to_call_result())
                .unwrap_or_else(|| contract::refused("REFUSED", e.to_string(), None))),
        }
    }

    /// Runs one of toolgate's workspace tools (after the policy, and the approval when one was needed).
    pub(crate) async fn run_builtin(
        &self,
        tool: &str,
        arguments: Value,
        command: Option<Value>,
    ) -> Value {
        let Some(b) = &self.gateway.builtin else {
            return contract::refused("FAILED", format!("toolgate has no tool {tool}"), None);
        };
        let outcome = match command {
            Some(c) => match serde_json::from_value::<builtin::CommandSnapshot>(c) {
                Ok(snapshot) => b.run_approved(snapshot).await,
                Err(e) => {
                    return contract::refused(
                        "FAILED",
                        format!("the approved command is unreadable: {e}"),
                        None,
                    )
                }
            },
            None => b.call(tool, arguments).await,
        };
        match outcome {
            Ok(o) => o.to_call_result(),
            Err(e) => builtin::ToolOutcome::from_error(&e)
                .map(|o| o.to_call_result())
                .unwrap_or_else(|| contract::refused("FAILED", e.to_string(), None)),
        }
    }

    /// Exposed names of tools whose calls the policy would not simply allow with empty arguments: a hint for
    /// agents, not a promise (the decision depends on the arguments).
    fn approval_gated(&self) -> Vec<String> {
        let agg = self.gateway.aggregate();
        let empty = Value::Object(Default::default());
        agg.tools
            .iter()
            .zip(&agg.tool_owners)
            .filter(|(_, (server, _))| server != OWN_SERVER)
            .filter_map(|(def, (server, tool))| {
                let verdict = self.gateway.guard.decide_only(server, tool, &empty);
                matches!(verdict, Verdict::Ask(_))
                    .then(|| def["name"].as_str().unwrap_or_default().to_owned())
            })
            .collect()
    }

    pub(crate) async fn get_prompt(
        self: &Arc<Self>,
        mut params: Value,
        cancel: &CancellationToken,
    ) -> Outcome {
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let Some(route) = self.gateway.aggregate().route_prompt(&name).cloned() else {
            return Some(Err(invalid_params(format!("unknown prompt: {name}"))));
        };
        if let Some(refused) = audit_refusal(&self.gateway, &format!("the prompt {name}")) {
            return Some(Err(refusal_error(refused)));
        }
        match self.gateway.guard.check_prompt(&route.server, &route.name) {
            Verdict::Allow(_) => {}
            Verdict::Refuse(refused, _) => return Some(Err(refusal_error(refused))),
            Verdict::Ask(d) => {
                let snapshot =
                    read_snapshot(Kind::Prompt, &route.server, &route.name, &name, &params);
                let progress = params.pointer("/_meta/progressToken").cloned();
                return self
                    .hold(snapshot, d, progress, cancel)
                    .await
                    .into_read_outcome();
            }
        }
        params["name"] = Value::String(route.name);
        self.forward(&route.server, "prompts/get", params, cancel)
            .await
    }

    pub(crate) async fn by_uri(
        self: &Arc<Self>,
        method: &str,
        params: Value,
        cancel: &CancellationToken,
    ) -> Outcome {
        let uri = params
            .get("uri")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let Some(server) = self
            .gateway
            .aggregate()
            .route_resource(uri)
            .map(str::to_owned)
        else {
            return Some(Err(invalid_params(format!(
                "no upstream offers the resource {uri:?}"
            ))));
        };
        if method == "resources/read" {
            if let Some(refused) = audit_refusal(&self.gateway, &format!("reading {uri}")) {
                return Some(Err(refusal_error(refused)));
            }
            match self.gateway.guard.check_resource(&server, uri) {
                Verdict::Allow(_) => {}
                Verdict::Refuse(refused, _) => return Some(Err(refusal_error(refused))),
                Verdict::Ask(d) => {
                    let snapshot = read_snapshot(Kind::Resource, &server, uri, uri, &params);
                    let progress = params.pointer("/_meta/progressToken").cloned();
                    return self
                        .hold(snapshot, d, progress, cancel)
                        .await
                        .into_read_outcome();
                }
            }
        }
        self.forward(&server, method, params, cancel).await
    }

    pub(crate) async fn complete(
        self: &Arc<Self>,
        mut params: Value,
        cancel: &CancellationToken,
    ) -> Outcome {
        let agg = self.gateway.aggregate();
        let server = match params.pointer("/ref/type").and_then(Value::as_str) {
            Some("ref/prompt") => {
                let name = params
                    .pointer("/ref/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                agg.route_prompt(name).cloned().map(|r| {
                    params["ref"]["name"] = Value::String(r.name);
                    r.server
                })
            }
            Some("ref/resource") => {
                let uri = params
                    .pointer("/ref/uri")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                agg.route_resource(uri).map(str::to_owned)
            }
            _ => {
                return Some(Err(invalid_params(
                    "completion/complete needs ref.type ref/prompt or ref/resource",
                )))
            }
        };
        match server {
            Some(s) => {
                self.forward(&s, "completion/complete", params, cancel)
                    .await
            }
            None => Some(Err(invalid_params(
                "no upstream owns the completion reference",
            ))),
        }
    }

    /// Sends a request to `server` with the client's progress token replaced by a gateway token, and waits.
    pub(crate) async fn forward(
        self: &Arc<Self>,
        server: &str,
        method: &str,
        mut params: Value,
        cancel: &CancellationToken,
    ) -> Outcome {
        let Some(up) = self.gateway.upstream(server).cloned() else {
            return Some(Err(invalid_params(format!("unknown upstream {server}"))));
        };
        let conn = match up.connection() {
            Ok(c) => c,
            Err(e) => return to_client(e).map(Err),
        };
        let client_token = params.pointer("/_meta/progressToken").cloned();
        let _guard = client_token.map(|t| {
            let guard = self.gateway.register_progress(self, t);
            params["_meta"]["progressToken"] = Value::String(guard.token.clone());
            guard
        });
        match conn
            .request(method, Some(params), up.request_timeout(), cancel)
            .await
        {
            Ok(result) => Some(Ok(result)),
            Err(e) => to_client(e).map(Err),
        }
    }
}
