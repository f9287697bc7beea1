//! The approval stage: an `ask` becomes a request that a human decides out of band (the admin CLI, the watch
//! terminal, or — when the client declares it and config allows — MCP elicitation, never the only channel).
//!
//! A call is held up to `approvals.wait_seconds` while the store is polled (with progress notifications when the
//! client asked for progress); approved in time, it runs as if nothing happened. Otherwise the client gets a
//! Contract V1 handle and resumes later with `toolgate_resume`, which runs exactly the stored snapshot, once.
//! No MCP tool can approve or reject anything.

use crate::contract;
use crate::session::Session;
use crate::state::State;
use policy::Decision;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};
use store::{ApprovalStatus, Timestamp};
use tokio_util::sync::CancellationToken;

/// How often the held call looks at the store. A human takes seconds; this keeps the added delay small.
const POLL: Duration = Duration::from_millis(200);
/// How often a held call tells the client it is still waiting.
const PROGRESS_EVERY: Duration = Duration::from_secs(2);

type Outcome = Option<Result<Value, Value>>;

/// Exactly what will run if a human approves: stored as the request's protected snapshot.
#[derive(Clone, Debug)]
pub(crate) struct Snapshot {
    pub server: String,
    pub tool: String,
    pub exposed: String,
    pub arguments: Value,
    pub definition_sha256: String,
    /// For `shell_run`: the resolved command (executable identity, argv, cwd, environment) that will run.
    pub command: Option<Value>,
    /// Why a hook asked, for the human who decides.
    pub note: Option<String>,
}

impl Snapshot {
    fn to_json(&self, decision: &Decision) -> Value {
        json!({
            "kind": "tools/call",
            "server": self.server,
            "tool": self.tool,
            "exposed": self.exposed,
            "arguments": self.arguments,
            "definition_sha256": self.definition_sha256,
            "command": self.command,
            "note": self.note,
            "decision": {"effect": decision.effect, "reason": decision.reason.as_str(),
                         "rule_id": decision.rule_id, "operation": decision.operation},
        })
    }

    fn from_json(v: &Value) -> Option<Snapshot> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        if s("kind").as_deref() != Some("tools/call") {
            return None;
        }
        Some(Snapshot {
            server: s("server")?,
            tool: s("tool")?,
            exposed: s("exposed")?,
            arguments: v.get("arguments").cloned().unwrap_or_else(|| json!({})),
            definition_sha256: s("definition_sha256")?,
            command: v.get("command").filter(|c| !c.is_null()).cloned(),
            note: v.get("note").and_then(Value::as_str).map(str::to_owned),
        })
    }
}

fn now() -> Timestamp {
    Timestamp::now()
}

