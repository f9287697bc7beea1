//! Structured command execution in two steps: `prepare` resolves and fingerprints the executable into an
//! immutable [`CommandSnapshot`] (what a human approves), and `verify` re-checks that fingerprint just before
//! launch. There is no shell string anywhere: a program, an argument vector, a cwd and a timeout.
//!
//! The snapshot's environment is fixed by configuration, never by the agent, and nothing is inherited from
//! this process. This module does not run anything itself (the sandbox does) and does not decide whether a
//! command may run (policy and approval do). It does not guarantee the bytes finally mapped by the kernel:
//! a local adversary can still swap the file in the instant between the check and `execve`.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use jsonrpc::sha256_hex;
use rustix::fs::OFlags;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::confine::Workspace;
use crate::error::{Error, Result};

/// Version of the snapshot format; a stored snapshot of another version is refused, not interpreted.
pub const SNAPSHOT_VERSION: u32 = 1;

/// The agent's request: structured only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShellRequest {
    /// Program name (searched on the snapshot PATH) or path (absolute, or relative to `cwd`).
    pub program: String,
    /// Arguments, passed as they are.
    #[serde(default)]
    pub args: Vec<String>,
    /// Workspace-relative working directory (default: the root).
    #[serde(default)]
    pub cwd: Option<String>,
    /// Wall-clock limit in seconds.
    #[serde(default)]
    pub timeout_seconds: Option<u64>,
}

/// Everything an approval binds: the request plus the resolved executable's identity and the environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandSnapshot {
    /// [`SNAPSHOT_VERSION`].
    pub version: u32,
    /// Canonical workspace root the snapshot belongs to.
    pub workspace: PathBuf,
    /// The program as requested.
    pub program: String,
    /// Canonical path of the executable that will run.
    pub executable: PathBuf,
    /// Its size in bytes.
    pub executable_size: u64,
    /// Its SHA-256 (hex).
    pub executable_sha256: String,
    /// Arguments.
    pub args: Vec<String>,
    /// Workspace-relative cwd (`.` for the root).
    pub cwd: String,
    /// Timeout in seconds.
    pub timeout_seconds: u64,
    /// The complete environment of the command.
    pub env: BTreeMap<String, String>,
}

impl CommandSnapshot {
    /// SHA-256 (hex) of the snapshot's JSON form, so an approval record can bind exactly this snapshot.
    /// Deterministic: fields serialise in declaration order and the environment is a sorted map.
    pub fn digest(&self) -> String {
        sha256_hex(&serde_json::to_vec(self).unwrap_or_default())
    }
}

/// Configuration for `shell_run`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellSettings {
    /// The environment every command gets (PATH here is also where bare program names are searched).
    pub env: BTreeMap<String, String>,
    /// Timeout when the request gives none.
    pub default_timeout_seconds: u64,
    /// Largest timeout a request may ask for.
    pub max_timeout_seconds: u64,
}

