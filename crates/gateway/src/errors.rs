//! Every way a forwarded call can fail, mapped to what the client receives — in one exhaustive match.

use jsonrpc::error_object;
use serde_json::Value;
use upstream::CallError;

/// The JSON-RPC error object for a failed upstream call; `None` when the client cancelled and so must not get
/// a response at all.
pub fn to_client(err: CallError) -> Option<Value> {
    match err {
        CallError::Rpc(obj) => Some(obj),
        CallError::Unavailable { server, why } => Some(error_object(
            jsonrpc::UPSTREAM_UNAVAILABLE,
            format!("upstream {server} is unavailable: {why}"),
            Some(serde_json::json!({"server": server})),
        )),
        e @ CallError::Timeout { .. } => {
            Some(error_object(jsonrpc::REQUEST_TIMEOUT, e.to_string(), None))
        }
        e @ CallError::TooLarge { .. } => {
            Some(error_object(jsonrpc::INTERNAL_ERROR, e.to_string(), None))
        }
        CallError::Cancelled => None,
    }
}

pub fn invalid_params(message: impl Into<String>) -> Value {
    error_object(jsonrpc::INVALID_PARAMS, message, None)
}

pub fn invalid_request(message: impl Into<String>) -> Value {
    error_object(jsonrpc::INVALID_REQUEST, message, None)
}

/// A protocol version toolgate does not speak where it was declared (a request's `_meta`, a transport header).
pub fn unsupported_version(supported: &[&str], requested: &Value) -> Value {
    error_object(
        jsonrpc::UNSUPPORTED_PROTOCOL_VERSION,
        "Unsupported protocol version",
        Some(serde_json::json!({"supported": supported, "requested": requested})),
    )
}
