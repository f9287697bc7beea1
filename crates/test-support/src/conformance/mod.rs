//! The conformance catalog (`fixture-server --conformance`): the tools, resources, resource template, prompts
//! and completions that the official conformance suite's server scenarios call by name, served by the fixture's
//! message loop in place of its own catalog. Lifecycle, ping, logging levels and subscriptions stay the
//! fixture's; this module only answers the catalog methods.
//!
//! The multi-round tools (`test_input_required_result_*`) answer in the caller's era: a 2026-07-28 caller gets
//! `resultType: "input_required"` and retries with `inputResponses`; a legacy caller is asked the same questions
//! as server→client requests in the same call. It does not implement the 2026 tasks extension.

mod calls;
mod input;
#[cfg(test)]
mod input_tests;

use crate::fixture::{lock, Server};
use jsonrpc::{error_object, Id};
use serde_json::{json, Value};

/// A 1×1 PNG.
pub(crate) const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";
/// A WAV file of eight samples of silence.
pub(crate) const WAV: &str =
    "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";
/// Sixteen bytes, 0 to 15.
const BLOB: &str = "AAECAwQFBgcICQoLDA0ODw==";

/// The catalog methods this module answers; `None` for a method it leaves to the fixture.
pub(crate) async fn request(
    server: &Server,
    id: &Id,
    method: &str,
    params: &Value,
    modern: bool,
) -> Option<Result<Value, Value>> {
    Some(match method {
        "tools/list" => Ok(json!({ "tools": with_added(tools(), server, "dynamic_tool_") })),
        "resources/list" => Ok(json!({ "resources": resources() })),
        "resources/templates/list" => Ok(json!({ "resourceTemplates": templates() })),
        "prompts/list" => {
            Ok(json!({ "prompts": with_added(prompts(), server, "dynamic_prompt_") }))
        }
        "resources/read" => read_resource(params),
        "prompts/get" => get_prompt(server, params, modern).await,
        "completion/complete" => Ok(complete(params)),
        "tools/call" => calls::call(server, id, params, modern).await,
        _ => return None,
    })
}

/// `items` and what the list-change triggers added under `prefix` (each a no-argument tool or prompt).
fn with_added(mut items: Vec<Value>, server: &Server, prefix: &str) -> Vec<Value> {
    let added = lock(&server.added);
    items.extend(added.iter().filter(|n| n.starts_with(prefix)).map(|n| {
        match no_args(n, "Added by a list-change trigger.") {
            // A prompt has no input schema.
            Value::Object(mut m) if prefix == "dynamic_prompt_" => {
                m.remove("inputSchema");
                Value::Object(m)
            }
            item => item,
        }
    }));
    items
}

fn tool(name: &str, description: &str, props: Value, required: &[&str]) -> Value {
    json!({"name": name, "description": description,
           "inputSchema": {"type": "object", "properties": props, "required": required}})
}

fn no_args(name: &str, description: &str) -> Value {
    tool(name, description, json!({}), &[])
}

