//! What programs of one client session share: call numbers and results for `recall(n)`, and the session's
//! directory for `saveFile` / `readFile` (owner-only, under the state root; a program reads only files this
//! session saved).
//!
//! Everything here is bounded, and what a session holds is charged to its identity's share and to the
//! ceiling over every identity ([`Shares`]), since opening a session is free: the results kept for `recall`
//! (`results`, counted in the memory they take), the size of one file ([`MAX_FILE_BYTES`]), the number of files
//! ([`MAX_FILES`]) and what they take on disk (whole blocks, [`disk_cost`]). When the session ends (the last
//! holder drops it), its files are deleted and everything it held is given back. A file name is one plain name,
//! checked before anything touches the disk; the directory and files are reached without following symlinks
//! (`files`). It does not run programs or decide which tools they may call.

mod files;
mod results;

pub use results::{Recalled, KEEP_RESULTS, KEEP_RESULT_BYTES};

use crate::quota::{Exceeded, Quota};
use results::Results;
use std::collections::BTreeMap;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

/// The largest file `saveFile` writes and `readFile` reads.
pub const MAX_FILE_BYTES: usize = 10 << 20;
/// Files one session may save.
pub const MAX_FILES: usize = 1000;
/// Disk one session's files may take, so one program cannot take its identity's whole share in one run.
pub const MAX_SESSION_BYTES: usize = 100 << 20;
/// Disk the files of one identity's sessions may take together, and of every identity's.
pub const DISK_SHARE: u64 = 256 << 20;
pub const DISK_CEILING: u64 = 1 << 30;
/// Memory the kept results of one identity's sessions may take together, and of every identity's.
pub const MEMORY_SHARE: u64 = 64 << 20;
pub const MEMORY_CEILING: u64 = 256 << 20;
/// Free space `saveFile` leaves on the file system whatever the shares say, so the state root (the approval
/// store, the audit log) can always be written.
pub const MIN_FREE_DISK: u64 = 256 << 20;
/// The longest file name, in bytes (the common file system limit).
const MAX_NAME_BYTES: usize = 255;
/// The unit a file system hands out: a file of one byte takes one, an empty file too (its inode's share).
const BLOCK: u64 = 4096;

/// What a file of `len` bytes takes on disk, in whole blocks.
pub fn disk_cost(len: usize) -> u64 {
    (len as u64).div_ceil(BLOCK).max(1) * BLOCK
}

/// Whose share a session's holdings are charged to, and the shares themselves (one per resource, shared by
/// every session of a gateway).
#[derive(Debug, Clone)]
pub struct Shares {
    /// The identity the session serves (`key:ci`, `jwt:<iss>#<sub>`, or the one local identity).
    pub identity: String,
    /// Bytes on disk of saved files.
    pub disk: Arc<Quota>,
    /// Bytes of memory of results kept for `recall`.
    pub memory: Arc<Quota>,
}

impl Shares {
    /// Shares of a session nobody else shares anything with (tests, benchmarks, a runner used on its own).
    pub fn alone() -> Self {
        Self {
            identity: "local".to_owned(),
            disk: Arc::new(Quota::new(DISK_SHARE, DISK_CEILING)),
            memory: Arc::new(Quota::new(MEMORY_SHARE, MEMORY_CEILING)),
        }
    }
}

/// The code-mode state of one client session.
#[derive(Debug)]
pub struct CodeSession {
    files: Option<PathBuf>,
    next: AtomicU32,
    results: Mutex<Results>,
    saved: Mutex<Saved>,
    shares: Shares,
}

#[derive(Debug, Default)]
struct Saved {
    /// The session directory, opened once without following symlinks.
    dir: Option<OwnedFd>,
    /// Names saved (as `saveFile` returned their paths) and what each takes on disk.
    names: BTreeMap<String, u64>,
}

impl CodeSession {
    /// `files`: the directory this session's files go to (created on first save), or `None` for no files. Its
    /// holdings are charged to shares nobody else uses ([`Shares::alone`]).
    pub fn new(files: Option<PathBuf>) -> Self {
        Self::with_shares(files, Shares::alone())
    }

    /// A session of `shares.identity`, whose results and files count against the shares given.
    pub fn with_shares(files: Option<PathBuf>, shares: Shares) -> Self {
        Self {
            files,
            next: AtomicU32::new(1),
            results: Mutex::new(Results::default()),
            saved: Mutex::new(Saved::default()),
            shares,
        }
    }

    /// The identity this session's holdings are charged to.
    pub fn identity(&self) -> &str {
        &self.shares.identity
    }

    /// Takes the next call number (`#n`, from 1), also for calls that run at the same time.
    pub fn reserve(&self) -> u32 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// Keeps call `seq`'s value for `recall`, dropping the oldest past the bounds.
    pub fn record(&self, seq: u32, value: &serde_json::Value) {
        let mut results = self.results.lock().unwrap_or_else(|p| p.into_inner());
        results.record(&self.shares.memory, &self.shares.identity, seq, value);
    }

    /// The memory this session's kept results are charged for.
    pub fn kept_bytes(&self) -> u64 {
        self.results
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .bytes()
    }

    /// `recall(n)`: the value call `#n` gave, with no new call.
    pub fn recall(&self, seq: u32) -> Option<serde_json::Value> {
        match self.lookup(seq) {
            Recalled::Kept(value) => Some(value),
            Recalled::Evicted | Recalled::NotKept(_) | Recalled::Missing => None,
        }
    }

    /// `recall(n)` with why there is no value.
    pub fn lookup(&self, seq: u32) -> Recalled {
        let results = self.results.lock().unwrap_or_else(|p| p.into_inner());
        results.lookup(seq)
    }

