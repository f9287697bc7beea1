//! Built-in adapter tables for well-known servers: server-filesystem, mcp-server-git, fetch servers and toolgate's
//! own tools. Tables only; git classification lives in `git.rs`.
//!
//! `move_file` is `fs.delete` over both paths: moving a file away removes it from its source, so a deny on
//! deletion must not be dodged by a move. A tool a table does not list is `mcp.call`, except on a git server,
//! where an unlisted `git_*` tool is ambiguous and therefore `unknown`.

use serde_json::Value;

use super::{command_action, git, required_str, str_arg, str_list};
use crate::action::{RawAction, ServerKind, UnknownReason};
use crate::operation::Operation;

pub(super) fn adapt_builtin(kind: ServerKind, tool: &str, name: String, args: &Value) -> RawAction {
    let result = match kind {
        ServerKind::Filesystem => filesystem(tool, name.clone(), args),
        ServerKind::Git => git::mcp_server_git(tool, name.clone(), args),
        ServerKind::Fetch => fetch(tool, name.clone(), args),
        ServerKind::Toolgate => toolgate(tool, name.clone(), args),
    };
    match result {
        Ok(raw) => raw,
        Err((op, reason)) => RawAction::new(op, name).unknown(reason),
    }
}

/// The error keeps the operation the table meant, only for explanations.
type TableResult = Result<RawAction, (Operation, UnknownReason)>;

fn with_paths(op: Operation, name: String, paths: Vec<String>) -> RawAction {
    let mut raw = RawAction::new(op, name);
    raw.paths = paths;
    raw
}

fn one_path(op: Operation, name: String, args: &Value, key: &str) -> TableResult {
    let p = required_str(args, key).map_err(|e| (op, e))?;
    Ok(with_paths(op, name, vec![p.to_owned()]))
}

fn filesystem(tool: &str, name: String, args: &Value) -> TableResult {
    use Operation::*;
    match tool {
        "read_file"
        | "read_text_file"
        | "read_media_file"
        | "list_directory"
        | "list_directory_with_sizes"
        | "directory_tree"
        | "search_files"
        | "get_file_info" => one_path(FsRead, name, args, "path"),
        "read_multiple_files" => {
            let paths = str_list(args, "paths").map_err(|e| (FsRead, e))?;
            if paths.is_empty() {
                return Err((FsRead, UnknownReason::MissingArgument));
            }
            Ok(with_paths(FsRead, name, paths))
        }
        // Lists the server's roots: reveals only configuration, no file content; a tool-name rule decides it.
        "list_allowed_directories" => Ok(RawAction::new(FsRead, name)),
        "write_file" | "edit_file" | "create_directory" => one_path(FsWrite, name, args, "path"),
        "move_file" => {
            let src = required_str(args, "source").map_err(|e| (FsDelete, e))?;
            let dst = required_str(args, "destination").map_err(|e| (FsDelete, e))?;
            Ok(with_paths(
                FsDelete,
                name,
                vec![src.to_owned(), dst.to_owned()],
            ))
        }
        _ => Ok(RawAction::new(McpCall, name)),
    }
}

fn fetch(tool: &str, name: String, args: &Value) -> TableResult {
    match tool {
        "fetch" => {
            let url = required_str(args, "url").map_err(|e| (Operation::NetRequest, e))?;
            let mut raw = RawAction::new(Operation::NetRequest, name);
            raw.url = Some(url.to_owned());
            raw.method = Some("GET".to_owned());
            Ok(raw)
        }
        _ => Ok(RawAction::new(Operation::McpCall, name)),
    }
}

fn toolgate(tool: &str, name: String, args: &Value) -> TableResult {
    use Operation::*;
    match tool {
        "filesystem_list_directory" | "filesystem_read_file" => {
            one_path(FsRead, name, args, "path")
        }
        "filesystem_write_file" | "filesystem_apply_patch" => one_path(FsWrite, name, args, "path"),
        "git_status" | "git_diff" => {
            // The built-in git tools work on the workspace repository unless told a sub-path.
            let p = str_arg(args, "path")
                .map_err(|e| (GitRead, e))?
                .unwrap_or(".");
            Ok(with_paths(GitRead, name, vec![p.to_owned()]))
        }
        "shell_run" => {
            let program = required_str(args, "program").map_err(|e| (ShellExec, e))?;
            let rest = str_list(args, "args").map_err(|e| (ShellExec, e))?;
            let cwd = str_arg(args, "cwd")
                .map_err(|e| (ShellExec, e))?
                .unwrap_or(".");
            let mut argv = Vec::with_capacity(rest.len() + 1);
            argv.push(program.to_owned());
            argv.extend(rest);
            Ok(command_action(name, argv, Some(cwd.to_owned())))
        }
        _ => Ok(RawAction::new(McpCall, name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action::RawCommand;
    use serde_json::json;

    fn fs(tool: &str, args: Value) -> RawAction {
        adapt_builtin(
            ServerKind::Filesystem,
            tool,
            format!("files__{tool}"),
            &args,
        )
    }

    #[test]
    fn filesystem_table_reads_paths() {
        let r = fs("read_multiple_files", json!({"paths": ["a", "b"]}));
        assert_eq!(
            (r.operation, r.paths),
            (Operation::FsRead, vec!["a".to_owned(), "b".to_owned()])
        );
        let m = fs("move_file", json!({"source": "a", "destination": "b"}));
        assert_eq!((m.operation, m.paths.len()), (Operation::FsDelete, 2));
        assert_eq!(
            fs("write_file", json!({"path": 3})).unknown,
            Some(UnknownReason::BadArgument)
        );
        assert_eq!(
            fs("read_file", json!({})).unknown,
            Some(UnknownReason::MissingArgument)
        );
        assert_eq!(fs("something_new", json!({})).operation, Operation::McpCall);
    }

    #[test]
    fn shell_run_is_argv_with_cwd() {
        let r = adapt_builtin(
            ServerKind::Toolgate,
            "shell_run",
            "tg__shell_run".into(),
            &json!({"program": "npm", "args": ["test"]}),
        );
        assert_eq!(r.operation, Operation::ShellExec);
        assert_eq!(
            r.command,
            Some(RawCommand::Argv(vec!["npm".into(), "test".into()]))
        );
        assert_eq!(r.paths, vec![".".to_owned()]);
    }

    #[test]
    fn git_dash_c_is_relative_to_cwd() {
        let r = adapt_builtin(
            ServerKind::Toolgate,
            "shell_run",
            "tg__shell_run".into(),
            &json!({"program": "git", "args": ["-C", "../other", "status"], "cwd": "sub"}),
        );
        assert_eq!((r.operation, r.via_shell), (Operation::GitRead, true));
        assert_eq!(r.paths, vec!["sub".to_owned(), "sub/../other".to_owned()]);
    }

    #[test]
    fn fetch_is_a_get() {
        let r = adapt_builtin(
            ServerKind::Fetch,
            "fetch",
            "web__fetch".into(),
            &json!({"url": "https://x.org"}),
        );
        assert_eq!(
            (r.operation, r.method.as_deref()),
            (Operation::NetRequest, Some("GET"))
        );
    }
}
