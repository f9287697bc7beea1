//! The approval stage: an `ask` becomes a request that a human decides out of band (the admin CLI, the watch
//! terminal, or — when the client declares it and config allows — MCP elicitation, never the only channel).
//!
//! Tool calls, prompt gets and resource reads are all held the same way. A request is held up to
//! `approvals.wait_seconds` while the store is watched (with progress notifications when the client asked for
//! progress); approved in time, it runs as if nothing happened. Otherwise a tool call gets a Contract V1 handle and
//! resumes later with `toolgate_resume`, which runs exactly the stored snapshot, once; a prompt or resource read
//! gets an error naming the request, and runs when the same session repeats it after approval (a request with no
//! session behind it is never matched to an approved one). A held call that its client cancels, or whose session
//! ends, marks its request CANCELLED, which nothing can approve or resume: no one is waiting for it, and an
//! operator must not approve a call that will never read the answer. Every row read here must be authentic
//! (sealed by toolgate); a tampered one is refused. No MCP tool can approve anything.
//!
//! The stage decides and returns: `hold` answers approved (with the snapshot to run), held or refused, and
//! nothing here runs a call. What runs an approved snapshot is the pipeline's execute stage, after the audit
//! gate is passed again (`pipeline::after_approval`).
//!
//! Everything here is a function of the `Stages` and the call's `CallContext`: whose grants apply, where the
//! "still waiting" progress goes, who else may be asked, and whether the call waits at all (`HoldPolicy`: a
//! caller that resumes on its own schedule gets its handle at once).

use crate::elicit;
use crate::outcome::{ApprovalState, CallOutcome, HeldCall, Refusal, RefusalCode};
use crate::own::Resumer;
use crate::pipeline::context::{CallContext, HoldPolicy};
use crate::snapshot::Kind;
pub(crate) use crate::snapshot::Snapshot;
use crate::stages::Stages;
use crate::state::State;
use crate::wakeups::Waiter;
use policy::Decision;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};
use store::{Approval, ApprovalStatus, NewRequest, Timestamp};

/// How soon a held call reads its row again after the store could not be read.
const LOOKUP_RETRY: Duration = Duration::from_millis(250);

/// A failure that may pass: the store unreachable, a shared database refusing statements while it restarts, an
/// SQLite file busy or failing to read. An unknown, tampered or corrupt row is an answer, not a failure to wait out.
fn transient(e: &store::Error) -> bool {
    matches!(
        e,
        store::Error::Unavailable(_)
            | store::Error::Postgres(_)
            | store::Error::Sqlite(_)
            | store::Error::Io(_)
    )
}
/// How often a held call tells the client it is still waiting.
const PROGRESS_EVERY: Duration = Duration::from_secs(2);
/// Recorded as the decider of a request whose call went away.
const CANCELLED_BY: &str = "cancelled: the call was cancelled or its session ended";

/// What the approval stage decided about a request that asked.
pub(crate) enum Held {
    /// It may run now (a human approved it in time, or earlier for a repeated read, or a session grant covers
    /// it): this snapshot, already consumed when it was a stored request. Nothing has run.
    Approved(Snapshot),
    /// It does not run now: an approval handle or a refusal explaining why.
    Answer(CallOutcome),
    /// The client cancelled the call or its session ended: nothing is sent.
    Cancelled,
}

/// A toolgate refusal as an outcome.
fn refused(code: RefusalCode, message: String) -> CallOutcome {
    CallOutcome::Refused(Refusal::new(code, message))
}

/// An approved tool call claimed by `toolgate_resume`: its request is consumed, and the pipeline runs it under
/// the trace id of the call that was held.
pub(crate) struct Claimed {
    pub trace_id: String,
    pub snapshot: Snapshot,
    /// The stored snapshot, which carries the decision that held it.
    pub stored: Value,
}

fn now() -> Timestamp {
    Timestamp::now()
}

