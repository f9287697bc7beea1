//! Env files (`"envFile"` in Cursor and VS Code): `KEY=VALUE` lines, read relative to the config file.
//!
//! The dotenv subset clients accept: blank lines and `#` comments, an optional `export ` prefix, values in
//! single or double quotes kept literally. No variable expansion inside the file and no multi-line values: a
//! line toolgate cannot read exactly is an error naming the file and line, never a guess.

use crate::error::{ConfigError, Result};
use std::collections::BTreeMap;
use std::path::Path;

/// Reads `path` (relative to the folder of `origin`, the config file).
pub(crate) fn read(key: &str, path: &str, origin: &Path) -> Result<BTreeMap<String, String>> {
    let base = origin.parent().unwrap_or(Path::new(""));
    let full = base.join(path);
    let text = std::fs::read_to_string(&full).map_err(|e| {
        ConfigError::invalid(key, format!("cannot read env file {}: {e}", full.display()))
    })?;
    parse(&text).map_err(|(line, why)| {
        ConfigError::invalid(key, format!("{}:{line}: {why}", full.display()))
    })
}

fn parse(text: &str) -> std::result::Result<BTreeMap<String, String>, (usize, &'static str)> {
    let mut vars = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let (k, v) = line.split_once('=').ok_or((i + 1, "expected KEY=VALUE"))?;
        let k = k.trim();
        let valid = k
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err((i + 1, "the name must be letters, digits and '_'"));
        }
        let v = v.trim();
        let v = match v.chars().next() {
            Some(q @ ('"' | '\'')) => v
                .strip_prefix(q)
                .and_then(|r| r.strip_suffix(q))
                .ok_or((i + 1, "unterminated quote"))?,
            // An unquoted value ends at a comment, as in dotenv.
            _ => v.split(" #").next().unwrap_or("").trim_end(),
        };
        vars.insert(k.to_owned(), v.to_owned());
    }
    Ok(vars)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn reads_the_dotenv_subset() {
        let vars = parse(
            "# comment\n\nexport A=1\nB = \"two words\"\nC='${NOT_EXPANDED}'\nD=plain # trailing\nE=\n",
        )
        .unwrap();
        let want = [
            ("A", "1"),
            ("B", "two words"),
            ("C", "${NOT_EXPANDED}"),
            ("D", "plain"),
            ("E", ""),
        ];
        assert_eq!(
            vars,
            want.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        );
    }

    #[test]
    fn unreadable_lines_are_errors_with_their_line_number() {
        assert_eq!(parse("A=1\nnot a pair\n"), Err((2, "expected KEY=VALUE")));
        assert_eq!(
            parse("A=\"open\n").map(|_| ()),
            Err((1, "unterminated quote"))
        );
        assert_eq!(
            parse("1A=x\n").map(|_| ()),
            Err((1, "the name must be letters, digits and '_'"))
        );
    }
}
