//! `tools/call` for the conformance catalog: fixed content of each kind, logging and progress while a call runs,
//! a tool error, and the tools that ask the caller something (sampling, elicitation forms with defaults and
//! with every kind of enum), which go through `input` so they work in either era.

use super::{input, PNG, WAV};
use crate::fixture::{lock, Server};
use jsonrpc::{error_object, Id};
use serde_json::{json, Value};
use std::time::Duration;

fn text(s: impl Into<String>) -> Value {
    json!({"type": "text", "text": s.into()})
}

fn content(items: Vec<Value>) -> Value {
    json!({ "content": items })
}

/// The pause between the notifications a tool sends, so they arrive while the call is still running.
const STEP: Duration = Duration::from_millis(50);

pub(super) async fn call(
    server: &Server,
    id: &Id,
    params: &Value,
    modern: bool,
) -> Result<Value, Value> {
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let arg = |key: &str| {
        params
            .pointer(&format!("/arguments/{key}"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    if let Some(result) = input::call(server, name, params, modern).await {
        return result;
    }
    Ok(match name {
        "test_simple_text" => content(vec![text("This is a simple text response for testing.")]),
        "test_image_content" => content(vec![
            json!({"type": "image", "data": PNG, "mimeType": "image/png"}),
        ]),
        "test_audio_content" => content(vec![
            json!({"type": "audio", "data": WAV, "mimeType": "audio/wav"}),
        ]),
        "test_embedded_resource" => content(vec![
            json!({"type": "resource", "resource": {"uri": "test://embedded-resource", "mimeType": "text/plain",
                                                    "text": "This is an embedded resource content."}}),
        ]),
        "test_multiple_content_types" => content(vec![
            text("Multiple content types test:"),
            json!({"type": "image", "data": PNG, "mimeType": "image/png"}),
            json!({"type": "resource", "resource": {"uri": "test://mixed-content-resource",
                   "mimeType": "application/json", "text": json!({"test": "data", "value": 123}).to_string()}}),
        ]),
        "test_tool_with_logging" => {
            let messages = [
                "Tool execution started",
                "Tool processing data",
                "Tool execution completed",
            ];
            for (i, message) in messages.into_iter().enumerate() {
                if i > 0 {
                    tokio::time::sleep(STEP).await;
                }
                let p = json!({"level": "info", "logger": "conformance", "data": message});
                server
                    .send(jsonrpc::notification("notifications/message", Some(p)))
                    .await;
            }
            content(vec![text("Tool with logging executed successfully")])
        }
        "test_tool_with_progress" => {
            let token = params.pointer("/_meta/progressToken").cloned();
            for (i, progress) in [0, 50, 100].into_iter().enumerate() {
                if i > 0 {
                    tokio::time::sleep(STEP).await;
                }
                if server.was_cancelled(id) {
                    return Err(error_object(jsonrpc::REQUEST_CANCELLED, "cancelled", None));
                }
                if let Some(token) = &token {
                    let p = json!({"progressToken": token, "progress": progress, "total": 100});
                    server
                        .send(jsonrpc::notification("notifications/progress", Some(p)))
                        .await;
                }
            }
            content(vec![text("Tool with progress executed successfully")])
        }
        "json_schema_2020_12_tool" => content(vec![text(format!(
            "Delivery request received: {}",
            params.get("arguments").unwrap_or(&Value::Null)
        ))]),
        // Logs only to a caller that asked for logs: a modern caller names a level in `_meta`, a legacy one
        // sets it for the session (this fixture logs to every legacy caller).
        "test_logging_tool" => {
            let level = params.pointer("/_meta/io.modelcontextprotocol~1logLevel");
            if !modern || level.is_some() {
                let p =
                    json!({"level": "info", "logger": "conformance", "data": "logging tool ran"});
                server
                    .send(jsonrpc::notification("notifications/message", Some(p)))
                    .await;
            }
            content(vec![text("Logging tool ran")])
        }
        "test_trigger_tool_change" | "test_trigger_prompt_change" => {
            let list = if name == "test_trigger_tool_change" {
                "tools"
            } else {
                "prompts"
            };
            let kind = if list == "tools" { "tool" } else { "prompt" };
            {
                let mut added = lock(&server.added);
                let n = added.len();
                added.push(format!("dynamic_{kind}_{n}"));
            }
            let method = format!("notifications/{list}/list_changed");
            server.send(jsonrpc::notification(&method, None)).await;
            content(vec![text(format!("The {list} list changed"))])
        }
        "test_header_param" => content(vec![text(format!("Region: {}", arg("region")))]),
        "test_error_handling" => json!({"isError": true, "content": [
            text("This tool intentionally returns an error for testing")]}),
        "test_sampling" => {
            let req = json!({"messages": [{"role": "user", "content": text(arg("prompt"))}],
                             "maxTokens": 100});
            let answer = server.ask("sampling/createMessage", req).await?;
            let said = answer
                .pointer("/content/text")
                .and_then(Value::as_str)
                .unwrap_or_default();
            content(vec![text(format!("LLM response: {said}"))])
        }
        "test_elicitation" => {
            let schema = json!({"type": "object", "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"}},
                "required": ["username", "email"]});
            let req = json!({"message": arg("message"), "requestedSchema": schema});
            let answer = server.ask("elicitation/create", req).await?;
            content(vec![text(format!("User response: {answer}"))])
        }
        "test_elicitation_sep1034_defaults" => {
            let schema = json!({"type": "object", "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                "verified": {"type": "boolean", "default": true}}});
            let req = json!({"message": "Please review your details", "requestedSchema": schema});
            let answer = server.ask("elicitation/create", req).await?;
            content(vec![text(format!("Elicitation answer: {answer}"))])
        }
        "test_elicitation_sep1330_enums" => {
            let titled = |pairs: &[(&str, &str)]| -> Vec<Value> {
                pairs
                    .iter()
                    .map(|(c, t)| json!({"const": c, "title": t}))
                    .collect()
            };
            let schema = json!({"type": "object", "properties": {
                "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                "titledSingle": {"type": "string", "oneOf": titled(&[("value1", "First Option"),
                                  ("value2", "Second Option"), ("value3", "Third Option")])},
                "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                               "enumNames": ["Option One", "Option Two", "Option Three"]},
                "untitledMulti": {"type": "array", "items": {"type": "string",
                                  "enum": ["option1", "option2", "option3"]}},
                "titledMulti": {"type": "array", "items": {"anyOf": titled(&[("value1", "First Choice"),
                                ("value2", "Second Choice"), ("value3", "Third Choice")])}}}});
            let req = json!({"message": "Please choose", "requestedSchema": schema});
            let answer = server.ask("elicitation/create", req).await?;
            content(vec![text(format!("Elicitation answer: {answer}"))])
        }
        n if lock(&server.added).iter().any(|a| a == n) => content(vec![text(n)]),
        _ => {
            return Err(error_object(
                jsonrpc::INVALID_PARAMS,
                format!("Unknown tool: {name}"),
                None,
            ))
        }
    })
}