impl Default for ShellSettings {
    fn default() -> Self {
        let env = [
            ("PATH", "/usr/local/bin:/usr/bin:/bin"),
            ("LANG", "C.UTF-8"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        Self {
            env,
            default_timeout_seconds: 60,
            max_timeout_seconds: 600,
        }
    }
}

fn no_nul(what: &str, s: &str) -> Result<()> {
    if s.contains('\0') {
        return Err(Error::InvalidArguments(format!(
            "{what} contains a NUL byte"
        )));
    }
    Ok(())
}

/// Canonical path of a regular, executable file.
fn executable_file(candidate: &Path) -> Option<PathBuf> {
    let canonical = std::fs::canonicalize(candidate).ok()?;
    let meta = std::fs::metadata(&canonical).ok()?;
    (meta.is_file() && meta.permissions().mode() & 0o111 != 0).then_some(canonical)
}

/// Resolves `program` the way `execvp` would, but only on the snapshot's PATH and only to absolute directories.
pub(crate) fn resolve_program(
    program: &str,
    path_var: Option<&str>,
    cwd: &Path,
) -> Result<PathBuf> {
    if program.contains('/') {
        let candidate = if Path::new(program).is_absolute() {
            PathBuf::from(program)
        } else {
            cwd.join(program)
        };
        return executable_file(&candidate)
            .ok_or_else(|| Error::ExecutableNotFound(program.to_string()));
    }
    let path_var = path_var
        .ok_or_else(|| Error::ExecutableNotFound(format!("{program}: no PATH configured")))?;
    path_var
        .split(':')
        .filter(|dir| Path::new(dir).is_absolute())
        .find_map(|dir| executable_file(&Path::new(dir).join(program)))
        .ok_or_else(|| Error::ExecutableNotFound(program.to_string()))
}

/// Size and SHA-256 of a file, streamed.
pub(crate) fn fingerprint(path: &Path) -> Result<(u64, String)> {
    let mut file = File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut size = 0u64;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        size += n as u64;
        hasher.update(&buf[..n]);
    }
    Ok((size, hex::encode(hasher.finalize())))
}

/// Checks that `cwd` names a directory inside the workspace and returns its absolute path.
fn confined_cwd(ws: &Workspace, cwd: &str) -> Result<(String, PathBuf)> {
    let rel = ws.relative(cwd)?;
    ws.open_follow(&rel, OFlags::PATH | OFlags::DIRECTORY)?;
    Ok((rel.display(), ws.absolute(&rel)))
}

/// Step one: build the snapshot an approval is created from.
pub fn prepare(
    ws: &Workspace,
    settings: &ShellSettings,
    request: ShellRequest,
) -> Result<CommandSnapshot> {
    if request.program.is_empty() {
        return Err(Error::InvalidArguments("program is empty".into()));
    }
    no_nul("program", &request.program)?;
    for arg in &request.args {
        no_nul("argument", arg)?;
    }
    let timeout_seconds = request
        .timeout_seconds
        .unwrap_or(settings.default_timeout_seconds);
    if timeout_seconds == 0 || timeout_seconds > settings.max_timeout_seconds {
        return Err(Error::InvalidArguments(format!(
            "timeout_seconds must be between 1 and {}",
            settings.max_timeout_seconds
        )));
    }
    let (cwd, cwd_abs) = confined_cwd(ws, request.cwd.as_deref().unwrap_or("."))?;
    let env = settings.env.clone();
    let executable = resolve_program(
        &request.program,
        env.get("PATH").map(String::as_str),
        &cwd_abs,
    )?;
    let (executable_size, executable_sha256) = fingerprint(&executable)?;
    Ok(CommandSnapshot {
        version: SNAPSHOT_VERSION,
        workspace: ws.root().to_path_buf(),
        program: request.program,
        executable,
        executable_size,
        executable_sha256,
        args: request.args,
        cwd,
        timeout_seconds,
        env,
    })
}

/// Step two, just before launch: the snapshot must still describe this workspace and the same executable.
/// Returns the sandbox spec to run (layers are filled in by the caller).
pub fn verify(ws: &Workspace, snapshot: &CommandSnapshot) -> Result<sandbox::CommandSpec> {
    if snapshot.version != SNAPSHOT_VERSION {
        return Err(Error::InvalidArguments(format!(
            "snapshot version {} is not supported",
            snapshot.version
        )));
    }
    if snapshot.workspace != ws.root() {
        return Err(Error::PathRefused(
            "snapshot belongs to another workspace".into(),
        ));
    }
    for arg in &snapshot.args {
        no_nul("argument", arg)?;
    }
    let (_, cwd_abs) = confined_cwd(ws, &snapshot.cwd)?;
    let exe = &snapshot.executable;
    let changed = |why: &str| Error::ExecutableChanged(format!("{}: {why}", exe.display()));
    match std::fs::canonicalize(exe) {
        Ok(c) if c == *exe => {}
        Ok(_) => return Err(changed("path now resolves elsewhere")),
        Err(_) => return Err(changed("no longer exists")),
    }
    if executable_file(exe).is_none() {
        return Err(changed("no longer an executable regular file"));
    }
    let (size, sha) = fingerprint(exe).map_err(|_| changed("cannot be read"))?;
    if size != snapshot.executable_size || sha != snapshot.executable_sha256 {
        return Err(changed("content differs from the approved one"));
    }
    let mut spec = sandbox::CommandSpec::new(exe.clone(), cwd_abs);
    spec.args = snapshot.args.clone();
    spec.env = snapshot.env.clone();
    spec.timeout = Duration::from_secs(snapshot.timeout_seconds);
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_names_use_only_absolute_path_entries() {
        let dir = tempfile::tempdir().unwrap();
        assert!(resolve_program("sh", Some("relative/bin:/bin"), dir.path()).is_ok());
        assert!(resolve_program("sh", Some("relative/bin"), dir.path()).is_err());
        assert!(resolve_program("sh", None, dir.path()).is_err());
    }

    #[test]
    fn timeout_bounds_are_enforced() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(dir.path()).unwrap();
        let request = ShellRequest {
            program: "true".into(),
            args: vec![],
            cwd: None,
            timeout_seconds: Some(100_000),
        };
        assert!(matches!(
            prepare(&ws, &ShellSettings::default(), request),
            Err(Error::InvalidArguments(_))
        ));
    }

    #[test]
    fn digest_changes_with_any_field() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(dir.path()).unwrap();
        let request = ShellRequest {
            program: "true".into(),
            args: vec!["a".into()],
            cwd: None,
            timeout_seconds: None,
        };
        let snapshot = prepare(&ws, &ShellSettings::default(), request).unwrap();
        assert_eq!(snapshot.digest(), snapshot.clone().digest());
        let mut other = snapshot.clone();
        other.args = vec!["b".into()];
        assert_ne!(snapshot.digest(), other.digest());
    }
}
