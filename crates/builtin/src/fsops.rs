//! File operations on a [`Workspace`]: list, read, atomic write, delete.
//!
//! Reads refuse non-regular files, hard-linked files and anything over the read cap, and report binary content
//! instead of returning it. Writes go to a temporary file in the same directory and are renamed into place,
//! after checking the optional `expected_hash` of the current content. Path resolution lives in `confine`;
//! the size caps come from the caller.

use std::ffi::OsString;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};

use jsonrpc::sha256_hex;
use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use serde::Serialize;

use crate::confine::{check_name, map_errno, RelPath, Workspace};
use crate::error::{Error, Result};

/// How many bytes at the start of a file are inspected for NUL to call it binary.
const BINARY_SNIFF_BYTES: usize = 8192;

/// One directory entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DirEntry {
    /// File name.
    pub name: String,
    /// `file`, `directory`, `symlink` or `other`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Size in bytes (of the link itself for symlinks).
    pub size: u64,
}

/// Result of listing a directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Listing {
    /// Workspace-relative path listed.
    pub path: String,
    /// Entries sorted by name.
    pub entries: Vec<DirEntry>,
    /// Whether entries past the cap were left out.
    pub truncated: bool,
}

/// Result of reading a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileRead {
    /// Workspace-relative path.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// SHA-256 of the content, usable as `expected_hash` for a later write.
    pub sha256: String,
    /// Whether the content looks binary (then `content` is absent).
    pub binary: bool,
    /// UTF-8 content of a text file.
    pub content: Option<String>,
}

/// Result of a write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileWrite {
    /// Workspace-relative path.
    pub path: String,
    /// Bytes written.
    pub size: u64,
    /// SHA-256 of the new content.
    pub sha256: String,
    /// Whether the file did not exist before.
    pub created: bool,
}

fn kind_of(mode: u32) -> &'static str {
    match FileType::from_raw_mode(mode) {
        FileType::RegularFile => "file",
        FileType::Directory => "directory",
        FileType::Symlink => "symlink",
        _ => "other",
    }
}

/// Lists a directory (symlinks are listed, not followed).
pub fn list_directory(ws: &Workspace, rel: &RelPath, max_entries: usize) -> Result<Listing> {
    let fd = ws.open_follow(rel, OFlags::RDONLY | OFlags::DIRECTORY)?;
    let dir = rfs::Dir::read_from(&fd).map_err(|e| map_errno(e, rel, false))?;
    let mut entries = Vec::new();
    let mut truncated = false;
    for entry in dir {
        let entry = entry.map_err(|e| map_errno(e, rel, false))?;
        let name = entry.file_name();
        if name == c"." || name == c".." {
            continue;
        }
        if entries.len() >= max_entries {
            truncated = true;
            break;
        }
        let (kind, size) = match rfs::statat(&fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => (kind_of(st.st_mode), u64::try_from(st.st_size).unwrap_or(0)),
            Err(_) => ("other", 0),
        };
        entries.push(DirEntry {
            name: String::from_utf8_lossy(name.to_bytes()).into_owned(),
            kind,
            size,
        });
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Listing {
        path: rel.display(),
        entries,
        truncated,
    })
}

/// Checks that an open descriptor is a regular file with a single link and at most `max` bytes.
fn check_regular(fd: &OwnedFd, rel: &RelPath, max: u64) -> Result<u64> {
    let st = rfs::fstat(fd).map_err(|e| map_errno(e, rel, false))?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Err(Error::WrongKind(format!(
            "{} is not a regular file",
            rel.display()
        )));
    }
    check_links(rel, st.st_nlink)?;
    let size = u64::try_from(st.st_size).unwrap_or(u64::MAX);
    if size > max {
        return Err(Error::TooLarge {
            what: rel.display(),
            size,
            limit: max,
        });
    }
    Ok(size)
}

/// A file with several links shares its inode with another name that may be outside the workspace, so both
/// reads and writes of it are refused.
fn check_links(rel: &RelPath, links: u64) -> Result<()> {
    if links > 1 {
        return Err(Error::HardLinked {
            path: rel.display(),
            links,
        });
    }
    Ok(())
}

/// Reads at most `max + 1` bytes, so a file that grew after `fstat` is still caught by the cap.
fn read_capped(fd: OwnedFd, rel: &RelPath, max: u64) -> Result<Vec<u8>> {
    let mut data = Vec::new();
    File::from(fd)
        .take(max.saturating_add(1))
        .read_to_end(&mut data)?;
    if data.len() as u64 > max {
        return Err(Error::TooLarge {
            what: rel.display(),
            size: data.len() as u64,
            limit: max,
        });
    }
    Ok(data)
}

/// Reads a text file; binary files are reported with size and hash only.
pub fn read_file(ws: &Workspace, rel: &RelPath, max_bytes: u64) -> Result<FileRead> {
    // O_NONBLOCK so that opening a FIFO cannot hang; it is refused right after by the type check.
    let fd = ws.open_follow(rel, OFlags::RDONLY | OFlags::NONBLOCK)?;
    check_regular(&fd, rel, max_bytes)?;
    let data = read_capped(fd, rel, max_bytes)?;
    let binary = data[..data.len().min(BINARY_SNIFF_BYTES)].contains(&0)
        || std::str::from_utf8(&data).is_err();
    Ok(FileRead {
        path: rel.display(),
        size: data.len() as u64,
        sha256: sha256_hex(&data),
        binary,
        content: if binary {
            None
        } else {
            Some(String::from_utf8_lossy(&data).into_owned())
        },
    })
}

