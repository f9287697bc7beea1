//! Workspace confinement: every path is resolved beneath a root fixed once at startup.
//!
//! The root is canonicalised once and held open as a descriptor, so later renames of its ancestors do not move
//! the boundary. User paths are first checked lexically (no NUL, no `..`, absolute only when beneath the root),
//! then resolved by the kernel relative to the root descriptor: `openat2(RESOLVE_BENEATH)` for reads (links that
//! stay inside are followed) and `RESOLVE_NO_SYMLINKS` for the parents of mutations. Where `openat2` is missing
//! the fallback walks one component at a time with `O_NOFOLLOW`, refusing every symlink. There is deliberately
//! no "canonicalise, then compare strings" step: the kernel's own walk is the check, so a component swapped
//! for a symlink mid-walk cannot lead outside. This module does not read or write file contents.

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{self as rfs, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use crate::error::{Error, Result};

/// How paths are resolved beneath the root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resolver {
    /// `openat2` with RESOLVE_BENEATH (Linux 5.6+).
    Openat2,
    /// Component-by-component `openat` with O_NOFOLLOW; refuses all symlinks.
    Walk,
}

/// Retries when the kernel reports that a rename raced with a RESOLVE_BENEATH walk (it then answers EAGAIN).
const EAGAIN_RETRIES: usize = 16;

/// A validated workspace-relative path: only normal components. The empty path is the root itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelPath(PathBuf);

impl RelPath {
    /// The relative path (empty for the root).
    pub fn as_path(&self) -> &Path {
        &self.0
    }

    /// Whether this is the workspace root.
    pub fn is_root(&self) -> bool {
        self.0.as_os_str().is_empty()
    }

    /// Display form for results: `.` for the root.
    pub fn display(&self) -> String {
        if self.is_root() {
            ".".into()
        } else {
            self.0.to_string_lossy().into_owned()
        }
    }

    /// Parent and final name; `None` for the root.
    pub(crate) fn split_last(&self) -> Option<(RelPath, OsString)> {
        let name = self.0.file_name()?.to_os_string();
        let parent = self.0.parent().map(Path::to_path_buf).unwrap_or_default();
        Some((RelPath(parent), name))
    }

    fn openat2_arg(&self) -> &Path {
        if self.is_root() {
            Path::new(".")
        } else {
            &self.0
        }
    }
}

/// The frozen workspace boundary.
#[derive(Debug)]
pub struct Workspace {
    root: PathBuf,
    root_fd: OwnedFd,
    resolver: Resolver,
}

impl Workspace {
    /// Canonicalises `root` (absolute, existing directory) once and opens it.
    pub fn open(root: &Path) -> Result<Self> {
        let mut ws = Self::open_with(root, Resolver::Openat2)?;
        let probe = rfs::openat2(
            &ws.root_fd,
            ".",
            OFlags::PATH | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::BENEATH,
        );
        // ENOSYS on old kernels; EPERM where a seccomp profile blocks syscalls it does not know.
        if matches!(probe, Err(Errno::NOSYS | Errno::PERM)) {
            ws.resolver = Resolver::Walk;
        }
        Ok(ws)
    }

    pub(crate) fn open_with(root: &Path, resolver: Resolver) -> Result<Self> {
        if !root.is_absolute() {
            return Err(Error::InvalidWorkspace(
                "root must be an absolute path".into(),
            ));
        }
        let canonical =
            std::fs::canonicalize(root).map_err(|e| Error::InvalidWorkspace(e.to_string()))?;
        let root_fd = rfs::open(
            &canonical,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| Error::InvalidWorkspace(format!("{}: {e}", canonical.display())))?;
        Ok(Self {
            root: canonical,
            root_fd,
            resolver,
        })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Lexical validation of a user path. Relative paths are taken from the root; absolute paths are accepted
    /// only when they are the root or beneath it (component-wise, so `/ws-evil` is not beneath `/ws`).
    pub fn relative(&self, user: &str) -> Result<RelPath> {
        confine_lexically(&self.root, user)
    }

    /// Absolute form of a workspace path, for display and for policy matching.
    pub fn absolute(&self, rel: &RelPath) -> PathBuf {
        self.root.join(rel.as_path())
    }

    /// Opens for reading. Symlinks are followed only while they stay beneath the root (openat2), or refused
    /// (fallback walk).
    pub(crate) fn open_follow(&self, rel: &RelPath, flags: OFlags) -> Result<OwnedFd> {
        // openat2 rejects O_PATH combined with flags other than CLOEXEC/DIRECTORY/NOFOLLOW.
        let extra = if flags.contains(OFlags::PATH) {
            OFlags::CLOEXEC
        } else {
            OFlags::CLOEXEC | OFlags::NOCTTY
        };
        let flags = flags | extra;
        match self.resolver {
            Resolver::Openat2 => {
                let how = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
                openat2_retry(&self.root_fd, rel.openat2_arg(), flags, how)
                    .map_err(|e| map_errno(e, rel, false))
            }
            Resolver::Walk => self.walk(rel, flags),
        }
    }

    /// Opens the parent directory of a mutation target with no symlink anywhere on the way, creating missing
    /// directories when asked. Returns the parent descriptor and the final name.
    pub(crate) fn open_parent_for_mutation(
        &self,
        rel: &RelPath,
        create_dirs: bool,
    ) -> Result<(OwnedFd, OsString)> {
        let (parent, name) = rel.split_last().ok_or_else(|| {
            Error::PathRefused("the workspace root itself cannot be replaced".into())
        })?;
        let mut dir = rfs::openat(
            &self.root_fd,
            ".",
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| map_errno(e, rel, true))?;
        for component in parent.as_path().components() {
            let name = component.as_os_str();
            dir = match self.step_nofollow(&dir, name) {
                Err(Errno::NOENT) if create_dirs => {
                    match rfs::mkdirat(&dir, name, Mode::from_raw_mode(0o755)) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(e) => return Err(map_errno(e, rel, true)),
                    }
                    self.step_nofollow(&dir, name)
                        .map_err(|e| map_errno(e, rel, true))?
                }
                other => other.map_err(|e| map_errno(e, rel, true))?,
            };
        }
        Ok((dir, name))
    }

