//! One JSON-RPC message, classified, with its payload kept as raw JSON; and builders for outgoing messages.

use serde_json::{Map, Value};
use std::fmt;

/// A request id. MCP allows strings and integers; null and fractional ids are refused when decoding.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Id {
    Int(i64),
    Str(String),
}

impl Id {
    pub fn to_value(&self) -> Value {
        match self {
            Id::Int(n) => Value::from(*n),
            Id::Str(s) => Value::String(s.clone()),
        }
    }

    /// Reads an id from JSON: a string or an integer that fits in `i64`; anything else is not an id.
    pub fn from_value(v: &Value) -> Option<Id> {
        match v {
            Value::String(s) => Some(Id::Str(s.clone())),
            Value::Number(n) => n.as_i64().map(Id::Int),
            _ => None,
        }
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Int(n) => write!(f, "{n}"),
            Id::Str(s) => write!(f, "{s:?}"),
        }
    }
}

/// A decoded message. `params`, `result` and `error` are the sender's JSON, untouched.
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    Request {
        id: Id,
        method: String,
        params: Option<Value>,
    },
    Notification {
        method: String,
        params: Option<Value>,
    },
    /// A response; `outcome` is `Ok(result)` or `Err(error object)`. `id` is `None` only for error responses to
    /// messages whose id could not be read.
    Response {
        id: Option<Id>,
        outcome: Result<Value, Value>,
    },
}

impl Message {
    /// The message as JSON, ready for `encode_line`.
    pub fn to_value(&self) -> Value {
        match self {
            Message::Request { id, method, params } => request(id, method, params.clone()),
            Message::Notification { method, params } => notification(method, params.clone()),
            Message::Response {
                id,
                outcome: Ok(result),
            } => object([
                ("jsonrpc", "2.0".into()),
                ("id", id.as_ref().map_or(Value::Null, Id::to_value)),
                ("result", result.clone()),
            ]),
            Message::Response {
                id,
                outcome: Err(error),
            } => object([
                ("jsonrpc", "2.0".into()),
                ("id", id.as_ref().map_or(Value::Null, Id::to_value)),
                ("error", error.clone()),
            ]),
        }
    }
}

pub fn request(id: &Id, method: &str, params: Option<Value>) -> Value {
    let mut m = Map::new();
    m.insert("jsonrpc".into(), "2.0".into());
    m.insert("id".into(), id.to_value());
    m.insert("method".into(), method.into());
    if let Some(p) = params {
        m.insert("params".into(), p);
    }
    Value::Object(m)
}

pub fn notification(method: &str, params: Option<Value>) -> Value {
    let mut m = Map::new();
    m.insert("jsonrpc".into(), "2.0".into());
    m.insert("method".into(), method.into());
    if let Some(p) = params {
        m.insert("params".into(), p);
    }
    Value::Object(m)
}

pub fn result_response(id: &Id, result: Value) -> Value {
    object([
        ("jsonrpc", "2.0".into()),
        ("id", id.to_value()),
        ("result", result),
    ])
}

/// An error object `{code, message, data?}`.
pub fn error_object(code: i64, message: impl Into<String>, data: Option<Value>) -> Value {
    let mut m = Map::new();
    m.insert("code".into(), code.into());
    m.insert("message".into(), Value::String(message.into()));
    if let Some(d) = data {
        m.insert("data".into(), d);
    }
    Value::Object(m)
}

/// An error response; `id` is `None` (JSON null) when the offending message's id could not be read.
pub fn error_response(id: Option<&Id>, error: Value) -> Value {
    object([
        ("jsonrpc", "2.0".into()),
        ("id", id.map_or(Value::Null, Id::to_value)),
        ("error", error),
    ])
}

/// The field `key` of a request's `params._meta`, when there is one. Cheaper than `Value::pointer`, which copies
/// every segment of its path to unescape it.
pub fn meta_field<'a>(params: &'a Value, key: &str) -> Option<&'a Value> {
    params.get("_meta")?.get(key)
}

/// A JSON object of `entries`, in their order, moving each value in.
///
/// Prefer this to `json!` whenever a value is an owned `Value` that may be large (a result, arguments, a page of
/// definitions): `json!` serialises every interpolated expression again through `to_value(&expr)`, a deep copy
/// of the whole tree, where this moves it.
pub fn object<const N: usize>(entries: [(&str, Value); N]) -> Value {
    let mut m = Map::with_capacity(N);
    for (key, value) in entries {
        m.insert(key.to_owned(), value);
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn responses_keep_the_envelope_order_and_carry_the_payload_unchanged() {
        let result = json!({"content": [{"type": "text", "text": "ok"}], "isError": false});
        let line = result_response(&Id::Int(7), result.clone()).to_string();
        assert_eq!(
            line,
            format!(r#"{{"jsonrpc":"2.0","id":7,"result":{result}}}"#)
        );
        let error = error_object(-32602, "bad", None);
        let line = error_response(None, error.clone()).to_string();
        assert_eq!(
            line,
            format!(r#"{{"jsonrpc":"2.0","id":null,"error":{error}}}"#)
        );
    }

    #[test]
    fn object_keeps_its_entries_in_order_and_a_later_duplicate_wins() {
        let v = object([("b", 1.into()), ("a", json!([1, 2])), ("b", 3.into())]);
        assert_eq!(v.to_string(), r#"{"b":3,"a":[1,2]}"#);
    }
}
