//! Read-only, hardened git: `status` and `diff` with a fixed argument vector.
//!
//! A repository's own configuration is hostile input: it can name programs for fsmonitor, external diff,
//! textconv, clean/smudge filters and hooks. Command-line `-c` settings override every config file, so each of
//! those is switched off there; filter drivers have free-form names, so they are first listed (by a git
//! invocation that only reads config) and each one is neutralised by name. System and global config are not
//! read, nothing is inherited from this process's environment, discovery cannot climb above the workspace,
//! user values start after `--end-of-options` and may not begin with `-`, and git runs inside the same sandbox
//! as shell commands (with Landlock it may write nowhere). This module does not offer any git command that
//! writes, fetches or pushes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::confine::Workspace;
use crate::error::{Error, Result};
use crate::shell::resolve_program;

/// Where git is looked for; fixed so that a workspace or an agent cannot choose the git binary.
const GIT_SEARCH_PATH: &str = "/usr/local/bin:/usr/bin:/bin";
const GIT_TIMEOUT: Duration = Duration::from_secs(30);

/// Settings that stop a repository from making git run programs.
const HARDENING: &[&str] = &[
    "-c",
    "core.fsmonitor=false",
    "-c",
    "diff.external=",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.pager=cat",
    "-c",
    "color.ui=false",
    "-c",
    "core.untrackedCache=false",
    "-c",
    "protocol.allow=never",
    "--no-pager",
];

/// Arguments of `git_status`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GitStatusArgs {
    /// Optional workspace paths to limit the status to.
    #[serde(default)]
    pub paths: Vec<String>,
}

/// Arguments of `git_diff`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GitDiffArgs {
    /// Diff the index against HEAD instead of the work tree against the index.
    #[serde(default)]
    pub staged: bool,
    /// Optional revision to diff against (e.g. `HEAD~1`).
    #[serde(default)]
    pub base: Option<String>,
    /// Optional workspace paths to limit the diff to.
    #[serde(default)]
    pub paths: Vec<String>,
}

/// Runs git for the built-in tools.
#[derive(Debug, Clone)]
pub struct Git {
    layers: sandbox::LayerRequest,
    search_path: String,
}

fn refuse_option_like(what: &str, value: &str) -> Result<()> {
    if value.starts_with('-') {
        return Err(Error::InvalidArguments(format!(
            "{what} may not start with '-': {value}"
        )));
    }
    if value.contains('\0') {
        return Err(Error::InvalidArguments(format!(
            "{what} contains a NUL byte"
        )));
    }
    Ok(())
}

fn check_revision(rev: &str) -> Result<()> {
    refuse_option_like("base", rev)?;
    let ok = !rev.is_empty()
        && rev.len() <= 256
        && rev
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._/~^@{}-".contains(c));
    if !ok {
        return Err(Error::InvalidArguments(format!(
            "base is not a plain revision: {rev}"
        )));
    }
    Ok(())
}

impl Git {
    /// Git runs with the given layers, minus any writable path: Landlock (when on) then allows no writes;
    /// git never needs the network for status or diff, so it gets an empty network namespace where possible.
    pub fn new(mut layers: sandbox::LayerRequest) -> Self {
        layers.writable_paths.clear();
        if layers.no_network == sandbox::LayerMode::Off {
            layers.no_network = sandbox::LayerMode::BestEffort;
        }
        Self {
            layers,
            search_path: GIT_SEARCH_PATH.to_string(),
        }
    }

    fn executable(&self) -> Result<PathBuf> {
        let path = &self.search_path;
        resolve_program("git", Some(path), Path::new("/"))
            .map_err(|_| Error::GitUnavailable(format!("no git executable in {path}")))
    }

