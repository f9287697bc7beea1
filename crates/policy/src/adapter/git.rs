//! Git classification: the mcp-server-git tool table and a conservative classifier for `git` argv.
//!
//! The argv classifier accepts only global options that cannot run code or move the repository out from under the
//! path rules (`--no-pager`, `-P`, `-C <dir>`, which becomes a path resource). `-c`, `--config-env`, `--exec-path`,
//! `--git-dir`, `--work-tree` and any other global flag make the call `unknown`: `-c core.pager=…` or
//! `-c core.fsmonitor=…` run arbitrary programs even for "read" subcommands. Subcommands not listed are `unknown`
//! too, and so are options known to write files or run helpers (`--output`, `--ext-diff`, `--open-files-in-pager`,
//! `--upload-pack`, `--exec`). It does not try to be a git parser; when unsure it answers `unknown`.

use serde_json::Value;

use super::{required_str, str_list};
use crate::action::{RawAction, UnknownReason};
use crate::operation::Operation;

/// Options that make otherwise read-only subcommands write files or run programs.
const DANGEROUS_OPTIONS: [&str; 7] = [
    "--output",
    "--ext-diff",
    "--open-files-in-pager",
    "-O",
    "--upload-pack",
    "--receive-pack",
    "--exec",
];

/// Classifies the arguments after `git`: the operation plus the `-C` directory, if any.
pub(super) fn classify_argv(args: &[String]) -> Result<(Operation, Option<String>), UnknownReason> {
    let mut dir = None;
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        match arg.as_str() {
            "--no-pager" | "-P" | "--no-optional-locks" | "--literal-pathspecs" => i += 1,
            "-C" => {
                let d = args.get(i + 1).ok_or(UnknownReason::AmbiguousGit)?;
                if dir.is_some() {
                    // Repeated -C compose relative to each other; not worth modelling.
                    return Err(UnknownReason::AmbiguousGit);
                }
                dir = Some(d.clone());
                i += 2;
            }
            a if a.starts_with('-') => return Err(UnknownReason::GitFlagInjection),
            _ => break,
        }
    }
    let sub = args.get(i).ok_or(UnknownReason::AmbiguousGit)?;
    let rest = &args[i + 1..];
    if rest.iter().any(|a| {
        DANGEROUS_OPTIONS
            .iter()
            .any(|d| a == d || a.starts_with(&format!("{d}=")))
    }) {
        return Err(UnknownReason::GitFlagInjection);
    }
    let only_listing = |flags: &[&str]| rest.iter().all(|a| flags.contains(&a.as_str()));
    let op = match sub.as_str() {
        "status" | "diff" | "log" | "show" | "blame" | "ls-files" | "ls-tree" | "rev-parse"
        | "describe" | "shortlog" | "cat-file" | "grep" | "rev-list" | "merge-base" => {
            Operation::GitRead
        }
        "branch"
            if only_listing(&[
                "--list",
                "-l",
                "-a",
                "--all",
                "-r",
                "--remotes",
                "-v",
                "-vv",
                "--show-current",
            ]) =>
        {
            Operation::GitRead
        }
        "tag" if only_listing(&["--list", "-l"]) => Operation::GitRead,
        "remote" if only_listing(&["-v", "--verbose"]) => Operation::GitRead,
        "stash" if rest.first().is_some_and(|a| a == "list" || a == "show") => Operation::GitRead,
        "add" | "commit" | "checkout" | "switch" | "restore" | "reset" | "rm" | "mv" | "merge"
        | "rebase" | "cherry-pick" | "revert" | "init" | "stash" | "apply" | "am" | "clean"
        | "branch" | "tag" => Operation::GitWrite,
        "push" | "pull" | "fetch" | "clone" | "ls-remote" | "submodule" => Operation::GitRemote,
        _ => return Err(UnknownReason::AmbiguousGit),
    };
    Ok((op, dir))
}