/// Handles an `ask`: a grant of the call's scope for exactly these arguments (or, for a command, for a prefix
/// of its args the human chose) lets it through; otherwise a request is created and the call is held.
pub(crate) async fn hold(
    gw: &Arc<Stages>,
    ctx: &CallContext,
    snapshot: Snapshot,
    decision: Decision,
) -> Held {
    let trace_id = &ctx.trace_id;
    let session = ctx.grants.session();
    let Some(state) = gw.state.clone() else {
        return Held::Answer(CallOutcome::Refused(Refusal::no_approval_channel(
            &decision,
        )));
    };
    let target = snapshot.grant_target();
    let scopes: Vec<String> = std::iter::once(snapshot.grant_scope())
        .chain(snapshot.prefix_scopes())
        .collect();
    let offer = elicit::offer(gw, &ctx.guard, &snapshot, &decision);
    // Without a session, no grant applies; nor to a run that may compute other calls than those approved.
    let granted = session.filter(|_| offer.session_grant).map(|id| {
        state.store(|s| {
            scopes.iter().try_fold(false, |found, scope| {
                Ok::<_, store::Error>(
                    found
                        || s.session_grant_valid(id, &target, &snapshot.definition_sha256, scope)?,
                )
            })
        })
    });
    if let Some(Ok(true)) = granted {
        return Held::Approved(snapshot);
    }
    // Sealed with the snapshot: only this identity may read or resume the request (`owned_by`).
    let stored = snapshot.to_json(&decision, ctx.principal.as_deref());
    let repeated = matches!(snapshot.kind, Kind::Prompt | Kind::Resource);
    if let (Some(session), true) = (session, repeated) {
        // A prompt or resource read its session repeats after its request was approved runs now, once.
        let hash = serde_json::to_string(&stored)
            .map(|t| jsonrpc::sha256_hex(t.as_bytes()))
            .unwrap_or_default();
        if let Ok(Some(id)) = state.store(|s| s.find_approved(session, &hash, now())) {
            return approved(&state, &id);
        }
    }
    let trace_id = trace_id.to_owned();
    // Counted over every session of the caller's identity, since a session costs nothing to open.
    let owner = crate::codemode::bounds::identity(ctx);
    let opts = &gw.opts.approvals;
    let start = now();
    let created = state.store(|s| {
        s.create_held_request(&NewRequest {
            trace_id: &trace_id,
            snapshot: &stored,
            session_id: session,
            owner: Some(&owner),
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
            let refusal =
                Refusal::new(RefusalCode::ApprovalStoreRefused, msg).with_trace(&trace_id);
            return Held::Answer(CallOutcome::Refused(refusal));
        }
    };
    state.audit(crate::record::approval_event(
        &trace_id,
        &approval.id,
        "PENDING",
        &snapshot,
        &decision,
    ));
    tracing::info!(request = %approval.id, target = %audit::redact(&target), "approval requested");
    if let Some(asker) = ctx
        .asker
        .as_ref()
        .filter(|a| elicit::may_elicit(gw, a.as_ref(), offer.in_band))
    {
        let (gw, asker, grants) = (Arc::clone(gw), Arc::clone(asker), ctx.grants.clone());
        let (id, snapshot) = (approval.id.clone(), snapshot.clone());
        tokio::spawn(async move {
            elicit::elicit(&gw, asker.as_ref(), &grants, &id, &snapshot, offer).await;
        });
    }
    if ctx.hold == HoldPolicy::HandleNow {
        return Held::Answer(pending_answer(&snapshot, &approval, &trace_id));
    }
    wait(gw, ctx, &state, &approval, &snapshot, &decision).await
}

/// Waits, bounded by `approvals.wait`, for a human's decision on `approval`; the row is read again only when the
/// store may have changed, at its expiry, or at the deadline.
async fn wait(
    gw: &Stages,
    ctx: &CallContext,
    state: &Arc<State>,
    approval: &Approval,
    snapshot: &Snapshot,
    decision: &Decision,
) -> Held {
    let (trace_id, cancel, opts) = (&ctx.trace_id, &ctx.cancel, &gw.opts.approvals);
    let deadline = Instant::now() + opts.wait.value;
    let mut next_progress = Instant::now();
    // A request that expires while its call is still held changes without any write: look once then.
    let mut expiry = Some(Instant::now() + opts.expire.value).filter(|e| *e < deadline);
    // Subscribed before the first read, so a decision made after that read wakes this call.
    let mut woken = Waiter::subscribe(state);
    let mut look = true;
    // A store that cannot be read (a shared database restarting) is asked again until the deadline: the call
    // keeps waiting, and nothing runs without reading the row approved.
    let mut retry: Option<Instant> = None;
    loop {
        if look {
            retry = None;
            let current = match woken.read(|s| s.get_request(&approval.id, now())) {
                Ok(a) if !a.authentic => return Held::Answer(tampered(&a.id)),
                Ok(a) => a,
                Err(e) if transient(&e) && Instant::now() < deadline => {
                    tracing::warn!(request = %approval.id, "approval lookup failed, retrying: {e}");
                    retry = Some(Instant::now() + LOOKUP_RETRY);
                    look = false;
                    continue;
                }
                Err(e) => {
                    return Held::Answer(refused(
                        RefusalCode::Failed,
                        format!("approval lookup failed: {e}"),
                    ))
                }
            };
            match current.status {
                ApprovalStatus::Pending => {}
                ApprovalStatus::Approved => return approved(state, &current.id),
                _ => return Held::Answer(status_outcome(&current)),
            }
            if Instant::now() >= deadline {
                return Held::Answer(pending_answer(snapshot, &current, trace_id));
            }
        }
        if let (Some(progress), true) = (&ctx.progress, Instant::now() >= next_progress) {
            let message = format!("waiting for approval of request {}", approval.id);
            progress.sink.post_progress(
                json!({"progressToken": progress.token, "progress": 0, "message": message}),
            );
            next_progress = Instant::now() + PROGRESS_EVERY;
        }
        let timer = [
            Some(deadline),
            expiry,
            retry,
            ctx.progress.as_ref().map(|_| next_progress),
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
                expired || retry.is_some_and(|r| Instant::now() >= r) || Instant::now() >= deadline
            }
            () = cancel.cancelled() => {
                // Nobody will read the answer: the request must not wait for (or get) a decision.
                match state.store(|s| s.cancel(&approval.id, CANCELLED_BY, now())) {
                    Ok(_) => state.audit(crate::record::approval_event(
                        trace_id, &approval.id, "CANCELLED", snapshot, decision,
                    )),
                    Err(e) => tracing::info!(request = %approval.id, "not marked cancelled: {e}"),
                }
                return Held::Cancelled;
            }
        };
    }
}

/// `toolgate_request_status`: strictly read-only.
pub(crate) fn request_status(
    gw: &Stages,
    principal: Option<&str>,
    request_id: &str,
) -> CallOutcome {
    let Some(state) = &gw.state else {
        return not_found(request_id);
    };
    match state.store(|s| s.get_request(request_id, now())) {
        Ok(a) if !owned_by(&a, principal) => not_found(request_id),
        Ok(a) if !a.authentic => tampered(&a.id),
        Ok(a) => status_outcome(&a),
        Err(_) => not_found(request_id),
    }
}

/// `toolgate_resume`: claims the approved snapshot of a tool call, once (atomically: of concurrent resumers
/// exactly one wins). Anything else is answered: not found, tampered, not approved, not a tool call. A resume
/// bound to one tool (`only`, ToolHub's `*_approved`) finds no request of another tool.
pub(crate) fn claim(
    gw: &Stages,
    principal: Option<&str>,
    request_id: &str,
    only: Option<&str>,
) -> Result<Claimed, CallOutcome> {
    let Some(state) = gw.state.clone() else {
        return Err(not_found(request_id));
    };
    let other_tool = |a: &Approval| {
        only.is_some_and(|tool| {
            Snapshot::from_json(&a.snapshot)
                .is_none_or(|s| s.tool != tool || s.server != crate::own::OWN_SERVER)
        })
    };
    match state.store(|s| s.get_request(request_id, now())) {
        Ok(a) if !owned_by(&a, principal) || other_tool(&a) => Err(not_found(request_id)),
        Ok(a) if !a.authentic => Err(tampered(&a.id)),
        Ok(a) if a.status == ApprovalStatus::Approved => {
            match Snapshot::from_json(&a.snapshot).map(|s| s.kind) {
                    Some(Kind::ToolCall | Kind::CodeRun) => {
                        let (consumed, snapshot) = consume(&state, request_id)?;
                        Ok(Claimed {
                            trace_id: consumed.trace_id,
                            snapshot,
                            stored: consumed.snapshot,
                        })
                    }
                    // Left approved: the client repeats the original request to run it.
                    _ => Err(CallOutcome::Refused(
                        Refusal::new(
                            RefusalCode::NotAToolCall,
                            format!(
                                "request {} is for a prompt or resource read; repeat that request to run it",
                                a.id
                            ),
                        )
                        .with_trace(&a.trace_id),
                    )),
                }
        }
        Ok(a) => Err(status_outcome(&a)),
        Err(_) => Err(not_found(request_id)),
    }
}

/// Consumes an approval (atomically) and reads its snapshot; the consumption is audited under the trace id
/// of the call that was held.
fn consume(state: &Arc<State>, id: &str) -> Result<(Approval, Snapshot), CallOutcome> {
    let consumed = match state.store(|s| s.consume(id, now())) {
        Ok(a) => a,
        Err(store::Error::Tampered) => return Err(tampered(id)),
        Err(_) => {
            // Someone else consumed it first, or it expired in between: report what it is now.
            return Err(match state.store(|s| s.get_request(id, now())) {
                Ok(a) => status_outcome(&a),
                Err(_) => not_found(id),
            });
        }
    };
    let Some(snapshot) = Snapshot::from_json(&consumed.snapshot) else {
        return Err(refused(
            RefusalCode::Failed,
            "the approved request is not one toolgate can run".into(),
        ));
    };
    state.audit(crate::record::consumed_event(
        &consumed.trace_id,
        id,
        &snapshot,
    ));
    Ok((consumed, snapshot))
}

/// Consumes the approval: the snapshot that may run, or what the request is now.
fn approved(state: &Arc<State>, id: &str) -> Held {
    match consume(state, id) {
        Ok((_, snapshot)) => Held::Approved(snapshot),
        Err(answer) => Held::Answer(answer),
    }
}

fn status_outcome(a: &Approval) -> CallOutcome {
    let (handle, id) = (a.handle(), &a.id);
    let resume = Snapshot::from_json(&a.snapshot).map_or(Resumer::TOOLGATE, |s| {
        Resumer::of(&s.server, &s.tool, &s.exposed)
    });
    let resume_tool = resume.name();
    let (state, message) = match a.status {
        ApprovalStatus::Pending => (
            ApprovalState::Pending,
            format!("request {id} is still waiting for a human"),
        ),
        ApprovalStatus::Approved => (
            ApprovalState::Approved,
            format!("request {id} is approved; call {resume_tool} to run it"),
        ),
        ApprovalStatus::Rejected => (
            ApprovalState::Rejected,
            format!("request {id} was rejected; it will not run"),
        ),
        ApprovalStatus::Expired => (
            ApprovalState::Expired,
            format!("request {id} expired before it was used"),
        ),
        ApprovalStatus::Consumed => (
            ApprovalState::Consumed,
            format!("request {id} was already used; it runs once"),
        ),
        ApprovalStatus::Cancelled => {
            let message = format!(
                    "request {id} was cancelled because its call ended before a decision; it will not run \
                     (make the call again to ask again)"
                );
            return CallOutcome::Refused(
                Refusal::new(RefusalCode::ApprovalCancelled, message).with_trace(&a.trace_id),
            );
        }
    };
    CallOutcome::Held(HeldCall {
        state,
        trace_id: a.trace_id.clone(),
        handle,
        message,
        resume,
    })
}

/// The answer when the wait ran out before a decision.
fn pending_answer(snapshot: &Snapshot, current: &Approval, trace_id: &str) -> CallOutcome {
    let id = &current.id;
    let resume = Resumer::of(&snapshot.server, &snapshot.tool, &snapshot.exposed);
    let resume_tool = resume.name();
    let then = match snapshot.kind {
        Kind::ToolCall | Kind::CodeRun => format!("then call {resume_tool} with this request_id"),
        Kind::Prompt | Kind::Resource => format!(
            "then repeat this {} request on this connection",
            snapshot.kind.method()
        ),
    };
    // Named as the operator knows the admin command: ToolHub's for a call made by a ToolHub name.
    let approve = if resume == Resumer::TOOLGATE {
        "toolgate approvals approve"
    } else {
        "mcp-toolhub-admin approve"
    };
    let msg = format!(
        "this call needs a human's approval; request {id} is pending. An operator approves it with \
         `{approve} {id}`; {then}."
    );
    CallOutcome::Held(HeldCall {
        state: ApprovalState::Required,
        trace_id: trace_id.to_owned(),
        handle: current.handle(),
        message: msg,
        resume,
    })
}

/// Whether `principal` caused the held request: another identity (an HTTP caller with another key, or stdio
/// for a request an HTTP caller caused, and the other way round) is told it does not exist, and learns nothing
/// of it. A request made before identities were recorded has none, which only an unauthenticated caller matches.
fn owned_by(a: &Approval, principal: Option<&str>) -> bool {
    crate::snapshot::owner(&a.snapshot).as_deref() == principal
}

fn tampered(request_id: &str) -> CallOutcome {
    let shown: String = request_id.chars().take(64).collect();
    refused(
        RefusalCode::RequestTampered,
        format!(
            "approval request {shown:?} failed its integrity check (it was changed outside toolgate); it will not run"
        ),
    )
}

fn not_found(request_id: &str) -> CallOutcome {
    let shown: String = request_id.chars().take(64).collect();
    refused(
        RefusalCode::RequestNotFound,
        format!("no approval request {shown:?} exists for this workspace"),
    )
}
