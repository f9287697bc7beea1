//! Adapters: read an operation and raw resources out of a tool call. No normalisation and no decision here.
//!
//! Order: a config-declared mapping for the tool wins (the operator knows their server), then the built-in table
//! for the server kind the caller stated, then `mcp.call` matched by tool name only. Arguments an adapter expects
//! but cannot read make the action `unknown`, never a guess; so do arguments a table does not know, and paths the
//! adapter cannot resolve exactly as the server will (see `tables.rs`).

mod git;
mod git_reach;
mod mapping;
mod tables;

use std::collections::BTreeMap;

use serde_json::Value;

use crate::action::{Access, RawAction, RawCommand, ToolCall, UnknownReason};
use crate::operation::Operation;

pub use mapping::ToolMapping;
pub use tables::{FETCH_ARGUMENTS, FILESYSTEM_ARGUMENTS, GIT_ARGUMENTS};

/// The adapter of toolgate's own tools: `(tool, server__tool, arguments)` to a raw action. It lives next to the
/// tools' schemas (one definition for both), so the policy receives it rather than keeping a copy.
pub type OwnAdapter = fn(&str, String, &Value) -> RawAction;

/// What the embedding knows about its servers that adapters need and the policy cannot see.
#[derive(Debug, Clone, Default)]
pub struct Servers {
    /// Adapter of toolgate's own tools; without it their calls are `unknown`.
    pub own: Option<OwnAdapter>,
    /// For each filesystem server (by name), its allowed directories as the server itself resolved them, in its
    /// order (absolute, lexically clean). A relative path resolves against these exactly as the server does; a
    /// server missing here has its relative paths `unknown`.
    pub filesystem_dirs: BTreeMap<String, Vec<String>>,
}

/// Classifies `call` using `mappings` first, then the built-in table for its server kind.
pub fn adapt(call: &ToolCall, mappings: &[ToolMapping]) -> RawAction {
    adapt_with(call, mappings, &Servers::default())
}

/// [`adapt`] with what the embedding knows about its servers.
pub fn adapt_with(call: &ToolCall, mappings: &[ToolMapping], servers: &Servers) -> RawAction {
    let name = call.qualified_name();
    if let Some(m) = mappings.iter().find(|m| m.applies_to(&name)) {
        return m.apply(name, &call.arguments);
    }
    match call.server_kind {
        Some(kind) => tables::adapt_builtin(kind, call, name, servers),
        None => RawAction::new(Operation::McpCall, name),
    }
}

/// `Err(UnknownArgument)` when `args` has a key outside `known`: a server reads arguments toolgate never saw.
pub fn only_known_arguments(args: &Value, known: &[&str]) -> Result<(), UnknownReason> {
    match args {
        Value::Object(m) if m.keys().all(|k| known.contains(&k.as_str())) => Ok(()),
        Value::Object(_) => Err(UnknownReason::UnknownArgument),
        Value::Null => Ok(()),
        _ => Err(UnknownReason::BadArgument),
    }
}

/// Reads a string argument; `Err` when present with the wrong type.
pub fn str_arg<'a>(args: &'a Value, key: &str) -> Result<Option<&'a str>, UnknownReason> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(UnknownReason::BadArgument),
    }
}

/// Reads a required string argument.
pub fn required_str<'a>(args: &'a Value, key: &str) -> Result<&'a str, UnknownReason> {
    str_arg(args, key)?.ok_or(UnknownReason::MissingArgument)
}