    fn env(ws: &Workspace) -> BTreeMap<String, String> {
        let ceiling = ws
            .root()
            .parent()
            .unwrap_or(ws.root())
            .to_string_lossy()
            .into_owned();
        [
            ("GIT_CONFIG_NOSYSTEM", "1"),
            ("GIT_CONFIG_GLOBAL", "/dev/null"),
            ("GIT_TERMINAL_PROMPT", "0"),
            ("GIT_OPTIONAL_LOCKS", "0"),
            ("GIT_CEILING_DIRECTORIES", ceiling.as_str()),
            ("LC_ALL", "C"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    fn run(&self, ws: &Workspace, git: &Path, args: Vec<String>) -> Result<sandbox::RunResult> {
        let mut spec = sandbox::CommandSpec::new(git.to_path_buf(), ws.root().to_path_buf());
        spec.args = args;
        spec.env = Self::env(ws);
        spec.timeout = GIT_TIMEOUT;
        spec.layers = self.layers.clone();
        Ok(sandbox::run(&spec)?)
    }

    /// The `-c` overrides for every filter driver the repository configures.
    fn filter_overrides(&self, ws: &Workspace, git: &Path) -> Result<Vec<String>> {
        let mut args: Vec<String> = HARDENING.iter().map(|s| s.to_string()).collect();
        args.extend(
            [
                "config",
                "--null",
                "--name-only",
                "--get-regexp",
                r"^filter\.",
            ]
            .map(String::from),
        );
        let result = self.run(ws, git, args)?;
        let mut names = BTreeSet::new();
        for key in result
            .stdout
            .text
            .split(['\0', '\n'])
            .filter(|k| !k.is_empty())
        {
            let Some(rest) = key.strip_prefix("filter.") else {
                continue;
            };
            if let Some((name, _)) = rest.rsplit_once('.') {
                names.insert(name.to_string());
            }
        }
        if result.stdout.truncated() {
            return Err(Error::InvalidArguments(
                "repository config lists too many filters".into(),
            ));
        }
        let mut overrides = Vec::new();
        for name in names {
            if name.contains('=') {
                // `-c` splits at the first '=', so such a driver cannot be switched off: refuse to run.
                return Err(Error::PathRefused(format!(
                    "repository defines unusable filter name {name:?}"
                )));
            }
            for key in ["clean", "smudge", "process"] {
                overrides.push("-c".into());
                overrides.push(format!("filter.{name}.{key}="));
            }
            overrides.push("-c".into());
            overrides.push(format!("filter.{name}.required=false"));
        }
        Ok(overrides)
    }

    fn pathspecs(ws: &Workspace, paths: &[String]) -> Result<Vec<String>> {
        paths
            .iter()
            .map(|p| {
                refuse_option_like("path", p)?;
                let rel = ws.relative(p)?;
                // `:(literal)` stops git from reading glob or magic syntax out of a user path.
                Ok(format!(
                    ":(literal){}",
                    if rel.is_root() {
                        ".".into()
                    } else {
                        rel.display()
                    }
                ))
            })
            .collect()
    }

    fn command(&self, ws: &Workspace, tail: Vec<String>) -> Result<sandbox::RunResult> {
        let git = self.executable()?;
        let mut args: Vec<String> = HARDENING.iter().map(|s| s.to_string()).collect();
        args.extend(self.filter_overrides(ws, &git)?);
        args.extend(tail);
        self.run(ws, &git, args)
    }

    /// `git status --porcelain=v1 --branch`.
    pub fn status(&self, ws: &Workspace, a: &GitStatusArgs) -> Result<sandbox::RunResult> {
        let paths = Self::pathspecs(ws, &a.paths)?;
        let mut tail: Vec<String> = [
            "status",
            "--porcelain=v1",
            "--branch",
            "--ignore-submodules=all",
            "--untracked-files=normal",
        ]
        .map(String::from)
        .into();
        // For status, a `--` after `--end-of-options` would itself be taken as a pathspec.
        tail.push("--end-of-options".into());
        tail.extend(paths);
        self.command(ws, tail)
    }

    /// `git diff` of the work tree (or the index with `staged`), optionally against `base`.
    pub fn diff(&self, ws: &Workspace, a: &GitDiffArgs) -> Result<sandbox::RunResult> {
        let paths = Self::pathspecs(ws, &a.paths)?;
        let mut tail: Vec<String> = [
            "diff",
            "--no-ext-diff",
            "--no-textconv",
            "--no-color",
            "--ignore-submodules=all",
        ]
        .map(String::from)
        .into();
        if a.staged {
            tail.push("--cached".into());
        }
        tail.push("--end-of-options".into());
        if let Some(base) = &a.base {
            check_revision(base)?;
            tail.push(base.clone());
        }
        tail.push("--".into());
        tail.extend(paths);
        self.command(ws, tail)
    }
}

/// One line of porcelain v1 status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StatusEntry {
    /// The two status letters (`XY`).
    pub status: String,
    /// Path (for renames, `old -> new`).
    pub path: String,
}

/// Splits porcelain v1 output into the branch line and entries.
pub(crate) fn parse_status(text: &str) -> (Option<String>, Vec<StatusEntry>) {
    let mut branch = None;
    let mut entries = Vec::new();
    for line in text.lines() {
        if let Some(b) = line.strip_prefix("## ") {
            branch = Some(b.to_string());
        } else if line.len() > 3 && line.is_char_boundary(2) && line.is_char_boundary(3) {
            entries.push(StatusEntry {
                status: line[..2].to_string(),
                path: line[3..].to_string(),
            });
        }
    }
    (branch, entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_like_values_are_refused() {
        assert!(check_revision("--output=/tmp/x").is_err());
        assert!(check_revision("HEAD~1").is_ok());
        assert!(check_revision("a b").is_err());
    }

    #[test]
    fn missing_git_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(dir.path()).unwrap();
        let mut git = Git::new(sandbox::LayerRequest::default());
        git.search_path = "/nonexistent/bin".into();
        let err = git.status(&ws, &GitStatusArgs::default()).unwrap_err();
        assert!(matches!(err, Error::GitUnavailable(_)), "{err}");
        assert_eq!(err.classify().map(|c| c.code), Some("GIT_UNAVAILABLE"));
    }

    #[test]
    fn porcelain_is_parsed() {
        let (branch, entries) = parse_status("## main\n M a.txt\n?? new file\n");
        assert_eq!(branch.as_deref(), Some("main"));
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[1].status, "??");
        assert_eq!(entries[1].path, "new file");
    }
}
