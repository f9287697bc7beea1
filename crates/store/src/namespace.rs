//! The trusted state root and the per-workspace namespace inside it.
//!
//! Resolves where state lives (explicit root, else the per-user platform state directory),
//! refuses a root inside the workspace, and binds one namespace directory to one canonical
//! workspace on first use. It does not open the database (see `db`) and never reads the
//! process environment except in `StateRootInputs::from_process_env`.

use std::ffi::OsString;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use jsonrpc::sha256_hex;
use rand::TryRng;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The directory name under the per-user state directory.
const APP_DIR: &str = "toolgate";
/// Namespaces live under this child of the state root, one per workspace.
const WORKSPACES_DIR: &str = "workspaces";
/// The binding file; it ties a namespace directory to exactly one workspace.
const BINDING_FILE: &str = "workspace-binding.json";
/// Version of the binding file layout.
const BINDING_VERSION: u32 = 1;

/// Where the state root may come from, captured as values so resolution is a pure function.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StateRootInputs {
    /// The value of `TOOLGATE_STATE_DIR`, if set.
    pub explicit: Option<OsString>,
    /// The value of `XDG_STATE_HOME`, if set.
    pub xdg_state_home: Option<OsString>,
    /// The value of `HOME`, if set.
    pub home: Option<OsString>,
}

impl StateRootInputs {
    /// Reads `TOOLGATE_STATE_DIR`, `XDG_STATE_HOME` and `HOME` from this process.
    pub fn from_process_env() -> Self {
        Self {
            explicit: std::env::var_os("TOOLGATE_STATE_DIR"),
            xdg_state_home: std::env::var_os("XDG_STATE_HOME"),
            home: std::env::var_os("HOME"),
        }
    }
}

/// Picks the state root: the explicit value (must be absolute), else the platform
/// per-user state directory. Empty variables count as unset, and a relative
/// `XDG_STATE_HOME` is ignored as the XDG specification requires.
pub fn resolve_state_root(inputs: &StateRootInputs) -> Result<PathBuf> {
    let non_empty = |v: &Option<OsString>| v.as_ref().filter(|s| !s.is_empty()).map(PathBuf::from);
    if let Some(explicit) = non_empty(&inputs.explicit) {
        if !explicit.is_absolute() {
            return Err(Error::StateRootNotAbsolute);
        }
        return Ok(explicit);
    }
    let home = non_empty(&inputs.home).filter(|h| h.is_absolute());
    if cfg!(target_os = "macos") {
        return home
            .map(|h| h.join("Library").join("Application Support").join(APP_DIR))
            .ok_or(Error::NoStateDir);
    }
    if let Some(xdg) = non_empty(&inputs.xdg_state_home).filter(|p| p.is_absolute()) {
        return Ok(xdg.join(APP_DIR));
    }
    home.map(|h| h.join(".local").join("state").join(APP_DIR))
        .ok_or(Error::NoStateDir)
}

/// The on-disk binding record.
#[derive(Debug, Serialize, Deserialize)]
struct Binding {
    version: u32,
    /// Hex of the canonical workspace path's bytes: exact even for non-UTF-8 paths.
    workspace_hex: String,
    /// Human-readable form, for an administrator looking at the file.
    workspace: String,
}

/// One workspace's private directory under the state root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Namespace {
    state_root: PathBuf,
    workspace: PathBuf,
    id: String,
    dir: PathBuf,
}

impl Namespace {
    /// Opens (creating on first use) the namespace for `workspace` under `state_root`.
    ///
    /// Refuses a state root inside the workspace, and a namespace already bound to a
    /// different workspace.
    pub fn open(state_root: &Path, workspace: &Path) -> Result<Self> {
        let workspace = canonical_workspace(workspace)?;
        let state_root = create_root(state_root, &workspace)?;
        // A root bound as a whole (`bind_state_root`) serves its one workspace and no other.
        if fs::symlink_metadata(state_root.join(BINDING_FILE)).is_ok() {
            check_binding(&state_root, &workspace)?;
        }
        let id = workspace_id(&workspace);
        let workspaces = state_root.join(WORKSPACES_DIR);
        let dir = workspaces.join(&id);
        create_private_dir_all(&dir)?;
        set_private_dir(&workspaces)?;
        set_private_dir(&dir)?;
        bind(&dir, &workspace)?;
        Ok(Self {
            state_root,
            workspace,
            id,
            dir,
        })
    }

    /// The canonical state root.
    pub fn state_root(&self) -> &Path {
        &self.state_root
    }

    /// The canonical workspace this namespace is bound to.
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// The namespace identifier: SHA-256 (hex) of the canonical workspace path. It separates
    /// namespaces; it is not a secret.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The namespace directory (0700); the audit log and database live here.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Path of the SQLite database inside the namespace.
    pub fn db_path(&self) -> PathBuf {
        self.dir.join("state.db")
    }
}

