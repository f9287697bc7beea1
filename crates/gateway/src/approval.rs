//! The approval stage: an `ask` becomes a request that a human decides out of band (the admin CLI, the watch
//! terminal, or — when the client declares it and config allows — MCP elicitation, never the only channel).
//!
//! Tool calls, prompt gets and resource reads are all held the same way. A request is held up to
//! `approvals.wait_seconds` while the store is watched (with progress notifications when the client asked for
//! progress); approved in time, it runs as if nothing happened. Otherwise a tool call gets a Contract V1 handle and
//! resumes later with `toolgate_resume`, which runs exactly the stored snapshot, once; a prompt or resource read
//! gets an error naming the request, and runs when the same session repeats it after approval. A held call that
//! its client cancels, or whose session ends, marks its request CANCELLED, which nothing can approve or resume:
//! no one is waiting for it, and an operator must not approve a call that will never read the answer. Every row
//! read here must be authentic (sealed by toolgate); a tampered one is refused. No MCP tool can approve anything.

use crate::contract;
use crate::session::Session;
use crate::snapshot::Kind;
pub(crate) use crate::snapshot::Snapshot;
use crate::state::State;
use crate::wakeups::Waiter;
use policy::Decision;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};
use store::{Approval, ApprovalStatus, NewRequest, Timestamp};
use tokio_util::sync::CancellationToken;

/// How often a held call tells the client it is still waiting.
const PROGRESS_EVERY: Duration = Duration::from_secs(2);
/// Recorded as the decider of a request whose call went away.
const CANCELLED_BY: &str = "cancelled: the call was cancelled or its session ended";

type Outcome = Option<Result<Value, Value>>;

/// What became of a held request.
pub(crate) enum Held {
    /// It ran (approved in time, or covered by a session grant): the tool's, prompt's or resource's own answer.
    Ran(Outcome),
    /// It did not run: a Contract V1 result (approval handle or refusal) explaining why.
    Answer(Value),
    /// The client cancelled the call or its session ended: nothing is sent.
    Cancelled,
}

impl Held {
    /// As a `tools/call` result: the answer is an ordinary result.
    pub(crate) fn into_tool_outcome(self) -> Outcome {
        match self {
            Held::Ran(o) => o,
            Held::Answer(v) => Some(Ok(v)),
            Held::Cancelled => None,
        }
    }

    /// As a `prompts/get` or `resources/read` result, which has no error shape: the answer is a JSON-RPC error.
    pub(crate) fn into_read_outcome(self) -> Outcome {
        match self {
            Held::Ran(o) => o,
            Held::Answer(v) => Some(Err(crate::calls::refusal_error(v))),
            Held::Cancelled => None,
        }
    }
}

fn now() -> Timestamp {
    Timestamp::now()
}

