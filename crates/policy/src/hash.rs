//! Canonical tool-definition hash: SHA-256 over canonical JSON of the fields that define a tool's contract.
//!
//! Canonical JSON is `jsonrpc::canonical_json` (object keys sorted by code point, no whitespace, `serde_json`
//! string and number formatting), shared with the store and the audit log. What this module owns is the choice of
//! fields: only `name`, `description`, `inputSchema`, `outputSchema` and `annotations` take part, so `_meta`,
//! `title` or icon changes do not re-quarantine a tool. Absent fields are omitted (not `null`), so adding
//! `outputSchema: null` is not a change either.

use jsonrpc::{canonical_json, sha256_hex};
use serde_json::Value;

/// The fields that make up a tool's contract, in no particular order (canonicalisation sorts them).
pub const HASHED_FIELDS: [&str; 5] = [
    "name",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
];

/// Lower-case hex SHA-256 of the canonical definition.
pub fn definition_hash(definition: &Value) -> String {
    let mut picked = serde_json::Map::new();
    for field in HASHED_FIELDS {
        if let Some(v) = definition.get(field).filter(|v| !v.is_null()) {
            picked.insert(field.to_owned(), v.clone());
        }
    }
    sha256_hex(canonical_json(&Value::Object(picked)).as_bytes())
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
