//! Git classification: the mcp-server-git tool table and a classifier that reads a `git` argv as git itself does.
//!
//! Global options are git's exact spellings (git does not abbreviate them): only `--no-pager`, `-P`,
//! `--no-optional-locks`, the pathspec switches, `--no-replace-objects`, `--no-advice` and one `-C <dir>` (a path
//! resource) are accepted; `-c`, `--config-env`, `--exec-path`, `--git-dir`, `--work-tree`, `-p` and anything
//! else make the call `unknown`, because `-c core.pager=…`, `-c alias.x=!…` or a foreign git dir run programs or
//! leave the path rules behind. A subcommand is `git.read` only when it is in the read-only table AND every option
//! it is given is in that subcommand's known-safe list, spelled as parse-options reads it (clusters such as `-Osh`
//! are split letter by letter, `--opt=value` and `--opt value` alike, abbreviations are not on any list and so are
//! refused). Every operand (revision or path: git tells them apart by looking at the filesystem, toolgate does not)
//! is returned as a possible path, relative to the `-C` directory: `git diff /outside/file /dev/null` is a read of those
//! files (git switches to `--no-index` by itself for paths outside the work tree). Writing and remote subcommands
//! keep their operation, with options known to run programs refused in every spelling.

use serde_json::Value;

use super::{git_reach, required_str, str_list};
use crate::action::{RawAction, Scope, UnknownReason};
use crate::operation::Operation;
use read_subs::{ReadSub, READ_SUBS};

mod read_subs;

/// What a git argv does and what it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct GitArgv {
    pub(super) operation: Operation,
    /// The subcommand.
    pub(super) sub: String,
    /// The `-C` directory, relative to the command's working directory when not absolute.
    pub(super) dir: Option<String>,
    /// Every operand, as written (relative ones are relative to `dir`): each one may be a path git reads.
    pub(super) operands: Vec<String>,
    /// How many of `operands` came before `--`: git may read those as revisions or object ids.
    pub(super) before_dashdash: usize,
}

/// Global options that change nothing about what runs or where.
const SAFE_GLOBALS: [&str; 9] = [
    "--no-pager",
    "-P",
    "--no-optional-locks",
    "--literal-pathspecs",
    "--glob-pathspecs",
    "--noglob-pathspecs",
    "--icase-pathspecs",
    "--no-replace-objects",
    "--no-advice",
];

/// Long options of writing and remote subcommands that run a program or set configuration, refused in any
/// spelling git accepts (exact, `=value`, or an abbreviation of at least `--x`).
const RUNS_PROGRAMS: [&str; 9] = [
    "--upload-pack",
    "--receive-pack",
    "--exec",
    "--config",
    "--template",
    "--ext-diff",
    "--open-files-in-pager",
    "--output",
    "--textconv",
];

/// Short options of writing and remote subcommands that run a program, by subcommand.
const RUNS_PROGRAMS_SHORT: [(&str, &str); 4] = [
    ("clone", "uc"),
    ("rebase", "x"),
    ("fetch", ""),
    ("submodule", ""),
];

