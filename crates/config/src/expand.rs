//! `${VAR}` and `${VAR:-default}` expansion in upstream args, env, url and headers.
//!
//! A variable that is unset (and has no default) stops start-up; the error names the variable and the key, never
//! a value. Anything that is not a well-formed `${NAME}` is left as written.

use crate::error::{ConfigError, Result};

pub(crate) fn expand(
    input: &str,
    key: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String> {
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let body = &after[..end];
        let (name, default) = match body.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (body, None),
        };
        if !is_var_name(name) {
            out.push_str(&rest[start..start + 2 + end + 1]);
        } else {
            match (env(name), default) {
                (Some(v), _) => out.push_str(&v),
                (None, Some(d)) => out.push_str(d),
                (None, None) => {
                    return Err(ConfigError::MissingVariable {
                        key: key.to_owned(),
                        var: name.to_owned(),
                    });
                }
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn is_var_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(k: &str) -> Option<String> {
        (k == "HOME_DIR").then(|| "/home/u".to_owned())
    }

    #[test]
    fn expands_set_variables_and_defaults() {
        assert_eq!(
            expand("${HOME_DIR}/notes", "k", &env).unwrap(),
            "/home/u/notes"
        );
        assert_eq!(expand("${NOPE:-/tmp}", "k", &env).unwrap(), "/tmp");
        assert_eq!(
            expand("a${HOME_DIR}b${HOME_DIR}", "k", &env).unwrap(),
            "a/home/ub/home/u"
        );
    }

    #[test]
    fn leaves_non_variables_alone() {
        assert_eq!(
            expand("$HOME ${} ${1X} ${open", "k", &env).unwrap(),
            "$HOME ${} ${1X} ${open"
        );
    }

    #[test]
    fn missing_variable_names_the_variable_and_key_but_no_value() {
        let e = expand(
            "Bearer ${TRACKER_TOKEN}",
            "mcpServers.t.headers.Authorization",
            &env,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "mcpServers.t.headers.Authorization references ${TRACKER_TOKEN}, which is not set in toolgate's environment"
        );
    }
}
