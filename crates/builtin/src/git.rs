//! Read-only, hardened git: `status` and `diff` with a fixed argument vector.
//!
//! A repository's own configuration is hostile input: it can name programs for fsmonitor, external diff,
//! textconv, clean/smudge filters and hooks. Command-line `-c` settings override every config file, so each of
//! those is switched off there; filter drivers have free-form names, so they are first listed (by a git
//! invocation that only reads config) and each one is neutralised by name. System and global config are not
//! read, nothing is inherited from this process's environment, discovery cannot climb above the workspace,
//! user values start after `--end-of-options` and may not begin with `-`, and git runs inside the same sandbox
//! as shell commands (with Landlock it may write nowhere). The same hardening reaches a `git` that `shell_run`
//! runs and the policy reads as `git.read`, through its environment (`GIT_CONFIG_COUNT`/`KEY_n`/`VALUE_n`) so
//! that the approved argument vector is unchanged; such a git starts only at the top of a work tree whose `.git`
//! is a directory, and its discovery cannot climb above it, because the policy judged that tree. This module does
//! not offer any git command that writes, fetches or pushes, and does not harden a writing or remote git run
//! through `shell_run`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::confine::Workspace;
use crate::error::{Error, Result};
use crate::shell::{resolve_program, CommandSnapshot};

/// Where git is looked for; fixed so that a workspace or an agent cannot choose the git binary.
const GIT_SEARCH_PATH: &str = "/usr/local/bin:/usr/bin:/bin";
const GIT_TIMEOUT: Duration = Duration::from_secs(30);

/// Settings that stop a repository from making git run programs, as `(key, value)`. Command-line `-c` and
/// `GIT_CONFIG_KEY_n` settings both override every config file; the built-in tools pass them as `-c`, a `git` run
/// through `shell_run` gets them through its environment so that its argument vector stays the approved one.
const HARDENING: &[(&str, &str)] = &[
    ("core.fsmonitor", "false"),
    ("diff.external", ""),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("color.ui", "false"),
    ("core.untrackedCache", "false"),
    ("protocol.allow", "never"),
    ("gpg.program", "gpg"),
    ("gpg.ssh.program", "ssh-keygen"),
    ("gpg.x509.program", "gpgsm"),
];

/// A config section, whether every one of its settings is overridden, and the settings that switch it off.
type DriverSection = (&'static str, bool, &'static [(&'static str, &'static str)]);

/// Driver sections whose free-form names a repository may give programs, with the settings that switch a
/// driver off. A filter gets all of them as soon as its name appears (`required=false` lets a file pass
/// unfiltered); a diff driver only the ones the repository sets, since an emptied `command` or `textconv` makes
/// git stop with an error rather than run anything, and most diff drivers only name a hunk-header pattern.
const DRIVER_KEYS: &[DriverSection] = &[
    (
        "filter",
        true,
        &[
            ("clean", ""),
            ("smudge", ""),
            ("process", ""),
            ("required", "false"),
        ],
    ),
    ("diff", false, &[("command", ""), ("textconv", "")]),
];

/// [`HARDENING`] plus `overrides` as `-c key=value` arguments, then `--no-pager`.
fn hardening_args(overrides: &[(String, String)]) -> Vec<String> {
    let fixed = HARDENING
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()));
    let mut args: Vec<String> = fixed
        .chain(overrides.iter().cloned())
        .flat_map(|(k, v)| ["-c".to_string(), format!("{k}={v}")])
        .collect();
    args.push("--no-pager".into());
    args
}

