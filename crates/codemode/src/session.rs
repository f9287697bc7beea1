//! What programs of one client session share: call numbers and results for `recall(n)`, and the session's
//! directory for `saveFile` / `readFile` (owner-only, under the state root; a program reads only files this
//! session saved).
//!
//! Everything here is bounded: results kept for `recall` (the last [`KEEP_RESULTS`] calls, at most
//! [`KEEP_RESULT_BYTES`] in all; an evicted result says so), the size of one file ([`MAX_FILE_BYTES`]), the
//! number of files ([`MAX_FILES`]) and their total ([`MAX_SESSION_BYTES`]). A file name is one plain name, checked before anything touches the disk;
//! the directory and files are reached without following symlinks (`files`). It does not run programs or
//! decide which tools they may call.

mod files;

use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

/// Results `recall` can still give, newest kept.
pub const KEEP_RESULTS: usize = 1000;
/// Bytes of results (serialised) `recall` can still give, newest kept.
pub const KEEP_RESULT_BYTES: usize = 32 << 20;
/// The largest file `saveFile` writes and `readFile` reads.
pub const MAX_FILE_BYTES: usize = 10 << 20;
/// Files one session may save.
pub const MAX_FILES: usize = 1000;
/// Bytes of all the files one session keeps, so a program cannot fill the disk in steps.
pub const MAX_SESSION_BYTES: usize = 100 << 20;
/// The longest file name, in bytes (the common file system limit).
const MAX_NAME_BYTES: usize = 255;

/// What `recall(n)` finds.
#[derive(Debug, Clone, PartialEq)]
pub enum Recalled {
    /// Call `#n`'s value.
    Kept(Value),
    /// Call `#n`'s value is no longer kept (or it gave none): only the most recent results are.
    Evicted,
    /// No call `#n` gave a value in this session.
    Missing,
}

impl Recalled {
    /// The error a program sees when there is no value.
    pub fn message(&self, seq: u32) -> Option<String> {
        match self {
            Recalled::Kept(_) => None,
            Recalled::Evicted => Some(format!(
                "recall({seq}): the result of call #{seq} is no longer kept (a session keeps the last \
                 {KEEP_RESULTS} results, {} MB at most) or the call gave none",
                KEEP_RESULT_BYTES >> 20
            )),
            Recalled::Missing => Some(format!(
                "recall({seq}): no call #{seq} gave a result in this session"
            )),
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
}

#[derive(Debug, Default)]
struct Results {
    kept: VecDeque<(u32, Value, usize)>,
    bytes: usize,
    /// The highest call number whose result was dropped, so `recall` can tell evicted from never seen.
    evicted_up_to: u32,
}

#[derive(Debug, Default)]
struct Saved {
    /// The session directory, opened once without following symlinks.
    dir: Option<OwnedFd>,
    /// Names saved (as `saveFile` returned their paths) and their sizes.
    names: BTreeMap<String, usize>,
}

impl CodeSession {
    /// `files`: the directory this session's files go to (created on first save), or `None` for no files.
    pub fn new(files: Option<PathBuf>) -> Self {
        Self {
            files,
            next: AtomicU32::new(1),
            results: Mutex::new(Results::default()),
            saved: Mutex::new(Saved::default()),
        }
    }

    /// Takes the next call number (`#n`, from 1), also for calls that run at the same time.
    pub fn reserve(&self) -> u32 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// Keeps call `seq`'s value for `recall`, dropping the oldest past the bounds.
    pub fn record(&self, seq: u32, value: Value) {
        let size = serde_json::to_vec(&value).map_or(usize::MAX, |v| v.len());
        let mut results = self.results.lock().unwrap_or_else(|p| p.into_inner());
        if size > KEEP_RESULT_BYTES {
            results.evicted_up_to = results.evicted_up_to.max(seq);
            return;
        }
        results.kept.push_back((seq, value, size));
        results.bytes += size;
        while results.kept.len() > KEEP_RESULTS || results.bytes > KEEP_RESULT_BYTES {
            let Some((old, _, old_size)) = results.kept.pop_front() else {
                break;
            };
            results.bytes -= old_size;
            results.evicted_up_to = results.evicted_up_to.max(old);
        }
    }

    /// `recall(n)`: the value call `#n` gave, with no new call.
    pub fn recall(&self, seq: u32) -> Option<Value> {
        match self.lookup(seq) {
            Recalled::Kept(value) => Some(value),
            Recalled::Evicted | Recalled::Missing => None,
        }
    }

    /// `recall(n)` with why there is no value.
    pub fn lookup(&self, seq: u32) -> Recalled {
        let results = self.results.lock().unwrap_or_else(|p| p.into_inner());
        match results.kept.iter().find(|(n, _, _)| *n == seq) {
            Some((_, value, _)) => Recalled::Kept(value.clone()),
            None if seq <= results.evicted_up_to => Recalled::Evicted,
            None => Recalled::Missing,
        }
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
                "saveFile: this session has saved its limit of {MAX_FILES} files"
            ));
        }
        let total: usize = saved.names.values().sum::<usize>() - replaced.unwrap_or(0) + data.len();
        if total > MAX_SESSION_BYTES {
            return Err(format!(
                "saveFile: this session's files would take {total} bytes, more than its limit of \
                 {MAX_SESSION_BYTES}; save less, or overwrite a file already saved"
            ));
        }
        let dir = match saved.dir.take() {
            Some(dir) => dir,
            None => files::open_dir(root).map_err(|e| format!("saveFile: {e}"))?,
        };
        let written =
            files::write(&dir, name, data.as_bytes()).map_err(|e| format!("saveFile: {e}"));
        saved.dir = Some(dir);
        written?;
        saved.names.insert(name.to_owned(), data.len());
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
