//! Variable expansion in upstream commands, args, env, url and headers, in every client's syntax:
//! `${VAR}` and `${VAR:-default}` (Claude Code), `${env:VAR}`, `${userHome}`, `${workspaceFolder}`,
//! `${workspaceFolderBasename}`, `${pathSeparator}` and `${/}` (Cursor, VS Code).
//!
//! A variable that is unset (and has no default) stops start-up; the error names the variable, the key and the
//! file, never a value. A reference only the client can answer (`${input:…}`, `${command:…}`, `${config:…}`) is
//! an `Unresolvable` error, which the server validator turns into "this server is not started, because…".
//! Anything that is not a well-formed reference is left as written.

use crate::error::{ConfigError, Result};
use std::path::Path;

/// What references resolve against.
pub(crate) struct Vars<'a> {
    pub env: &'a dyn Fn(&str) -> Option<String>,
    /// The folder `${workspaceFolder}` names: the workspace, else the folder holding `.vscode/mcp.json`.
    pub workspace_folder: Option<&'a Path>,
    /// The config file, for messages.
    pub origin: &'a Path,
}

pub(crate) fn expand(input: &str, key: &str, vars: &Vars) -> Result<String> {
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
        match resolve(body, key, vars)? {
            Some(value) => out.push_str(&value),
            None => out.push_str(&rest[start..start + 2 + end + 1]),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The value of one `${body}`, or `None` when `body` is not a reference (it is then kept as written).
fn resolve(body: &str, key: &str, vars: &Vars) -> Result<Option<String>> {
    let missing = |var: &str| ConfigError::MissingVariable {
        key: key.to_owned(),
        var: var.to_owned(),
        file: vars.origin.to_owned(),
    };
    let folder = || {
        vars.workspace_folder
            .ok_or_else(|| ConfigError::Unresolvable {
                key: key.to_owned(),
                reference: format!("${{{body}}}"),
                why: "needs a workspace: give --workspace or \"workspace\"".to_owned(),
            })
    };
    match body {
        "workspaceFolder" => return Ok(Some(folder()?.display().to_string())),
        "workspaceFolderBasename" => {
            let name = folder()?
                .file_name()
                .map(|n| n.to_string_lossy().into_owned());
            return Ok(Some(name.unwrap_or_default()));
        }
        "userHome" => return (vars.env)("HOME").map(Some).ok_or_else(|| missing("HOME")),
        "pathSeparator" | "/" => return Ok(Some("/".to_owned())),
        _ => {}
    }
    if let Some((scheme, id)) = body.split_once(':') {
        match scheme {
            "env" if is_var_name(id) => {
                return (vars.env)(id).map(Some).ok_or_else(|| missing(id));
            }
            "input" | "command" | "config" => {
                return Err(ConfigError::Unresolvable {
                    key: key.to_owned(),
                    reference: format!("${{{body}}}"),
                    why: format!(
                        "only the client can answer (it prompts or runs an editor command); write ${{env:NAME}} \
                         and give NAME in toolgate's environment instead of ${{{scheme}:{id}}}"
                    ),
                });
            }
            _ => {}
        }
    }
    let (name, default) = match body.split_once(":-") {
        Some((n, d)) => (n, Some(d)),
        None => (body, None),
    };
    if !is_var_name(name) {
        return Ok(None);
    }
    match ((vars.env)(name), default) {
        (Some(v), _) => Ok(Some(v)),
        (None, Some(d)) => Ok(Some(d.to_owned())),
        (None, None) => Err(missing(name)),
    }
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
        match k {
            "HOME_DIR" => Some("/home/u".to_owned()),
            "HOME" => Some("/home/me".to_owned()),
            _ => None,
        }
    }

    fn vars(folder: Option<&Path>) -> Vars<'_> {
        Vars {
            env: &env,
            workspace_folder: folder,
            origin: Path::new("client.json"),
        }
    }

    fn ex(input: &str) -> Result<String> {
        expand(input, "k", &vars(Some(Path::new("/src/app"))))
    }

    #[test]
    fn expands_set_variables_and_defaults() {
        assert_eq!(ex("${HOME_DIR}/notes").unwrap(), "/home/u/notes");
        assert_eq!(ex("${NOPE:-/tmp}").unwrap(), "/tmp");
        assert_eq!(ex("a${HOME_DIR}b${HOME_DIR}").unwrap(), "a/home/ub/home/u");
    }

    #[test]
    fn editor_variables_resolve_like_the_editor() {
        assert_eq!(
            ex("${workspaceFolder}${/}x ${workspaceFolderBasename}").unwrap(),
            "/src/app/x app"
        );
        assert_eq!(
            ex("${userHome}/.cache ${env:HOME_DIR}").unwrap(),
            "/home/me/.cache /home/u"
        );
    }

    #[test]
    fn workspace_folder_without_a_workspace_is_unresolvable_not_guessed() {
        let e = expand("${workspaceFolder}", "k", &vars(None)).unwrap_err();
        assert!(matches!(e, ConfigError::Unresolvable { .. }), "{e}");
    }

    #[test]
    fn vscode_input_reference_is_unresolvable_and_says_how_to_fix() {
        let e = ex("Bearer ${input:api-key}").unwrap_err();
        assert!(matches!(e, ConfigError::Unresolvable { .. }));
        assert!(e.to_string().contains("${env:NAME}"), "{e}");
    }

    #[test]
    fn leaves_non_variables_alone() {
        assert_eq!(
            ex("$HOME ${} ${1X} ${open").unwrap(),
            "$HOME ${} ${1X} ${open"
        );
    }

    #[test]
    fn missing_variable_names_the_variable_key_file_and_fix_but_no_value() {
        for input in ["Bearer ${TRACKER_TOKEN}", "Bearer ${env:TRACKER_TOKEN}"] {
            let e = expand(input, "mcpServers.t.headers.Authorization", &vars(None)).unwrap_err();
            let msg = e.to_string();
            assert!(
                msg.starts_with(
                    "mcpServers.t.headers.Authorization in client.json references ${TRACKER_TOKEN}, which is \
                     not set in toolgate's environment; set TRACKER_TOKEN in the \"env\" block"
                ),
                "{msg}"
            );
        }
    }
}