fn tools() -> Vec<Value> {
    let mut tools = vec![
        no_args("test_simple_text", "Returns one text block."),
        no_args("test_image_content", "Returns a PNG image."),
        no_args("test_audio_content", "Returns a WAV clip."),
        no_args(
            "test_embedded_resource",
            "Returns an embedded text resource.",
        ),
        no_args(
            "test_multiple_content_types",
            "Returns text, an image and an embedded resource.",
        ),
        no_args(
            "test_tool_with_logging",
            "Sends three log messages while it runs.",
        ),
        no_args(
            "test_tool_with_progress",
            "Reports progress 0, 50 and 100 of 100.",
        ),
        no_args("test_error_handling", "Always returns a tool error."),
        tool(
            "test_sampling",
            "Asks the client to sample a reply to `prompt`.",
            json!({"prompt": {"type": "string", "description": "What to ask the model"}}),
            &["prompt"],
        ),
        tool(
            "test_elicitation",
            "Asks the client's user for a username and an email address.",
            json!({"message": {"type": "string", "description": "What to show the user"}}),
            &["message"],
        ),
        no_args(
            "test_elicitation_sep1034_defaults",
            "Elicits a form whose every primitive field has a default.",
        ),
        no_args(
            "test_elicitation_sep1330_enums",
            "Elicits a form with each kind of enum field.",
        ),
    ];
    tools.extend([
        no_args("test_logging_tool", "Logs once, if the caller asked for logs."),
        no_args("test_trigger_tool_change", "Adds a tool and announces the change."),
        no_args("test_trigger_prompt_change", "Adds a prompt and announces the change."),
        // SEP-2243: an argument a 2026-07-28 HTTP client also sends as the `Mcp-Param-Region` header.
        json!({"name": "test_header_param", "description": "Names the region it was given.",
               "inputSchema": {"type": "object", "required": ["region"],
                               "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}}),
    ]);
    tools.push(json!({"name": "json_schema_2020_12_tool",
        "description": "Takes a delivery request whose schema uses the JSON Schema 2020-12 vocabulary.",
        "inputSchema": json_schema_2020_12()}));
    tools.extend(input::tools());
    tools
}

/// A 2020-12 input schema using the keywords a gateway must not strip: the dialect, `$defs` with an `$anchor`,
/// a `$ref`, composition, a conditional and closed properties.
fn json_schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"address": {"$anchor": "deliveryAddress", "type": "object",
                              "properties": {"line": {"type": "string"}, "town": {"type": "string"}}}},
        "properties": {
            "recipient": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "notify": {"type": "string", "enum": ["sms", "mail"]},
            "mobile": {"type": "string"},
            "mailbox": {"type": "string"}
        },
        "allOf": [{"anyOf": [{"required": ["mobile"]}, {"required": ["mailbox"]}]}],
        "if": {"properties": {"notify": {"const": "sms"}}, "required": ["notify"]},
        "then": {"required": ["mobile"]},
        "else": {"required": ["mailbox"]},
        "additionalProperties": false
    })
}

fn resources() -> Vec<Value> {
    vec![
        json!({"uri": "test://static-text", "name": "static-text", "description": "A fixed text resource.",
               "mimeType": "text/plain"}),
        json!({"uri": "test://static-binary", "name": "static-binary", "description": "A fixed binary resource.",
               "mimeType": "application/octet-stream"}),
        json!({"uri": "test://watched-resource", "name": "watched-resource",
               "description": "A resource clients may subscribe to.", "mimeType": "text/plain"}),
    ]
}

fn templates() -> Vec<Value> {
    vec![
        json!({"uriTemplate": "test://template/{id}/data", "name": "template-data",
               "description": "JSON data for any id.", "mimeType": "application/json"}),
    ]
}

fn prompts() -> Vec<Value> {
    let arg = |name: &str, description: &str| json!({"name": name, "description": description, "required": true});
    vec![
        json!({"name": "test_simple_prompt", "description": "A prompt with no arguments."}),
        json!({"name": "test_prompt_with_arguments", "description": "A prompt that quotes its two arguments.",
               "arguments": [arg("arg1", "The first argument"), arg("arg2", "The second argument")]}),
        json!({"name": "test_prompt_with_embedded_resource", "description": "A prompt that embeds a resource.",
               "arguments": [arg("resourceUri", "The URI to embed")]}),
        json!({"name": "test_prompt_with_image", "description": "A prompt that carries an image."}),
        json!({"name": "test_input_required_result_prompt",
               "description": "A prompt that first asks the user for context."}),
    ]
}

/// SEP-2164: an unknown URI is invalid params naming the URI, never an empty `contents`.
fn not_found(uri: &str) -> Value {
    error_object(
        jsonrpc::INVALID_PARAMS,
        "Resource not found",
        Some(json!({ "uri": uri })),
    )
}