/// Parses the arguments after `git`.
pub(super) fn parse_argv(args: &[String]) -> Result<GitArgv, UnknownReason> {
    let mut dir: Option<String> = None;
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        match arg.as_str() {
            a if SAFE_GLOBALS.contains(&a) => i += 1,
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
    let (operation, operands, before_dashdash) =
        match READ_SUBS.iter().find(|s| s.names.contains(&sub.as_str())) {
            Some(spec) => {
                let read = read_operands(spec, rest)?;
                let mut operands = read.operands;
                let mut before = read.before_dashdash;
                if sub == "grep" && !read.pattern_option && !operands.is_empty() {
                    // Without `-e`, grep's first operand is the pattern: neither a revision nor a path. In
                    // `grep -- PATTERN ...` that first `--` only ended the options and the next one separates
                    // revisions from paths.
                    operands.remove(0);
                    if before > 0 {
                        before -= 1;
                    } else {
                        before = operands.len();
                        if let Some(at) = operands.iter().position(|o| o == "--") {
                            operands.remove(at);
                            before = at;
                        }
                    }
                }
                (Operation::GitRead, operands, before)
            }
            None => {
                let (op, operands) = listing_or_write(sub, rest)?;
                let before = operands.len();
                (op, operands, before)
            }
        };
    Ok(GitArgv {
        operation,
        sub: sub.clone(),
        dir,
        operands,
        before_dashdash,
    })
}

/// The operands of a read-only subcommand.
struct ReadOperands {
    operands: Vec<String>,
    before_dashdash: usize,
    /// An `-e` pattern was given (grep then takes no pattern operand).
    pattern_option: bool,
}

/// Checks every option of a read-only subcommand against its safe list and returns the operands.
fn read_operands(spec: &ReadSub, rest: &[String]) -> Result<ReadOperands, UnknownReason> {
    let refuse = Err(UnknownReason::GitFlagInjection);
    let mut operands = Vec::new();
    let mut before_dashdash = None;
    let mut pattern_option = false;
    let mut i = 0;
    while let Some(arg) = rest.get(i) {
        i += 1;
        if arg == "--" {
            before_dashdash = Some(operands.len());
            operands.extend(rest[i..].iter().cloned());
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (name, has_value) = match long.split_once('=') {
                Some((n, _)) => (n, true),
                None => (long, false),
            };
            let name = format!("--{name}");
            let name = name.as_str();
            if spec.long_values.contains(&name) {
                if !has_value {
                    // The value is the next word, never an operand.
                    i += 1;
                    if i > rest.len() {
                        return refuse;
                    }
                }
            } else if spec.long_optional.contains(&name)
                || (spec.long_flags.contains(&name) && !has_value)
            {
            } else if let Some(positive) = name.strip_prefix("--no-").map(|n| format!("--{n}")) {
                // `--no-X` negates a safe `X`: it can only turn something off.
                let known = spec.long_flags.contains(&positive.as_str())
                    || spec.long_optional.contains(&positive.as_str())
                    || spec.long_values.contains(&positive.as_str());
                if !known || has_value {
                    return refuse;
                }
            } else {
                return refuse;
            }
            continue;
        }
        let Some(cluster) = arg.strip_prefix('-').filter(|c| !c.is_empty()) else {
            operands.push(arg.clone());
            continue;
        };
        if spec.numeric && cluster.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        for (at, c) in cluster.char_indices() {
            let attached = &cluster[at + c.len_utf8()..];
            if spec.flags.contains(c) {
                continue;
            }
            if spec.values.contains(c) {
                pattern_option |= c == 'e';
                if attached.is_empty() {
                    if rest.get(i).is_none() {
                        return refuse;
                    }
                    i += 1;
                }
                break;
            }
            if spec.attached.contains(c) {
                break;
            }
            return refuse;
        }
    }
    Ok(ReadOperands {
        before_dashdash: before_dashdash.unwrap_or(operands.len()),
        operands,
        pattern_option,
    })
}

/// Listing forms of otherwise writing subcommands, then the writing and remote subcommands.
fn listing_or_write(sub: &str, rest: &[String]) -> Result<(Operation, Vec<String>), UnknownReason> {
    let only_listing = |flags: &[&str]| rest.iter().all(|a| flags.contains(&a.as_str()));
    let op = match sub {
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
            return Ok((Operation::GitRead, Vec::new()));
        }
        "tag" if only_listing(&["--list", "-l"]) => return Ok((Operation::GitRead, Vec::new())),
        "remote" if only_listing(&["-v", "--verbose"]) => {
            return Ok((Operation::GitRead, Vec::new()))
        }
        "stash"
            if rest.iter().all(|a| matches!(a.as_str(), "list" | "show")) && !rest.is_empty() =>
        {
            return Ok((Operation::GitRead, Vec::new()))
        }
        "add" | "commit" | "checkout" | "switch" | "restore" | "reset" | "rm" | "mv" | "merge"
        | "rebase" | "cherry-pick" | "revert" | "init" | "stash" | "apply" | "am" | "clean"
        | "branch" | "tag" => Operation::GitWrite,
        "push" | "pull" | "fetch" | "clone" | "ls-remote" | "submodule" => Operation::GitRemote,
        _ => return Err(UnknownReason::AmbiguousGit),
    };
    let short_danger = RUNS_PROGRAMS_SHORT
        .iter()
        .find(|(s, _)| *s == sub)
        .map_or("", |(_, letters)| letters);
    let mut operands = Vec::new();
    let mut options_done = false;
    for arg in rest {
        if options_done || !arg.starts_with('-') || arg == "-" {
            operands.push(arg.clone());
        } else if arg == "--" {
            options_done = true;
        } else if let Some(long) = arg.strip_prefix("--") {
            let name = long.split_once('=').map_or(long, |(n, _)| n);
            let name = format!("--{name}");
            if name.len() > 3 && RUNS_PROGRAMS.iter().any(|d| d.starts_with(name.as_str())) {
                return Err(UnknownReason::GitFlagInjection);
            }
        } else if arg.chars().skip(1).any(|c| short_danger.contains(c)) {
            return Err(UnknownReason::GitFlagInjection);
        }
    }
    Ok((op, operands))
}

