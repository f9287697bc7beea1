//! The Contract V1 fixture: the tool surface agents program against (names, annotations, required fields,
//! enums, and digests of the normalised schemas) is pinned in `tests/fixtures/contract_v1.json`. Any change
//! fails here until it is reviewed: a compatible change is blessed with `TOOLGATE_BLESS=1`; an incompatible one
//! needs a new contract version.

use super::*;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// Drops what may change without breaking a client: descriptions and titles.
pub(crate) fn normalise(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "description" | "title"))
                .map(|(k, v)| (k.clone(), normalise(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(normalise).collect()),
        other => other.clone(),
    }
}

/// SHA-256 of a schema's normalised canonical JSON; null for none.
pub(crate) fn digest(v: Option<&Value>) -> Value {
    match v {
        None => Value::Null,
        Some(v) => {
            let text = store::canonical_json(&normalise(v));
            json!(hex::encode(Sha256::digest(text.as_bytes())))
        }
    }
}

fn surface() -> Value {
    let mut tools = vec![crate::status::definition()];
    tools.extend(crate::intrinsics::definitions());
    tools.extend(crate::intrinsics::workspace_definitions());
    tools.extend(builtin::tool_definitions());
    let tools: Vec<Value> = tools
        .iter()
        .map(|t| {
            json!({
                "name": t["name"],
                "annotations": t.get("annotations"),
                "required": t.pointer("/inputSchema/required"),
                "input_properties": t.pointer("/inputSchema/properties").and_then(Value::as_object)
                    .map(|p| p.keys().cloned().collect::<Vec<_>>()),
                "input_schema_sha256": digest(t.get("inputSchema")),
                "output_schema_sha256": digest(t.get("outputSchema")),
            })
        })
        .collect();
    json!({
        "contract_version": CONTRACT_VERSION,
        "outcomes": OUTCOMES,
        "resume_tool": RESUME_TOOL,
        "status_tool": STATUS_TOOL,
        "capabilities_tool": CAPABILITIES_TOOL,
        "tools": tools,
    })
}

#[test]
fn contract_v1_surface_matches_the_reviewed_fixture() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/contract_v1.json");
    let actual = serde_json::to_string_pretty(&surface()).unwrap() + "\n";
    if std::env::var_os("TOOLGATE_BLESS").is_some() {
        std::fs::write(&path, &actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    pretty_assertions::assert_eq!(
        expected,
        actual,
        "the Contract V1 surface changed: review it; if compatible, TOOLGATE_BLESS=1 rewrites the fixture"
    );
}

#[test]
fn every_outcome_the_gateway_emits_is_in_the_contract() {
    for outcome in [
        "APPROVAL_REQUIRED",
        "APPROVAL_PENDING",
        "APPROVAL_CONSUMED",
        "REFUSED",
        "CONFLICT",
    ] {
        assert_eq!(outcome_name(outcome), outcome);
    }
    assert_eq!(outcome_name("MADE_UP"), "FAILED");
}
