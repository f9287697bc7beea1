//! The compact TypeScript-like declaration of a tool's input schema that a search hit carries, e.g.
//! `files__read_text_file(args: {path: string; head?: number; tail?: number})`, so a model can write the call
//! without a second round trip. Bounded: depth, properties per object, enum members and total length are
//! capped, and a cut says so with `…`, so a huge schema gives a short signature, never a wall. It does not
//! resolve `$ref` or follow composition it cannot show (`allOf`, `not`, conditionals): those are `unknown`.

use serde_json::{Map, Value};

/// Objects nested deeper than this are shown as `object`.
const MAX_DEPTH: usize = 3;
/// Properties shown per object; the rest are `…`.
const MAX_PROPERTIES: usize = 16;
/// Members shown per enum or union; the rest are `…`.
const MAX_MEMBERS: usize = 8;
/// Characters of one enum or const string shown.
const MAX_LITERAL: usize = 40;
/// The whole signature, before it is cut.
const MAX_LEN: usize = 480;

/// `name(args: {…})`, or `name(args?: {…})` when no argument is required.
pub(crate) fn signature(name: &str, schema: &Value) -> String {
    let mut out = Writer::default();
    out.push(name);
    let required_any = schema
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(|r| !r.is_empty());
    out.push(if required_any { "(args: " } else { "(args?: " });
    match schema.as_object() {
        Some(map) if map.contains_key("properties") || !map.contains_key("type") => {
            object(map, 0, &mut out)
        }
        Some(_) => ty(schema, 0, &mut out),
        None => out.push("{}"),
    }
    out.push(")");
    out.finish()
}

/// A string that stops growing past [`MAX_LEN`] and remembers that it was cut.
#[derive(Default)]
struct Writer {
    text: String,
    cut: bool,
}

impl Writer {
    fn push(&mut self, s: &str) {
        if self.text.len() + s.len() > MAX_LEN {
            self.cut = true;
        }
        if !self.cut {
            self.text.push_str(s);
        }
    }

    fn full(&self) -> bool {
        self.cut
    }

    fn finish(mut self) -> String {
        if self.cut {
            self.text.push_str(" …)");
        }
        self.text
    }
}

fn ty(schema: &Value, depth: usize, out: &mut Writer) {
    if out.full() {
        return;
    }
    let Some(map) = schema.as_object() else {
        // `true` is any value; `false` (nothing) is shown the same way, the tool will refuse it.
        out.push("unknown");
        return;
    };
    if map.contains_key("$ref") {
        out.push("unknown");
        return;
    }
    if let Some(value) = map.get("const") {
        literal(value, out);
        return;
    }
    if let Some(members) = map.get("enum").and_then(Value::as_array) {
        union(members, out, literal);
        return;
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(members) = map.get(key).and_then(Value::as_array) {
            union(members, out, |v, out| ty(v, depth + 1, out));
            return;
        }
    }
    match map.get("type") {
        Some(Value::String(t)) => named(t, map, depth, out),
        Some(Value::Array(types)) => union(types, out, |t, out| match t.as_str() {
            Some(t) => named(t, map, depth, out),
            None => out.push("unknown"),
        }),
        _ if map.contains_key("properties") => object(map, depth, out),
        _ => out.push("unknown"),
    }
}

fn named(t: &str, map: &Map<String, Value>, depth: usize, out: &mut Writer) {
    match t {
        "string" => out.push("string"),
        "number" | "integer" => out.push("number"),
        "boolean" => out.push("boolean"),
        "null" => out.push("null"),
        "array" => match map.get("items") {
            Some(items) if depth < MAX_DEPTH => {
                let compound = items.get("enum").is_some()
                    || items.get("anyOf").is_some()
                    || items.get("oneOf").is_some()
                    || items.get("type").is_some_and(Value::is_array);
                if compound {
                    out.push("(");
                    ty(items, depth + 1, out);
                    out.push(")[]");
                } else {
                    ty(items, depth + 1, out);
                    out.push("[]");
                }
            }
            _ => out.push("unknown[]"),
        },
        "object" => object(map, depth, out),
        _ => out.push("unknown"),
    }
}

