//! Tool parameters mirrored into headers (`x-mcp-header`, 2026-07-28 Streamable HTTP): which of a tool's arguments
//! go into `Mcp-Param-{Name}` headers of its `tools/call`, and which tool definitions are invalid and must be left
//! out of the tool list (an empty or non-token name, one on a `number`, object or array, a duplicate, or one that
//! is not reachable from the schema root through `properties` alone).
//!
//! Pure functions over JSON; the Streamable HTTP link learns each tool's annotations from the `tools/list`
//! answers it carries and adds the headers to each call.

use super::headers::encoded;
use jsonrpc::Id;
use reqwest::header::{HeaderName, HeaderValue};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

const KEY: &str = "x-mcp-header";
/// The largest integer JavaScript represents exactly; the spec bounds mirrored integers by it.
const SAFE_INTEGER: i64 = (1 << 53) - 1;

/// What one link knows of its tools' mirrored parameters, learned from the `tools/list` answers it carried.
#[derive(Default)]
pub(crate) struct ToolHeaders {
    /// `tools/list` requests whose answers are still to come.
    lists: Mutex<HashSet<Id>>,
    by_tool: Mutex<HashMap<String, Vec<Mirrored>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl ToolHeaders {
    /// Notes a request being sent, so a `tools/list` answer is recognised when it comes.
    pub(crate) fn sending(&self, id: &Id, method: &str) {
        if method == "tools/list" {
            lock(&self.lists).insert(id.clone());
        }
    }

    /// Reads a `tools/list` answer: learns each tool's mirrored parameters and removes the tools whose
    /// annotations are invalid, as a Streamable HTTP client must (with a warning naming the tool and why).
    pub(crate) fn screen(&self, server: &str, id: &Id, result: &mut Value) {
        if !lock(&self.lists).remove(id) {
            return;
        }
        let Some(Value::Array(tools)) = result.get_mut("tools") else {
            return;
        };
        let mut by_tool = lock(&self.by_tool);
        tools.retain(|tool| {
            let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
            match mirrored(tool.get("inputSchema").unwrap_or(&Value::Null)) {
                Ok(m) => {
                    by_tool.insert(name.to_owned(), m);
                    true
                }
                Err(why) => {
                    tracing::warn!(server, "tool {name:?} left out: {why}");
                    by_tool.remove(name);
                    false
                }
            }
        });
    }

    /// The `Mcp-Param-*` headers of a `tools/call` message.
    pub(crate) fn for_call(&self, msg: &Value) -> Vec<(HeaderName, HeaderValue)> {
        if msg.get("method").and_then(Value::as_str) != Some("tools/call") {
            return Vec::new();
        }
        let name = msg
            .pointer("/params/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let arguments = msg.pointer("/params/arguments").unwrap_or(&Value::Null);
        lock(&self.by_tool)
            .get(name)
            .map(|m| headers(m, arguments))
            .unwrap_or_default()
    }
}

/// One mirrored parameter: where its value is in the arguments, and the header name part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Mirrored {
    path: Vec<String>,
    name: String,
}

/// The mirrored parameters of a tool's input schema, or why the definition is invalid.
pub(crate) fn mirrored(schema: &Value) -> Result<Vec<Mirrored>, String> {
    let mut found = Vec::new();
    walk(schema, Some(Vec::new()), &mut found)?;
    let mut seen = HashSet::new();
    for m in &found {
        if !seen.insert(m.name.to_ascii_lowercase()) {
            return Err(format!("x-mcp-header {:?} is used twice", m.name));
        }
    }
    Ok(found)
}

/// Visits every node; `path` is `Some` while the node is reachable from the root through `properties` only.
fn walk(node: &Value, path: Option<Vec<String>>, found: &mut Vec<Mirrored>) -> Result<(), String> {
    match node {
        Value::Object(map) => {
            if let Some(name) = map.get(KEY) {
                let Some(at) = path.as_ref().filter(|p| !p.is_empty()) else {
                    return Err(
                        "x-mcp-header on a property not reachable through properties".into(),
                    );
                };
                let name = name.as_str().ok_or("x-mcp-header is not a string")?;
                if name.is_empty() || !name.bytes().all(is_tchar) {
                    return Err(format!("x-mcp-header {name:?} is not a header name token"));
                }
                match map.get("type").and_then(Value::as_str) {
                    Some("string" | "integer" | "boolean") => {}
                    other => {
                        return Err(format!(
                            "x-mcp-header {name:?} is on a parameter of type {other:?}, not string, integer or boolean"
                        ))
                    }
                }
                found.push(Mirrored {
                    path: at.clone(),
                    name: name.to_owned(),
                });
            }
            for (key, child) in map {
                let child_path = match (key.as_str(), &path) {
                    ("properties", Some(p)) => {
                        // Each property of a reachable object is reachable.
                        if let Value::Object(props) = child {
                            for (prop, schema) in props {
                                let mut p = p.clone();
                                p.push(prop.clone());
                                walk(schema, Some(p), found)?;
                            }
                            continue;
                        }
                        None
                    }
                    _ => None,
                };
                walk(child, child_path, found)?;
            }
            Ok(())
        }
        Value::Array(items) => items.iter().try_for_each(|i| walk(i, None, found)),
        _ => Ok(()),
    }
}

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The `Mcp-Param-*` headers for one call's arguments; a parameter absent from them gives no header.
pub(crate) fn headers(mirrored: &[Mirrored], arguments: &Value) -> Vec<(HeaderName, HeaderValue)> {
    let mut out = Vec::new();
    for m in mirrored {
        let value = m
            .path
            .iter()
            .try_fold(arguments, |v, key| v.get(key.as_str()));
        let text = match value {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Bool(b)) => b.to_string(),
            Some(Value::Number(n)) => match n.as_i64() {
                Some(i) if i.abs() <= SAFE_INTEGER => i.to_string(),
                _ => continue,
            },
            _ => continue,
        };
        if let Ok(name) = HeaderName::from_bytes(format!("mcp-param-{}", m.name).as_bytes()) {
            out.push((name, encoded(&text)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn annotated_parameters_become_headers_in_the_value_encoding() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
            "nested": {"type": "object", "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}}},
            "query": {"type": "string"}}});
        let mirrored = mirrored(&schema).unwrap();
        let args = json!({"region": "Hello, 世界", "priority": 42, "verbose": false,
            "nested": {"zone": "z1"}, "query": "select"});
        let got: Vec<(String, String)> = headers(&mirrored, &args)
            .into_iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_owned()))
            .collect();
        assert_eq!(
            got,
            [
                ("mcp-param-region", "=?base64?SGVsbG8sIOS4lueVjA==?="),
                ("mcp-param-priority", "42"),
                ("mcp-param-verbose", "false"),
                ("mcp-param-zone", "z1"),
            ]
            .map(|(a, b)| (a.to_owned(), b.to_owned()))
        );
        assert!(
            headers(&mirrored, &json!({})).is_empty(),
            "absent values give no header"
        );
    }

    #[test]
    fn invalid_annotations_make_the_definition_invalid() {
        for schema in [
            json!({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "Has Space"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "Co:lon"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "Nön"}}}),
            json!({"properties": {"a": {"type": "number", "x-mcp-header": "N"}}}),
            json!({"properties": {"a": {"type": "object", "x-mcp-header": "O"}}}),
            json!({"properties": {"a": {"type": "array", "x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "D"},
                                  "b": {"type": "string", "x-mcp-header": "d"}}}),
            json!({"properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "I"}}}}),
            json!({"properties": {"a": {"anyOf": [{"type": "string", "x-mcp-header": "U"}]}}}),
            json!({"type": "string", "x-mcp-header": "Root"}),
        ] {
            assert!(mirrored(&schema).is_err(), "{schema}");
        }
    }
}