impl Session {
    /// Handles an `ask`: a session grant for exactly these arguments (or, for a command, for a prefix of its args
    /// the human chose) lets it through; otherwise a request is created and the call is held.
    pub(crate) async fn hold(
        self: &Arc<Self>,
        snapshot: Snapshot,
        decision: Decision,
        progress: Option<Value>,
        cancel: &CancellationToken,
    ) -> Held {
        let Some(state) = self.gateway.state.clone() else {
            return Held::Answer(contract::no_approval_channel(&decision));
        };
        let target = snapshot.grant_target();
        let scopes: Vec<String> = std::iter::once(snapshot.grant_scope())
            .chain(snapshot.prefix_scopes())
            .collect();
        let granted = state.store(|s| {
            scopes.iter().try_fold(false, |found, scope| {
                Ok::<_, store::Error>(
                    found
                        || s.session_grant_valid(
                            &self.id,
                            &target,
                            &snapshot.definition_sha256,
                            scope,
                        )?,
                )
            })
        });
        if granted.unwrap_or(false) {
            return Held::Ran(self.execute(&snapshot, cancel).await);
        }
        let stored = snapshot.to_json(&decision);
        if snapshot.kind != Kind::ToolCall {
            // A prompt or resource read repeated after its request was approved runs now, once.
            let hash = serde_json::to_string(&stored)
                .map(|t| jsonrpc::sha256_hex(t.as_bytes()))
                .unwrap_or_default();
            if let Ok(Some(id)) = state.store(|s| s.find_approved(&self.id, &hash, now())) {
                return Held::Ran(self.resume_approved(&state, &id, cancel).await);
            }
        }
        let trace_id = crate::ids::trace_id();
        let opts = &self.gateway.opts.approvals;
        let start = now();
        let created = state.store(|s| {
            s.create_held_request(&NewRequest {
                trace_id: &trace_id,
                snapshot: &stored,
                session_id: Some(&self.id),
                now: start,
                held_until: start.plus_millis(opts.wait.value.as_millis() as i64),
                expires_at: start.plus_millis(opts.expire.value.as_millis() as i64),
            })
        });
        let approval = match created {
            Ok(a) => a,
            Err(e) => {
                let msg = format!(
                    "this call needs approval, and the approval store refused a new request ({e})"
                );
                return Held::Answer(contract::refused(
                    "APPROVAL_STORE_REFUSED",
                    msg,
                    Some(&trace_id),
                ));
            }
        };
        state.audit(&crate::record::approval_event(
            &trace_id,
            &approval.id,
            "PENDING",
            &snapshot,
            &decision,
        ));
        tracing::info!(request = %approval.id, target = %target, "approval requested");
        if self.may_elicit(&decision) {
            let session = Arc::clone(self);
            let (id, snapshot) = (approval.id.clone(), snapshot.clone());
            tokio::spawn(async move { session.elicit(&id, &snapshot).await });
        }
        let deadline = Instant::now() + opts.wait.value;
        let mut next_progress = Instant::now();
        // A request that expires while its call is still held changes without any write: look once then.
        let mut expiry = Some(Instant::now() + opts.expire.value).filter(|e| *e < deadline);
        // Subscribed before the first read, so a decision made after that read wakes this call.
        let mut woken = Waiter::subscribe(&state);
        let mut look = true;
        loop {
            if look {
                let current = match woken.read(|s| s.get_request(&approval.id, now())) {
                    Ok(a) if !a.authentic => return Held::Answer(tampered(&a.id)),
                    Ok(a) => a,
                    Err(e) => {
                        return Held::Answer(contract::refused(
                            "FAILED",
                            format!("approval lookup failed: {e}"),
                            None,
                        ))
                    }
                };
                match current.status {
                    ApprovalStatus::Pending => {}
                    ApprovalStatus::Approved => {
                        return Held::Ran(self.resume_approved(&state, &current.id, cancel).await)
                    }
                    _ => return Held::Answer(self.status_outcome(&current)),
                }
                if Instant::now() >= deadline {
                    return Held::Answer(pending_answer(&snapshot, &current, &trace_id));
                }
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
            let timer = [
                Some(deadline),
                expiry,
                progress.as_ref().map(|_| next_progress),
            ]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(deadline);
            // The row is read again only when the store may have changed, at its expiry, or at the deadline.
            look = tokio::select! {
                () = woken.changed() => true,
                () = tokio::time::sleep_until(timer.into()) => {
                    let expired = expiry.is_some_and(|e| Instant::now() >= e);
                    if expired {
                        expiry = None;
                    }
                    expired || Instant::now() >= deadline
                }
                () = cancel.cancelled() => {
                    // Nobody will read the answer: the request must not wait for (or get) a decision.
                    match state.store(|s| s.cancel(&approval.id, CANCELLED_BY, now())) {
                        Ok(_) => state.audit(&crate::record::approval_event(
                            &trace_id, &approval.id, "CANCELLED", &snapshot, &decision,
                        )),
                        Err(e) => tracing::info!(request = %approval.id, "not marked cancelled: {e}"),
                    }
                    return Held::Cancelled;
                }
            };
        }
    }

    /// `toolgate_request_status`: strictly read-only.
    pub(crate) fn request_status(&self, request_id: &str) -> Value {
        let Some(state) = &self.gateway.state else {
            return not_found(request_id);
        };
        match state.store(|s| s.get_request(request_id, now())) {
            Ok(a) if !a.authentic => tampered(&a.id),
            Ok(a) => self.status_outcome(&a),
            Err(_) => not_found(request_id),
        }
    }

    /// `toolgate_resume`: runs exactly the approved snapshot of a tool call, once.
    pub(crate) async fn resume(
        self: &Arc<Self>,
        request_id: &str,
        cancel: &CancellationToken,
    ) -> Outcome {
        let Some(state) = self.gateway.state.clone() else {
            return Some(Ok(not_found(request_id)));
        };
        match state.store(|s| s.get_request(request_id, now())) {
            Ok(a) if !a.authentic => Some(Ok(tampered(&a.id))),
            Ok(a) if a.status == ApprovalStatus::Approved => {
                match Snapshot::from_json(&a.snapshot).map(|s| s.kind) {
                    Some(Kind::ToolCall) => self.resume_approved(&state, request_id, cancel).await,
                    // Left approved: the client repeats the original request to run it.
                    _ => Some(Ok(contract::refused(
                        "NOT_A_TOOL_CALL",
                        format!(
                            "request {} is for a prompt or resource read; repeat that request to run it",
                            a.id
                        ),
                        Some(&a.trace_id),
                    ))),
                }
            }
            Ok(a) => Some(Ok(self.status_outcome(&a))),
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
            Err(store::Error::Tampered) => return Some(Ok(tampered(id))),
            Err(_) => {
                // Someone else consumed it first, or it expired in between: report what it is now.
                return Some(Ok(match state.store(|s| s.get_request(id, now())) {
                    Ok(a) => self.status_outcome(&a),
                    Err(_) => not_found(id),
                }));
            }
        };
        let Some(snapshot) = Snapshot::from_json(&consumed.snapshot) else {
            return Some(Ok(contract::refused(
                "FAILED",
                "the approved request is not one toolgate can run".into(),
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

    fn status_outcome(&self, a: &Approval) -> Value {
        let (handle, id) = (a.handle(), &a.id);
        let (outcome, message) = match a.status {
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
            ApprovalStatus::Cancelled => {
                return contract::refused(
                    "APPROVAL_CANCELLED",
                    format!(
                        "request {id} was cancelled because its call ended before a decision; it will not run \
                         (make the call again to ask again)"
                    ),
                    Some(&a.trace_id),
                )
            }
        };
        let error = !matches!(a.status, ApprovalStatus::Pending | ApprovalStatus::Approved);
        contract::approval_outcome(outcome, &a.trace_id, &handle, message, error)
    }

    /// Runs a snapshot if the policy does not now refuse it and, for a tool, the tool still has the definition
    /// that was approved.
    pub(crate) async fn execute(
        self: &Arc<Self>,
        snapshot: &Snapshot,
        cancel: &CancellationToken,
    ) -> Outcome {
        let guard = &self.gateway.guard;
        let (server, target) = (&snapshot.server, &snapshot.tool);
        match snapshot.kind {
            Kind::ToolCall => {}
            Kind::Prompt | Kind::Resource => {
                let verdict = match snapshot.kind {
                    Kind::Prompt => guard.check_prompt(server, target),
                    _ => guard.check_resource(server, target),
                };
                if let crate::guard::Verdict::Refuse(refused, _) = verdict {
                    return Some(Err(crate::calls::refusal_error(refused)));
                }
                let params = match snapshot.kind {
                    Kind::Prompt => json!({"name": target, "arguments": snapshot.arguments}),
                    _ => json!({"uri": target}),
                };
                return self
                    .forward(server, snapshot.kind.method(), params, cancel)
                    .await;
            }
        }
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
        let verdict = guard.check_tool(server, target, definition.as_ref(), &snapshot.arguments);
        if let crate::guard::Verdict::Refuse(refused, _) = verdict {
            return Some(Ok(refused));
        }
        if snapshot.server == crate::guard::OWN_SERVER {
            return Some(Ok(self
                .run_builtin(target, snapshot.arguments.clone(), snapshot.command.clone())
                .await));
        }
        let params = json!({"name": target, "arguments": snapshot.arguments});
        self.forward(server, "tools/call", params, cancel).await
    }
}

/// The answer when the wait ran out before a decision.
fn pending_answer(snapshot: &Snapshot, current: &Approval, trace_id: &str) -> Value {
    let id = &current.id;
    let then = match snapshot.kind {
        Kind::ToolCall => format!("then call {} with this request_id", contract::RESUME_TOOL),
        Kind::Prompt | Kind::Resource => format!(
            "then repeat this {} request on this connection",
            snapshot.kind.method()
        ),
    };
    let msg = format!(
        "this call needs a human's approval; request {id} is pending. An operator approves it with \
         `toolgate approvals approve {id}`; {then}."
    );
    contract::approval_outcome("APPROVAL_REQUIRED", trace_id, &current.handle(), msg, false)
}

fn tampered(request_id: &str) -> Value {
    let shown: String = request_id.chars().take(64).collect();
    contract::refused(
        "REQUEST_TAMPERED",
        format!(
            "approval request {shown:?} failed its integrity check (it was changed outside toolgate); it will not run"
        ),
        None,
    )
}

fn not_found(request_id: &str) -> Value {
    let shown: String = request_id.chars().take(64).collect();
    contract::refused(
        "REQUEST_NOT_FOUND",
        format!("no approval request {shown:?} exists for this workspace"),
        None,
    )
}
