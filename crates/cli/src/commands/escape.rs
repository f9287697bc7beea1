//! Text that came from an agent, a tool or a log, made safe and unambiguous on an operator's terminal.
//!
//! Everything the admin commands show that someone else wrote (arguments, names, trace ids, log fields) passes
//! through here. The output is printable ASCII only, so no escape sequence can drive the terminal and no bidi
//! override, zero-width or look-alike character can make the screen say something other than what is stored.
//! This module decides how text looks; it does not decide what is shown.

use serde_json::Value;
use std::fmt::Write;

/// Compact JSON of `value` in printable ASCII: serde_json's escaping (quotes, backslashes, control characters)
/// plus `\uXXXX` for DEL and every non-ASCII character. Escaping all of non-ASCII rather than a list of known
/// dangerous ones is deliberate: it also exposes homoglyphs (a Cyrillic `а` in a path) and characters that a
/// future Unicode version makes invisible. The result is still valid JSON that decodes to the same value.
pub fn json_ascii(value: &Value) -> String {
    // Serialising a `Value` cannot fail (its keys are strings); the fallback is only for the type system.
    let text = serde_json::to_string(value).unwrap_or_else(|_| "<unprintable>".to_owned());
    ascii_escape(&text)
}

/// A string as a JSON string literal in printable ASCII (quotes included).
pub fn quoted(s: &str) -> String {
    json_ascii(&Value::String(s.to_owned()))
}

/// A short name shown bare when it is unambiguous (ASCII letters, digits and `_ . : / @ + -`), else quoted and
/// escaped, so `fs` reads as `fs` but `fs\u202e` or `a b` cannot pass for something else.
pub fn label(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.:/@+-".contains(c));
    if plain {
        s.to_owned()
    } else {
        quoted(s)
    }
}

/// A JSON value for a one-line field: strings as `label`, anything else as `json_ascii`.
pub fn value_label(value: &Value) -> String {
    match value {
        Value::String(s) => label(s),
        other => json_ascii(other),
    }
}

/// Replaces DEL and non-ASCII characters of already-escaped JSON text with `\uXXXX` escapes (UTF-16 units, as
/// JSON requires for characters outside the Basic Multilingual Plane). In JSON text those characters can only
/// occur inside strings, where the escape means the same character.
fn ascii_escape(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if c.is_ascii() && c != '\u{7f}' {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hidden_text_becomes_visible_escapes() {
        let v = json!("a\nb\u{202e}c\u{1b}[2J\u{200b}\u{7f}");
        assert_eq!(json_ascii(&v), r#""a\nb\u202ec\u001b[2J\u200b\u007f""#);
    }

    #[test]
    fn astral_characters_use_surrogate_pairs_and_round_trip() {
        let v = json!({"k\u{e9}y": "\u{1f600}"});
        let text = json_ascii(&v);
        assert_eq!(text, r#"{"k\u00e9y":"\ud83d\ude00"}"#);
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), v);
    }

    #[test]
    fn labels_are_bare_only_when_unambiguous() {
        assert_eq!(label("fs__write_file"), "fs__write_file");
        assert_eq!(label("a b"), r#""a b""#);
        assert_eq!(label(""), r#""""#);
        assert_eq!(label("x\u{202e}"), r#""x\u202e""#);
        assert_eq!(value_label(&json!(3)), "3");
    }
}
