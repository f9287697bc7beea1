//! Text to one JSON tree, for every format a switching user's files come in: JSON as clients write it (VS Code's
//! `mcp.json` is JSON with comments and trailing commas), TOML, and YAML (ToolFence's policies and cases). Every
//! syntax error names the line and column, whatever the format, so a user can find the slip in an editor.
//!
//! Comments and trailing commas are blanked to spaces rather than removed, so the positions serde_json reports
//! are the positions in the file as written. Nothing here validates keys or values: that is `load`'s job (and the
//! policy crate's for policies).

use crate::error::{ConfigError, Result};
use serde_json::Value;

/// JSON, allowing `//` and `/* */` comments and a trailing comma before `}` or `]`, as VS Code reads `mcp.json`.
pub fn parse_json(text: &str, origin: &str) -> Result<Value> {
    serde_json::from_str(&blank_jsonc(text)).map_err(|e| ConfigError::Syntax {
        path: origin.to_owned(),
        format: "JSON",
        message: e.to_string(),
    })
}

/// TOML, with the error's position given as line and column like JSON's.
pub fn parse_toml(text: &str, origin: &str) -> Result<Value> {
    toml::from_str(text).map_err(|e: toml::de::Error| {
        let at = e
            .span()
            .map(|span| {
                let (line, column) = line_column(text, span.start);
                format!(" at line {line} column {column}")
            })
            .unwrap_or_default();
        ConfigError::Syntax {
            path: origin.to_owned(),
            format: "TOML",
            message: format!("{}{at}", e.message().trim_end()),
        }
    })
}

/// YAML (one document; duplicate keys refused), with the error's position given as line and column like JSON's.
pub fn parse_yaml(text: &str, origin: &str) -> Result<Value> {
    // Options cannot be built with struct update syntax (non-exhaustive): start from the defaults.
    let mut options = serde_saphyr::Options::default();
    options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::Error;
    options.with_snippet = false;
    serde_saphyr::from_str_with_options::<Value>(text, options).map_err(|e| {
        let at = e
            .location()
            .map(|l| format!(" at line {} column {}", l.line(), l.column()))
            .unwrap_or_default();
        // Without a snippet the rendered form is the message; keep its first line.
        let rendered = e.to_string();
        let message = rendered
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("invalid YAML")
            .trim_start_matches("error: ")
            .to_owned();
        let message = if message.contains(" line ") {
            message
        } else {
            format!("{message}{at}")
        };
        ConfigError::Syntax {
            path: origin.to_owned(),
            format: "YAML",
            message,
        }
    })
}

/// 1-based line and column (in characters) of byte `offset`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset.min(text.len())).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// `text` with comments and trailing commas replaced by spaces (newlines kept), outside strings only.
fn blank_jsonc(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let mut i = 0;
    // Where the last comma outside a string stands, while only whitespace and comments followed it.
    let mut comma: Option<usize> = None;
    // The last significant byte outside strings and comments: a comma right after `[`, `{` or `,` is no trailing
    // comma, and stays for serde_json to refuse.
    let mut prev = b' ';
    while i < bytes.len() {
        let here = bytes[i];
        let comment = here == b'/' && matches!(bytes.get(i + 1), Some(b'/') | Some(b'*'));
        let significant = !(here.is_ascii_whitespace() || comment);
        match here {
            b'"' => {
                comma = None;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    out[i] = b' ';
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let start = i;
                i += 2;
                while i < bytes.len() && !(bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                // An unclosed comment runs to the end; serde_json then reports the missing value.
                let end = (i + 2).min(bytes.len());
                for b in &mut out[start..end] {
                    if *b != b'\n' {
                        *b = b' ';
                    }
                }
                i = end;
            }
            b',' => {
                comma = (!matches!(prev, b'[' | b'{' | b',')).then_some(i);
                i += 1;
            }
            b'}' | b']' => {
                if let Some(c) = comma.take() {
                    out[c] = b' ';
                }
                i += 1;
            }
            b if b.is_ascii_whitespace() => i += 1,
            _ => {
                comma = None;
                i += 1;
            }
        }
        if significant {
            prev = here;
        }
    }
    // Only ASCII bytes outside strings were replaced by spaces, so the text is still UTF-8.
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn vscode_mcp_json_with_comments_and_trailing_commas_parses() {
        let text = r#"{
  // Servers for this folder.
  "servers": {
    "files": { "command": "npx", "args": ["-y", "pkg",], }, /* a trailing comma */
  },
  "inputs": [],
}"#;
        let v = parse_json(text, "mcp.json").unwrap();
        assert_eq!(
            v,
            json!({"servers": {"files": {"command": "npx", "args": ["-y", "pkg"]}}, "inputs": []})
        );
    }

    #[test]
    fn comment_markers_and_commas_inside_strings_are_kept() {
        let v = parse_json(
            r#"{"url": "https://x/y", "s": "a,]", "t": "/* no */"}"#,
            "f",
        )
        .unwrap();
        assert_eq!(
            v,
            json!({"url": "https://x/y", "s": "a,]", "t": "/* no */"})
        );
        let v = parse_json(r#"{"q": "say \"//\"",}"#, "f").unwrap();
        assert_eq!(v, json!({"q": "say \"//\""}));
    }

    #[test]
    fn a_comma_that_is_not_trailing_is_still_an_error() {
        assert!(parse_json(r#"{"a": 1,, "b": 2}"#, "f").is_err());
        assert!(parse_json(r#"[,]"#, "f").is_err());
    }

    #[test]
    fn json_error_positions_are_those_of_the_file_as_written() {
        let text = "{\n  // comment\n  \"a\": 1 \"b\"\n}";
        let e = parse_json(text, "f.json").unwrap_err().to_string();
        assert!(e.contains("line 3"), "{e}");
    }

    #[test]
    fn toml_and_yaml_errors_name_line_and_column_like_json() {
        let e = parse_toml("a = 1\nb = = 2\n", "f.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("at line 2 column"), "{e}");
        let e = parse_yaml("version: 1\nrules:\n  - id: x\n   effect: [\n", "f.yaml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line ") && e.contains("column"), "{e}");
        assert!(!e.contains('\n'), "one line: {e}");
    }

    #[test]
    fn yaml_duplicate_keys_are_refused() {
        let e = parse_yaml("default: allow\ndefault: deny\n", "f.yaml").unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
    }

    #[test]
    fn yaml_policy_reads_as_json_tree() {
        let v = parse_yaml(
            "version: 1\ndefault: ask\nrules:\n  - id: a\n    effect: allow\n    resources: [\"${workspace}/**\"]\n",
            "p.yaml",
        )
        .unwrap();
        assert_eq!(
            v,
            json!({"version": 1, "default": "ask", "rules": [{"id": "a", "effect": "allow", "resources": ["${workspace}/**"]}]})
        );
    }
}