    /// One directory step that refuses symlinks.
    fn step_nofollow(
        &self,
        dir: &OwnedFd,
        name: &std::ffi::OsStr,
    ) -> std::result::Result<OwnedFd, Errno> {
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        match self.resolver {
            Resolver::Openat2 => {
                let how =
                    ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
                openat2_retry(dir, Path::new(name), flags, how)
            }
            Resolver::Walk => {
                if is_symlink(dir, name) {
                    return Err(Errno::LOOP);
                }
                rfs::openat(dir, name, flags | OFlags::NOFOLLOW, Mode::empty())
            }
        }
    }

    /// Fallback resolution: one component at a time, never following a link.
    fn walk(&self, rel: &RelPath, flags: OFlags) -> Result<OwnedFd> {
        let mut dir = rfs::openat(
            &self.root_fd,
            ".",
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| map_errno(e, rel, true))?;
        let Some((parent, name)) = rel.split_last() else {
            return rfs::openat(&self.root_fd, ".", flags, Mode::empty())
                .map_err(|e| map_errno(e, rel, true));
        };
        for component in parent.as_path().components() {
            dir = self
                .step_nofollow(&dir, component.as_os_str())
                .map_err(|e| map_errno(e, rel, true))?;
        }
        if is_symlink(&dir, &name) {
            return Err(Error::SymlinkRefused(rel.display()));
        }
        rfs::openat(
            &dir,
            name.as_os_str(),
            flags | OFlags::NOFOLLOW,
            Mode::empty(),
        )
        .map_err(|e| map_errno(e, rel, true))
    }
}

fn libc_path_max() -> usize {
    4096
}

fn is_symlink(dir: &OwnedFd, name: &std::ffi::OsStr) -> bool {
    rfs::statat(dir, name, rfs::AtFlags::SYMLINK_NOFOLLOW)
        .map(|st| rfs::FileType::from_raw_mode(st.st_mode) == rfs::FileType::Symlink)
        .unwrap_or(false)
}

fn openat2_retry(
    dir: &OwnedFd,
    path: &Path,
    flags: OFlags,
    how: ResolveFlags,
) -> std::result::Result<OwnedFd, Errno> {
    let mut last = Errno::AGAIN;
    for _ in 0..EAGAIN_RETRIES {
        match rfs::openat2(dir, path, flags, Mode::empty(), how) {
            Err(Errno::AGAIN) => last = Errno::AGAIN,
            other => return other,
        }
    }
    Err(last)
}

/// Translates a resolution errno. `nofollow` says whether a symlink was forbidden on this path.
/// The confinement [`Workspace::relative`] applies to a path argument, without opening anything: no NUL, no `..`,
/// absolute only beneath `root`. The gateway runs it before asking a human about a call that would be refused.
pub fn confine_lexically(root: &Path, user: &str) -> Result<RelPath> {
    if user.as_bytes().contains(&0) {
        return Err(Error::PathRefused("path contains a NUL byte".into()));
    }
    if user.len() > libc_path_max() {
        return Err(Error::PathRefused("path is too long".into()));
    }
    let path = Path::new(user);
    let rest = if path.is_absolute() {
        path.strip_prefix(root)
            .map_err(|_| Error::PathRefused(format!("{user} is outside the workspace")))?
    } else {
        path
    };
    let mut out = PathBuf::new();
    for component in rest.components() {
        match component {
            Component::Normal(c) => out.push(c),
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(Error::PathRefused(format!("{user}: '..' is not allowed")));
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(Error::PathRefused(format!(
                    "{user} is outside the workspace"
                )));
            }
        }
    }
    Ok(RelPath(out))
}