impl Session {
    /// Handles an `ask`: a session grant lets it through; otherwise a request is created and the call is held.
    pub(crate) async fn hold(
        self: &Arc<Self>,
        snapshot: Snapshot,
        decision: Decision,
        progress: Option<Value>,
        cancel: &CancellationToken,
    ) -> Outcome {
        let Some(state) = self.gateway.state.clone() else {
            return Some(Ok(contract::no_approval_channel(&decision)));
        };
        let tool_id = format!("{}__{}", snapshot.server, snapshot.tool);
        let granted =
            state.store(|s| s.session_grant_valid(&self.id, &tool_id, &snapshot.definition_sha256));
        if granted.unwrap_or(false) {
            return self.execute(&snapshot, cancel).await;
        }
        let trace_id = crate::ids::trace_id();
        let expires =
            now().plus_millis(self.gateway.opts.approvals.expire.value.as_millis() as i64);
        let created = state
            .store(|s| s.create_request(&trace_id, &snapshot.to_json(&decision), now(), expires));
        let approval = match created {
            Ok(a) => a,
            Err(e) => {
                let msg = format!(
                    "this call needs approval, and the approval store refused a new request ({e})"
                );
                return Some(Ok(contract::refused(
                    "APPROVAL_STORE_REFUSED",
                    msg,
                    Some(&trace_id),
                )));
            }
        };
        state.audit(&crate::record::approval_event(
            &trace_id,
            &approval.id,
            "PENDING",
            &snapshot,
            &decision,
        ));
        tracing::info!(request = %approval.id, tool = %tool_id, "approval requested");
        if self.gateway.opts.approvals.elicitation.value && self.can_elicit() {
            let session = Arc::clone(self);
            let (id, tool, hash) = (
                approval.id.clone(),
                tool_id.clone(),
                snapshot.definition_sha256.clone(),
            );
            tokio::spawn(async move { session.elicit(&id, &tool, &hash).await });
        }
        let deadline = Instant::now() + self.gateway.opts.approvals.wait.value;
        let mut next_progress = Instant::now();
        loop {
            let current = match state.store(|s| s.get_request(&approval.id, now())) {
                Ok(a) => a,
                Err(e) => {
                    return Some(Ok(contract::refused(
                        "FAILED",
                        format!("approval lookup failed: {e}"),
                        None,
                    )))
                }
            };
            match current.status {
                ApprovalStatus::Pending => {}
                ApprovalStatus::Approved => {
                    return self.resume_approved(&state, &current.id, cancel).await
                }
                _ => return Some(Ok(self.status_outcome(&current.handle(), &trace_id))),
            }
            if Instant::now() >= deadline {
                let msg = format!(
                    "this call needs a human's approval; request {} is pending. An operator approves it with \
                     `toolgate approvals approve {}`; then call {} with this request_id.",
                    approval.id,
                    approval.id,
                    contract::RESUME_TOOL
                );
                return Some(Ok(contract::approval_outcome(
                    "APPROVAL_REQUIRED",
                    &trace_id,
                    &current.handle(),
                    msg,
                    false,
                )));
            }
            if let (Some(token), true) = (&progress, Instant::now() >= next_progress) {
                let message = format!("waiting for approval of request {}", approval.id);
                self.notify(
                    "notifications/progress",
                    Some(json!({"progressToken": token, "progress": 0, "message": message})),
                )
                .await;
                next_progress = Instant::now() + PROGRESS_EVERY;
            }
            tokio::select! {
                () = tokio::time::sleep(POLL) => {}
                // The client gave up; the request stays pending and can still be approved and resumed.
                () = cancel.cancelled() => return None,
            }
        }
    }

    /// `toolgate_request_status`: strictly read-only.
    pub(crate) fn request_status(&self, request_id: &str) -> Value {
        let Some(state) = &self.gateway.state else {
            return not_found(request_id);
        };
        match state.store(|s| s.get_request(request_id, now())) {
            Ok(a) => self.status_outcome(&a.handle(), &a.trace_id),
            Err(_) => not_found(request_id),
        }
    }

    /// `toolgate_resume`: runs exactly the approved snapshot, once.
    pub(crate) async fn resume(
        self: &Arc<Self>,
        request_id: &str,
        cancel: &CancellationToken,
    ) -> Outcome {
        let Some(state) = self.gateway.state.clone() else {
            return Some(Ok(not_found(request_id)));
        };
        match state.store(|s| s.get_request(request_id, now())) {
            Ok(a) if a.status == ApprovalStatus::Approved => {
                self.resume_approved(&state, request_id, cancel).await
            }
            Ok(a) => Some(Ok(self.status_outcome(&a.handle(), &a.trace_id))),
            Err(_) => Some(Ok(not_found(request_id))),
        }
    }

    /// Consumes the approval (atomically: of concurrent resumers exactly one wins) and runs its snapshot.
    async fn resume_approved(
        self: &Arc<Self>,
        state: &Arc<State>,
        id: &str,
        cancel: &CancellationToken,
    ) -> Outcome {
        let consumed = match state.store(|s| s.consume(id, now())) {
            Ok(a) => a,
            Err(_) => {
                // Someone else consumed it first, or it expired in between: report what it is now.
                return Some(Ok(match state.store(|s| s.get_request(id, now())) {
                    Ok(a) => self.status_outcome(&a.handle(), &a.trace_id),
                    Err(_) => not_found(id),
                }));
            }
        };
        let Some(snapshot) = Snapshot::from_json(&consumed.snapshot) else {
            return Some(Ok(contract::refused(
                "FAILED",
                "the approved request is not a tool call".into(),
                None,
            )));
        };
        state.audit(&crate::record::consumed_event(
            &consumed.trace_id,
            id,
            &snapshot,
        ));
        self.execute(&snapshot, cancel).await
    }

