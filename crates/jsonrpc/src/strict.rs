//! Strict JSON parsing into `serde_json::Value`: duplicate object keys and nesting deeper than a cap are errors.
//!
//! serde_json alone keeps the last of two duplicate keys, so `{"path":"a","path":"/etc"}` would mean different
//! things to different readers of the same bytes; refusing it closes that ambiguity. Invalid UTF-8 and lone
//! surrogates are already refused by serde_json's string parser.

use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::fmt;

/// Parses `bytes` as exactly one JSON value, refusing duplicate keys and nesting deeper than `max_depth`.
pub fn parse_strict(bytes: &[u8], max_depth: usize) -> Result<Value, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = StrictSeed {
        depth: 0,
        max_depth,
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

#[derive(Clone, Copy)]
struct StrictSeed {
    depth: usize,
    max_depth: usize,
}

impl StrictSeed {
    fn nested<E: serde::de::Error>(self) -> Result<Self, E> {
        if self.depth >= self.max_depth {
            return Err(E::custom(format_args!(
                "nesting deeper than {} levels",
                self.max_depth
            )));
        }
        Ok(Self {
            depth: self.depth + 1,
            ..self
        })
    }
}

impl<'de> DeserializeSeed<'de> for StrictSeed {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrictSeed {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("number is not finite"))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let inner = self.nested()?;
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(inner)? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let inner = self.nested()?;
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            // One lookup per key: the slot found for a new key is the one its value goes into.
            match out.entry(key) {
                serde_json::map::Entry::Vacant(slot) => {
                    slot.insert(map.next_value_seed(inner)?);
                }
                serde_json::map::Entry::Occupied(taken) => {
                    return Err(A::Error::custom(format_args!(
                        "duplicate object key {:?}",
                        taken.key()
                    )));
                }
            }
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accepts_ordinary_json_unchanged() {
        let v = parse_strict(br#"{"a":[1,2.5,"x",null,true,{"b":{}}]}"#, 8).unwrap();
        assert_eq!(v, json!({"a":[1,2.5,"x",null,true,{"b":{}}]}));
    }

    #[test]
    fn duplicate_key_smuggling_is_refused() {
        let err = parse_strict(br#"{"path":"a","path":"/etc/passwd"}"#, 8).unwrap_err();
        assert!(
            err.to_string().contains("duplicate object key \"path\""),
            "{err}"
        );
    }

    #[test]
    fn duplicate_key_in_nested_object_is_refused() {
        assert!(parse_strict(br#"{"a":{"k":1,"k":1}}"#, 8).is_err());
    }

    #[test]
    fn nesting_at_cap_passes_and_beyond_fails() {
        let ok = format!("{}{}", "[".repeat(4), "]".repeat(4));
        assert!(parse_strict(ok.as_bytes(), 4).is_ok());
        let deep = format!("{}{}", "[".repeat(5), "]".repeat(5));
        let err = parse_strict(deep.as_bytes(), 4).unwrap_err();
        assert!(err.to_string().contains("nesting deeper than 4"), "{err}");
    }

    #[test]
    fn lone_surrogate_is_refused() {
        assert!(parse_strict(br#"{"a":"\ud800"}"#, 8).is_err());
        assert!(parse_strict(br#"{"a":"\udc00x"}"#, 8).is_err());
        // A proper pair is fine.
        assert_eq!(parse_strict(br#""\ud83d\ude00""#, 8).unwrap(), json!("😀"));
    }

    #[test]
    fn trailing_garbage_is_refused() {
        assert!(parse_strict(br#"{} {}"#, 8).is_err());
    }
}

#[cfg(test)]
mod float_regression {
    use super::parse_strict;

    /// Found by fuzzing: without correctly rounded float parsing, a long mantissa came back one digit off after
    /// a parse and re-serialisation — a gateway that forwards payloads must not change numbers.
    #[test]
    fn long_float_mantissa_survives_a_round_trip() {
        let text = "-327066666666666666666666606666666666660";
        let v = parse_strict(text.as_bytes(), 4).unwrap();
        let again = parse_strict(serde_json::to_string(&v).unwrap().as_bytes(), 4).unwrap();
        assert_eq!(v, again);
        assert_eq!(v.as_f64(), text.parse::<f64>().ok());
    }
}
