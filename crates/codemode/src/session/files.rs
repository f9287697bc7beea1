//! The session's file directory for `saveFile` / `readFile`, reached without following a symlink anywhere:
//! every component of its path is created with `mkdirat` and opened with `O_NOFOLLOW | O_DIRECTORY` from the
//! one before, starting at `/`, so a symlink planted in place of the directory or any parent makes the save
//! fail rather than write elsewhere. The directory is the caller's and owner-only (0700); files are opened
//! relative to its descriptor with `O_NOFOLLOW`, written 0600, and must be plain files with one link; they are
//! deleted through the same descriptor. It does not decide which files a program may read; `CodeSession` does.

use nix::errno::Errno;
use nix::fcntl::{openat, OFlag};
use nix::sys::stat::{fchmod, fstat, mkdirat, Mode, SFlag};
use nix::sys::statvfs::fstatvfs;
use nix::unistd::{geteuid, unlinkat, UnlinkatFlags};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path};

/// Opens (creating what is missing, 0700) the directory `dir`, which must be absolute, following no symlink.
pub(super) fn open_dir(dir: &Path) -> Result<OwnedFd, String> {
    if !dir.is_absolute() {
        return Err(format!(
            "the session directory {} is not absolute",
            dir.display()
        ));
    }
    let refused = |e: Errno| {
        format!(
            "cannot open the session directory {} ({e}); no part of its path may be a symlink",
            dir.display()
        )
    };
    let flags = OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_RDONLY;
    let mut fd = openat(nix::fcntl::AT_FDCWD, "/", flags, Mode::empty()).map_err(refused)?;
    for component in dir.components() {
        let name = match component {
            Component::RootDir => continue,
            Component::Normal(name) => name,
            Component::CurDir | Component::ParentDir | Component::Prefix(_) => {
                return Err(format!(
                    "the session directory {} is not a plain path",
                    dir.display()
                ))
            }
        };
        match mkdirat(fd.as_fd(), name, Mode::S_IRWXU) {
            Ok(()) | Err(Errno::EEXIST) => {}
            Err(e) => return Err(refused(e)),
        }
        fd = openat(fd.as_fd(), name, flags, Mode::empty()).map_err(refused)?;
    }
    // The last directory holds this session's files only: it must be ours, and nobody else may enter it.
    let stat = fstat(fd.as_fd()).map_err(refused)?;
    if stat.st_uid != geteuid().as_raw() {
        return Err(format!(
            "the session directory {} belongs to another user",
            dir.display()
        ));
    }
    fchmod(fd.as_fd(), Mode::S_IRWXU).map_err(refused)?;
    Ok(fd)
}

/// Writes `data` to `name` in `dir` (created 0600, or replaced), never through a symlink or a hard link.
pub(super) fn write(dir: &OwnedFd, name: &str, data: &[u8]) -> Result<(), String> {
    let flags =
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK;
    let fd = openat(dir.as_fd(), name, flags, Mode::S_IRUSR | Mode::S_IWUSR)
        .map_err(|e| refused_file(name, e))?;
    plain_file(&fd, name)?;
    fchmod(fd.as_fd(), Mode::S_IRUSR | Mode::S_IWUSR)
        .map_err(|e| format!("cannot write {name}: {e}"))?;
    // Truncated only once it is known to be this directory's own plain file.
    let mut file = File::from(fd);
    file.set_len(0)
        .map_err(|e| format!("cannot write {name}: {e}"))?;
    file.write_all(data)
        .map_err(|e| format!("cannot write {name}: {e}"))?;
    Ok(())
}

/// Whether the file system of `dir` keeps at least `min_free` bytes free after `cost` more are written.
pub(super) fn room(dir: &OwnedFd, cost: u64, min_free: u64) -> Result<(), String> {
    let stat = fstatvfs(dir).map_err(|e| format!("cannot see the free space: {e}"))?;
    #[allow(clippy::unnecessary_cast)] // The field types differ between C libraries.
    let free = (stat.blocks_available() as u64).saturating_mul(stat.fragment_size() as u64);
    if free < cost.saturating_add(min_free) {
        return Err(format!(
            "the file system has {free} bytes free, and toolgate keeps {min_free} free for its own state; \
             free disk space, or end sessions that saved files"
        ));
    }
    Ok(())
}

/// Deletes `name` in `dir` if it is there (the entry itself: a symlink is removed, never followed).
pub(super) fn remove(dir: &OwnedFd, name: &str) {
    if let Err(e) = unlinkat(dir.as_fd(), name, UnlinkatFlags::NoRemoveDir) {
        if e != Errno::ENOENT {
            tracing::warn!(file = name, "a saved file was not deleted: {e}");
        }
    }
}

/// Reads `name` in `dir`, at most `max` bytes, as UTF-8.
pub(super) fn read(dir: &OwnedFd, name: &str, max: u64) -> Result<String, String> {
    let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK;
    let fd = openat(dir.as_fd(), name, flags, Mode::empty()).map_err(|e| refused_file(name, e))?;
    plain_file(&fd, name)?;
    let mut data = Vec::new();
    File::from(fd)
        .take(max + 1)
        .read_to_end(&mut data)
        .map_err(|e| format!("cannot read {name}: {e}"))?;
    if data.len() as u64 > max {
        return Err(format!(
            "{name} is larger than readFile's limit of {max} bytes"
        ));
    }
    String::from_utf8(data).map_err(|_| format!("{name} is not UTF-8 text"))
}

fn refused_file(name: &str, e: Errno) -> String {
    match e {
        Errno::ELOOP => format!("{name} is a symlink; saveFile and readFile never follow one"),
        e => format!("cannot open {name}: {e}"),
    }
}

/// A file saved here is a regular file with one link and 0600: anything else was put there by someone else.
fn plain_file(fd: &OwnedFd, name: &str) -> Result<(), String> {
    let stat = fstat(fd.as_fd()).map_err(|e| format!("cannot read {name}: {e}"))?;
    let regular = SFlag::from_bits_truncate(stat.st_mode & SFlag::S_IFMT.bits()) == SFlag::S_IFREG;
    if !regular || stat.st_nlink != 1 || stat.st_uid != geteuid().as_raw() {
        return Err(format!("{name} is not a plain file this session saved"));
    }
    Ok(())
}
