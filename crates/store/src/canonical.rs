//! Canonical JSON (object keys sorted, no whitespace) and SHA-256 helpers.
//!
//! Used to give tool definitions and approval snapshots a stable hash regardless of key
//! order. It is not RFC 8785 (numbers are printed as serde_json prints them), which is
//! enough because both sides of every comparison are produced by this function.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// Serialises `value` with object keys sorted recursively.
pub fn canonical_json(value: &Value) -> String {
    sorted(value).to_string()
}

/// SHA-256 (lowercase hex) of `canonical_json(value)`.
pub fn definition_hash(value: &Value) -> String {
    sha256_hex(canonical_json(value).as_bytes())
}

/// SHA-256 of `bytes`, lowercase hex.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut out = Map::new();
            for k in keys {
                if let Some(v) = map.get(k) {
                    out.insert(k.clone(), sorted(v));
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_does_not_change_the_hash() {
        let a = json!({"b": 1, "a": {"y": [1, {"d": 2, "c": 3}], "x": null}});
        let b = json!({"a": {"x": null, "y": [1, {"c": 3, "d": 2}]}, "b": 1});
        assert_eq!(
            canonical_json(&a),
            r#"{"a":{"x":null,"y":[1,{"c":3,"d":2}]},"b":1}"#
        );
        assert_eq!(definition_hash(&a), definition_hash(&b));
    }
}
