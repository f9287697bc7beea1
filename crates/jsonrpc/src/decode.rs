//! Turns one frame's bytes into a `Message`, or into a `DecodeError` that says which JSON-RPC error to answer.
//!
//! Batches are refused: 2025-03-26 allowed them, 2025-06-18 removed them, no mainstream client sends them, and
//! answering half a batch under policy would make partial failure hard to explain. One error with a null id is
//! returned for the whole array.

use crate::codes::{INVALID_REQUEST, PARSE_ERROR};
use crate::message::{Id, Message};
use crate::strict::parse_strict;
use serde_json::{Map, Value};

/// Size and shape limits applied to every incoming message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest frame accepted, in bytes, excluding the newline.
    pub max_message_bytes: usize,
    /// Deepest nesting of arrays and objects accepted.
    pub max_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_message_bytes: 4 * 1024 * 1024,
            max_depth: 64,
        }
    }
}

/// Why a frame was refused, and the JSON-RPC error to answer with.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct DecodeError {
    pub code: i64,
    pub message: String,
    /// The id of the offending message when it could be read, so the error reaches the right caller.
    pub id: Option<Id>,
}

impl DecodeError {
    fn new(code: i64, message: impl Into<String>, id: Option<Id>) -> Self {
        Self {
            code,
            message: message.into(),
            id,
        }
    }
}

/// Decodes one frame. Every refusal is an `Err`; nothing here panics on any input.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Message, DecodeError> {
    if bytes.len() > limits.max_message_bytes {
        return Err(DecodeError::new(
            PARSE_ERROR,
            format!(
                "message of {} bytes exceeds the limit of {} bytes",
                bytes.len(),
                limits.max_message_bytes
            ),
            None,
        ));
    }
    if let Err(e) = std::str::from_utf8(bytes) {
        return Err(DecodeError::new(
            PARSE_ERROR,
            format!("invalid UTF-8 at byte {}", e.valid_up_to()),
            None,
        ));
    }
    let value = parse_strict(bytes, limits.max_depth)
        .map_err(|e| DecodeError::new(PARSE_ERROR, format!("invalid JSON: {e}"), None))?;
    classify(value)
}

fn classify(value: Value) -> Result<Message, DecodeError> {
    let mut obj = match value {
        Value::Object(m) => m,
        Value::Array(_) => {
            return Err(DecodeError::new(
                INVALID_REQUEST,
                "JSON-RPC batches are not supported",
                None,
            ));
        }
        _ => {
            return Err(DecodeError::new(
                INVALID_REQUEST,
                "a JSON-RPC message must be an object",
                None,
            ))
        }
    };
    let id = read_id(&obj)?;
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(DecodeError::new(
            INVALID_REQUEST,
            "\"jsonrpc\" must be \"2.0\"",
            id,
        ));
    }
    let params = obj.remove("params");
    if let Some(p) = &params {
        if !p.is_object() && !p.is_array() {
            return Err(DecodeError::new(
                INVALID_REQUEST,
                "\"params\" must be an object or an array",
                id,
            ));
        }
    }
    match obj.remove("method") {
        Some(Value::String(method)) => match (obj.contains_key("id"), id) {
            (false, _) => Ok(Message::Notification { method, params }),
            (true, Some(id)) => Ok(Message::Request { id, method, params }),
            (true, None) => unreachable_null_id(),
        },
        Some(_) => Err(DecodeError::new(
            INVALID_REQUEST,
            "\"method\" must be a string",
            id,
        )),
        None => response(obj, id),
    }
}

/// `read_id` already refused a present-but-invalid id, so a request here always has one.
fn unreachable_null_id() -> Result<Message, DecodeError> {
    Err(DecodeError::new(
        INVALID_REQUEST,
        "request id must be a string or an integer",
        None,
    ))
}

fn read_id(obj: &Map<String, Value>) -> Result<Option<Id>, DecodeError> {
    let Some(raw) = obj.get("id") else {
        return Ok(None);
    };
    // A response to a message whose id could not be read legitimately carries `"id": null`.
    if raw.is_null() && !obj.contains_key("method") && obj.contains_key("error") {
        return Ok(None);
    }
    Id::from_value(raw).map(Some).ok_or_else(|| {
        let what = match raw {
            Value::Null => "null",
            Value::Number(_) => "not an integer that fits in 64 bits",
            _ => "not a string or an integer",
        };
        DecodeError::new(INVALID_REQUEST, format!("request id is {what}"), None)
    })
}

