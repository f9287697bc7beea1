//! Projection of one JSON value to a shape a model can read: arrays past a length show their first items and
//! then `"… 480 more items (of 500)"`, strings past a length are cut with how many characters were cut, objects
//! past a number of keys show their first keys, nesting past a depth is elided. The limits tighten in steps
//! until the value's text fits its budget; what still does not fit is cut as text. It keeps the order of items
//! and keys and never changes a value it does not cut.

use serde_json::{Map, Value};

/// One step of limits; each later step is tighter.
#[derive(Debug, Clone, Copy)]
struct Limits {
    items: usize,
    chars: usize,
    keys: usize,
    depth: usize,
}

const STEPS: [Limits; 5] = [
    Limits {
        items: 20,
        chars: 1000,
        keys: 100,
        depth: 12,
    },
    Limits {
        items: 10,
        chars: 300,
        keys: 40,
        depth: 8,
    },
    Limits {
        items: 5,
        chars: 100,
        keys: 20,
        depth: 6,
    },
    Limits {
        items: 3,
        chars: 40,
        keys: 10,
        depth: 4,
    },
    Limits {
        items: 2,
        chars: 20,
        keys: 5,
        depth: 3,
    },
];

/// A value fitted to a budget.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Fitted {
    /// The projected value (full fidelity when nothing was cut).
    pub value: Value,
    /// Its text: a string as itself, anything else as compact JSON; at most the budget in characters, plus `…`.
    pub text: String,
    /// Whether anything was cut.
    pub cut: bool,
}

/// Projects `value` so its text fits `budget` characters.
pub(super) fn fit(value: &Value, budget: usize) -> Fitted {
    let mut last = None;
    for limits in STEPS {
        let mut cut = false;
        let projected = project(value, limits, 0, &mut cut);
        let text = text(&projected);
        if text.chars().count() <= budget {
            return Fitted {
                value: projected,
                text,
                cut,
            };
        }
        last = Some((projected, text));
    }
    let (value, text) = last.unwrap_or_default();
    let text = match text.char_indices().nth(budget) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    };
    Fitted {
        value,
        text,
        cut: true,
    }
}

fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn project(value: &Value, limits: Limits, depth: usize, cut: &mut bool) -> Value {
    match value {
        Value::String(s) => match s.char_indices().nth(limits.chars) {
            Some((at, _)) => {
                *cut = true;
                let total = s.chars().count();
                Value::String(format!(
                    "{}… ({} more characters of {total})",
                    &s[..at],
                    total - limits.chars
                ))
            }
            None => value.clone(),
        },
        Value::Array(items) if !items.is_empty() && depth >= limits.depth => {
            *cut = true;
            Value::String(format!(
                "[… {} items, nested too deep to show]",
                items.len()
            ))
        }
        Value::Object(map) if !map.is_empty() && depth >= limits.depth => {
            *cut = true;
            Value::String(format!("{{… {} keys, nested too deep to show}}", map.len()))
        }
        Value::Array(items) => {
            let mut out: Vec<Value> = items
                .iter()
                .take(limits.items)
                .map(|v| project(v, limits, depth + 1, cut))
                .collect();
            if items.len() > limits.items {
                *cut = true;
                out.push(Value::String(format!(
                    "… {} more items (of {})",
                    items.len() - limits.items,
                    items.len()
                )));
            }
            Value::Array(out)
        }
        Value::Object(map) => {
            let mut out: Map<String, Value> = map
                .iter()
                .take(limits.keys)
                .map(|(k, v)| (k.clone(), project(v, limits, depth + 1, cut)))
                .collect();
            if map.len() > limits.keys {
                *cut = true;
                out.insert(
                    "…".to_owned(),
                    Value::String(format!(
                        "{} more keys (of {})",
                        map.len() - limits.keys,
                        map.len()
                    )),
                );
            }
            Value::Object(out)
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => value.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn a_small_value_is_left_whole() {
        let v = json!({"a": [1, 2, 3], "b": "short", "c": null});
        assert_eq!(
            fit(&v, 1000),
            Fitted {
                value: v.clone(),
                text: r#"{"a":[1,2,3],"b":"short","c":null}"#.to_owned(),
                cut: false
            }
        );
        assert_eq!(fit(&json!("plain text"), 100).text, "plain text");
    }

    #[test]
    fn a_long_array_shows_its_first_items_and_how_many_more() {
        let v = Value::Array((0..500).map(|i| json!(i)).collect());
        let fitted = fit(&v, 100_000);
        let items = fitted.value.as_array().unwrap();
        assert_eq!(items.len(), 21);
        assert_eq!(items[20], json!("… 480 more items (of 500)"));
        assert!(fitted.cut);
    }

    #[test]
    fn a_long_string_says_how_much_was_cut() {
        let fitted = fit(&json!("é".repeat(1500)), 100_000);
        assert_eq!(
            fitted.text,
            format!("{}… (500 more characters of 1500)", "é".repeat(1000))
        );
    }

    #[test]
    fn deep_nesting_is_elided() {
        let mut v = json!(1);
        for _ in 0..100 {
            v = json!({"k": [v]});
        }
        let fitted = fit(&v, 100_000);
        assert!(
            fitted.text.contains("nested too deep to show"),
            "{}",
            fitted.text
        );
        assert!(fitted.text.len() < 400, "{}", fitted.text);
    }

    #[test]
    fn limits_tighten_until_the_text_fits_the_budget() {
        let row =
            |i: usize| json!({"id": i, "title": "t".repeat(200), "labels": ["a", "b", "c", "d"]});
        let v = Value::Array((0..1000).map(row).collect());
        let fitted = fit(&v, 2000);
        assert!(fitted.text.chars().count() <= 2000, "{}", fitted.text.len());
        assert!(fitted.cut);
        // Whatever the budget, the text never exceeds it by more than the closing mark.
        let tiny = fit(&v, 10);
        assert_eq!(tiny.text.chars().count(), 11);
        assert!(tiny.text.ends_with('…'));
    }

    #[test]
    fn many_keys_show_the_first_and_how_many_more() {
        let map: Map<String, Value> = (0..150).map(|i| (format!("k{i:03}"), json!(i))).collect();
        let fitted = fit(&Value::Object(map), 100_000);
        assert_eq!(fitted.value["…"], json!("50 more keys (of 150)"));
        assert_eq!(fitted.value.as_object().unwrap().len(), 101);
    }
}
