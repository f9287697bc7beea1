//! Built-in adapter tables for well-known servers: server-filesystem, mcp-server-git and fetch servers. Tables
//! only; git classification lives in `git.rs`, and toolgate's own tools are adapted where they are defined.
//!
//! Each table lists, per tool, every argument the tool's schema declares (the suite checks the lists against the
//! servers' real `tools/list`). A call with an argument the table does not list is `unknown`, and so is a tool the
//! table does not list: a new version of a server may read a resource the policy never saw.
//!
//! Every operation that discloses or relocates content carries it: `move_file` reads and deletes its source and
//! writes (and may replace) its destination; `edit_file` returns a diff of the file, so it reads it even as a dry
//! run; listings and searches disclose the names beneath their directory (see `beneath.rs`).
//!
//! server-filesystem paths are resolved as that server resolves them: `~` from its home, a relative path against
//! the first of its allowed directories in which it stays (else the first), both lexically. Toolgate knows the
//! allowed directories from the server's launch arguments; without them a relative path is `unknown`.

use serde_json::Value;

use super::{git, only_known_arguments, required_str, str_list, Servers};
use crate::action::{Access, RawAction, Scope, ServerKind, ToolCall, UnknownReason};
use crate::operation::Operation;
use crate::path::lexical_normalise;

/// server-filesystem's tools and every argument each declares.
pub const FILESYSTEM_ARGUMENTS: &[(&str, &[&str])] = &[
    ("read_file", &["path", "head", "tail"]),
    ("read_text_file", &["path", "head", "tail"]),
    ("read_media_file", &["path"]),
    ("read_multiple_files", &["paths"]),
    ("write_file", &["path", "content"]),
    ("edit_file", &["path", "edits", "dryRun"]),
    ("create_directory", &["path"]),
    ("list_directory", &["path"]),
    ("list_directory_with_sizes", &["path", "sortBy"]),
    ("directory_tree", &["path", "excludePatterns"]),
    ("move_file", &["source", "destination"]),
    ("search_files", &["path", "pattern", "excludePatterns"]),
    ("get_file_info", &["path"]),
    ("list_allowed_directories", &[]),
];

/// mcp-server-git's tools and every argument each declares.
pub const GIT_ARGUMENTS: &[(&str, &[&str])] = &[
    ("git_status", &["repo_path"]),
    ("git_diff_unstaged", &["repo_path", "context_lines"]),
    ("git_diff_staged", &["repo_path", "context_lines"]),
    ("git_diff", &["repo_path", "context_lines", "target"]),
    ("git_commit", &["repo_path", "message"]),
    ("git_add", &["repo_path", "files"]),
    ("git_reset", &["repo_path"]),
    (
        "git_log",
        &["repo_path", "max_count", "start_timestamp", "end_timestamp"],
    ),
    (
        "git_create_branch",
        &["repo_path", "branch_name", "base_branch"],
    ),
    ("git_checkout", &["repo_path", "branch_name"]),
    ("git_show", &["repo_path", "revision"]),
    (
        "git_branch",
        &["repo_path", "branch_type", "contains", "not_contains"],
    ),
];

/// Fetch servers' tools and every argument each declares.
pub const FETCH_ARGUMENTS: &[(&str, &[&str])] =
    &[("fetch", &["url", "max_length", "start_index", "raw"])];