/// Binds the state root itself to `workspace`, forever: from then on `Namespace::open` serves that root to this
/// workspace only (a root given for one workspace, as ToolHub's `TOOLHUB_STATE_ROOT` is, must not quietly hold
/// another's approvals). The root is created (0700) on first use and refused inside the workspace, as
/// `Namespace::open` refuses it; a root already bound to another workspace is `NamespaceBoundElsewhere`, never
/// rebound. Returns the canonical root.
pub fn bind_state_root(state_root: &Path, workspace: &Path) -> Result<PathBuf> {
    let workspace = canonical_workspace(workspace)?;
    let root = create_root(state_root, &workspace)?;
    bind(&root, &workspace)?;
    Ok(root)
}

/// The workspace, canonical; it must be an existing directory.
fn canonical_workspace(workspace: &Path) -> Result<PathBuf> {
    let canonical = fs::canonicalize(workspace)
        .map_err(|_| Error::WorkspaceNotDirectory(workspace.to_path_buf()))?;
    if !canonical.is_dir() {
        return Err(Error::WorkspaceNotDirectory(canonical));
    }
    Ok(canonical)
}

/// Creates the state root (0700) unless it would lie inside `workspace` (canonical), and returns it canonical.
/// Checked before creating anything, so a refused root leaves no directory behind in the workspace (resolving
/// symlinks in the part that already exists); then again on the canonical path once it exists.
fn create_root(state_root: &Path, workspace: &Path) -> Result<PathBuf> {
    if !state_root.is_absolute() {
        return Err(Error::StateRootNotAbsolute);
    }
    if is_inside(&resolve_existing_prefix(state_root), workspace) {
        return Err(Error::StateRootInsideWorkspace);
    }
    create_private_dir_all(state_root)?;
    let state_root = fs::canonicalize(state_root)?;
    if is_inside(&state_root, workspace) {
        return Err(Error::StateRootInsideWorkspace);
    }
    Ok(state_root)
}

/// Other workspaces under `state_root` that hold pending (undecided, unexpired) approval requests, with their
/// count, so an admin command that looked in one namespace can name the others. Read-only: each database is
/// opened read-only and nothing is created or bound; a namespace that cannot be read is skipped, since this
/// only advises.
pub fn pending_elsewhere(
    state_root: &Path,
    except: &Namespace,
    now: crate::Timestamp,
) -> Result<Vec<(PathBuf, u64)>> {
    let dir = state_root.join(WORKSPACES_DIR);
    let entries = match fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let ns = entry.path();
        if ns.file_name() == except.dir.file_name() {
            continue;
        }
        let Some(workspace) = bound_workspace(&ns) else {
            continue;
        };
        let flags =
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let Ok(conn) = rusqlite::Connection::open_with_flags(ns.join("state.db"), flags) else {
            continue;
        };
        let count: rusqlite::Result<i64> = conn.query_row(
            "SELECT count(*) FROM approvals WHERE status = 'PENDING' AND expires_at > ?1",
            [now.as_millis()],
            |r| r.get(0),
        );
        if let Ok(n @ 1..) = count {
            found.push((workspace, n.unsigned_abs()));
        }
    }
    found.sort();
    Ok(found)
}

/// The workspace a namespace directory is bound to, from its binding file.
fn bound_workspace(dir: &Path) -> Option<PathBuf> {
    let bytes = fs::read(dir.join(BINDING_FILE)).ok()?;
    let binding: Binding = serde_json::from_slice(&bytes).ok()?;
    let raw = hex::decode(binding.workspace_hex).ok()?;
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStringExt;
        Some(PathBuf::from(OsString::from_vec(raw)))
    }
    #[cfg(not(unix))]
    {
        String::from_utf8(raw).ok().map(PathBuf::from)
    }
}

/// True when `candidate` is `base` or below it. `Path::starts_with` compares whole
/// components, so `/ws-evil` is not inside `/ws`.
fn is_inside(candidate: &Path, base: &Path) -> bool {
    candidate.starts_with(base)
}

/// Removes `.` and folds `..` without touching the filesystem, for the pre-creation check.
fn lexical_normalise(p: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Canonicalises the longest existing ancestor of `p` and appends the rest lexically, so
/// a not-yet-created path is judged by where it will really be.
fn resolve_existing_prefix(p: &Path) -> PathBuf {
    let p = lexical_normalise(p);
    let mut base = p.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = fs::canonicalize(base) {
            let mut out = real;
            out.extend(rest.iter().rev());
            return out;
        }
        match (base.parent(), base.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                base = parent;
            }
            _ => return p.clone(),
        }
    }
}

/// SHA-256 of the canonical path's bytes, hex-encoded.
fn workspace_id(workspace: &Path) -> String {
    sha256_hex(&path_bytes(workspace))
}