fn object(schema: &Map<String, Value>, depth: usize, out: &mut Writer) {
    let properties = schema.get("properties").and_then(Value::as_object);
    let Some(properties) = properties.filter(|p| !p.is_empty()) else {
        match schema.get("additionalProperties") {
            Some(v @ Value::Object(_)) if depth < MAX_DEPTH => {
                out.push("Record<string, ");
                ty(v, depth + 1, out);
                out.push(">");
            }
            _ if depth == 0 => out.push("{}"),
            _ => out.push("object"),
        }
        return;
    };
    if depth >= MAX_DEPTH {
        out.push("object");
        return;
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    out.push("{");
    for (i, (key, value)) in properties.iter().enumerate() {
        if i > 0 {
            out.push("; ");
        }
        if i == MAX_PROPERTIES {
            out.push(&format!("… {} more", properties.len() - MAX_PROPERTIES));
            break;
        }
        property_name(key, out);
        if !required.contains(&key.as_str()) {
            out.push("?");
        }
        out.push(": ");
        ty(value, depth + 1, out);
    }
    out.push("}");
}

/// A key as TypeScript writes it: bare when it is an identifier, else quoted.
fn property_name(key: &str, out: &mut Writer) {
    let mut chars = key.chars();
    let identifier = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if identifier {
        out.push(key);
    } else {
        out.push(&Value::String(cut(key, MAX_LITERAL)).to_string());
    }
}

fn union(members: &[Value], out: &mut Writer, mut each: impl FnMut(&Value, &mut Writer)) {
    if members.is_empty() {
        out.push("never");
        return;
    }
    for (i, member) in members.iter().enumerate() {
        if i > 0 {
            out.push(" | ");
        }
        if i == MAX_MEMBERS {
            out.push("…");
            break;
        }
        each(member, out);
    }
}

fn literal(value: &Value, out: &mut Writer) {
    match value {
        Value::String(s) => out.push(&Value::String(cut(s, MAX_LITERAL)).to_string()),
        Value::Number(_) | Value::Bool(_) | Value::Null => out.push(&value.to_string()),
        Value::Array(_) | Value::Object(_) => out.push("unknown"),
    }
}

/// `s` cut to `max` characters, with `…` when cut.
pub(crate) fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use proptest::prelude::*;
    use serde_json::json;

    /// Schema-shaped JSON: objects with `type`, `properties`, `items`, `enum`, `anyOf`, `$ref` and noise.
    fn any_schema() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(json!({"type": "string"})),
            Just(json!({"type": ["integer", "null"]})),
            Just(json!({"$ref": "#/x"})),
            Just(json!(true)),
            Just(json!(7)),
            proptest::collection::vec(".{0,60}", 0..30).prop_map(|e| json!({"enum": e})),
        ];
        leaf.prop_recursive(6, 400, 40, |inner| {
            prop_oneof![
                proptest::collection::btree_map(".{0,30}", inner.clone(), 0..40).prop_map(|p| {
                    let required: Vec<String> = p.keys().take(3).cloned().collect();
                    json!({"type": "object", "properties": p, "required": required})
                }),
                inner
                    .clone()
                    .prop_map(|i| json!({"type": "array", "items": i})),
                proptest::collection::vec(inner.clone(), 0..12).prop_map(|v| json!({"anyOf": v})),
                inner.prop_map(|i| json!({"type": "object", "additionalProperties": i})),
            ]
        })
    }

    proptest! {
        #[test]
        fn any_schema_gives_a_bounded_signature(schema in any_schema()) {
            let sig = signature("some__tool", &schema);
            prop_assert!(sig.len() <= MAX_LEN + " …)".len(), "{}", sig);
            prop_assert!(sig.starts_with("some__tool(args"), "{}", sig);
        }
    }

    #[test]
    fn required_and_optional_properties() {
        let schema = json!({"type": "object", "properties": {
            "path": {"type": "string"}, "head": {"type": "number"}, "tail": {"type": "integer"}},
            "required": ["path"]});
        assert_eq!(
            signature("files__read_text_file", &schema),
            "files__read_text_file(args: {path: string; head?: number; tail?: number})"
        );
    }

    #[test]
    fn enums_arrays_nested_objects_and_unions() {
        let schema = json!({"type": "object", "required": ["mode", "edits"], "properties": {
            "mode": {"type": "string", "enum": ["fast", "slow"]},
            "edits": {"type": "array", "items": {"type": "object", "required": ["old"],
                "properties": {"old": {"type": "string"}, "new": {"type": "string"}}}},
            "tags": {"type": "array", "items": {"enum": ["a", "b"]}},
            "limit": {"type": ["integer", "null"]},
            "where": {"anyOf": [{"type": "string"}, {"type": "boolean"}]},
            "meta": {"type": "object", "additionalProperties": {"type": "string"}},
            "ref": {"$ref": "#/definitions/x"},
            "odd-key": {},
            "k": {"const": 3}}});
        assert_eq!(
            signature("t", &schema),
            "t(args: {mode: \"fast\" | \"slow\"; edits: {old: string; new?: string}[]; \
             tags?: (\"a\" | \"b\")[]; limit?: number | null; where?: string | boolean; \
             meta?: Record<string, string>; ref?: unknown; \"odd-key\"?: unknown; k?: 3})"
        );
    }

    #[test]
    fn empty_and_missing_schemas() {
        assert_eq!(signature("t", &json!({"type": "object"})), "t(args?: {})");
        assert_eq!(signature("t", &json!({})), "t(args?: {})");
        assert_eq!(signature("t", &json!(null)), "t(args?: {})");
    }

    #[test]
    fn deep_nesting_is_cut_to_object() {
        let mut schema = json!({"type": "string"});
        for _ in 0..50 {
            schema = json!({"type": "object", "properties": {"a": schema}});
        }
        assert_eq!(
            signature("t", &schema),
            "t(args?: {a?: {a?: {a?: object}}})"
        );
    }

    #[test]
    fn a_huge_schema_gives_a_cut_signature_never_a_wall() {
        let properties: Map<String, Value> = (0..500)
            .map(|i| {
                let members: Vec<Value> = (0..100).map(|j| json!(format!("v{j}"))).collect();
                (format!("p{i}"), json!({"enum": members}))
            })
            .collect();
        let schema = json!({"type": "object", "properties": properties});
        let sig = signature("t", &schema);
        assert!(sig.chars().count() <= MAX_LEN + 3, "{sig}");
        assert!(sig.ends_with(" …)"), "{sig}");
        let long = json!({"type": "object", "properties": {"s": {"const": "x".repeat(10_000)}}});
        assert_eq!(
            signature("t", &long),
            format!("t(args?: {{s?: \"{}…\"}})", "x".repeat(MAX_LITERAL))
        );
    }
}