pub(super) fn adapt_builtin(
    kind: ServerKind,
    call: &ToolCall,
    name: String,
    servers: &Servers,
) -> RawAction {
    let (tool, args) = (call.tool.as_str(), &call.arguments);
    let table = match kind {
        ServerKind::Filesystem => FILESYSTEM_ARGUMENTS,
        ServerKind::Git => GIT_ARGUMENTS,
        ServerKind::Fetch => FETCH_ARGUMENTS,
        ServerKind::Toolgate => {
            return match servers.own {
                Some(own) => own(tool, name, args),
                None => {
                    RawAction::new(Operation::Unknown, name).unknown(UnknownReason::UnknownTool)
                }
            }
        }
    };
    let Some((_, known)) = table.iter().find(|(t, _)| *t == tool) else {
        return RawAction::new(Operation::Unknown, name).unknown(UnknownReason::UnknownTool);
    };
    let result = match only_known_arguments(args, known) {
        Err(reason) => Err((Operation::Unknown, reason)),
        Ok(()) => match kind {
            ServerKind::Filesystem => {
                let dirs = servers.filesystem_dirs.get(&call.server);
                filesystem(tool, name.clone(), args, dirs.map(Vec::as_slice))
            }
            ServerKind::Git => git::mcp_server_git(tool, name.clone(), args).map(git_disclosure),
            _ => fetch(name.clone(), args),
        },
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

/// A diff or show prints file content from anywhere in the repository; a status prints names from anywhere in it.
fn git_disclosure(raw: RawAction) -> RawAction {
    let tool = raw.tool.rsplit("__").next().unwrap_or_default();
    let scope = match tool {
        "git_diff" | "git_diff_staged" | "git_diff_unstaged" | "git_show" => Scope::ContentBeneath,
        "git_status" => Scope::NamesBeneath,
        _ => return raw,
    };
    let repo = raw.paths.first().cloned().into_iter().collect();
    raw.with_access(Access::new(Operation::FsRead, repo, scope))
}

/// Resolves one server-filesystem path argument the way the server does (see the module doc).
fn fs_path(raw: &str, dirs: Option<&[String]>) -> Result<String, UnknownReason> {
    if raw == "~" || raw.starts_with("~/") || raw.starts_with('/') {
        // `~` expands from the server's home, which is toolgate's (HOME is passed through); `normalise` does both.
        return Ok(raw.to_owned());
    }
    // The server trims whitespace and quotes only for its containment check, so a candidate ending in them can
    // be accepted for a directory it does not lie in: refuse to guess.
    let trimmed = |c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '\u{feff}');
    if raw.ends_with(trimmed) || raw.contains('\0') {
        return Err(UnknownReason::RelativePath);
    }
    let dirs = dirs
        .filter(|d| !d.is_empty())
        .ok_or(UnknownReason::RelativePath)?;
    resolve_relative(raw, dirs).ok_or(UnknownReason::RelativePath)
}

/// server-filesystem's `resolveRelativePathAgainstAllowedDirectories`: the first allowed directory the joined
/// path stays within, else the first allowed directory.
pub(crate) fn resolve_relative(rel: &str, dirs: &[String]) -> Option<String> {
    let within = |p: &str| {
        dirs.iter().any(|d| {
            p == d
                || d == "/"
                || p.strip_prefix(d.as_str())
                    .is_some_and(|r| r.starts_with('/'))
        })
    };
    for dir in dirs {
        let candidate = lexical_normalise(&format!("{dir}/{rel}"))?;
        if within(&candidate) {
            return Some(candidate);
        }
    }
    lexical_normalise(&format!("{}/{rel}", dirs.first()?))
}

fn one_path(
    op: Operation,
    args: &Value,
    key: &str,
    dirs: Option<&[String]>,
) -> Result<String, (Operation, UnknownReason)> {
    let p = required_str(args, key).map_err(|e| (op, e))?;
    fs_path(p, dirs).map_err(|e| (op, e))
}

fn filesystem(tool: &str, name: String, args: &Value, dirs: Option<&[String]>) -> TableResult {
    use Operation::*;
    let path = |op| one_path(op, args, "path", dirs);
    let listing = |scope| -> TableResult {
        let mut raw = with_paths(FsRead, name.clone(), vec![path(FsRead)?]);
        raw.scope = scope;
        Ok(raw)
    };
    match tool {
        "read_file" | "read_text_file" | "read_media_file" | "get_file_info" => {
            Ok(with_paths(FsRead, name, vec![path(FsRead)?]))
        }
        "list_directory" | "list_directory_with_sizes" => listing(Scope::Children),
        "directory_tree" | "search_files" => listing(Scope::NamesBeneath),
        "read_multiple_files" => {
            let paths = str_list(args, "paths").map_err(|e| (FsRead, e))?;
            if paths.is_empty() {
                return Err((FsRead, UnknownReason::MissingArgument));
            }
            let paths = paths
                .iter()
                .map(|p| fs_path(p, dirs))
                .collect::<Result<_, _>>()
                .map_err(|e| (FsRead, e))?;
            Ok(with_paths(FsRead, name, paths))
        }
        // Lists the server's roots: reveals only configuration, no file content; a tool-name rule decides it.
        "list_allowed_directories" => Ok(RawAction::new(FsRead, name)),
        "write_file" | "create_directory" => Ok(with_paths(FsWrite, name, vec![path(FsWrite)?])),
        "edit_file" => {
            let target = path(FsWrite)?;
            let dry_run = match args.get("dryRun") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => *b,
                Some(_) => return Err((FsWrite, UnknownReason::BadArgument)),
            };
            // The answer is a diff of the file: the content is disclosed whether or not it is written.
            let read = Access::new(FsRead, vec![target.clone()], Scope::Exact);
            if dry_run {
                return Ok(with_paths(FsRead, name, vec![target]));
            }
            Ok(with_paths(FsWrite, name, vec![target]).with_access(read))
        }
        "move_file" => {
            let src = one_path(FsDelete, args, "source", dirs)?;
            let dst = one_path(FsDelete, args, "destination", dirs)?;
            // Moving a file away removes it from its source and may replace its destination; the moved content
            // can then be read where it landed, so the source is read and the destination written.
            Ok(with_paths(FsDelete, name, vec![src.clone(), dst.clone()])
                .with_access(Access::new(FsRead, vec![src], Scope::Moved))
                .with_access(Access::new(FsWrite, vec![dst], Scope::Exact)))
        }
        _ => Err((Unknown, UnknownReason::UnknownTool)),
    }
}