#[cfg(unix)]
fn path_bytes(p: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    p.as_os_str().as_bytes().to_vec()
}

#[cfg(not(unix))]
fn path_bytes(p: &Path) -> Vec<u8> {
    p.to_string_lossy().into_owned().into_bytes()
}

/// Creates the binding on first use, or checks it. Creation writes a temporary file and
/// hard-links it into place, which fails if another process won the race; the loser then
/// reads and checks the winner's binding instead of overwriting it.
fn bind(dir: &Path, workspace: &Path) -> Result<()> {
    let path = dir.join(BINDING_FILE);
    if !path.exists() {
        let binding = Binding {
            version: BINDING_VERSION,
            workspace_hex: hex::encode(path_bytes(workspace)),
            workspace: workspace.to_string_lossy().into_owned(),
        };
        // A random suffix: threads of one process may race here too.
        let mut nonce = [0u8; 8];
        rand::rngs::SysRng
            .try_fill_bytes(&mut nonce)
            .map_err(|_| Error::Rng)?;
        let tmp = dir.join(format!("{BINDING_FILE}.{}.tmp", hex::encode(nonce)));
        {
            let mut f = create_private_file(&tmp)?;
            f.write_all(&serde_json::to_vec_pretty(&binding)?)?;
            f.sync_all()?;
        }
        let linked = fs::hard_link(&tmp, &path);
        let _ = fs::remove_file(&tmp);
        match linked {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e.into()),
        }
    }
    check_binding(dir, workspace)
}

/// Checks the binding `dir` holds: it must name exactly `workspace`; one that cannot be read is refused, never
/// rewritten.
fn check_binding(dir: &Path, workspace: &Path) -> Result<()> {
    let want = hex::encode(path_bytes(workspace));
    let bytes = fs::read(dir.join(BINDING_FILE))?;
    let existing: Binding = serde_json::from_slice(&bytes).map_err(|_| Error::CorruptBinding)?;
    if existing.version != BINDING_VERSION {
        return Err(Error::CorruptBinding);
    }
    if existing.workspace_hex != want {
        return Err(Error::NamespaceBoundElsewhere);
    }
    Ok(())
}

/// Creates `path` and missing parents with mode 0700 (on Unix).
pub(crate) fn create_private_dir_all(path: &Path) -> Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(path)?;
    Ok(())
}

/// Forces 0700 on a directory we own, in case it predates us with a laxer mode.
fn set_private_dir(path: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(path, fs::Permissions::from_mode(0o700))?;
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// Creates a new file with mode 0600 (on Unix); fails if it exists.
pub(crate) fn create_private_file(path: &Path) -> Result<fs::File> {
    let mut opts = fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    Ok(opts.open(path)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(explicit: Option<&str>, xdg: Option<&str>, home: Option<&str>) -> StateRootInputs {
        StateRootInputs {
            explicit: explicit.map(OsString::from),
            xdg_state_home: xdg.map(OsString::from),
            home: home.map(OsString::from),
        }
    }

    #[test]
    fn explicit_root_wins_and_must_be_absolute() {
        let got = resolve_state_root(&inputs(Some("/srv/tg"), Some("/x"), Some("/h")));
        assert_eq!(got.unwrap(), PathBuf::from("/srv/tg"));
        let rel = resolve_state_root(&inputs(Some("rel/dir"), None, Some("/h")));
        assert!(matches!(rel, Err(Error::StateRootNotAbsolute)));
    }

    #[cfg(all(unix, not(target_os = "macos")))]
    #[test]
    fn platform_default_follows_xdg_then_home() {
        let xdg = resolve_state_root(&inputs(Some(""), Some("/x/state"), Some("/h")));
        assert_eq!(xdg.unwrap(), PathBuf::from("/x/state/toolgate"));
        let relative_xdg = resolve_state_root(&inputs(None, Some("state"), Some("/h")));
        assert_eq!(
            relative_xdg.unwrap(),
            PathBuf::from("/h/.local/state/toolgate")
        );
        assert!(matches!(
            resolve_state_root(&inputs(None, None, None)),
            Err(Error::NoStateDir)
        ));
    }

    #[test]
    fn inside_is_component_wise() {
        assert!(is_inside(Path::new("/ws/state"), Path::new("/ws")));
        assert!(is_inside(Path::new("/ws"), Path::new("/ws")));
        assert!(!is_inside(Path::new("/ws-evil"), Path::new("/ws")));
        assert!(!is_inside(Path::new("/ws-evil/state"), Path::new("/ws")));
    }

    #[test]
    fn lexical_normalise_folds_dots() {
        assert_eq!(
            lexical_normalise(Path::new("/a/./b/../c")),
            PathBuf::from("/a/c")
        );
    }
}
