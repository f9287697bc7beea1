//! Canonical JSON text and SHA-256 hex, so every stage that hashes a value hashes the same bytes.
//!
//! Canonical here means: object keys sorted by Unicode code point (the byte order of their UTF-8), no whitespace,
//! strings escaped as `serde_json` escapes them and numbers printed as `serde_json` prints them. It is not
//! RFC 8785 (which sorts keys by UTF-16 code unit and prints numbers the ECMAScript way), and need not be: both
//! sides of every comparison — tool pins, approval snapshots, the audit hash chain — are produced by this one
//! function. Its output is stored (pins, audit records), so changing it breaks every stored hash; the tests below
//! pin it byte for byte.
//!
//! It does not choose which fields of a value take part: callers pick them before canonicalising.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// Canonical JSON text of any value: keys sorted recursively, no whitespace.
pub fn canonical_json(value: &Value) -> String {
    let mut out = Vec::new();
    write_canonical(value, &mut out);
    // Every byte came from serde_json's writer or is ASCII punctuation: the text is UTF-8.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// SHA-256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    to_hex(&Sha256::digest(bytes))
}

/// Lowercase hex of `bytes`, written through a table into one buffer: `hex::encode` collects one `char` at a
/// time, which cost more than the SHA-256 it encoded (every audit record and call digest goes through here).
pub fn to_hex(bytes: &[u8]) -> String {
    let mut out = vec![0; bytes.len() * 2];
    // The buffer is twice the input's length, the one thing `encode_to_slice` checks; the digits are ASCII.
    let _ = hex::encode_to_slice(bytes, &mut out);
    String::from_utf8(out).unwrap_or_default()
}

/// Writes in place rather than building a sorted copy, so a large definition is not cloned to be hashed; keys
/// and scalars go straight through serde_json's writer, without a string of their own.
fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_scalar(k, out);
                out.push(b':');
                write_canonical(v, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(v, out);
            }
            out.push(b']');
        }
        scalar => write_scalar(scalar, out),
    }
}

/// A string or scalar as serde_json prints it. Writing into a `Vec` cannot fail, nor can serialising a string
/// or a JSON scalar.
fn write_scalar<T: serde::Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) {
    let _ = serde_json::to_writer(out, value);
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use proptest::prelude::*;
    use serde_json::{json, Map};

    #[test]
    fn sorts_nested_keys_without_whitespace() {
        let v = json!({"b": [{"z": 1, "a": 2}], "a": {"y": [1, {"d": 2, "c": 3}], "x": null}});
        assert_eq!(
            canonical_json(&v),
            r#"{"a":{"x":null,"y":[1,{"c":3,"d":2}]},"b":[{"a":2,"z":1}]}"#
        );
    }

    /// Code point order, not UTF-16 order: U+FFFF sorts before U+10000 here, after it in RFC 8785.
    #[test]
    fn keys_sort_by_code_point() {
        let v = json!({"\u{10000}": 5, "\u{ffff}": 4, "é": 3, "a": 2, "B": 1});
        assert_eq!(
            canonical_json(&v),
            "{\"B\":1,\"a\":2,\"é\":3,\"\u{ffff}\":4,\"\u{10000}\":5}"
        );
    }

    #[test]
    fn strings_and_numbers_print_as_serde_json_prints_them() {
        let v = json!({
            "k\"\u{1b}": "a\nb\u{7f}/\u{202e}é",
            "n": [0, -1, 1.0, -0.0, 0.1, 1e300, u64::MAX, i64::MIN],
            "t": [true, false, null],
        });
        assert_eq!(
            canonical_json(&v),
            "{\"k\\\"\\u001b\":\"a\\nb\u{7f}/\u{202e}é\",\
             \"n\":[0,-1,1.0,-0.0,0.1,1e+300,18446744073709551615,-9223372036854775808],\
             \"t\":[true,false,null]}"
        );
    }

    #[test]
    fn sha256_hex_known_digests() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            sha256_hex(canonical_json(&json!({"b": 1, "a": 2})).as_bytes()),
            sha256_hex(br#"{"a":2,"b":1}"#)
        );
    }

    #[test]
    fn hex_by_table_is_the_hex_crates_lowercase() {
        let every_byte: Vec<u8> = (0..=255).collect();
        assert_eq!(to_hex(&every_byte), hex::encode(&every_byte));
        assert_eq!(to_hex(&[]), "");
        assert_eq!(to_hex(&[0x0f, 0xa0]), "0fa0");
    }

    /// The reference the crates used before sharing this function: sort a copy, let `serde_json` print it.
    fn sorted_copy(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                let mut out = Map::new();
                for k in keys {
                    out.insert(k.clone(), sorted_copy(&map[k]));
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted_copy).collect()),
            other => other.clone(),
        }
    }

    /// `value` with every object's entries inserted in reverse order.
    fn reversed(value: &Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.iter()
                    .rev()
                    .map(|(k, v)| (k.clone(), reversed(v)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(reversed).collect()),
            other => other.clone(),
        }
    }

    fn any_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            any::<String>().prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 64, 8, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                proptest::collection::vec((any::<String>(), inner), 0..8)
                    .prop_map(|entries| Value::Object(entries.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn agrees_with_serde_json_on_a_sorted_copy(v in any_json()) {
            prop_assert_eq!(canonical_json(&v), sorted_copy(&v).to_string());
        }

        #[test]
        fn insertion_order_does_not_matter(v in any_json()) {
            prop_assert_eq!(canonical_json(&v), canonical_json(&reversed(&v)));
        }
    }
}