fn fetch(name: String, args: &Value) -> TableResult {
    let url = required_str(args, "url").map_err(|e| (Operation::NetRequest, e))?;
    let mut raw = RawAction::new(Operation::NetRequest, name);
    raw.url = Some(url.to_owned());
    raw.method = Some("GET".to_owned());
    Ok(raw)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn servers() -> Servers {
        let mut s = Servers::default();
        s.filesystem_dirs
            .insert("files".into(), vec!["/ws".into(), "/other".into()]);
        s
    }

    fn fs(tool: &str, args: Value) -> RawAction {
        let call = ToolCall::new("files", tool, args, Some(ServerKind::Filesystem));
        adapt_builtin(
            ServerKind::Filesystem,
            &call,
            format!("files__{tool}"),
            &servers(),
        )
    }

    #[test]
    fn filesystem_table_reads_paths() {
        let r = fs("read_multiple_files", json!({"paths": ["/ws/a", "b"]}));
        assert_eq!(
            (r.operation, r.paths),
            (
                Operation::FsRead,
                vec!["/ws/a".to_owned(), "/ws/b".to_owned()]
            )
        );
        assert_eq!(
            fs("write_file", json!({"path": 3})).unknown,
            Some(UnknownReason::BadArgument)
        );
        assert_eq!(
            fs("read_file", json!({})).unknown,
            Some(UnknownReason::MissingArgument)
        );
    }

    #[test]
    fn unlisted_tools_and_arguments_are_unknown() {
        assert_eq!(
            fs("delete_everything", json!({})).unknown,
            Some(UnknownReason::UnknownTool)
        );
        assert_eq!(
            fs("read_file", json!({"path": "/ws/a", "follow": "/etc"})).unknown,
            Some(UnknownReason::UnknownArgument)
        );
    }

    #[test]
    fn relative_paths_resolve_against_the_servers_first_allowed_directory() {
        // server-filesystem: the first allowed directory the joined path stays within, else the first.
        assert_eq!(
            fs("read_file", json!({"path": "ws/secret/key.txt"})).paths,
            vec!["/ws/ws/secret/key.txt".to_owned()]
        );
        assert_eq!(
            fs("read_file", json!({"path": "../other/x"})).paths,
            vec!["/other/x".to_owned()]
        );
        assert_eq!(
            fs("read_file", json!({"path": "../../etc/passwd"})).paths,
            vec!["/etc/passwd".to_owned()]
        );
        let unknown = ToolCall::new(
            "elsewhere",
            "read_file",
            json!({"path": "a"}),
            Some(ServerKind::Filesystem),
        );
        let raw = adapt_builtin(
            ServerKind::Filesystem,
            &unknown,
            "elsewhere__read_file".into(),
            &servers(),
        );
        assert_eq!(raw.unknown, Some(UnknownReason::RelativePath));
        assert_eq!(
            fs("read_file", json!({"path": "a "})).unknown,
            Some(UnknownReason::RelativePath)
        );
    }

    #[test]
    fn move_file_reads_its_source_and_writes_its_destination() {
        let m = fs(
            "move_file",
            json!({"source": "/ws/a", "destination": "/ws/b"}),
        );
        assert_eq!((m.operation, m.paths.len()), (Operation::FsDelete, 2));
        let ops: Vec<_> = m
            .also
            .iter()
            .map(|a| (a.operation, a.paths.clone()))
            .collect();
        assert_eq!(
            ops,
            vec![
                (Operation::FsRead, vec!["/ws/a".to_owned()]),
                (Operation::FsWrite, vec!["/ws/b".to_owned()])
            ]
        );
    }

    #[test]
    fn edit_file_reads_even_as_a_dry_run() {
        let dry = fs(
            "edit_file",
            json!({"path": "/ws/a", "edits": [], "dryRun": true}),
        );
        assert_eq!((dry.operation, dry.also.len()), (Operation::FsRead, 0));
        let real = fs("edit_file", json!({"path": "/ws/a", "edits": []}));
        assert_eq!(real.operation, Operation::FsWrite);
        assert_eq!(real.also[0].operation, Operation::FsRead);
        assert_eq!(
            fs(
                "edit_file",
                json!({"path": "/ws/a", "edits": [], "dryRun": "yes"})
            )
            .unknown,
            Some(UnknownReason::BadArgument)
        );
    }

    #[test]
    fn listings_carry_their_scope() {
        assert_eq!(
            fs("list_directory", json!({"path": "/ws"})).scope,
            Scope::Children
        );
        assert_eq!(
            fs("directory_tree", json!({"path": "/ws"})).scope,
            Scope::NamesBeneath
        );
        assert_eq!(
            fs("search_files", json!({"path": "/ws", "pattern": "*"})).scope,
            Scope::NamesBeneath
        );
    }

    #[test]
    fn fetch_is_a_get() {
        let call = ToolCall::new(
            "web",
            "fetch",
            json!({"url": "https://x.org"}),
            Some(ServerKind::Fetch),
        );
        let r = adapt_builtin(
            ServerKind::Fetch,
            &call,
            "web__fetch".into(),
            &Servers::default(),
        );
        assert_eq!(
            (r.operation, r.method.as_deref()),
            (Operation::NetRequest, Some("GET"))
        );
    }

    #[test]
    fn own_tools_without_their_adapter_are_unknown() {
        let call = ToolCall::new(
            "toolgate",
            "shell_run",
            json!({}),
            Some(ServerKind::Toolgate),
        );
        let r = adapt_builtin(
            ServerKind::Toolgate,
            &call,
            "toolgate__shell_run".into(),
            &Servers::default(),
        );
        assert_eq!(r.unknown, Some(UnknownReason::UnknownTool));
    }
}
