//! The 2026-07-28 request headers: `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` mirror the body so
//! intermediaries can route on them, and a server must refuse a request whose headers and body disagree
//! (−32020 `HeaderMismatch`, HTTP 400) — else a proxy that routes or rate-limits on the header could be steered
//! by one value while toolgate executes another.
//!
//! `Mcp-Name` may carry its value Base64-encoded between `=?base64?` and `?=`; it is decoded before comparing.
//! `Mcp-Param-*` headers mirror tool arguments a tool's schema marks with `x-mcp-header`; toolgate recognises
//! none (it does not mirror them onto its own tool definitions), so it ignores them as the spec asks of headers
//! a server does not recognise. Whether the version is supported, and which capabilities a method needs, the
//! session decides (−32022, −32021), like every other era rule.

use crate::http::reply::Refusal;
use axum::http::HeaderMap;
use base64::Engine;
use gateway::Id;
use jsonrpc::{error_object, error_response};
use serde_json::Value;

/// The `_meta` key that carries a modern request's protocol version.
pub(crate) const VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";

/// The `_meta` key that carries a modern request's client capabilities.
const CAPABILITIES_META: &str = "io.modelcontextprotocol/clientCapabilities";

/// A request missing a `_meta` field every 2026-07-28 request must carry: −32602, sent with 400.
fn invalid_meta(id: &Id, why: String) -> Refusal {
    Refusal::Protocol(error_response(
        Some(id),
        error_object(
            jsonrpc::INVALID_PARAMS,
            format!("Invalid params: {why}"),
            None,
        ),
    ))
}

/// The protocol version a request's `_meta` names, when it names one (a modern request).
pub(crate) fn meta_version(params: Option<&Value>) -> Option<&Value> {
    jsonrpc::meta_field(params?, VERSION_META)
}

/// Checks a modern request's mirrored headers against its body, then that its `_meta` carries the client's
/// capabilities.
pub(crate) fn check_headers(
    headers: &HeaderMap,
    id: &Id,
    method: &str,
    params: Option<&Value>,
) -> Result<(), Refusal> {
    check_mirrors(headers, id, method, params)?;
    // A request the header declares modern whose body lacks a required `_meta` field is malformed: −32602 with
    // 400, as the 2026-07-28 transport says of every missing required `_meta` field.
    if meta_version(params).is_none() {
        return Err(invalid_meta(
            id,
            format!("the MCP-Protocol-Version header is 2026-07-28 but the body carries no _meta[{VERSION_META:?}]"),
        ));
    }
    let caps = params.and_then(|p| jsonrpc::meta_field(p, CAPABILITIES_META));
    if !matches!(caps, Some(Value::Object(_))) {
        return Err(invalid_meta(
            id,
            format!("every 2026-07-28 request carries _meta[{CAPABILITIES_META:?}] as an object"),
        ));
    }
    Ok(())
}

/// Checks a modern request's mirrored headers against its body.
fn check_mirrors(
    headers: &HeaderMap,
    id: &Id,
    method: &str,
    params: Option<&Value>,
) -> Result<(), Refusal> {
    let mismatch = |why: String| {
        Refusal::Protocol(error_response(
            Some(id),
            error_object(
                jsonrpc::HEADER_MISMATCH,
                format!("Header mismatch: {why}"),
                None,
            ),
        ))
    };
    let version = header(headers, "mcp-protocol-version").map_err(&mismatch)?;
    match (version, meta_version(params).and_then(Value::as_str)) {
        (None, _) => {
            return Err(mismatch(
                "the MCP-Protocol-Version header is missing".into(),
            ))
        }
        (Some(h), Some(b)) if h != b => {
            return Err(mismatch(format!(
                "MCP-Protocol-Version header {h:?} does not match the body's protocol version {b:?}"
            )))
        }
        _ => {}
    }
    match header(headers, "mcp-method").map_err(&mismatch)? {
        None => return Err(mismatch("the Mcp-Method header is missing".into())),
        Some(h) if h != method => {
            return Err(mismatch(format!(
                "Mcp-Method header {h:?} does not match the body's method {method:?}"
            )))
        }
        Some(_) => {}
    }
    let field = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        _ => return Ok(()),
    };
    let body = params.and_then(|p| p.get(field)).and_then(Value::as_str);
    let named = match header(headers, "mcp-name").map_err(&mismatch)? {
        None => return Err(mismatch("the Mcp-Name header is missing".into())),
        Some(h) => decode_name(h).map_err(&mismatch)?,
    };
    if body != Some(named.as_str()) {
        return Err(mismatch(format!(
            "Mcp-Name header {named:?} does not match the body's {field} {:?}",
            body.unwrap_or_default()
        )));
    }
    Ok(())
}