    /// `saveFile(name, data)`: writes the file and returns its path.
    pub fn save_file(&self, name: &str, data: &str) -> Result<PathBuf, String> {
        plain_name(name)?;
        if data.len() > MAX_FILE_BYTES {
            return Err(format!(
                "saveFile: {} bytes is more than the limit of {MAX_FILE_BYTES} bytes per file",
                data.len()
            ));
        }
        let Some(root) = &self.files else {
            return Err("saveFile is not available: this session has no file directory".to_owned());
        };
        let mut saved = self.saved.lock().unwrap_or_else(|p| p.into_inner());
        let replaced = saved.names.get(name).copied();
        if replaced.is_none() && saved.names.len() >= MAX_FILES {
            return Err(format!(
                "saveFile: this session has saved its limit of {MAX_FILES} files; overwrite one already saved"
            ));
        }
        let cost = disk_cost(data.len());
        let old = replaced.unwrap_or(0);
        let total = saved.names.values().sum::<u64>() - old + cost;
        if total > MAX_SESSION_BYTES as u64 {
            return Err(format!(
                "saveFile: this session's files would take {total} bytes on disk, more than its limit of \
                 {MAX_SESSION_BYTES}; save less, or overwrite a file already saved"
            ));
        }
        let (disk, identity) = (&self.shares.disk, self.shares.identity.as_str());
        // The file takes its new size before its old one is freed, so the charge covers both while it is written.
        disk.take(identity, cost)
            .map_err(|full| refusal(full, cost))?;
        let dir = match saved.dir.take() {
            Some(dir) => Ok(dir),
            None => files::open_dir(root).map_err(|e| format!("saveFile: {e}")),
        };
        let written = dir.and_then(|dir| {
            let written = files::room(&dir, cost, MIN_FREE_DISK)
                .and_then(|()| files::write(&dir, name, data.as_bytes()))
                .map_err(|e| format!("saveFile: {e}"));
            saved.dir = Some(dir);
            written
        });
        if let Err(e) = written {
            // Whatever was written of it (old or new) is removed, so nothing uncounted stays on disk.
            if let Some(dir) = &saved.dir {
                files::remove(dir, name);
            }
            saved.names.remove(name);
            disk.give_back(identity, cost + old);
            return Err(e);
        }
        disk.give_back(identity, old);
        saved.names.insert(name.to_owned(), cost);
        Ok(root.join(name))
    }

    /// `readFile(path)`: only a file this session saved, by the exact path `saveFile` returned.
    pub fn read_file(&self, path: &Path) -> Result<String, String> {
        let refused = || Err("readFile reads only files this session saved".to_owned());
        let (Some(root), Some(name)) = (&self.files, path.file_name().and_then(|n| n.to_str()))
        else {
            return refused();
        };
        // Byte for byte, not `Path` equality (which skips `.` components): the path `saveFile` returned.
        if path.as_os_str() != root.join(name).as_os_str() {
            return refused();
        }
        let saved = self.saved.lock().unwrap_or_else(|p| p.into_inner());
        match (&saved.dir, saved.names.contains_key(name)) {
            (Some(dir), true) => {
                files::read(dir, name, MAX_FILE_BYTES as u64).map_err(|e| format!("readFile: {e}"))
            }
            _ => refused(),
        }
    }
}

/// The session ended: its files are deleted (then its directory, once empty) and all it held is given back.
impl Drop for CodeSession {
    fn drop(&mut self) {
        let identity = self.shares.identity.as_str();
        let saved = self.saved.get_mut().unwrap_or_else(|p| p.into_inner());
        if let Some(dir) = saved.dir.take() {
            for name in saved.names.keys() {
                files::remove(&dir, name);
            }
            drop(dir);
            if let Some(root) = &self.files {
                // Only an empty directory goes: anything else in it was not put there by this session.
                let _ = std::fs::remove_dir(root);
            }
        }
        let held: u64 = saved.names.values().sum();
        saved.names.clear();
        self.shares.disk.give_back(identity, held);
        let results = self.results.get_mut().unwrap_or_else(|p| p.into_inner());
        results.release(&self.shares.memory, identity);
    }
}

/// What a program is told when a share of disk is full, and what frees it.
fn refusal(full: Exceeded, cost: u64) -> String {
    match full {
        Exceeded::Identity { held, share } => format!(
            "saveFile: this file would take {cost} bytes on disk, and this identity's sessions hold {held} of \
             its share of {share} bytes; files are deleted when their session ends, so end finished sessions \
             or overwrite a file already saved"
        ),
        Exceeded::Overall { held, ceiling } => format!(
            "saveFile: this file would take {cost} bytes on disk, and the files of every identity hold \
             {held} of toolgate's ceiling of {ceiling} bytes; they are deleted as their sessions end"
        ),
    }
}

/// One plain file name: not empty, at most 255 bytes, no `/`, `\`, NUL or control character, no leading `.`
/// (which also refuses `.` and `..`).
fn plain_name(name: &str) -> Result<(), String> {
    let why = if name.is_empty() {
        "is empty"
    } else if name.len() > MAX_NAME_BYTES {
        "is longer than 255 bytes"
    } else if name.starts_with('.') {
        "starts with a dot"
    } else if name.contains(['/', '\\']) {
        "has a path separator"
    } else if name.contains("..") {
        "contains `..`"
    } else if name.chars().any(char::is_control) {
        "has a control character"
    } else {
        return Ok(());
    };
    let shown: String = name.chars().take(60).collect();
    Err(format!(
        "saveFile: the name {shown:?} {why}; give one plain file name such as \"issues.json\""
    ))
}

#[cfg(test)]
mod tests;