fn response(mut obj: Map<String, Value>, id: Option<Id>) -> Result<Message, DecodeError> {
    match (obj.remove("result"), obj.remove("error")) {
        (Some(result), None) if id.is_some() => Ok(Message::Response { id, outcome: Ok(result) }),
        (None, Some(error)) if error.is_object() => Ok(Message::Response { id, outcome: Err(error) }),
        _ => Err(DecodeError::new(
            INVALID_REQUEST,
            "message has no \"method\" and is not a valid response (exactly one of \"result\" or \"error\" with an id)",
            id,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn dec(s: &str) -> Result<Message, DecodeError> {
        decode(
            s.as_bytes(),
            &Limits {
                max_message_bytes: 1024,
                max_depth: 16,
            },
        )
    }

    #[test]
    fn request_notification_and_responses_are_classified() {
        assert_eq!(
            dec(r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"cursor":"x"}}"#)
                .unwrap(),
            Message::Request {
                id: Id::Int(7),
                method: "tools/list".into(),
                params: Some(json!({"cursor":"x"}))
            }
        );
        assert_eq!(
            dec(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap(),
            Message::Notification {
                method: "notifications/initialized".into(),
                params: None
            }
        );
        assert_eq!(
            dec(r#"{"jsonrpc":"2.0","id":"a","result":{}}"#).unwrap(),
            Message::Response {
                id: Some(Id::Str("a".into())),
                outcome: Ok(json!({}))
            }
        );
        assert_eq!(
            dec(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#).unwrap(),
            Message::Response {
                id: None,
                outcome: Err(json!({"code":-32700,"message":"x"}))
            }
        );
    }

    #[test]
    fn null_id_request_is_refused() {
        let e = dec(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#).unwrap_err();
        assert_eq!((e.code, e.id), (INVALID_REQUEST, None));
        assert!(e.message.contains("null"));
    }

    #[test]
    fn fractional_id_is_refused() {
        let e = dec(r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#).unwrap_err();
        assert_eq!(e.code, INVALID_REQUEST);
    }

    #[test]
    fn batch_is_refused_with_one_error() {
        let e = dec(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#).unwrap_err();
        assert_eq!((e.code, e.id), (INVALID_REQUEST, None));
    }

    #[test]
    fn wrong_version_keeps_the_id_for_the_error() {
        let e = dec(r#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#).unwrap_err();
        assert_eq!(e.id, Some(Id::Int(3)));
    }

    #[test]
    fn invalid_utf8_is_a_parse_error() {
        let e = decode(b"{\"a\":\"\xff\"}", &Limits::default()).unwrap_err();
        assert_eq!(e.code, PARSE_ERROR);
    }

    #[test]
    fn oversized_frame_is_a_parse_error() {
        let big = format!(
            r#"{{"jsonrpc":"2.0","method":"x","params":{{"p":"{}"}}}}"#,
            "a".repeat(2000)
        );
        assert_eq!(dec(&big).unwrap_err().code, PARSE_ERROR);
    }

    #[test]
    fn scalar_params_are_refused() {
        assert_eq!(
            dec(r#"{"jsonrpc":"2.0","id":1,"method":"x","params":3}"#)
                .unwrap_err()
                .code,
            INVALID_REQUEST
        );
    }

    #[test]
    fn response_with_both_result_and_error_is_refused() {
        let e = dec(r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}"#)
            .unwrap_err();
        assert_eq!(e.code, INVALID_REQUEST);
    }

    proptest::proptest! {
        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..256)) {
            let _ = decode(&bytes, &Limits::default());
        }
    }
}

#[cfg(test)]
mod corpus {
    use super::*;

    /// The fuzz target's seed corpus runs in every test run: each seed decodes or is refused without panicking,
    /// and the hostile seeds are refused.
    #[test]
    fn fuzz_seed_corpus_decodes_or_is_refused() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fuzz/corpus/jsonrpc_decode");
        let hostile = ["batch", "lone_surrogate", "duplicate_key", "fractional_id"];
        let good = [
            "initialize",
            "call",
            "cancelled",
            "error_null_id",
            "float_precision",
        ];
        for name in hostile.iter().chain(&good) {
            let bytes = std::fs::read(dir.join(name)).unwrap();
            let outcome = decode(&bytes, &Limits::default());
            assert_eq!(
                outcome.is_err(),
                hostile.contains(name),
                "{name}: {outcome:?}"
            );
        }
        // Inputs a fuzzing run added beside the seeds only have to be handled without a panic.
        for entry in std::fs::read_dir(&dir).unwrap() {
            let _ = decode(
                &std::fs::read(entry.unwrap().path()).unwrap(),
                &Limits::default(),
            );
        }
    }
}