/// One header's value: `Ok(None)` when absent; an error when repeated, or not printable ASCII (space and tab
/// inside are allowed, at the ends they are not).
fn header<'a>(headers: &'a HeaderMap, name: &str) -> Result<Option<&'a str>, String> {
    let mut values = headers.get_all(name).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(format!("the {name} header is sent more than once"));
    }
    let bytes = value.as_bytes();
    let printable = bytes
        .iter()
        .all(|b| (0x20..=0x7e).contains(b) || *b == b'\t');
    let trimmed = bytes.first().is_some_and(|b| !b.is_ascii_whitespace())
        && bytes.last().is_some_and(|b| !b.is_ascii_whitespace());
    match std::str::from_utf8(bytes) {
        Ok(s) if printable && trimmed => Ok(Some(s)),
        _ => Err(format!("the {name} header has invalid characters")),
    }
}

/// `Mcp-Name` as sent: plain, or `=?base64?…?=` holding UTF-8.
fn decode_name(raw: &str) -> Result<String, String> {
    let Some(inner) = raw
        .strip_prefix("=?base64?")
        .and_then(|r| r.strip_suffix("?="))
    else {
        return Ok(raw.to_owned());
    };
    base64::engine::general_purpose::STANDARD
        .decode(inner)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| "the Mcp-Name header's Base64 value does not decode to UTF-8".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use serde_json::json;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn call(name: &str) -> Value {
        json!({"name": name, "_meta": {VERSION_META: "2026-07-28", CAPABILITIES_META: {}}})
    }

    fn code(r: Result<(), Refusal>) -> Option<i64> {
        match r {
            Ok(()) => None,
            Err(Refusal::Protocol(v)) => v["error"]["code"].as_i64(),
            Err(other) => panic!("unexpected {other:?}"),
        }
    }

    const ID: Id = Id::Int(1);

    #[test]
    fn matching_headers_pass() {
        let h = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "echo"),
        ]);
        assert_eq!(
            code(check_headers(&h, &ID, "tools/call", Some(&call("echo")))),
            None
        );
    }

    #[test]
    fn base64_name_is_decoded_before_comparing() {
        let h = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        ]);
        assert_eq!(
            code(check_headers(
                &h,
                &ID,
                "tools/call",
                Some(&call("Hello, 世界"))
            )),
            None
        );
    }

    #[test]
    fn mcp_name_mismatch_is_refused() {
        let h = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "harmless"),
        ]);
        assert_eq!(
            code(check_headers(
                &h,
                &ID,
                "tools/call",
                Some(&call("delete_everything"))
            )),
            Some(jsonrpc::HEADER_MISMATCH)
        );
    }

    #[test]
    fn missing_headers_are_refused() {
        let v = headers(&[("mcp-protocol-version", "2026-07-28")]);
        assert_eq!(
            code(check_headers(&v, &ID, "tools/list", None)),
            Some(-32020)
        );
        let m = headers(&[("mcp-method", "tools/list")]);
        assert_eq!(
            code(check_headers(&m, &ID, "tools/list", None)),
            Some(-32020)
        );
        let n = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "resources/read"),
        ]);
        let params = json!({"uri": "file:///x"});
        assert_eq!(
            code(check_headers(&n, &ID, "resources/read", Some(&params))),
            Some(-32020)
        );
    }

    #[test]
    fn method_and_version_mismatch_are_refused() {
        let m = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/list"),
        ]);
        assert_eq!(
            code(check_headers(&m, &ID, "tools/call", Some(&call("x")))),
            Some(-32020)
        );
        let v = headers(&[
            ("mcp-protocol-version", "2025-11-25"),
            ("mcp-method", "tools/list"),
        ]);
        let params = json!({"_meta": {VERSION_META: "2026-07-28", CAPABILITIES_META: {}}});
        assert_eq!(
            code(check_headers(&v, &ID, "tools/list", Some(&params))),
            Some(-32020)
        );
    }

    #[test]
    fn modern_version_header_over_a_body_without_meta_version_is_refused() {
        let h = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/list"),
        ]);
        assert_eq!(
            code(check_headers(&h, &ID, "tools/list", Some(&json!({})))),
            Some(jsonrpc::INVALID_PARAMS)
        );
        assert_eq!(
            code(check_headers(&h, &ID, "tools/list", None)),
            Some(jsonrpc::INVALID_PARAMS)
        );
    }

    #[test]
    fn duplicate_or_padded_headers_are_refused() {
        let d = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/list"),
            ("mcp-method", "tools/list"),
        ]);
        assert_eq!(
            code(check_headers(&d, &ID, "tools/list", None)),
            Some(-32020)
        );
        let p = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", " echo"),
        ]);
        assert_eq!(
            code(check_headers(&p, &ID, "tools/call", Some(&call(" echo")))),
            Some(-32020)
        );
    }

    #[test]
    fn modern_request_missing_required_meta_is_invalid_params_not_a_header_mismatch() {
        let h = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "server/discover"),
        ]);
        assert_eq!(
            code(check_headers(&h, &ID, "server/discover", Some(&json!({})))),
            Some(-32602)
        );
        let no_caps = json!({"_meta": {VERSION_META: "2026-07-28"}});
        assert_eq!(
            code(check_headers(&h, &ID, "server/discover", Some(&no_caps))),
            Some(-32602)
        );
        let full = json!({"_meta": {VERSION_META: "2026-07-28", CAPABILITIES_META: {}}});
        assert_eq!(
            code(check_headers(&h, &ID, "server/discover", Some(&full))),
            None
        );
    }
}
