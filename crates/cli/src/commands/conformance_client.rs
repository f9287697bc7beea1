//! `toolgate conformance-client <url>` (hidden): toolgate's upstream HTTP client as the client under test of the
//! official conformance suite (`conformance client --command "toolgate conformance-client"`), which runs it
//! against a server of its own per scenario.
//!
//! It connects with the same `Upstream` the gateway uses for an `"http"` entry (era probe, handshake, whole
//! catalog), then does what any scenario asks of a client: it reads every resource and gets every prompt it
//! found, calls every tool with arguments built from its schema (`json_schema_echo` gets the schema it was shown),
//! answers a server's elicitation with the schema's defaults, its sampling with a fixed text and its roots with
//! none, and follows `input_required` results with the same answers, echoing `requestState` unchanged. Calls the
//! suite names with exact arguments (`toolCalls` in `MCP_CONFORMANCE_CONTEXT`) are made with those. The
//! scenario (`MCP_CONFORMANCE_SCENARIO`) only says what to log; the protocol version the suite names
//! (`MCP_CONFORMANCE_PROTOCOL_VERSION`) forces the era. It is a test peer: nothing here is used when serving.

use config::{Protocol, ServerConfig, ServerKind, ToolFilter, Transport};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use upstream::{Event, Options, Sinks, State, Upstream};

/// Rounds of `input_required` followed for one call before giving up.
const MAX_ROUNDS: usize = 8;
const TIMEOUT: Duration = Duration::from_secs(20);

#[derive(clap::Args)]
pub struct Args {
    /// The server's MCP endpoint, as the suite gives it.
    url: String,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    crate::runtime::tokio()?.block_on(client(args.url))
}

async fn client(url: String) -> anyhow::Result<ExitCode> {
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let protocol = match std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").ok() {
        Some(v) if v == upstream::MODERN_VERSION => Protocol::Modern,
        Some(v) if upstream::LEGACY_VERSIONS.contains(&v.as_str()) => Protocol::Legacy,
        _ => Protocol::Auto,
    };
    tracing::info!("conformance scenario {scenario:?} against {url} ({protocol:?})");
    let config = ServerConfig {
        name: "conformance".into(),
        transport: Transport::Http {
            url,
            headers: BTreeMap::new(),
            sse: false,
        },
        protocol,
        kind: ServerKind::Generic,
        request_timeout: Some(TIMEOUT),
        startup_timeout: Some(TIMEOUT),
        tools: ToolFilter::default(),
        notes: Vec::new(),
        sandbox: Default::default(),
    };
    let (events, rx) = mpsc::channel(64);
    let sinks = Sinks {
        events,
        progress: None,
    };
    let up = Upstream::start(config, Options::default(), sinks);
    tokio::spawn(answer_requests(Arc::clone(&up), rx));
    up.wait_settled(TIMEOUT * 2).await;
    let status = up.status();
    if status.state != State::Ready {
        up.shutdown().await;
        anyhow::bail!(
            "not connected: {}",
            status
                .last_error
                .unwrap_or_else(|| status.state.as_str().to_owned())
        );
    }
    let catalog = up.catalog();
    for resource in &catalog.resources {
        if let Some(uri) = resource.get("uri") {
            let outcome = request(&up, "resources/read", json!({"uri": uri})).await;
            log_outcome("resources/read", uri, &outcome);
        }
    }
    for prompt in &catalog.prompts {
        if let Some(name) = prompt.get("name") {
            let arguments: Map<String, Value> = prompt
                .get("arguments")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|a| a.get("name").and_then(Value::as_str))
                .map(|a| (a.to_owned(), json!("test")))
                .collect();
            let params = json!({"name": name, "arguments": arguments});
            let outcome = request(&up, "prompts/get", params).await;
            log_outcome("prompts/get", name, &outcome);
        }
    }
    // The suite may name calls to make with exact arguments (`toolCalls` in its context).
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null);
    let named: Vec<(String, Value)> = context
        .get("toolCalls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| {
            let name = c.get("name")?.as_str()?.to_owned();
            Some((
                name,
                c.get("arguments").cloned().unwrap_or_else(|| json!({})),
            ))
        })
        .collect();
    for (name, arguments) in &named {
        let outcome = call_tool(&up, name, arguments.clone()).await;
        log_outcome("tools/call", &json!(name), &outcome);
    }
    for tool in &catalog.tools {
        let Some(name) = tool.get("name").and_then(Value::as_str) else {
            continue;
        };
        if named.iter().any(|(n, _)| n == name) {
            continue;
        }
        let arguments = if name == "json_schema_echo" {
            let shown = catalog
                .tools
                .iter()
                .find(|t| t.get("name").and_then(Value::as_str) == Some("json_schema_2020_12_tool"))
                .and_then(|t| t.get("inputSchema"))
                .cloned()
                .unwrap_or_else(|| json!({}));
            json!({"schema": shown})
        } else {
            arguments_for(tool.get("inputSchema"))
        };
        let outcome = call_tool(&up, name, arguments).await;
        log_outcome("tools/call", &json!(name), &outcome);
    }
    up.shutdown().await;
    Ok(ExitCode::SUCCESS)
}

