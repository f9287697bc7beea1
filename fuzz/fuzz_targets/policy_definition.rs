//! Fuzzes tool-definition checks and the canonical hash: no panic, and canonical JSON parses back to the same value
//! (for float-free values: serde_json's default float parser is not exactly round-trip, so floats are skipped).

#![no_main]

use libfuzzer_sys::fuzz_target;
use policy::{canonical_json, definition_hash, inspect_definition, lookalike_flags};
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(def) = serde_json::from_slice::<Value>(data) else { return };
    let _ = inspect_definition(&def);
    assert_eq!(definition_hash(&def).len(), 64);
    let canonical = canonical_json(&def);
    let back: Value = match serde_json::from_str(&canonical) {
        Ok(v) => v,
        Err(e) => panic!("canonical JSON must parse: {e}"),
    };
    if !has_float(&def) {
        assert_eq!(back, def);
    }
    if let Some(name) = def.get("name").and_then(Value::as_str) {
        let tools = vec![("a".to_owned(), name.to_owned()), ("b".to_owned(), "read_file".to_owned())];
        let _ = lookalike_flags(&tools);
    }
});

fn has_float(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.is_f64(),
        Value::Array(items) => items.iter().any(has_float),
        Value::Object(map) => map.values().any(has_float),
        _ => false,
    }
}
