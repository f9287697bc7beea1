//! `_meta` keys under toolgate's own prefix (`toolgate/…`, e.g. `toolgate/contract`) are toolgate's word to its
//! client: a hold, a refusal, where a relayed question comes from. An upstream has no say there, so every such key
//! is removed from everything an upstream sends (results, errors, requests, notifications, list items, content
//! blocks, at any depth) before the gateway sees it. Keys of other prefixes are the upstream's and pass unchanged.

use serde_json::Value;

/// The prefix of every `_meta` key toolgate writes itself.
pub const OWN_META_PREFIX: &str = "toolgate/";

/// Whether a `_meta` key is in toolgate's own namespace, in any case (clients compare keys exactly, but a
/// look-alike in another case is no one else's either).
pub fn is_own_meta_key(key: &str) -> bool {
    key.get(..OWN_META_PREFIX.len())
        .is_some_and(|p| p.eq_ignore_ascii_case(OWN_META_PREFIX))
}

/// Removes toolgate's own keys from every `_meta` object inside `value`; returns how many were removed.
pub fn strip_own_meta(value: &mut Value) -> usize {
    match value {
        Value::Object(map) => {
            let mut removed = 0;
            if let Some(Value::Object(meta)) = map.get_mut("_meta") {
                let before = meta.len();
                meta.retain(|k, _| !is_own_meta_key(k));
                removed += before - meta.len();
            }
            removed + map.values_mut().map(strip_own_meta).sum::<usize>()
        }
        Value::Array(items) => items.iter_mut().map(strip_own_meta).sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn own_keys_go_at_any_depth_and_others_stay() {
        let mut v = json!({
            "_meta": {"toolgate/contract": {"outcome": "APPROVAL_APPROVED"}, "com.example/x": 1},
            "content": [{"type": "text", "text": "t", "_meta": {"TOOLGATE/approval": 1, "k": "v"}}],
            "tools": [{"name": "a", "_meta": {"toolgate/contract": {}}}],
            "structuredContent": {"_meta": "not an object", "toolgate/contract": "data, not _meta"}
        });
        assert_eq!(strip_own_meta(&mut v), 3);
        assert_eq!(
            v,
            json!({
                "_meta": {"com.example/x": 1},
                "content": [{"type": "text", "text": "t", "_meta": {"k": "v"}}],
                "tools": [{"name": "a", "_meta": {}}],
                "structuredContent": {"_meta": "not an object", "toolgate/contract": "data, not _meta"}
            })
        );
    }
}