/// What the caller takes as path resources of a git argv: the `-C` directory and every operand that may be a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct GitResources {
    pub(super) operation: Operation,
    pub(super) dir: Option<String>,
    /// Operands relative to `dir` (when not absolute); revisions such as `HEAD~1` are among them, harmlessly:
    /// as paths they name something inside the command's directory.
    pub(super) paths: Vec<String>,
    /// What a read-only subcommand's output shows beneath the paths it reads (`Exact` when nothing).
    pub(super) reach: Scope,
    /// The output is not limited to path operands: git reads the whole tree of the directory it runs in (no
    /// path operand, or an operand git may take as a revision or an object id).
    pub(super) whole_tree: bool,
}

/// Classifies the arguments after `git`: the operation, the `-C` directory and the operands read as paths.
///
/// An operand is a path resource only when git reads it as exactly that path. Forms git reads differently are
/// `unknown`: `rev:path` and `:path` (relative to the repository's top, which toolgate does not know), pathspec
/// magic (`:(top)`, `:/`, `:!`, `:^`), glob characters (`*?[\` match other files, `--icase-pathspecs` other
/// spellings). Operands of remote subcommands are URLs and refspecs: there a `:` is allowed, but an operand that
/// could leave the command's directory (absolute, `~`, a `..` segment, `file:`) or pick a remote helper
/// (`transport::address`) is still refused.
pub(super) fn classify_argv(args: &[String]) -> Result<GitResources, UnknownReason> {
    let parsed = parse_argv(args)?;
    if args.iter().any(|a| a == "--icase-pathspecs") && !parsed.operands.is_empty() {
        return Err(UnknownReason::AmbiguousGit);
    }
    // Remote subcommands' operands are URLs, remote names and refspecs rather than files of the work tree.
    let remote = parsed.operation == Operation::GitRemote;
    let reach = match parsed.operation {
        Operation::GitRead => git_reach::disclosure(&parsed.sub, args),
        _ => Scope::Exact,
    };
    let whole_tree = reach != Scope::Exact
        && git_reach::whole_tree(&parsed.sub, args, &parsed.operands, parsed.before_dashdash);
    let mut paths = Vec::new();
    for operand in parsed.operands {
        if remote && operand.contains(':') {
            // `file:` reaches a local repository anywhere; `transport::address` picks a remote helper program.
            let escapes = operand.starts_with('/')
                || operand.starts_with('~')
                || operand.to_ascii_lowercase().starts_with("file:")
                || operand.contains("::")
                || operand.split(['/', ':']).any(|seg| seg == "..");
            if escapes {
                return Err(UnknownReason::AmbiguousGit);
            }
            continue;
        }
        if operand.contains(':') || operand.contains(['*', '?', '[', '\\']) || operand.is_empty() {
            return Err(UnknownReason::AmbiguousGit);
        }
        paths.push(operand);
    }
    Ok(GitResources {
        operation: parsed.operation,
        dir: parsed.dir,
        paths,
        reach,
        whole_tree,
    })
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
#[path = "git_tests.rs"]
mod tests;