/// The environment every hardened git gets: no system or global config, no prompts, no lazy fetches, and
/// repository discovery that cannot climb above the workspace.
fn base_env(ws: &Workspace) -> BTreeMap<String, String> {
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
        ("GIT_NO_LAZY_FETCH", "1"),
        ("GIT_CEILING_DIRECTORIES", ceiling.as_str()),
        ("LC_ALL", "C"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// Variables through which the configured environment could undo the hardening or choose programs.
const OVERRIDING_VARIABLES: &[&str] = &[
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_SYSTEM",
    "GIT_EXTERNAL_DIFF",
    "GIT_PAGER",
    "PAGER",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_EXEC_PATH",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_ASKPASS",
    "GIT_PROXY_COMMAND",
];

/// The directory a read-only `git` run through `shell_run` starts in (`cwd`, then each `-C` of `globals`), which
/// must be the top of its work tree with a real `.git` directory.
///
/// The policy decides on the files beneath that directory (a revision or object id reaches all of them), so git
/// may not read any other tree: not one found by climbing to a parent (the environment's ceiling stops that), not
/// one a `.git` file points to, and not the directory itself read as a bare repository or as a `.git` directory.
pub(crate) fn work_tree_top(cwd: &Path, globals: &[String]) -> Result<PathBuf> {
    let mut dir = cwd.to_path_buf();
    let mut words = globals.iter();
    while let Some(word) = words.next() {
        if word == "-C" {
            dir = dir.join(words.next().map_or("", String::as_str));
        }
    }
    let refuse = |why: &str| {
        Error::WrongKind(format!(
            "a read-only git runs at the top of a work tree whose .git is a directory (its cwd or -C): {why}"
        ))
    };
    let top = std::fs::canonicalize(&dir).map_err(|e| refuse(&e.to_string()))?;
    match std::fs::symlink_metadata(top.join(".git")) {
        Ok(meta) if meta.is_dir() => Ok(top),
        Ok(_) => Err(refuse(".git is not a directory")),
        Err(e) => Err(refuse(&e.to_string())),
    }
}

/// Hardens `env`, the environment of a read-only `git` run through `shell_run` in the work tree `top` (see
/// [`work_tree_top`]): [`HARDENING`] and `overrides` become `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/
/// `GIT_CONFIG_VALUE_n`, [`base_env`] is laid over it, and discovery may not climb above `top`.
pub(crate) fn harden_env(
    ws: &Workspace,
    top: &Path,
    env: &mut BTreeMap<String, String>,
    overrides: &[(String, String)],
) {
    env.retain(|k, _| !k.starts_with("GIT_CONFIG_") && !OVERRIDING_VARIABLES.contains(&k.as_str()));
    let settings = HARDENING
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .chain(overrides.iter().cloned());
    let mut count = 0;
    for (n, (k, v)) in settings.enumerate() {
        env.insert(format!("GIT_CONFIG_KEY_{n}"), k);
        env.insert(format!("GIT_CONFIG_VALUE_{n}"), v);
        count = n + 1;
    }
    env.insert("GIT_CONFIG_COUNT".into(), count.to_string());
    env.insert("GIT_PAGER".into(), "cat".into());
    env.extend(base_env(ws));
    let ceiling = top.parent().unwrap_or(top).to_string_lossy().into_owned();
    env.insert("GIT_CEILING_DIRECTORIES".into(), ceiling);
}

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

    fn run(
        &self,
        ws: &Workspace,
        cwd: &Path,
        git: &Path,
        args: Vec<String>,
    ) -> Result<sandbox::RunResult> {
        let mut spec = sandbox::CommandSpec::new(git.to_path_buf(), cwd.to_path_buf());
        spec.args = args;
        spec.env = base_env(ws);
        spec.timeout = GIT_TIMEOUT;
        spec.layers = self.layers.clone();
        Ok(sandbox::run(&spec)?)
    }

    /// Settings that switch off every filter and diff driver the repository configures, by name. `cwd` and
    /// `globals` (git options before the subcommand, such as `-C dir`) find the repository as the command will.
    pub(crate) fn driver_overrides(
        &self,
        ws: &Workspace,
        cwd: &Path,
        globals: &[String],
    ) -> Result<Vec<(String, String)>> {
        let git = self.executable()?;
        let mut args = hardening_args(&[]);
        args.extend(globals.iter().cloned());
        args.extend(
            [
                "config",
                "--null",
                "--name-only",
                "--get-regexp",
                r"^(filter|diff)\.",
            ]
            .map(String::from),
        );
        let result = self.run(ws, cwd, &git, args)?;
        if result.stdout.truncated() {
            return Err(Error::InvalidArguments(
                "repository config lists too many drivers".into(),
            ));
        }
        let mut overrides = BTreeSet::new();
        for key in result.stdout.text.split('\0').filter(|k| !k.is_empty()) {
            for (section, every_key, keys) in DRIVER_KEYS {
                let Some(rest) = key.strip_prefix(section).and_then(|r| r.strip_prefix('.')) else {
                    continue;
                };
                let Some((name, set)) = rest.rsplit_once('.') else {
                    continue;
                };
                if name.contains('=') {
                    // A `-c` setting splits at the first '=', so such a driver cannot be switched off.
                    return Err(Error::PathRefused(format!(
                        "repository defines unusable {section} driver name {name:?}"
                    )));
                }
                for (k, v) in keys.iter() {
                    if *every_key || k.eq_ignore_ascii_case(set) {
                        overrides.insert((format!("{section}.{name}.{k}"), v.to_string()));
                    }
                }
            }
        }
        let overrides = overrides.into_iter().collect();
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
        let overrides = self.driver_overrides(ws, ws.root(), &[])?;
        let mut args = hardening_args(&overrides);
        args.extend(tail);
        self.run(ws, ws.root(), &git, args)
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

/// For a `shell_run` snapshot that runs git (by the requested name or the resolved executable) and that the
/// policy's own classifier reads as `git.read`, the git options before its subcommand (only the harmless ones and
/// `-C dir` pass that classifier); `None` for anything else, which keeps its environment untouched.
pub(crate) fn read_only_globals(snapshot: &CommandSnapshot) -> Option<Vec<String>> {
    let named_git = |p: &Path| p.file_name().is_some_and(|n| n == "git");
    if !named_git(Path::new(&snapshot.program)) && !named_git(&snapshot.executable) {
        return None;
    }
    // Classified as the policy would see it when called as `git`, whatever name found the executable.
    let argv: Vec<String> = std::iter::once("git".to_string())
        .chain(snapshot.args.iter().cloned())
        .collect();
    let raw = policy::command_action(String::new(), argv, Some(snapshot.cwd.clone()));
    if raw.operation != policy::Operation::GitRead || raw.unknown.is_some() {
        return None;
    }
    let mut globals = Vec::new();
    let mut args = snapshot.args.iter();
    while let Some(arg) = args.next() {
        if !arg.starts_with('-') {
            break;
        }
        globals.push(arg.clone());
        if arg == "-C" {
            globals.extend(args.next().cloned());
        }
    }
    Some(globals)
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
#[path = "git_tests.rs"]
mod tests;
