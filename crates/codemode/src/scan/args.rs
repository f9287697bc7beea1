//! A call's arguments read from its tokens when they are a plain JSON literal written in JavaScript: an object
//! of strings, whole numbers, `true`, `false`, `null`, arrays and objects, keys written as names or plain
//! strings, trailing commas allowed. Anything else — a variable, an expression, a spread, a computed or
//! `__proto__` key, a method, a string with an escape, a template with a substitution, a number JavaScript
//! might print differently — is not read: the arguments are computed, and the caller treats them so.
//!
//! What is read must be what the engine would send: the gateway matches the arguments a running program sends
//! against the ones read here, so a literal read wrongly can only make a call fail to match, never make another
//! call pass for it.

use super::lex::Tok;
use serde_json::{Map, Value};

/// Deepest nesting read; deeper literals count as computed.
const MAX_DEPTH: usize = 32;
/// Longest whole number read: any shorter run of digits is printed by JavaScript exactly as written.
const MAX_DIGITS: usize = 15;

/// The literal value starting at `tokens[at]`, and the index just after it.
pub(super) fn literal(tokens: &[Tok], at: usize) -> Option<(Value, usize)> {
    value(tokens, at, 0)
}

fn value(tokens: &[Tok], at: usize, depth: usize) -> Option<(Value, usize)> {
    if depth > MAX_DEPTH {
        return None;
    }
    let v = match tokens.get(at)? {
        Tok::Str(Some(s)) => Value::String(s.clone()),
        // A template's text with a line break is not its value (the engine turns `\r\n` into `\n`).
        Tok::Template(Some(s)) if !s.contains('\r') => Value::String(s.clone()),
        Tok::Number(text) => Value::from(whole_number(text)?),
        Tok::Ident(word) => match word.as_str() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            "null" => Value::Null,
            _ => return None,
        },
        Tok::Punct("[") => return array(tokens, at + 1, depth),
        Tok::Punct("{") => return object(tokens, at + 1, depth),
        _ => return None,
    };
    Some((v, at + 1))
}

fn whole_number(text: &str) -> Option<i64> {
    let plain = !text.is_empty()
        && text.len() <= MAX_DIGITS
        && text.bytes().all(|b| b.is_ascii_digit())
        && (text == "0" || !text.starts_with('0'));
    plain.then(|| text.parse().ok()).flatten()
}

fn array(tokens: &[Tok], mut at: usize, depth: usize) -> Option<(Value, usize)> {
    let mut items = Vec::new();
    loop {
        if tokens.get(at)? == &Tok::Punct("]") {
            return Some((Value::Array(items), at + 1));
        }
        let (item, next) = value(tokens, at, depth + 1)?;
        items.push(item);
        at = match tokens.get(next)? {
            Tok::Punct(",") => next + 1,
            Tok::Punct("]") => next,
            _ => return None,
        };
    }
}

fn object(tokens: &[Tok], mut at: usize, depth: usize) -> Option<(Value, usize)> {
    let mut map = Map::new();
    loop {
        let key = match tokens.get(at)? {
            Tok::Punct("}") => return Some((Value::Object(map), at + 1)),
            Tok::Ident(k) | Tok::Str(Some(k)) => k.clone(),
            _ => return None,
        };
        // `__proto__: x` sets the prototype instead of a key: what is sent is not what is written.
        if key == "__proto__" || tokens.get(at + 1)? != &Tok::Punct(":") {
            return None;
        }
        let (v, next) = value(tokens, at + 2, depth + 1)?;
        // A repeated key keeps its last value, in JavaScript as here.
        map.insert(key, v);
        at = match tokens.get(next)? {
            Tok::Punct(",") => next + 1,
            Tok::Punct("}") => next,
            _ => return None,
        };
    }
}
