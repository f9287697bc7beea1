//! HTTP failures as JSON-RPC answers. A request sent over HTTP is answered even when HTTP fails: the link knows
//! the id it sent, so a refused connection, a 500, a body that is not JSON-RPC or a stream that ended early become
//! an error response for that id at once, and no request waits for its timeout or turns into an empty success.
//!
//! A synthesized error carries the HTTP status in `data.httpStatus`, which is how the era probe tells the
//! answers the spec names for falling back to `initialize` (400, 404, 405 without a recognized modern error) from
//! failures that must not be read as "legacy".

use crate::link::Incoming;
use jsonrpc::{error_object, Id, Message};
use jsonrpc::{
    HEADER_MISMATCH, INTERNAL_ERROR, MISSING_REQUIRED_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION, UPSTREAM_UNAVAILABLE,
};
use serde_json::{json, Value};

/// Characters of an upstream's error body kept in a message.
const SNIPPET_CHARS: usize = 200;

/// An error response for `id` saying `message`.
pub(crate) fn failure(id: &Id, code: i64, message: String, status: Option<u16>) -> Incoming {
    let data = status.map(|s| json!({"httpStatus": s}));
    Incoming::Message(Message::Response {
        id: Some(id.clone()),
        outcome: Err(error_object(code, message, data)),
    })
}

/// The answer for `id` when the upstream replied with a status other than success: its own JSON-RPC error when
/// the body is one (with the status added), else a description of the status and the start of the body.
pub(crate) fn from_status(
    id: &Id,
    status: u16,
    body: &str,
    location: Option<&str>,
    url: &str,
) -> Incoming {
    if (300..400).contains(&status) {
        let to = location.unwrap_or("nowhere");
        return failure(
            id,
            UPSTREAM_UNAVAILABLE,
            format!(
                "{url} redirected (HTTP {status}) to {to}; toolgate does not follow redirects, so configured \
                 headers never reach another address: put the final URL in the config"
            ),
            Some(status),
        );
    }
    if let Some(mut error) = rpc_error(body) {
        if let Some(obj) = error.as_object_mut() {
            match obj.get_mut("data") {
                Some(Value::Object(data)) => {
                    data.entry("httpStatus").or_insert(json!(status));
                }
                None => {
                    obj.insert("data".into(), json!({"httpStatus": status}));
                }
                Some(_) => {}
            }
        }
        return Incoming::Message(Message::Response {
            id: Some(id.clone()),
            outcome: Err(error),
        });
    }
    let code = if status >= 500 {
        UPSTREAM_UNAVAILABLE
    } else {
        INTERNAL_ERROR
    };
    let snippet = snippet(body);
    let message = if snippet.is_empty() {
        format!("{url} answered HTTP {status}")
    } else {
        format!("{url} answered HTTP {status}: {snippet}")
    };
    failure(id, code, message, Some(status))
}

/// The error object of a JSON-RPC error response body, if the body is one.
fn rpc_error(body: &str) -> Option<Value> {
    let value: Value = serde_json::from_str(body).ok()?;
    let error = value.get("error")?;
    (error.get("code")?.is_i64() && error.get("message")?.is_string()).then(|| error.clone())
}

/// The start of a body on one line, without control characters.
fn snippet(body: &str) -> String {
    body.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(SNIPPET_CHARS)
        .collect::<String>()
        .trim()
        .to_owned()
}

/// Whether an error answer to the `server/discover` probe means "a legacy server": any JSON-RPC error answered in
/// a success (a legacy server that does not know the method), or an HTTP 400, 404 or 405 whose body is not a
/// recognized modern error (header mismatch, missing capability, unsupported version: a modern server that
/// refused this request). Other HTTP failures (401, 403, 5xx, a redirect) say nothing about the era.
pub(crate) fn probe_falls_back(error: &Value) -> bool {
    let code = error.get("code").and_then(Value::as_i64);
    let modern = matches!(
        code,
        Some(HEADER_MISMATCH | MISSING_REQUIRED_CLIENT_CAPABILITY | UNSUPPORTED_PROTOCOL_VERSION)
    );
    match error.pointer("/data/httpStatus").and_then(Value::as_u64) {
        None => true,
        Some(400 | 404 | 405) => !modern,
        Some(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(item: Incoming) -> Value {
        match item {
            Incoming::Message(Message::Response {
                id: Some(Id::Int(7)),
                outcome: Err(e),
            }) => e,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_probe_falls_back_only_on_the_answers_the_spec_names() {
        let url = "http://127.0.0.1:1/mcp";
        let id = Id::Int(7);
        let legacy_400 = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: Server not initialized"}}"#;
        for (status, body, falls_back) in [
            (400, legacy_400, true),
            (400, "", true),
            (404, "Not Found", true),
            (405, "", true),
            (
                400,
                r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32022,"message":"unsupported","data":{"supported":["2027-01-01"]}}}"#,
                false,
            ),
            (
                400,
                r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32020,"message":"Header mismatch"}}"#,
                false,
            ),
            (401, "", false),
            (403, "", false),
            (500, "boom", false),
            (307, "", false),
        ] {
            let error = error_of(from_status(&id, status, body, None, url));
            assert_eq!(
                probe_falls_back(&error),
                falls_back,
                "{status} {body}: {error}"
            );
        }
        // A JSON-RPC error in a success is a legacy server that does not know the method.
        assert!(probe_falls_back(
            &json!({"code": -32601, "message": "Method not found"})
        ));
    }

    #[test]
    fn a_redirect_names_its_location_and_is_not_followed() {
        let error = error_of(from_status(
            &Id::Int(7),
            302,
            "",
            Some("https://elsewhere.example/mcp"),
            "http://127.0.0.1:1/mcp",
        ));
        let message = error["message"].as_str().unwrap();
        assert!(
            message.contains("https://elsewhere.example/mcp") && message.contains("redirect"),
            "{message}"
        );
    }
}
