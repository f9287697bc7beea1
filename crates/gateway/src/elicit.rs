//! Asking the human through the client (MCP elicitation): one of the approval channels, never the only one.
//!
//! The question names the tool and shows its arguments escaped (nothing invisible, nothing that reorders text).
//! "Allow once" approves the request; "allow for this session" also grants, for the rest of the session, exactly
//! this tool at this definition with exactly these arguments (for a command: this argv, cwd and environment, or —
//! when the human fills in `prefix_args` — the same program, cwd and environment with args starting with the
//! first `prefix_args` shown) — any other call asks again. Commands, writes, deletions, git writes, network
//! requests, unknown operations and tools whose definition says `destructiveHint: true` are not offered to
//! elicitation unless `approvals.elicitation_for_writes` is set: a client dialog is easy to click through (and the
//! agent's own client may answer it), the admin CLI shows the full request. A `run_code` program is offered as its
//! calls that ask would be (`Offer`), and never for the session when one of them computes its arguments. A
//! declined or dismissed dialog leaves the request to the other channels.
//!
//! The question and what the answer does are here; reaching the human is the requester's (`AskHuman`). A call
//! with no grant scope is offered "allow once" and "reject" only: there is no session to grant for. An
//! upstream's own elicitation, relayed, is labelled with its server here too (`label_relayed`), so toolgate's
//! question and an upstream's can always be told apart.

use crate::client::AskHuman;
use crate::pipeline::context::GrantScope;
use crate::snapshot::{Kind, Snapshot, MAX_PREFIX_ARGS};
use crate::stages::Stages;
use policy::{Decision, Operation};
use serde_json::{json, Value};
use store::Timestamp;

/// The decider recorded for answers given through the client.
const DECIDED_BY: &str = "elicitation";

/// The `_meta` key that marks toolgate's own approval question (with its request id).
pub(crate) const OWN_QUESTION_META: &str = "toolgate/approval";
/// The `_meta` key that names the server a relayed request comes from.
pub(crate) const RELAYED_FROM_META: &str = "toolgate/relayedFrom";

/// An upstream's request as the client gets it: an elicitation's message begins by naming the server that asks
/// (toolgate's own questions begin with "toolgate:", so no wording of the upstream's can pass for one), and every
/// request names its server in `_meta[RELAYED_FROM_META]` (the upstream's own `toolgate/…` keys are already gone,
/// removed where the upstream's messages arrive).
pub(crate) fn label_relayed(server: &str, method: &str, params: Option<Value>) -> Option<Value> {
    let mut params = match params {
        Some(Value::Object(p)) => p,
        // Not an object: nothing to label, and the client refuses it as the upstream sent it.
        other => return other,
    };
    if method == "elicitation/create" {
        let asked = params
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let labelled = format!(
            "Server {server:?} asks (relayed by toolgate; not a toolgate approval question): {asked}"
        );
        params.insert("message".to_owned(), Value::String(labelled));
    }
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Default::default()));
    if !meta.is_object() {
        *meta = Value::Object(Default::default());
    }
    if let Some(meta) = meta.as_object_mut() {
        meta.insert(
            RELAYED_FROM_META.to_owned(),
            Value::String(server.to_owned()),
        );
    }
    Some(Value::Object(params))
}

/// The same label on each request of an upstream's `input_required` result (a 2026-07-28 upstream asking through
/// its answer rather than with a request of its own).
pub(crate) fn label_input_requests(server: &str, result: &mut Value) {
    let Some(Value::Object(requests)) = result.get_mut("inputRequests") else {
        return;
    };
    for request in requests.values_mut() {
        let Some(method) = request
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            continue;
        };
        if let Some(r) = request.as_object_mut() {
            let params = r.remove("params");
            if let Some(labelled) = label_relayed(server, &method, params) {
                r.insert("params".to_owned(), labelled);
            }
        }
    }
}

/// Whether this ask may also go to the human through `asker`: it must be enabled, the asker able to ask, and —
/// for anything that is not approved in band by default (`in_band`) — enabled for writes too.
pub(crate) fn may_elicit(gw: &Stages, asker: &dyn AskHuman, in_band: bool) -> bool {
    let a = &gw.opts.approvals;
    a.elicitation.value && (in_band || a.elicitation_for_writes.value) && asker.can_ask()
}

/// Whether a call decided `decision` may be approved through the client by default: a read (or a call decided
/// by name) of a tool whose definition does not say `destructiveHint: true`. Commands, writes, deletions, git
/// writes, network requests, unknown operations and destructive tools are approved out of band.
pub(crate) fn in_band(decision: &Decision, definition: Option<&Value>) -> bool {
    let read_only = matches!(
        decision.operation,
        Operation::FsRead | Operation::GitRead | Operation::McpCall
    );
    let destructive = definition.and_then(|d| d.pointer("/annotations/destructiveHint"))
        == Some(&Value::Bool(true));
    read_only && !destructive
}

/// How a held request may be answered through the client.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Offer {
    /// Approved in band by default (else only with `approvals.elicitation_for_writes`).
    pub in_band: bool,
    /// "Allow for this session" may be offered.
    pub session_grant: bool,
}