pub(crate) fn map_errno(e: Errno, rel: &RelPath, nofollow: bool) -> Error {
    let p = rel.display();
    match e {
        Errno::XDEV => Error::PathRefused(format!("{p} resolves outside the workspace")),
        Errno::LOOP if nofollow => Error::SymlinkRefused(p),
        Errno::LOOP => Error::PathRefused(format!("{p}: too many symbolic links")),
        Errno::NOENT => Error::NotFound(p),
        Errno::NOTDIR => Error::WrongKind(format!("{p}: a component is not a directory")),
        Errno::ISDIR => Error::WrongKind(format!("{p} is a directory")),
        Errno::AGAIN => Error::PathRefused(format!("{p}: resolution kept racing with renames")),
        Errno::NAMETOOLONG => Error::PathRefused(format!("{p}: name too long")),
        other => Error::Io(std::io::Error::from_raw_os_error(other.raw_os_error())),
    }
}

/// Name bytes must not be empty or contain `/` (only possible through a bug upstream, but cheap to refuse).
pub(crate) fn check_name(name: &std::ffi::OsStr) -> Result<()> {
    let b = name.as_bytes();
    if b.is_empty() || b.contains(&b'/') || b.contains(&0) {
        return Err(Error::PathRefused("invalid file name".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws(dir: &Path, resolver: Resolver) -> Workspace {
        Workspace::open_with(dir, resolver).unwrap()
    }

    /// `real/f`, `inner` → `real` (stays inside), `out` → `/etc` (escapes).
    fn linked_tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        std::fs::write(dir.path().join("real/f"), "x").unwrap();
        std::os::unix::fs::symlink("real", dir.path().join("inner")).unwrap();
        std::os::unix::fs::symlink("/etc", dir.path().join("out")).unwrap();
        dir
    }

    #[test]
    fn lexical_rules() {
        let dir = tempfile::tempdir().unwrap();
        let w = ws(dir.path(), Resolver::Openat2);
        assert!(w.relative("").unwrap().is_root());
        assert!(w.relative(".").unwrap().is_root());
        assert_eq!(w.relative("./a/b").unwrap().as_path(), Path::new("a/b"));
        let abs = format!("{}/x", w.root().display());
        assert_eq!(w.relative(&abs).unwrap().as_path(), Path::new("x"));
        assert!(matches!(w.relative("a/../b"), Err(Error::PathRefused(_))));
        assert!(matches!(
            w.relative("/etc/passwd"),
            Err(Error::PathRefused(_))
        ));
        assert!(matches!(w.relative("a\0b"), Err(Error::PathRefused(_))));
        let evil = format!("{}-evil/x", w.root().display());
        assert!(matches!(w.relative(&evil), Err(Error::PathRefused(_))));
    }

    #[test]
    fn walk_fallback_refuses_every_symlink() {
        let dir = linked_tree();
        let w = ws(dir.path(), Resolver::Walk);
        let open = |p: &str| w.open_follow(&w.relative(p).unwrap(), OFlags::RDONLY);
        assert!(open("real/f").is_ok());
        assert!(matches!(open("inner/f"), Err(Error::SymlinkRefused(_))));
        assert!(matches!(open("out/passwd"), Err(Error::SymlinkRefused(_))));
        assert!(matches!(open("inner"), Err(Error::SymlinkRefused(_))));
    }

    #[test]
    fn openat2_follows_inner_links_only() {
        let dir = linked_tree();
        let w = ws(dir.path(), Resolver::Openat2);
        let open = |p: &str| w.open_follow(&w.relative(p).unwrap(), OFlags::RDONLY);
        assert!(open("inner/f").is_ok());
        assert!(matches!(open("out/passwd"), Err(Error::PathRefused(_))));
    }

    /// The fallback walk under a component flipping between a directory and a symlink to `/`.
    #[test]
    fn walk_fallback_survives_flipping_component() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        std::fs::create_dir_all(root.join("parked/etc")).unwrap();
        std::fs::write(root.join("parked/etc/passwd"), "inside").unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flipper = {
            let (root, stop) = (root.clone(), Arc::clone(&stop));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let _ = std::os::unix::fs::symlink("/", root.join("flip"));
                    let _ = std::fs::remove_file(root.join("flip"));
                    let _ = std::fs::rename(root.join("parked"), root.join("flip"));
                    let _ = std::fs::rename(root.join("flip"), root.join("parked"));
                }
            })
        };
        let w = ws(&root, Resolver::Walk);
        let rel = w.relative("flip/etc/passwd").unwrap();
        for _ in 0..2000 {
            if let Ok(fd) = w.open_follow(&rel, OFlags::RDONLY) {
                let mut s = String::new();
                std::io::Read::read_to_string(&mut std::fs::File::from(fd), &mut s).unwrap();
                assert_eq!(s, "inside");
            }
        }
        stop.store(true, Ordering::Relaxed);
        flipper.join().unwrap();
    }

    #[test]
    fn mutation_parent_refuses_symlinked_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        std::os::unix::fs::symlink("real", dir.path().join("inner")).unwrap();
        for resolver in [Resolver::Openat2, Resolver::Walk] {
            let w = ws(dir.path(), resolver);
            let r = w.open_parent_for_mutation(&w.relative("inner/new").unwrap(), true);
            assert!(matches!(r, Err(Error::SymlinkRefused(_))), "{resolver:?}");
            assert!(w
                .open_parent_for_mutation(&w.relative("real/a/b/new").unwrap(), true)
                .is_ok());
        }
    }
}
