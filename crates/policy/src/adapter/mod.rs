//! Adapters: read an operation and raw resources out of a tool call. No normalisation and no decision here.
//!
//! Order: a config-declared mapping for the tool wins (the operator knows their server), then the built-in table
//! for the server kind the caller stated, then `mcp.call` matched by tool name only. Arguments an adapter expects
//! but cannot read make the action `unknown`, never a guess.

mod git;
mod mapping;
mod tables;

use serde_json::Value;

use crate::action::{RawAction, RawCommand, ToolCall, UnknownReason};
use crate::operation::Operation;

pub use mapping::ToolMapping;

/// Classifies `call` using `mappings` first, then the built-in table for its server kind.
pub fn adapt(call: &ToolCall, mappings: &[ToolMapping]) -> RawAction {
    let name = call.qualified_name();
    if let Some(m) = mappings.iter().find(|m| m.applies_to(&name)) {
        return m.apply(name, &call.arguments);
    }
    match call.server_kind {
        Some(kind) => tables::adapt_builtin(kind, &call.tool, name, &call.arguments),
        None => RawAction::new(Operation::McpCall, name),
    }
}

/// Reads a string argument; `Err` when present with the wrong type.
pub(crate) fn str_arg<'a>(args: &'a Value, key: &str) -> Result<Option<&'a str>, UnknownReason> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(UnknownReason::BadArgument),
    }
}

/// Reads a required string argument.
pub(crate) fn required_str<'a>(args: &'a Value, key: &str) -> Result<&'a str, UnknownReason> {
    str_arg(args, key)?.ok_or(UnknownReason::MissingArgument)
}

/// Reads an argument that may be one string or an array of strings.
pub(crate) fn str_list(args: &Value, key: &str) -> Result<Vec<String>, UnknownReason> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or(UnknownReason::BadArgument)
            })
            .collect(),
        Some(_) => Err(UnknownReason::BadArgument),
    }
}

/// Builds a shell-tool action from argv: a `git` program is classified further, everything else is `shell.exec`.
pub(crate) fn command_action(name: String, argv: Vec<String>, cwd: Option<String>) -> RawAction {
    let mut raw = RawAction::new(Operation::ShellExec, name);
    raw.paths.extend(cwd.clone());
    if argv
        .first()
        .is_some_and(|p| p.is_empty() || p.contains(|c: char| c.is_whitespace()))
    {
        // A program name with spaces is a shell string in disguise.
        raw.command = Some(RawCommand::Argv(argv));
        return raw.unknown(UnknownReason::BadArgument);
    }
    let program_is_git = argv
        .first()
        .is_some_and(|p| p.rsplit('/').next() == Some("git"));
    if program_is_git {
        match git::classify_argv(&argv[1..]) {
            Ok((op, dir)) => {
                raw.operation = op;
                raw.via_shell = true;
                // `-C dir` is relative to the command's working directory, not to the workspace.
                raw.paths.extend(dir.map(|d| match &cwd {
                    Some(c) if !d.starts_with('/') && !d.starts_with('~') => {
                        format!("{}/{d}", c.trim_end_matches('/'))
                    }
                    _ => d,
                }));
            }
            Err(reason) => {
                raw.command = Some(RawCommand::Argv(argv));
                return raw.unknown(reason);
            }
        }
    }
    raw.command = Some(RawCommand::Argv(argv));
    raw
}