fn read_resource(params: &Value) -> Result<Value, Value> {
    let uri = params
        .get("uri")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let content = match uri {
        "test://static-text" => {
            json!({"uri": uri, "mimeType": "text/plain", "text": "This is the content of the static text resource."})
        }
        "test://static-binary" => {
            json!({"uri": uri, "mimeType": "application/octet-stream", "blob": BLOB})
        }
        "test://watched-resource" => {
            json!({"uri": uri, "mimeType": "text/plain", "text": "Watched."})
        }
        _ => {
            let id = uri
                .strip_prefix("test://template/")
                .and_then(|rest| rest.strip_suffix("/data"))
                .filter(|id| !id.is_empty() && !id.contains('/'))
                .ok_or_else(|| not_found(uri))?;
            let data =
                json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
            json!({"uri": uri, "mimeType": "application/json", "text": data.to_string()})
        }
    };
    Ok(json!({ "contents": [content] }))
}

fn user(content: Value) -> Value {
    json!({"role": "user", "content": content})
}

fn text(s: impl Into<String>) -> Value {
    json!({"type": "text", "text": s.into()})
}

async fn get_prompt(server: &Server, params: &Value, modern: bool) -> Result<Value, Value> {
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let arg = |key: &str| {
        params
            .pointer(&format!("/arguments/{key}"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| {
                error_object(
                    jsonrpc::INVALID_PARAMS,
                    format!("missing argument {key}"),
                    None,
                )
            })
    };
    let messages = match name {
        "test_simple_prompt" => vec![user(text("This is a simple prompt for testing."))],
        "test_prompt_with_arguments" => {
            let (a, b) = (arg("arg1")?, arg("arg2")?);
            vec![user(text(format!(
                "Prompt with arguments: arg1='{a}', arg2='{b}'"
            )))]
        }
        "test_prompt_with_embedded_resource" => {
            let uri = arg("resourceUri")?;
            vec![
                user(
                    json!({"type": "resource", "resource": {"uri": uri, "mimeType": "text/plain",
                                                             "text": "Embedded resource content for testing."}}),
                ),
                user(text("Please process the embedded resource above.")),
            ]
        }
        "test_prompt_with_image" => vec![
            user(json!({"type": "image", "data": PNG, "mimeType": "image/png"})),
            user(text("Please analyze the image above.")),
        ],
        "test_input_required_result_prompt" => {
            return input::prompt(server, params, modern).await;
        }
        _ => {
            return Err(error_object(
                jsonrpc::INVALID_PARAMS,
                format!("unknown prompt {name}"),
                None,
            ))
        }
    };
    Ok(json!({ "messages": messages }))
}

/// Completions for the prompt arguments and the template's `id`: the fixed candidates that start with the typed
/// prefix.
fn complete(params: &Value) -> Value {
    let prefix = params
        .pointer("/argument/value")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let values: Vec<&str> = ["paris", "park", "party", "test", "testing", "123"]
        .into_iter()
        .filter(|v| v.starts_with(prefix))
        .collect();
    json!({"completion": {"values": values, "total": values.len(), "hasMore": false}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_reads_substitute_the_id_and_unknown_uris_are_not_found() {
        let read = read_resource(&json!({"uri": "test://template/123/data"})).unwrap();
        assert!(read["contents"][0]["text"]
            .as_str()
            .unwrap()
            .contains("\"id\":\"123\""));
        let missing = read_resource(&json!({"uri": "test://nonexistent"})).unwrap_err();
        assert_eq!(missing["code"], jsonrpc::INVALID_PARAMS);
        assert_eq!(missing["data"]["uri"], "test://nonexistent");
        assert!(read_resource(&json!({"uri": "test://template//data"})).is_err());
    }

    #[test]
    fn every_tool_name_is_unique_and_well_formed() {
        let tools = tools();
        let mut names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
        assert!(names
            .iter()
            .all(|n| n.len() <= 64 && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')));
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count);
    }

    #[test]
    fn completion_filters_by_prefix() {
        let c = complete(&json!({"argument": {"name": "arg1", "value": "par"}}));
        assert_eq!(c["completion"]["values"], json!(["paris", "park", "party"]));
    }
}
