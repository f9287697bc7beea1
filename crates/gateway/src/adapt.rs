//! Fitting a result to the era of the client that will read it. Only protocol fields are touched.

use jsonrpc::error_object;
use serde_json::Value;

/// Results that carry cache hints in 2026-07-28.
pub fn is_cacheable(method: &str) -> bool {
    matches!(
        method,
        "tools/list"
            | "prompts/list"
            | "resources/list"
            | "resources/templates/list"
            | "resources/read"
    )
}

/// For a 2026-07-28 client: `resultType` is required (a legacy upstream's result is "complete"); cacheable results
/// get conservative hints when the upstream gave none, since aggregated lists change whenever an upstream does.
pub fn for_modern(method: &str, mut result: Value) -> Value {
    if let Value::Object(m) = &mut result {
        m.entry("resultType").or_insert_with(|| "complete".into());
        if is_cacheable(method) {
            m.entry("ttlMs").or_insert_with(|| 0.into());
            m.entry("cacheScope").or_insert_with(|| "private".into());
        }
    }
    result
}

/// For a legacy client: the modern-only fields go; an input-required interim result cannot be expressed, so it
/// becomes an error that says so.
pub fn for_legacy(mut result: Value) -> Result<Value, Value> {
    if let Value::Object(m) = &mut result {
        match m.get("resultType").and_then(Value::as_str) {
            None | Some("complete") => {}
            Some(other) => {
                return Err(error_object(
                    jsonrpc::INTERNAL_ERROR,
                    format!(
                        "the upstream answered with resultType {other:?} (a 2026-07-28 multi round-trip), which \
                         toolgate cannot relay to a client of an earlier protocol version yet"
                    ),
                    None,
                ))
            }
        }
        m.remove("resultType");
        m.remove("ttlMs");
        m.remove("cacheScope");
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn modern_results_gain_result_type_and_cache_hints() {
        assert_eq!(
            for_modern("tools/list", json!({"tools": []})),
            json!({"tools": [], "resultType": "complete", "ttlMs": 0, "cacheScope": "private"})
        );
        assert_eq!(
            for_modern("tools/call", json!({"content": []})),
            json!({"content": [], "resultType": "complete"})
        );
        // An upstream's own hints are kept.
        let r =
            json!({"tools": [], "resultType": "complete", "ttlMs": 5000, "cacheScope": "public"});
        assert_eq!(for_modern("tools/list", r.clone()), r);
    }

    #[test]
    fn legacy_results_lose_modern_fields_and_refuse_input_required() {
        let r = json!({"tools": [], "resultType": "complete", "ttlMs": 0, "cacheScope": "private", "x": 1});
        assert_eq!(for_legacy(r).unwrap(), json!({"tools": [], "x": 1}));
        assert!(for_legacy(json!({"resultType": "input_required", "inputRequests": {}})).is_err());
    }
}
