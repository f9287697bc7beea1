//! The headers of each HTTP request to an upstream: the configured ones (already expanded by the config), then
//! the protocol's own, which always win: `MCP-Protocol-Version` (the modern version a message's `_meta` names,
//! else the legacy version `initialize` agreed), `Mcp-Method` and `Mcp-Name` (Base64 in the spec's sentinel form
//! when the value is not plain header-safe ASCII).
//!
//! Nothing here comes from a client's request: the gateway gives the link JSON-RPC messages, never HTTP headers.

use crate::era::PROTOCOL_VERSION_META;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use std::collections::BTreeMap;

pub(crate) const SESSION_ID: &str = "mcp-session-id";
pub(crate) const PROTOCOL_VERSION: &str = "mcp-protocol-version";
pub(crate) const LAST_EVENT_ID: &str = "last-event-id";

/// The configured headers as a header map; a name or value HTTP cannot carry is a configuration error.
pub(crate) fn configured(headers: &BTreeMap<String, String>) -> Result<HeaderMap, String> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("header {name:?} is not a valid header name"))?;
        // The value may be a secret: the error names the header only.
        let mut value = HeaderValue::from_str(value)
            .map_err(|_| format!("the value of header {name:?} is not a valid header value"))?;
        value.set_sensitive(true);
        map.insert(header, value);
    }
    Ok(map)
}

/// The protocol version a message carries in its `_meta` (modern messages), if any.
pub(crate) fn modern_version(msg: &Value) -> Option<&str> {
    msg.pointer("/params/_meta")?
        .get(PROTOCOL_VERSION_META)?
        .as_str()
}

/// The protocol headers for one message. `legacy` is the version `initialize` agreed, once known. `Mcp-Method`
/// and `Mcp-Name` go on every request and notification whatever the era: 2026-07-28 requires them, and a legacy
/// server ignores headers it does not know.
pub(crate) fn for_message(msg: &Value, legacy: Option<&str>) -> Vec<(&'static str, HeaderValue)> {
    let mut out = Vec::new();
    let version = modern_version(msg).or(legacy);
    out.extend(
        version
            .and_then(|v| HeaderValue::from_str(v).ok())
            .map(|v| (PROTOCOL_VERSION, v)),
    );
    if let Some(method) = msg.get("method").and_then(Value::as_str) {
        out.push(("mcp-method", encoded(method)));
        let name = match method {
            "tools/call" | "prompts/get" => msg.pointer("/params/name"),
            "resources/read" => msg.pointer("/params/uri"),
            _ => None,
        };
        if let Some(name) = name.and_then(Value::as_str) {
            out.push(("mcp-name", encoded(name)));
        }
    }
    out
}

/// A value as the spec carries it: as is when it is visible ASCII or inner spaces, else Base64 in `=?base64?…?=`
/// (also when the plain value looks like that form, so it cannot be misread).
pub(crate) fn encoded(value: &str) -> HeaderValue {
    let plain = value
        .bytes()
        .all(|b| b == b' ' || b == b'\t' || (0x21..=0x7e).contains(&b));
    let padded = value.starts_with([' ', '\t']) || value.ends_with([' ', '\t']);
    let looks_encoded = value.starts_with("=?base64?") && value.ends_with("?=");
    let safe = plain && !padded && !looks_encoded;
    let text = if safe {
        value.to_owned()
    } else {
        format!("=?base64?{}?=", STANDARD.encode(value))
    };
    // Base64 and header-safe ASCII are always valid header values.
    HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static(""))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_outside_plain_ascii_use_the_base64_form() {
        assert_eq!(encoded("get_weather"), "get_weather");
        assert_eq!(encoded("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
        assert_eq!(encoded(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(encoded("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(
            encoded("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
    }

    #[test]
    fn modern_requests_carry_method_name_and_version() {
        let msg = json!({"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {
            "uri": "file:///a b", "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}});
        let headers = for_message(&msg, Some("2025-11-25"));
        assert_eq!(
            headers,
            vec![
                (PROTOCOL_VERSION, HeaderValue::from_static("2026-07-28")),
                ("mcp-method", HeaderValue::from_static("resources/read")),
                ("mcp-name", HeaderValue::from_static("file:///a b")),
            ]
        );
        let legacy = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {}});
        assert_eq!(
            for_message(&legacy, Some("2025-06-18")),
            vec![
                (PROTOCOL_VERSION, HeaderValue::from_static("2025-06-18")),
                ("mcp-method", HeaderValue::from_static("tools/list")),
            ]
        );
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}});
        assert_eq!(
            for_message(&initialize, None),
            vec![("mcp-method", HeaderValue::from_static("initialize"))]
        );
        let answer = json!({"jsonrpc": "2.0", "id": 9, "result": {}});
        assert!(
            for_message(&answer, Some("2025-06-18")).len() == 1,
            "a response has no method"
        );
    }

    #[test]
    fn a_configured_header_that_http_cannot_carry_is_refused_without_its_value() {
        let bad = BTreeMap::from([("X-Key".to_owned(), "sec\nret".to_owned())]);
        let err = configured(&bad).unwrap_err();
        assert!(err.contains("X-Key") && !err.contains("sec"), "{err}");
    }
}