async fn request(up: &Upstream, method: &str, params: Value) -> anyhow::Result<Value> {
    let conn = up.connection()?;
    let result = conn
        .request(method, Some(params), TIMEOUT, &CancellationToken::new())
        .await?;
    Ok(result)
}

/// Calls a tool, following `input_required` results: each round answers the server's input requests and
/// echoes its `requestState` exactly (and sends none when it gave none).
async fn call_tool(up: &Upstream, name: &str, arguments: Value) -> anyhow::Result<Value> {
    let mut params = json!({"name": name, "arguments": arguments});
    for _ in 0..MAX_ROUNDS {
        let result = request(up, "tools/call", params.clone()).await?;
        if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
            return Ok(result);
        }
        let mut responses = Map::new();
        if let Some(Value::Object(requests)) = result.get("inputRequests") {
            for (key, req) in requests {
                let method = req
                    .get("method")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                responses.insert(key.clone(), answer(method, req.get("params")));
            }
        }
        params =
            json!({"name": name, "arguments": params["arguments"], "inputResponses": responses});
        if let Some(state) = result.get("requestState") {
            params["requestState"] = state.clone();
        }
    }
    anyhow::bail!("{name}: still asking for input after {MAX_ROUNDS} rounds")
}

/// What this client answers a server's request.
fn answer(method: &str, params: Option<&Value>) -> Value {
    match method {
        "elicitation/create" => {
            let defaults: Map<String, Value> = params
                .and_then(|p| p.pointer("/requestedSchema/properties"))
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .filter_map(|(k, schema)| schema.get("default").map(|d| (k.clone(), d.clone())))
                .collect();
            json!({"action": "accept", "content": defaults})
        }
        "sampling/createMessage" => json!({
            "role": "assistant",
            "content": {"type": "text", "text": "A sampled answer from the conformance client."},
            "model": "conformance-client",
            "stopReason": "endTurn",
        }),
        "roots/list" => json!({"roots": []}),
        _ => json!({}),
    }
}

/// Answers what the server asks while the client runs (legacy servers ask with requests of their own).
async fn answer_requests(up: Arc<Upstream>, mut events: mpsc::Receiver<Event>) {
    while let Some(event) = events.recv().await {
        if let Event::Request {
            id, method, params, ..
        } = event
        {
            let reply = answer(&method, params.as_ref());
            if let Ok(conn) = up.connection() {
                let _ = conn.respond(id, Ok(reply)).await;
            }
        }
    }
}

/// Arguments for a tool from its input schema: each property's default, else a value of its type.
fn arguments_for(schema: Option<&Value>) -> Value {
    let Some(Value::Object(properties)) = schema.and_then(|s| s.get("properties")) else {
        return json!({});
    };
    let args: Map<String, Value> = properties
        .iter()
        .map(|(name, prop)| {
            let value = prop.get("default").cloned().unwrap_or_else(|| {
                let first_enum = prop
                    .get("enum")
                    .and_then(Value::as_array)
                    .and_then(|e| e.first());
                match (first_enum, prop.get("type").and_then(Value::as_str)) {
                    (Some(v), _) => v.clone(),
                    (None, Some("number" | "integer")) => json!(2),
                    (None, Some("boolean")) => json!(true),
                    (None, Some("array")) => json!([]),
                    (None, Some("object")) => json!({}),
                    _ => json!("test"),
                }
            });
            (name.clone(), value)
        })
        .collect();
    Value::Object(args)
}

fn log_outcome(method: &str, target: &Value, outcome: &anyhow::Result<Value>) {
    match outcome {
        Ok(_) => tracing::info!("{method} {target}: answered"),
        Err(e) => tracing::info!("{method} {target}: {e:#}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elicitation_is_answered_with_the_schema_defaults() {
        let params = json!({"requestedSchema": {"properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "note": {"type": "string"}}}});
        assert_eq!(
            answer("elicitation/create", Some(&params)),
            json!({"action": "accept", "content": {"name": "John Doe", "age": 30}})
        );
    }

    #[test]
    fn arguments_follow_the_schema() {
        let schema = json!({"properties": {"a": {"type": "number"}, "b": {"type": "integer"},
            "mode": {"enum": ["x", "y"]}, "s": {"type": "string", "default": "d"}}});
        assert_eq!(
            arguments_for(Some(&schema)),
            json!({"a": 2, "b": 2, "mode": "x", "s": "d"})
        );
    }
}