/// mcp-server-git tools. Every one takes `repo_path`; arguments that would reach git as flags are refused, as
/// mcp-server-git once let `target: "--output=…"` write arbitrary files.
pub(super) fn mcp_server_git(
    tool: &str,
    name: String,
    args: &Value,
) -> Result<RawAction, (Operation, UnknownReason)> {
    use Operation::*;
    let op = match tool {
        "git_status" | "git_diff_unstaged" | "git_diff_staged" | "git_diff" | "git_log"
        | "git_show" | "git_branch" => GitRead,
        "git_commit" | "git_add" | "git_reset" | "git_create_branch" | "git_checkout"
        | "git_init" => GitWrite,
        "git_push" | "git_pull" | "git_fetch" | "git_clone" => GitRemote,
        _ if tool.starts_with("git_") => return Err((Unknown, UnknownReason::AmbiguousGit)),
        _ => return Ok(RawAction::new(McpCall, name)),
    };
    let repo = required_str(args, "repo_path").map_err(|e| (op, e))?;
    if let Some(obj) = args.as_object() {
        for (key, value) in obj {
            let flagged = match value {
                Value::String(s) => key != "message" && s.starts_with('-'),
                Value::Array(items) => items
                    .iter()
                    .any(|v| v.as_str().is_some_and(|s| s.starts_with('-'))),
                _ => false,
            };
            if flagged {
                return Err((op, UnknownReason::GitFlagInjection));
            }
        }
    }
    let mut raw = RawAction::new(op, name);
    raw.paths.push(repo.to_owned());
    if tool == "git_add" {
        // `files` are relative to the repository, so they are anchored there rather than at the workspace.
        for f in str_list(args, "files").map_err(|e| (op, e))? {
            raw.paths.push(if f.starts_with('/') {
                f
            } else {
                format!("{}/{f}", repo.trim_end_matches('/'))
            });
        }
    }
    Ok(raw)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn argv(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_owned).collect()
    }

    #[test]
    fn plain_subcommands_are_classified() {
        assert_eq!(
            classify_argv(&argv("status")),
            Ok((Operation::GitRead, None))
        );
        assert_eq!(
            classify_argv(&argv("commit -m x")),
            Ok((Operation::GitWrite, None))
        );
        assert_eq!(
            classify_argv(&argv("push origin main")),
            Ok((Operation::GitRemote, None))
        );
        assert_eq!(
            classify_argv(&argv("branch")),
            Ok((Operation::GitRead, None))
        );
        assert_eq!(
            classify_argv(&argv("branch -D main")),
            Ok((Operation::GitWrite, None))
        );
        assert_eq!(
            classify_argv(&argv("-C sub status")),
            Ok((Operation::GitRead, Some("sub".into())))
        );
    }

    #[test]
    fn code_running_options_are_unknown() {
        assert_eq!(
            classify_argv(&argv("-c core.pager=sh status")),
            Err(UnknownReason::GitFlagInjection)
        );
        assert_eq!(
            classify_argv(&argv("--git-dir=/x status")),
            Err(UnknownReason::GitFlagInjection)
        );
        assert_eq!(
            classify_argv(&argv("diff --output=/etc/x")),
            Err(UnknownReason::GitFlagInjection)
        );
        assert_eq!(
            classify_argv(&argv("frobnicate")),
            Err(UnknownReason::AmbiguousGit)
        );
        assert_eq!(classify_argv(&[]), Err(UnknownReason::AmbiguousGit));
    }

    #[test]
    fn server_git_arguments_cannot_be_flags() {
        let bad = mcp_server_git(
            "git_diff",
            "g__git_diff".into(),
            &json!({"repo_path": "/ws", "target": "--output=/tmp/x"}),
        );
        assert_eq!(
            bad.err(),
            Some((Operation::GitRead, UnknownReason::GitFlagInjection))
        );
        let ok = mcp_server_git(
            "git_commit",
            "g__git_commit".into(),
            &json!({"repo_path": "/ws", "message": "-fix"}),
        )
        .unwrap();
        assert_eq!(ok.operation, Operation::GitWrite);
        let add = mcp_server_git(
            "git_add",
            "g__git_add".into(),
            &json!({"repo_path": "/ws", "files": ["a.rs"]}),
        )
        .unwrap();
        assert_eq!(add.paths, vec!["/ws".to_owned(), "/ws/a.rs".to_owned()]);
        assert_eq!(
            mcp_server_git("git_frob", "g__git_frob".into(), &json!({}))
                .err()
                .map(|e| e.1),
            Some(UnknownReason::AmbiguousGit)
        );
    }
}
