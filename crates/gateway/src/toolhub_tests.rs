//! The ToolHub surface's definitions and the answers it completes, without a gateway (the end-to-end flow through
//! `mcp-toolhub` is in the cli suite).

use super::*;
use crate::outcome::{ApprovalState, HeldCall, Refusal, RefusalCode};
use pretty_assertions::assert_eq;

fn held(state: ApprovalState) -> CallOutcome {
    CallOutcome::Held(HeldCall {
        state,
        trace_id: "tr_held".into(),
        handle: store::ApprovalHandle {
            request_id: "apr_1".into(),
            status: store::ApprovalStatus::Pending,
            trace_id: "tr_held".into(),
            expires_at: store::Timestamp::from_millis(1_800_000_000_000),
        },
        message: "waiting".into(),
        resume: own::Resumer::of(own::OWN_SERVER, builtin::SHELL_RUN, "shell.run"),
    })
}

#[test]
fn exactly_toolhubs_14_tools_in_its_order_each_with_schemas_that_compile() {
    let defs = definitions();
    let names: Vec<&str> = defs.iter().filter_map(|d| d["name"].as_str()).collect();
    let expected: Vec<&str> = own::TOOLHUB.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, expected);
    for d in &defs {
        for schema in ["inputSchema", "outputSchema"] {
            assert!(
                crate::guard::compile(&d[schema]).is_ok(),
                "{} {schema}",
                d["name"]
            );
        }
    }
    let resume = defs
        .iter()
        .find(|d| d["name"] == "shell.run_approved")
        .unwrap();
    assert_eq!(resume["inputSchema"]["required"], json!(["request_id"]));
    assert_eq!(
        resume["outputSchema"]["required"],
        json!(["outcome", "trace_id"])
    );
}

#[test]
fn capabilities_name_each_gated_tool_with_its_resume_tool_and_the_limits() {
    let limits = Limits {
        max_read_file_bytes: 1,
        max_write_bytes: 2,
        max_patch_chars: 3,
        max_shell_timeout_seconds: 4,
        output_retained: 5,
        approval_expires_seconds: 6,
    };
    let caps = capabilities(&limits)["structuredContent"].clone();
    assert_eq!(caps["contract_version"], "1.0");
    assert_eq!(caps["transport"], "stdio");
    assert_eq!(
        caps["approval_operations"],
        json!([
            {"initial_tool": "filesystem.apply_patch", "resume_tool": "filesystem.apply_patch_approved"},
            {"initial_tool": "filesystem.write_file", "resume_tool": "filesystem.write_file_approved"},
            {"initial_tool": "shell.run", "resume_tool": "shell.run_approved"},
        ])
    );
    assert_eq!(caps["limits"]["shell_output_retained_chars"], 5);
    assert_eq!(caps["limits"]["git_output_retained_chars"], 5);
    let schema = control_definition(&OwnTool::Capabilities).unwrap()["outputSchema"].clone();
    assert!(crate::guard::compile(&schema).unwrap().is_valid(&caps));
}

#[test]
fn an_unknown_request_gets_refused_request_not_found_with_the_id_and_a_trace() {
    let refusal = Refusal::new(RefusalCode::RequestNotFound, "no approval request");
    let CallOutcome::Complete(v, Completion::Failed("REFUSED")) = complete(
        CallOutcome::Refused(refusal),
        "toolhub.request_status",
        "tr_status",
        "apr_nope",
    ) else {
        panic!("a status answer is a complete result");
    };
    let s = &v["structuredContent"];
    assert_eq!(s["outcome"], "REFUSED");
    assert_eq!(s["error"]["code"], "REQUEST_NOT_FOUND");
    assert_eq!(
        (s["request_id"].as_str(), s["trace_id"].as_str()),
        (Some("apr_nope"), Some("tr_status"))
    );
    assert_eq!(v["_meta"][contract::META_KEY], *s);
    let schema = control_definition(&OwnTool::RequestStatus).unwrap()["outputSchema"].clone();
    assert!(crate::guard::compile(&schema).unwrap().is_valid(s));
}

