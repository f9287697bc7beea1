//! Where the Contract V1 fields of toolgate's own answers land for tools that declare an `outputSchema`: the
//! shapes official clients accept (no `structuredContent` they would reject), with the fields always in `_meta`.

use super::*;
use crate::outcome::RefusalCode;
use policy::{Decision, Effect, Operation, ReasonCode};
use serde_json::{json, Value};
use store::{ApprovalHandle, ApprovalStatus, Timestamp};

/// server-filesystem's `read_text_file` declares this output schema (as do all its tools).
fn filesystem_tool() -> Value {
    json!({
        "name": "files__read_text_file",
        "inputSchema": {"type": "object"},
        "outputSchema": {"type": "object", "properties": {"content": {"type": "string"}},
                         "required": ["content"], "additionalProperties": false}
    })
}

fn deny() -> Decision {
    Decision {
        effect: Effect::Deny,
        reason: ReasonCode::DenyRule,
        rule_id: Some("deny[0]".to_owned()),
        operation: Operation::FsRead,
        unknown: None,
    }
}

fn handle(status: ApprovalStatus) -> ApprovalHandle {
    ApprovalHandle {
        request_id: "req-1234".to_owned(),
        status,
        trace_id: "trace-1".to_owned(),
        expires_at: Timestamp::now(),
    }
}

fn meta(v: &Value) -> &Value {
    &v["_meta"][META_KEY]
}

/// Every result shape toolgate writes itself for a tool call.
fn own_results() -> Vec<Value> {
    let mut all = vec![
        refusal(&Refusal::denied(&deny())),
        refusal(&Refusal::no_approval_channel(&deny())),
        refusal(&Refusal::invalid_arguments("no")),
        refusal(&Refusal::quarantined("files__read_text_file")),
        refusal(&Refusal::flagged(
            "files__read_text_file",
            &["hidden instructions".to_owned()],
        )),
        refusal(&Refusal::new(RefusalCode::Conflict, "changed").with_trace("trace-2")),
    ];
    for (outcome, status) in [
        ("APPROVAL_REQUIRED", ApprovalStatus::Pending),
        ("APPROVAL_PENDING", ApprovalStatus::Pending),
        ("APPROVAL_APPROVED", ApprovalStatus::Approved),
        ("APPROVAL_REJECTED", ApprovalStatus::Rejected),
        ("APPROVAL_EXPIRED", ApprovalStatus::Expired),
        ("APPROVAL_CONSUMED", ApprovalStatus::Consumed),
    ] {
        let error = !matches!(
            outcome,
            "APPROVAL_REQUIRED" | "APPROVAL_PENDING" | "APPROVAL_APPROVED"
        );
        let message = format!("request req-1234: {outcome}");
        all.push(approval_outcome(
            outcome,
            "trace-1",
            (&handle(status), RESUME_TOOL),
            message,
            error,
        ));
    }
    all
}