    fn status_outcome(&self, handle: &store::ApprovalHandle, trace_id: &str) -> Value {
        let id = &handle.request_id;
        let (outcome, message) = match handle.status {
            ApprovalStatus::Pending => (
                "APPROVAL_PENDING",
                format!("request {id} is still waiting for a human"),
            ),
            ApprovalStatus::Approved => (
                "APPROVAL_APPROVED",
                format!(
                    "request {id} is approved; call {} to run it",
                    contract::RESUME_TOOL
                ),
            ),
            ApprovalStatus::Rejected => (
                "APPROVAL_REJECTED",
                format!("request {id} was rejected; it will not run"),
            ),
            ApprovalStatus::Expired => (
                "APPROVAL_EXPIRED",
                format!("request {id} expired before it was used"),
            ),
            ApprovalStatus::Consumed => (
                "APPROVAL_CONSUMED",
                format!("request {id} was already used; it runs once"),
            ),
        };
        let error = !matches!(
            handle.status,
            ApprovalStatus::Pending | ApprovalStatus::Approved
        );
        contract::approval_outcome(outcome, trace_id, handle, message, error)
    }

    /// Runs a snapshot if its tool still has the definition that was approved and the policy does not now deny it.
    pub(crate) async fn execute(
        self: &Arc<Self>,
        snapshot: &Snapshot,
        cancel: &CancellationToken,
    ) -> Outcome {
        let definition = self
            .gateway
            .aggregate()
            .tool_definition(&snapshot.exposed)
            .cloned();
        let current = definition.as_ref().map(store::definition_hash);
        if current.as_deref() != Some(snapshot.definition_sha256.as_str()) {
            let msg = format!(
                "the definition of {} changed (or the tool is gone) since this call was approved; it was not run",
                snapshot.exposed
            );
            return Some(Ok(contract::refused("CONFLICT", msg, None)));
        }
        let verdict = self.gateway.guard.check_tool(
            &snapshot.server,
            &snapshot.tool,
            definition.as_ref(),
            &snapshot.arguments,
        );
        if let crate::guard::Verdict::Refuse(refused, _) = verdict {
            return Some(Ok(refused));
        }
        if snapshot.server == crate::guard::OWN_SERVER {
            return Some(Ok(self
                .run_builtin(
                    &snapshot.tool,
                    snapshot.arguments.clone(),
                    snapshot.command.clone(),
                )
                .await));
        }
        let params = json!({"name": snapshot.tool, "arguments": snapshot.arguments});
        self.forward(&snapshot.server, "tools/call", params, cancel)
            .await
    }

    fn can_elicit(&self) -> bool {
        let st = self.lock();
        matches!(st.era, crate::session::ClientEra::Legacy(_))
            && st.client_caps.get("elicitation").is_some()
    }

    /// Asks the human through the client. "Allow once" approves the request; "allow for this session" also
    /// grants the tool (bound to its definition hash) for the rest of the session. Any other answer rejects.
    async fn elicit(self: &Arc<Self>, id: &str, tool: &str, definition_sha256: &str) {
        let Some(state) = self.gateway.state.clone() else {
            return;
        };
        let params = json!({
            "message": format!("toolgate: allow a call to {tool}? (request {id}; details: toolgate approvals show {id})"),
            "requestedSchema": {
                "type": "object",
                "properties": {"decision": {"type": "string", "title": "Decision",
                                            "enum": ["allow_once", "allow_session", "reject"],
                                            "enumNames": ["Allow once", "Allow for this session", "Reject"]}},
                "required": ["decision"]
            }
        });
        let Ok(answer) = self.ask_client("elicitation/create", params).await else {
            return;
        };
        let choice = match answer.get("action").and_then(Value::as_str) {
            Some("accept") => answer
                .pointer("/content/decision")
                .and_then(Value::as_str)
                .unwrap_or("reject"),
            // Declined or dismissed: leave the request for the other channels.
            _ => return,
        };
        let decided_by = "elicitation";
        let outcome = match choice {
            "allow_once" => state.store(|s| s.approve(id, decided_by, now()).map(|_| ())),
            "allow_session" => state.store(|s| {
                s.approve(id, decided_by, now())?;
                s.grant_session(&self.id, tool, definition_sha256, now())
            }),
            _ => state.store(|s| s.reject(id, decided_by, now()).map(|_| ())),
        };
        if let Err(e) = outcome {
            tracing::info!(request = id, "elicitation answer not applied: {e}");
        }
    }
}

fn not_found(request_id: &str) -> Value {
    let shown: String = request_id.chars().take(64).collect();
    contract::refused(
        "REQUEST_NOT_FOUND",
        format!("no approval request {shown:?} exists for this workspace"),
        None,
    )
}
