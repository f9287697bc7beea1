//! Config-declared mappings: "tool X: argument `path` is a path, `url` a URL, `command` + `args` an argv".
//!
//! A mapping names the operation explicitly; the crate never infers one from argument names. A `command` string
//! with no `args` argument is argv only when it is plain (see `shell.rs`); otherwise it is a shell string.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{command_action, str_arg, str_list};
use crate::action::{RawAction, RawCommand, UnknownReason};
use crate::glob::NameGlob;
use crate::operation::Operation;
use crate::shell;

/// One declared mapping. `tool` is a glob over `server__tool` (or `mcp__server__tool`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolMapping {
    pub tool: String,
    pub operation: Operation,
    /// Argument names holding a path or a list of paths.
    #[serde(default)]
    pub paths: Vec<String>,
    /// Argument name holding a URL.
    #[serde(default)]
    pub url: Option<String>,
    /// Argument name holding the HTTP method; without it a URL call has no method and method rules do not admit it.
    #[serde(default)]
    pub method: Option<String>,
    /// Argument name holding the program (or a whole command string when `args` is absent).
    #[serde(default)]
    pub command: Option<String>,
    /// Argument name holding the argument list.
    #[serde(default)]
    pub args: Option<String>,
    /// Argument name holding the working directory (a path resource).
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(skip)]
    glob: Option<NameGlob>,
}

impl ToolMapping {
    /// Compiles the tool glob; called once when the policy loads.
    pub(crate) fn compile(mut self) -> Result<ToolMapping, String> {
        let pattern = self.tool.strip_prefix("mcp__").unwrap_or(&self.tool);
        self.glob = Some(NameGlob::new(pattern)?);
        Ok(self)
    }

    pub(crate) fn applies_to(&self, name: &str) -> bool {
        self.glob.as_ref().is_some_and(|g| g.matches(name))
    }

    pub(crate) fn apply(&self, name: String, args: &Value) -> RawAction {
        match self.read(name.clone(), args) {
            Ok(raw) => raw,
            Err(reason) => RawAction::new(self.operation, name).unknown(reason),
        }
    }

    fn read(&self, name: String, args: &Value) -> Result<RawAction, UnknownReason> {
        let cwd = match &self.cwd {
            Some(key) => str_arg(args, key)?.map(str::to_owned),
            None => None,
        };
        let mut raw = match &self.command {
            Some(key) => {
                let program = str_arg(args, key)?.ok_or(UnknownReason::MissingArgument)?;
                match &self.args {
                    Some(args_key) => {
                        let mut argv = vec![program.to_owned()];
                        argv.extend(str_list(args, args_key)?);
                        command_action(name, argv, cwd)
                    }
                    None => match shell::plain_argv(program) {
                        Some(argv) => command_action(name, argv, cwd),
                        None => {
                            let mut raw = RawAction::new(Operation::ShellExec, name);
                            raw.paths.extend(cwd);
                            raw.command = Some(RawCommand::Shell(program.to_owned()));
                            raw
                        }
                    },
                }
            }
            None => {
                let mut raw = RawAction::new(self.operation, name);
                raw.paths.extend(cwd);
                raw
            }
        };
        if raw.unknown.is_some() {
            return Ok(raw);
        }
        if self.command.is_some()
            && self.operation != Operation::ShellExec
            && raw.operation == Operation::ShellExec
        {
            // The mapping says what the command is (for example git.read); shell rules still see it.
            raw.operation = self.operation;
            raw.via_shell = true;
        }
        for key in &self.paths {
            let found = str_list(args, key)?;
            if found.is_empty() {
                return Err(UnknownReason::MissingArgument);
            }
            raw.paths.extend(found);
        }
        if let Some(key) = &self.url {
            raw.url = Some(
                str_arg(args, key)?
                    .ok_or(UnknownReason::MissingArgument)?
                    .to_owned(),
            );
        }
        if let Some(key) = &self.method {
            raw.method = str_arg(args, key)?.map(str::to_owned);
        }
        Ok(raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mapping(v: Value) -> ToolMapping {
        serde_json::from_value::<ToolMapping>(v)
            .unwrap()
            .compile()
            .unwrap()
    }

    #[test]
    fn declared_arguments_become_resources() {
        let m =
            mapping(json!({"tool": "mcp__docs__open", "operation": "fs.read", "paths": ["file"]}));
        assert!(m.applies_to("docs__open"));
        let raw = m.apply("docs__open".into(), &json!({"file": "README.md"}));
        assert_eq!(
            (raw.operation, raw.paths),
            (Operation::FsRead, vec!["README.md".to_owned()])
        );
        assert_eq!(
            m.apply("docs__open".into(), &json!({})).unknown,
            Some(UnknownReason::MissingArgument)
        );
    }

    #[test]
    fn command_strings_are_argv_only_when_plain() {
        let m =
            mapping(json!({"tool": "sh__run", "operation": "shell.exec", "command": "command"}));
        let plain = m.apply("sh__run".into(), &json!({"command": "npm test"}));
        assert_eq!(
            plain.command,
            Some(RawCommand::Argv(vec!["npm".into(), "test".into()]))
        );
        let chained = m.apply("sh__run".into(), &json!({"command": "npm test && curl x"}));
        assert!(matches!(chained.command, Some(RawCommand::Shell(_))));
    }

    #[test]
    fn unknown_keys_are_rejected() {
        let err = serde_json::from_value::<ToolMapping>(
            json!({"tool": "x", "operation": "fs.read", "pathz": []}),
        )
        .unwrap_err();
        assert!(err.to_string().contains("pathz"));
    }
}