/// State of a mutation target, checked without following links.
pub(crate) struct Target {
    pub parent: OwnedFd,
    pub name: OsString,
    /// Current content when the target exists.
    pub current: Option<Vec<u8>>,
    /// Permission bits to keep.
    pub mode: u32,
}

/// Resolves a mutation target: no symlink on the path or at the end, regular file, one link.
pub(crate) fn mutation_target(
    ws: &Workspace,
    rel: &RelPath,
    create_dirs: bool,
    max: u64,
) -> Result<Target> {
    let (parent, name) = ws.open_parent_for_mutation(rel, create_dirs)?;
    check_name(&name)?;
    match rfs::statat(&parent, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW) {
        Err(Errno::NOENT) => Ok(Target {
            parent,
            name,
            current: None,
            mode: 0o644,
        }),
        Err(e) => Err(map_errno(e, rel, true)),
        Ok(st) => {
            match FileType::from_raw_mode(st.st_mode) {
                FileType::Symlink => return Err(Error::SymlinkRefused(rel.display())),
                FileType::RegularFile => {}
                _ => {
                    return Err(Error::WrongKind(format!(
                        "{} is not a regular file",
                        rel.display()
                    )))
                }
            }
            check_links(rel, st.st_nlink)?;
            let fd = rfs::openat(
                &parent,
                name.as_os_str(),
                OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| map_errno(e, rel, true))?;
            check_regular(&fd, rel, max)?;
            let current = read_capped(fd, rel, max)?;
            Ok(Target {
                parent,
                name,
                current: Some(current),
                mode: st.st_mode & 0o777,
            })
        }
    }
}

/// Compares `expected_hash` (case-insensitive hex) with the current content.
pub(crate) fn check_expected(expected: Option<&str>, current: Option<&[u8]>) -> Result<()> {
    let Some(expected) = expected else {
        return Ok(());
    };
    let actual = current.map_or_else(|| "absent".to_string(), sha256_hex);
    if !actual.eq_ignore_ascii_case(expected.trim()) {
        return Err(Error::Conflict {
            expected: expected.to_string(),
            actual,
        });
    }
    Ok(())
}

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Writes `content` to a fresh temporary file beside the target and renames it into place.
pub(crate) fn replace_atomically(target: &Target, content: &[u8]) -> Result<()> {
    let n = TMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut tmp_name = OsString::from(".");
    tmp_name.push(&target.name);
    tmp_name.push(format!(".toolgate-{}-{n}.tmp", std::process::id()));
    let fd = rfs::openat(
        &target.parent,
        tmp_name.as_os_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(target.mode),
    )
    .map_err(|e| parent_gone(e, target))?;
    let result = (|| -> Result<()> {
        rfs::fchmod(&fd, Mode::from_raw_mode(target.mode)).map_err(|e| Error::Io(e.into()))?;
        let mut file = File::from(fd);
        file.write_all(content)?;
        file.sync_all()?;
        drop(file);
        rfs::renameat(
            &target.parent,
            tmp_name.as_os_str(),
            &target.parent,
            target.name.as_os_str(),
        )
        .map_err(|e| parent_gone(e, target))
    })();
    if result.is_err() {
        let _ = rfs::unlinkat(&target.parent, tmp_name.as_os_str(), AtFlags::empty());
    }
    result
}

/// A directory removed while it was being written into (a concurrent rename replaced it) is the target's
/// parent no longer existing: refused as not found, like a missing component found while resolving.
fn parent_gone(e: Errno, target: &Target) -> Error {
    if e == Errno::NOENT {
        Error::NotFound(target.name.to_string_lossy().into_owned())
    } else {
        Error::Io(e.into())
    }
}

/// Removes a target that `mutation_target` validated.
pub(crate) fn remove(target: &Target) -> Result<()> {
    rfs::unlinkat(&target.parent, target.name.as_os_str(), AtFlags::empty())
        .map_err(|e| Error::Io(e.into()))
}

/// Atomic write with optional optimistic concurrency.
pub fn write_file(
    ws: &Workspace,
    rel: &RelPath,
    content: &[u8],
    expected_hash: Option<&str>,
    max_bytes: u64,
) -> Result<FileWrite> {
    if content.len() as u64 > max_bytes {
        return Err(Error::TooLarge {
            what: "content".into(),
            size: content.len() as u64,
            limit: max_bytes,
        });
    }
    // The current content is only needed for the hash check; cap it like a read.
    let target = mutation_target(ws, rel, true, max_bytes.max(1 << 24))?;
    check_expected(expected_hash, target.current.as_deref())?;
    replace_atomically(&target, content)?;
    Ok(FileWrite {
        path: rel.display(),
        size: content.len() as u64,
        sha256: sha256_hex(content),
        created: target.current.is_none(),
    })
}