#[test]
fn a_pending_request_keeps_its_own_trace_and_says_it_is_retryable() {
    let CallOutcome::Complete(v, _) = complete(
        held(ApprovalState::Pending),
        "toolhub.request_status",
        "tr_status",
        "apr_1",
    ) else {
        panic!("a status answer is a complete result");
    };
    let s = &v["structuredContent"];
    assert_eq!(s["trace_id"], "tr_held");
    assert_eq!(s["approval"]["resume_tool"], "shell.run_approved");
    assert_eq!(s["error"]["code"], "APPROVAL_PENDING");
    assert_eq!(s["error"]["retryable"], true);
}

#[test]
fn gated_results_and_refusals_carry_the_trace_reads_are_left_as_they_are() {
    let result = || json!({"content": [], "structuredContent": {"outcome": "SUCCEEDED"}});
    let traced = |called: &str| match complete(
        CallOutcome::Complete(result(), Completion::Succeeded),
        called,
        "tr_1",
        "",
    ) {
        CallOutcome::Complete(v, _) => v["structuredContent"]["trace_id"].clone(),
        _ => Value::Null,
    };
    assert_eq!(traced("shell.run_approved"), "tr_1");
    assert_eq!(traced("filesystem.write_file"), "tr_1");
    assert_eq!(traced("filesystem.read_file"), Value::Null);
    let refused = complete(
        CallOutcome::Refused(Refusal::new(RefusalCode::PathOutsideWorkspace, "no")),
        "filesystem.read_file",
        "tr_2",
        "",
    );
    let CallOutcome::Refused(r) = refused else {
        panic!("still a refusal");
    };
    assert_eq!(r.trace_id.as_deref(), Some("tr_2"));
}

/// The surface ToolHub's clients program against: tool names, annotations, the initial→resume mappings, the
/// enums, each schema's properties and required fields, and digests of the normalised schemas (descriptions and
/// titles dropped), as ToolHub's own `tests/fixtures/contract_v1.json` pins its surface.
fn surface() -> Value {
    use crate::contract::tests::digest;
    let fields = |schema: Option<&Value>| {
        let mut properties: Vec<String> = schema
            .and_then(|s| s.get("properties"))
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        properties.sort();
        json!({
            "properties": properties,
            "required": schema.and_then(|s| s.get("required")).cloned().unwrap_or(json!([])),
            "sha256": digest(schema),
        })
    };
    let tools: serde_json::Map<String, Value> = definitions()
        .iter()
        .map(|t| {
            let name = t["name"].as_str().unwrap_or_default().to_owned();
            let entry = json!({
                "annotations": t.get("annotations"),
                "input_schema": fields(t.get("inputSchema")),
                "output_schema": fields(t.get("outputSchema")),
            });
            (name, entry)
        })
        .collect();
    let statuses = [
        store::ApprovalStatus::Pending,
        store::ApprovalStatus::Approved,
        store::ApprovalStatus::Rejected,
        store::ApprovalStatus::Expired,
        store::ApprovalStatus::Consumed,
        store::ApprovalStatus::Cancelled,
    ];
    json!({
        "approval_operations": approval_operations().iter()
            .map(|(initial, resume)| json!({"initial_tool": initial, "resume_tool": resume}))
            .collect::<Vec<_>>(),
        "approval_statuses": statuses.map(store::ApprovalStatus::as_str),
        "contract_version": CONTRACT_VERSION,
        "outcomes": contract::OUTCOMES,
        "status_tool": STATUS_TOOL,
        "tools": tools,
    })
}

#[test]
fn toolhub_contract_v1_surface_matches_the_reviewed_fixture() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/toolhub_contract_v1.json");
    let actual = serde_json::to_string_pretty(&surface()).unwrap() + "\n";
    if std::env::var_os("TOOLGATE_BLESS").is_some() {
        std::fs::write(&path, &actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(
        expected, actual,
        "ToolHub's Contract V1 surface changed: review it; if compatible, TOOLGATE_BLESS=1 rewrites the fixture"
    );
}
