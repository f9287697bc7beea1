//! Opaque cursors and pages for the aggregated lists. A cursor is an offset into the merged list, encoded so
//! clients treat it as opaque; a list change between pages can shift items, which `list_changed` tells the client
//! about. A page holds at most `items` entries and at most `bytes` bytes of them, so a page of large definitions
//! still fits in one message; the aggregate holds back any single definition larger than a page.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{Map, Value};

/// Room left in a message for the envelope around a page: `jsonrpc`, the id, `nextCursor`, era fields.
fn envelope_reserve(max_message_bytes: usize) -> usize {
    (max_message_bytes / 8).clamp(512, 8192)
}

/// What one page may hold.
#[derive(Clone, Copy, Debug)]
pub struct PageLimits {
    pub items: usize,
    pub bytes: usize,
}

impl PageLimits {
    /// Pages of at most `items` entries that fit, with their envelope, in a message of `max_message_bytes`.
    pub fn new(items: usize, max_message_bytes: usize) -> Self {
        Self {
            items: items.max(1),
            bytes: max_message_bytes.saturating_sub(envelope_reserve(max_message_bytes)),
        }
    }
}

/// A list to page: `len` entries, entry `i` is `item(i)` and takes `size(i)` bytes.
pub struct Listing<'a, I, S> {
    pub len: usize,
    pub item: I,
    pub size: S,
    pub key: &'a str,
}

/// One page of `list` starting at `cursor`, with `nextCursor` when more remain. `Err` for a cursor this gateway
/// did not issue for this list. A page always holds at least one entry, so paging always advances.
pub fn page<'v, I, S>(
    list: Listing<'_, I, S>,
    cursor: Option<&Value>,
    limits: PageLimits,
) -> Result<Value, String>
where
    I: Fn(usize) -> &'v Value,
    S: Fn(usize) -> usize,
{
    let key = list.key;
    let start = match cursor {
        None | Some(Value::Null) => 0,
        Some(Value::String(c)) => decode(c, key).ok_or_else(|| format!("invalid cursor {c:?}"))?,
        Some(_) => return Err("cursor must be a string".into()),
    };
    let start = start.min(list.len);
    let mut end = start;
    let mut bytes = 0usize;
    while end < list.len && end - start < limits.items {
        bytes = bytes.saturating_add((list.size)(end));
        if bytes > limits.bytes && end > start {
            break;
        }
        end += 1;
    }
    let items: Vec<Value> = (start..end).map(|i| (list.item)(i).clone()).collect();
    let mut out = Map::with_capacity(2);
    out.insert(key.to_owned(), Value::Array(items));
    if end < list.len {
        out.insert("nextCursor".into(), Value::String(encode(end, key)));
    }
    Ok(Value::Object(out))
}

/// Pages a plain slice whose sizes are known.
pub fn page_slice(
    items: &[Value],
    sizes: &[usize],
    key: &str,
    cursor: Option<&Value>,
    limits: PageLimits,
) -> Result<Value, String> {
    let list = Listing {
        len: items.len().min(sizes.len()),
        item: |i| &items[i],
        size: |i| sizes[i],
        key,
    };
    page(list, cursor, limits)
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
    use serde_json::json;

    fn walk(items: &[Value], sizes: &[usize], limits: PageLimits) -> Vec<Vec<Value>> {
        let mut pages = Vec::new();
        let mut cursor = None;
        loop {
            let p = page_slice(items, sizes, "tools", cursor.as_ref(), limits).unwrap();
            pages.push(p["tools"].as_array().unwrap().clone());
            match p.get("nextCursor") {
                Some(c) => cursor = Some(c.clone()),
                None => return pages,
            }
        }
    }

    #[test]
    fn walks_every_page_exactly_once() {
        let items: Vec<Value> = (0..7).map(Value::from).collect();
        let sizes = vec![2; 7];
        let pages = walk(
            &items,
            &sizes,
            PageLimits {
                items: 3,
                bytes: 1000,
            },
        );
        assert_eq!(pages.iter().map(Vec::len).collect::<Vec<_>>(), [3, 3, 1]);
        assert_eq!(pages.concat(), items);
    }

    #[test]
    fn merged_page_of_large_definitions_is_split_by_bytes() {
        // 200 definitions of 50 KB each under a 4 MiB message limit: every page fits, none is empty.
        let items: Vec<Value> = (0..200)
            .map(|i| json!({"name": format!("t{i}"), "description": "d".repeat(50_000)}))
            .collect();
        let sizes: Vec<usize> = items.iter().map(|v| v.to_string().len() + 1).collect();
        let limits = PageLimits::new(100, 4 << 20);
        let pages = walk(&items, &sizes, limits);
        assert!(pages.len() > 2, "{} pages", pages.len());
        for p in &pages {
            assert!(!p.is_empty());
            let line = json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": p, "nextCursor": "x".repeat(40)}});
            assert!(line.to_string().len() <= 4 << 20);
        }
        assert_eq!(pages.concat(), items);
    }

    #[test]
    fn page_always_advances_even_past_an_oversized_entry() {
        let items: Vec<Value> = (0..3).map(Value::from).collect();
        let pages = walk(
            &items,
            &[10, 5000, 10],
            PageLimits {
                items: 10,
                bytes: 100,
            },
        );
        assert_eq!(pages, [vec![json!(0)], vec![json!(1)], vec![json!(2)]]);
    }

    #[test]
    fn foreign_cursors_are_refused() {
        let items: Vec<Value> = (0..7).map(Value::from).collect();
        let limits = PageLimits::new(3, 1 << 20);
        let sizes = [1; 7];
        assert!(page_slice(&items, &sizes, "tools", Some(&json!("garbage")), limits).is_err());
        let prompts_cursor = json!(encode(3, "prompts"));
        assert!(page_slice(&items, &sizes, "tools", Some(&prompts_cursor), limits).is_err());
    }
}