/// Reads an argument that may be one string or an array of strings.
pub fn str_list(args: &Value, key: &str) -> Result<Vec<String>, UnknownReason> {
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
pub fn command_action(name: String, argv: Vec<String>, cwd: Option<String>) -> RawAction {
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
            Ok(git) => {
                raw.operation = git.operation;
                raw.via_shell = true;
                // `-C dir` is relative to the command's working directory, and operands are relative to `-C dir`.
                let dir = git.dir.map(|d| anchor(cwd.as_deref(), d));
                let base = dir.clone().or_else(|| cwd.clone());
                raw.paths.extend(dir);
                let operands: Vec<String> = git
                    .paths
                    .into_iter()
                    .map(|p| anchor(base.as_deref(), p))
                    .collect();
                raw.paths.extend(operands.iter().cloned());
                let mut read = operands;
                if git.whole_tree {
                    // A revision or object id reaches every file beneath the directory git runs in; without a
                    // known directory (no working directory, and no absolute `-C`) toolgate cannot say which tree.
                    match base.filter(|b| cwd.is_some() || b.starts_with('/')) {
                        Some(b) => read.push(b),
                        None => {
                            raw.command = Some(RawCommand::Argv(argv));
                            return raw.unknown(UnknownReason::AmbiguousGit);
                        }
                    }
                }
                if git.operation == Operation::GitRead && !read.is_empty() {
                    // git prints what it reads: the file rules (`Read(...)`) apply to it as to a read, reaching
                    // beneath each path as far as the output does (a path operand may be a directory).
                    raw.also
                        .push(Access::new(Operation::FsRead, read, git.reach));
                }
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

/// `path` as seen from `base`: absolute and `~` paths stay as they are, relative ones are joined onto `base`.
fn anchor(base: Option<&str>, path: String) -> String {
    match base {
        Some(b) if !path.starts_with('/') && !path.starts_with('~') => {
            format!("{}/{path}", b.trim_end_matches('/'))
        }
        _ => path,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_dash_c_is_relative_to_cwd() {
        let argv = ["git", "-C", "../other", "status"]
            .map(str::to_owned)
            .to_vec();
        let r = command_action("tg__shell_run".into(), argv, Some("sub".into()));
        assert_eq!((r.operation, r.via_shell), (Operation::GitRead, true));
        assert_eq!(r.paths, vec!["sub".to_owned(), "sub/../other".to_owned()]);
    }

    #[test]
    fn git_operands_are_anchored_at_dash_c_then_cwd() {
        let argv = ["git", "-C", "a", "diff", "x.rs", "/etc/passwd", "../b"]
            .map(str::to_owned)
            .to_vec();
        let r = command_action("tg__shell_run".into(), argv, Some("sub".into()));
        assert_eq!(
            r.paths,
            ["sub", "sub/a", "sub/a/x.rs", "/etc/passwd", "sub/a/../b"].map(str::to_owned)
        );
        let argv = ["git", "log", "--", "x.rs"].map(str::to_owned).to_vec();
        let r = command_action("tg__shell_run".into(), argv, Some("sub".into()));
        assert_eq!(r.paths, ["sub", "sub/x.rs"].map(str::to_owned));
    }

    #[test]
    fn git_object_reads_reach_beneath_the_directory_git_runs_in() {
        let argv = ["git", "-C", "a", "show", "5f8d3a1c"]
            .map(str::to_owned)
            .to_vec();
        let r = command_action("tg__shell_run".into(), argv.clone(), Some("sub".into()));
        assert_eq!(
            r.also,
            vec![Access::new(
                Operation::FsRead,
                ["sub/a/5f8d3a1c", "sub/a"].map(str::to_owned).to_vec(),
                crate::action::Scope::ContentBeneath
            )]
        );
        // A mapped shell tool that names no working directory: which tree git reads is not known.
        let r = command_action("m__run".into(), argv, None);
        assert_eq!(r.unknown, Some(UnknownReason::AmbiguousGit));
        let argv = ["git", "-C", "/repo", "show", "HEAD"]
            .map(str::to_owned)
            .to_vec();
        let r = command_action("m__run".into(), argv, None);
        assert_eq!(
            (r.unknown, r.also[0].paths.last()),
            (None, Some(&"/repo".to_owned()))
        );
        let argv = ["git", "status"].map(str::to_owned).to_vec();
        let r = command_action("m__run".into(), argv, None);
        assert_eq!(r.unknown, Some(UnknownReason::AmbiguousGit));
    }
}
