//! Canonical tool-definition hash: SHA-256 over canonical JSON of the fields that define a tool's contract.
//!
//! Canonical JSON here means: object keys sorted by code point (byte order of UTF-8), no whitespace, strings escaped
//! as `serde_json` escapes them, numbers as `serde_json` prints them. Only `name`, `description`, `inputSchema`,
//! `outputSchema` and `annotations` take part, so `_meta`, `title` or icon changes do not re-quarantine a tool.
//! Absent fields are omitted (not `null`), so adding `outputSchema: null` is not a change either.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// The fields that make up a tool's contract, in no particular order (canonicalisation sorts them).
pub const HASHED_FIELDS: [&str; 5] = [
    "name",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
];

/// Canonical JSON text of any value.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical(v, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(v, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// Lower-case hex SHA-256 of the canonical definition.
pub fn definition_hash(definition: &Value) -> String {
    let mut picked = serde_json::Map::new();
    for field in HASHED_FIELDS {
        if let Some(v) = definition.get(field).filter(|v| !v.is_null()) {
            picked.insert(field.to_owned(), v.clone());
        }
    }
    hex::encode(Sha256::digest(
        canonical_json(&Value::Object(picked)).as_bytes(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_and_whitespace_do_not_matter() {
        let a = json!({"name": "t", "inputSchema": {"type": "object", "properties": {"b": 1, "a": [1, 2]}}});
        let b: Value = serde_json::from_str(r#"{ "inputSchema": {"properties": {"a": [1,2], "b": 1}, "type": "object"}, "name": "t" }"#).unwrap();
        assert_eq!(
            canonical_json(&a["inputSchema"]),
            r#"{"properties":{"a":[1,2],"b":1},"type":"object"}"#
        );
        assert_eq!(definition_hash(&a), definition_hash(&b));
    }

    #[test]
    fn only_contract_fields_count() {
        let a = json!({"name": "t", "description": "d"});
        let b = json!({"name": "t", "description": "d", "_meta": {"x": 1}, "title": "T", "outputSchema": null});
        let c = json!({"name": "t", "description": "d2"});
        assert_eq!(definition_hash(&a), definition_hash(&b));
        assert_ne!(definition_hash(&a), definition_hash(&c));
        assert_eq!(definition_hash(&a).len(), 64);
    }
}