/// The offer for `snapshot` held with `decision`: a tool call's follows from its decision and definition; a
/// run's from the calls that asked (`codemode::offer`); prompts and resources are reads.
pub(crate) fn offer(
    gw: &Stages,
    guard: &crate::guard::Guard,
    snapshot: &Snapshot,
    decision: &Decision,
) -> Offer {
    match snapshot.kind {
        Kind::CodeRun => crate::codemode::offer(gw, guard, snapshot),
        Kind::ToolCall => Offer {
            in_band: in_band(decision, gw.aggregate().tool_definition(&snapshot.exposed)),
            session_grant: true,
        },
        Kind::Prompt | Kind::Resource => Offer {
            in_band: in_band(decision, None),
            session_grant: true,
        },
    }
}

/// Asks the human through `asker` and applies the answer to request `id`; a session grant goes to `grants`.
pub(crate) async fn elicit(
    gw: &Stages,
    asker: &dyn AskHuman,
    grants: &GrantScope,
    id: &str,
    snapshot: &Snapshot,
    offer: Offer,
) {
    let Some(state) = gw.state.clone() else {
        return;
    };
    let message = match snapshot.kind {
        // A program: what it may call is the question; the program itself follows, escaped.
        Kind::CodeRun => format!(
            "toolgate: allow this run_code program to run, calling {} (approved once for this run, each call \
             for the arguments written; any other call it makes at run time needs an allow rule)? {} (request \
             {id}; full program: toolgate approvals show {id}) Program: {}",
            snapshot.code_names().join(", "),
            snapshot.escaped_note(),
            snapshot.escaped_arguments()
        ),
        _ => format!(
            "toolgate: allow {} {} with arguments {}? (request {id}; full request: toolgate approvals show {id}) \
             \"Allow for this session\" covers only these exact arguments.",
            snapshot.kind.method(),
            snapshot.exposed,
            snapshot.escaped_arguments()
        ),
    };
    // A run whose calls compute their arguments is approved once: the same program may compute others later.
    let session = grants.session().filter(|_| offer.session_grant);
    let mut properties = match session {
        Some(_) => json!({"decision": {"type": "string", "title": "Decision",
                              "enum": ["allow_once", "allow_session", "reject"],
                              "enumNames": ["Allow once", "Allow these exact arguments for this session", "Reject"]}}),
        None => json!({"decision": {"type": "string", "title": "Decision",
                           "enum": ["allow_once", "reject"], "enumNames": ["Allow once", "Reject"]}}),
    };
    let arg_count = snapshot
        .arguments
        .get("args")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    if snapshot.command.is_some() && session.is_some() {
        properties["prefix_args"] = json!({
            "type": "integer", "minimum": 0, "maximum": arg_count.min(MAX_PREFIX_ARGS),
            "title": "For this session, also allow the same program with args starting with this many of them"
        });
    }
    let params = json!({
        "message": message,
        "requestedSchema": {"type": "object", "properties": properties, "required": ["decision"]},
        // Only toolgate's own question carries it: the same key is removed from anything an upstream sends.
        "_meta": {OWN_QUESTION_META: {"request_id": id}},
    });
    let Ok(answer) = asker.ask(params).await else {
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
    let now = Timestamp::now();
    let target = snapshot.grant_target();
    // A prefix the human chose, when it is shorter than the args shown; otherwise exactly this call.
    let scope = answer
        .pointer("/content/prefix_args")
        .and_then(Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
        .filter(|n| *n < arg_count)
        .and_then(|n| snapshot.prefix_scope(n))
        .unwrap_or_else(|| snapshot.grant_scope());
    let outcome = match (choice, session) {
        ("allow_once", _) => state.store(|s| s.approve(id, DECIDED_BY, now).map(|_| ())),
        ("allow_session", Some(session)) => state.store(|s| {
            s.approve(id, DECIDED_BY, now)?;
            s.grant_session(session, &target, &snapshot.definition_sha256, &scope, now)
        }),
        // Anything else, a session grant with no session to hold it included, is not an approval.
        _ => state.store(|s| s.reject(id, DECIDED_BY, now).map(|_| ())),
    };
    if let Err(e) = outcome {
        tracing::info!(request = id, "elicitation answer not applied: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decided(operation: Operation) -> Decision {
        Decision {
            effect: policy::Effect::Ask,
            reason: policy::ReasonCode::DefaultAsk,
            rule_id: None,
            operation,
            unknown: None,
        }
    }

    #[test]
    fn only_reads_of_tools_not_marked_destructive_are_approved_in_band_by_default() {
        let destructive = json!({"name": "delete", "annotations": {"destructiveHint": true}});
        let harmless = json!({"name": "read", "annotations": {"destructiveHint": false}});
        for op in Operation::ALL {
            let read = matches!(
                op,
                Operation::FsRead | Operation::GitRead | Operation::McpCall
            );
            assert_eq!(in_band(&decided(op), None), read, "{op}");
            assert_eq!(in_band(&decided(op), Some(&harmless)), read, "{op}");
            assert!(!in_band(&decided(op), Some(&destructive)), "{op}");
        }
    }
}
