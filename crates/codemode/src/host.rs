//! The seam between a program and the tools it calls. The gateway implements [`ToolHost`] with its governed-call
//! pipeline, so a program's call is decided, approved, audited and run exactly as a client's is; this crate never
//! calls a tool any other way.

use serde_json::Value;
use std::future::Future;
use std::pin::Pin;

/// One call a program made: `await call(name, arguments)`.
#[derive(Debug, Clone, PartialEq)]
pub struct NestedCall {
    /// The call's number in its session (`#n`, what `recall(n)` names), from 1.
    pub seq: u32,
    /// The tool name as the program wrote it (an exposed name, or `mcp__<server>__<tool>`).
    pub name: String,
    pub arguments: Value,
}

/// Why a call did not give a result. Thrown into the program as an `Error` whose `code` and `message` are these.
#[derive(Debug, Clone, PartialEq)]
pub enum CallFailure {
    /// The policy, a human or a limit refused it (`code` is toolgate's refusal code, e.g. `POLICY_DENIED`).
    Refused { code: String, message: String },
    /// The tool ran and failed (`isError`), or could not be reached.
    Failed { message: String },
}

pub type HostFuture<'a> = Pin<Box<dyn Future<Output = Result<Value, CallFailure>> + Send + 'a>>;

/// Runs the calls of one program. Returns the tool's whole MCP result (`CallToolResult`) on success.
pub trait ToolHost: Send + Sync {
    fn call(&self, call: NestedCall) -> HostFuture<'_>;
}

/// What `await call(...)` resolves to: the structured content when present, else the content — a lone text item
/// as its string, any other content as the content array. A result with `isError` becomes a failure.
pub fn result_value(result: &Value) -> Result<Value, CallFailure> {
    let content = result
        .get("content")
        .cloned()
        .unwrap_or(Value::Array(Vec::new()));
    let text = |c: &Value| -> Option<String> {
        let items = c.as_array()?;
        match items.as_slice() {
            [one] if one.get("type").and_then(Value::as_str) == Some("text") => {
                one.get("text").and_then(Value::as_str).map(str::to_owned)
            }
            _ => None,
        }
    };
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        let message = text(&content).unwrap_or_else(|| content.to_string());
        return Err(CallFailure::Failed { message });
    }
    if let Some(structured) = result.get("structuredContent") {
        return Ok(structured.clone());
    }
    Ok(text(&content).map(Value::String).unwrap_or(content))
}
