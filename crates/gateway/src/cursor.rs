//! Opaque cursors for the aggregated lists. A cursor is an offset into the merged list, encoded so clients treat
//! it as opaque; a list change between pages can shift items, which `list_changed` tells the client about.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Value};

/// One page of `items`, starting at `cursor`, with `nextCursor` when more remain. `Err` for a cursor this
/// gateway did not issue for this list.
pub fn page(
    items: &[Value],
    key: &str,
    cursor: Option<&Value>,
    page_size: usize,
) -> Result<Value, String> {
    let start = match cursor {
        None | Some(Value::Null) => 0,
        Some(Value::String(c)) => decode(c, key).ok_or_else(|| format!("invalid cursor {c:?}"))?,
        Some(_) => return Err("cursor must be a string".into()),
    };
    let start = start.min(items.len());
    let end = start.saturating_add(page_size).min(items.len());
    let mut out = json!({ key: &items[start..end] });
    if end < items.len() {
        out["nextCursor"] = Value::String(encode(end, key));
    }
    Ok(out)
}

fn encode(offset: usize, key: &str) -> String {
    URL_SAFE_NO_PAD.encode(format!("tg1:{key}:{offset}"))
}

fn decode(cursor: &str, key: &str) -> Option<usize> {
    let bytes = URL_SAFE_NO_PAD.decode(cursor).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    text.strip_prefix("tg1:")?
        .strip_prefix(key)?
        .strip_prefix(':')?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_every_page_exactly_once() {
        let items: Vec<Value> = (0..7).map(Value::from).collect();
        let mut seen = Vec::new();
        let mut cursor = None;
        loop {
            let p = page(&items, "tools", cursor.as_ref(), 3).unwrap();
            seen.extend(p["tools"].as_array().unwrap().iter().cloned());
            match p.get("nextCursor") {
                Some(c) => cursor = Some(c.clone()),
                None => break,
            }
        }
        assert_eq!(seen, items);
    }

    #[test]
    fn foreign_cursors_are_refused() {
        let items: Vec<Value> = (0..7).map(Value::from).collect();
        assert!(page(&items, "tools", Some(&json!("garbage")), 3).is_err());
        let prompts_cursor = json!(encode(3, "prompts"));
        assert!(page(&items, "tools", Some(&prompts_cursor), 3).is_err());
    }
}
