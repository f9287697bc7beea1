//! Each client session's code state (call numbers for `recall`, saved files), created on its first run and
//! dropped when the session closes, charged to its identity's shares (`bounds`).
//!
//! Files go under the workspace's state directory, never the workspace: `code-files/<pid>.<nonce>/<session>`,
//! one directory per gateway process, so two gateways of one workspace never delete each other's files. A
//! session's directory goes when the session does; the process's directory when the gateway does; and what a
//! gateway that died left behind (its process is gone) is deleted by the next one to start a session.

use super::bounds::Bounds;
use crate::stages::Stages;
use codemode::{CodeSession, Shares};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

pub(crate) struct Sessions {
    by_id: Mutex<HashMap<String, Arc<CodeSession>>>,
    /// What identities may take of workers, calls, memory and disk.
    pub(crate) bounds: Bounds,
    /// This process's directory of session files, settled on first use (`None`: no state directory).
    root: OnceLock<Option<PathBuf>>,
}

impl Default for Sessions {
    fn default() -> Self {
        Self {
            by_id: Mutex::default(),
            bounds: Bounds::default(),
            root: OnceLock::new(),
        }
    }
}

impl Sessions {
    /// The code state of session `id`, serving `identity` (a run with no session gets its own, which nothing
    /// else shares and which ends with the run).
    pub(crate) fn get(&self, gw: &Stages, id: Option<&str>, identity: &str) -> Arc<CodeSession> {
        let root = self.root(gw);
        let shares = Shares {
            identity: identity.to_owned(),
            disk: Arc::clone(&self.bounds.disk),
            memory: Arc::clone(&self.bounds.memory),
        };
        let new = |id: &str| {
            let files = root.map(|r| r.join(id));
            Arc::new(CodeSession::with_shares(files, shares.clone()))
        };
        let Some(id) = id else {
            return new(&crate::ids::trace_id());
        };
        let mut by_id = self.by_id.lock().unwrap_or_else(|p| p.into_inner());
        Arc::clone(by_id.entry(id.to_owned()).or_insert_with(|| new(id)))
    }

    /// Session `id` closed: its results are no longer recalled, and its files are deleted once no run of it
    /// is still going.
    pub(crate) fn forget(&self, id: &str) {
        let gone = {
            let mut by_id = self.by_id.lock().unwrap_or_else(|p| p.into_inner());
            by_id.remove(id)
        };
        // Dropped outside the lock: deleting files takes system calls.
        drop(gone);
    }

    fn root(&self, gw: &Stages) -> Option<&Path> {
        self.root
            .get_or_init(|| {
                let files = gw.state.as_ref()?.namespace().dir().join("code-files");
                sweep(&files);
                let nonce = crate::ids::trace_id();
                Some(files.join(format!("{}.{nonce}", std::process::id())))
            })
            .as_deref()
    }
}

impl Drop for Sessions {
    fn drop(&mut self) {
        let by_id = self.by_id.get_mut().unwrap_or_else(|p| p.into_inner());
        by_id.clear();
        if let Some(Some(root)) = self.root.get() {
            // Empty once every session's files are gone; anything else there stays for the next sweep.
            let _ = std::fs::remove_dir(root);
        }
    }
}

/// Deletes the directories of gateway processes that no longer run (`<pid>.<nonce>`): their sessions ended
/// with them. A directory named any other way is left alone.
fn sweep(files: &Path) {
    let Ok(entries) = std::fs::read_dir(files) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.split_once('.'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        // `remove_dir_all` removes a symlink itself, never what it points to.
        if let Err(e) = std::fs::remove_dir_all(entry.path()) {
            tracing::warn!(dir = %entry.path().display(), "files of an ended gateway were not deleted: {e}");
        }
    }
}