#[test]
fn refusal_on_tool_with_output_schema_moves_v1_fields_to_meta() {
    let fitted = fit_to_tool(refusal(&Refusal::denied(&deny())), Some(&filesystem_tool()));
    assert!(fitted.get("structuredContent").is_none(), "{fitted}");
    assert_eq!(fitted["isError"], true);
    assert_eq!(meta(&fitted)["outcome"], "REFUSED");
    assert_eq!(meta(&fitted)["decision"]["rule_id"], "deny[0]");
    assert!(fitted["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("deny[0]"));
}

#[test]
fn hold_on_tool_with_output_schema_becomes_an_error_result_with_its_request_id() {
    let message = "request req-1234 is pending".to_owned();
    let held = approval_outcome(
        "APPROVAL_REQUIRED",
        "trace-1",
        (&handle(ApprovalStatus::Pending), RESUME_TOOL),
        message,
        false,
    );
    assert_eq!(
        held["isError"], false,
        "a hold is not an error where its fields fit"
    );
    let fitted = fit_to_tool(held, Some(&filesystem_tool()));
    assert!(fitted.get("structuredContent").is_none(), "{fitted}");
    assert_eq!(
        fitted["isError"], true,
        "clients demand structured content from a successful result"
    );
    assert_eq!(meta(&fitted)["outcome"], "APPROVAL_REQUIRED");
    assert_eq!(meta(&fitted)["approval"]["request_id"], "req-1234");
    assert!(fitted["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("req-1234"));
}

#[test]
fn every_own_result_on_a_tool_with_output_schema_fits_every_official_client() {
    for result in own_results() {
        let fitted = fit_to_tool(result.clone(), Some(&filesystem_tool()));
        // The TypeScript SDK and the Inspector validate structuredContent whenever it is present; both they and
        // the Python SDK demand it from a result that is not an error.
        assert!(
            fitted.get("structuredContent").is_none() && fitted["isError"] == true,
            "{fitted}"
        );
        assert_eq!(
            meta(&fitted),
            &result["structuredContent"],
            "the fields stay readable in _meta"
        );
    }
}

#[test]
fn v1_fields_stay_in_structured_content_where_they_fit() {
    let permissive =
        json!({"name": "t", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}});
    for definition in [
        None,
        Some(json!({"name": "t", "inputSchema": {"type": "object"}})),
        Some(permissive),
    ] {
        for result in own_results() {
            let fitted = fit_to_tool(result.clone(), definition.as_ref());
            assert_eq!(fitted, result, "unchanged for {definition:?}");
        }
    }
}

#[test]
fn own_tools_output_schemas_accept_every_contract_result() {
    // Agents read toolgate's own tools' answers from structuredContent: those schemas must admit every V1 shape.
    let mut tools = vec![crate::status::definition()];
    tools.extend(crate::intrinsics::definitions());
    tools.extend(crate::intrinsics::workspace_definitions());
    tools.extend(builtin::tool_definitions());
    let with_schema: Vec<&Value> = tools
        .iter()
        .filter(|t| t.get("outputSchema").is_some())
        .collect();
    assert!(
        with_schema.len() > 5,
        "the built-in tools declare output schemas"
    );
    for tool in with_schema {
        for result in own_results() {
            let fitted = fit_to_tool(result.clone(), Some(tool));
            assert_eq!(
                fitted["structuredContent"], result["structuredContent"],
                "{}: {result}",
                tool["name"]
            );
            assert_eq!(fitted["isError"], result["isError"]);
        }
    }
}

#[test]
fn uncompilable_output_schema_fails_closed_to_meta() {
    let broken =
        json!({"name": "t", "inputSchema": {"type": "object"}, "outputSchema": {"type": 12}});
    let fitted = fit_to_tool(refusal(&Refusal::denied(&deny())), Some(&broken));
    assert!(fitted.get("structuredContent").is_none());
    assert_eq!(fitted["isError"], true);
}

#[test]
fn forwarded_result_is_left_as_the_upstream_wrote_it() {
    let upstream =
        json!({"content": [{"type": "text", "text": "x"}], "structuredContent": {"other": 1}});
    assert_eq!(
        fit_to_tool(upstream.clone(), Some(&filesystem_tool())),
        upstream
    );
}

#[test]
fn meta_copy_follows_fields_added_after_the_result_was_built() {
    let hook_deny = Refusal::new(RefusalCode::Policy(ReasonCode::HookDeny), "a hook said no");
    let mut refused = refusal(&hook_deny.with_trace("trace-3"));
    refused["structuredContent"]["decision"] = json!({"rule_id": "hook:0"});
    let fitted = fit_to_tool(refused, Some(&filesystem_tool()));
    assert_eq!(meta(&fitted)["decision"]["rule_id"], "hook:0");
    assert_eq!(meta(&fitted)["trace_id"], "trace-3");
}

/// How the V1 fields were written before they were types, kept verbatim as the oracle of their bytes.
fn approval_fields_before(h: &HeldCall) -> Value {
    let outcome = h.state.as_str();
    let mut structured = json!({"outcome": outcome, "trace_id": h.trace_id, "approval": {
        "request_id": h.handle.request_id,
        "status": h.handle.status.as_str(),
        "expires_at": h.handle.expires_at.to_rfc3339(),
        "resume_tool": RESUME_TOOL,
    }});
    if h.state.is_final_refusal() {
        structured["error"] =
            json!({"code": outcome, "message": h.message, "retryable": retryable(outcome)});
    }
    structured
}

fn refusal_fields_before(r: &Refusal) -> Value {
    let mut structured = json!({
        "outcome": "REFUSED",
        "error": {"code": r.code.as_str(), "message": r.message, "retryable": false},
    });
    if let Some(d) = &r.decision {
        structured["decision"] = json!({
            "effect": d.effect, "reason": d.reason.as_str(), "rule_id": d.rule_id, "operation": d.operation,
        });
    }
    if let Some(t) = &r.trace_id {
        structured["trace_id"] = json!(t);
    }
    structured
}

#[test]
fn v1_fields_keep_the_bytes_they_were_written_with() {
    use crate::outcome::ApprovalState;
    let states = [
        ApprovalState::Required,
        ApprovalState::Pending,
        ApprovalState::Approved,
        ApprovalState::Rejected,
        ApprovalState::Expired,
        ApprovalState::Consumed,
    ];
    for state in states {
        let h = HeldCall {
            state,
            trace_id: "trace-1".to_owned(),
            handle: handle(ApprovalStatus::Pending),
            message: "waiting \u{202e}".to_owned(),
            resume: crate::own::Resumer::TOOLGATE,
        };
        let result = held(&h);
        let want = approval_fields_before(&h).to_string();
        assert_eq!(result["structuredContent"].to_string(), want, "{state:?}");
        assert_eq!(result["_meta"][META_KEY].to_string(), want, "{state:?}");
    }
    let decided = deny();
    let bare = Refusal::new(RefusalCode::UnknownTarget, "unknown tool: x");
    let refusals = [
        bare.clone(),
        bare.clone().with_trace("t-9"),
        bare.clone().with_decision(decided.clone()),
        bare.with_decision(decided).with_trace("t-9"),
    ];
    for r in refusals {
        let result = refusal(&r);
        assert_eq!(
            result["structuredContent"].to_string(),
            refusal_fields_before(&r).to_string()
        );
    }
}
