//! Shared fixtures: a temporary state root and workspace, and an opened store.

use std::path::PathBuf;

use serde_json::{json, Value};
use store::{Limits, Namespace, Store, Timestamp};
use tempfile::TempDir;

/// A state root and a workspace side by side in one temporary directory.
pub struct Env {
    pub _tmp: TempDir,
    pub state_root: PathBuf,
    pub workspace: PathBuf,
}

impl Env {
    pub fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let state_root = tmp.path().join("state");
        let workspace = tmp.path().join("ws");
        std::fs::create_dir(&workspace).unwrap();
        Self {
            _tmp: tmp,
            state_root,
            workspace,
        }
    }

    pub fn namespace(&self) -> Namespace {
        Namespace::open(&self.state_root, &self.workspace).unwrap()
    }

    pub fn store(&self) -> Store {
        Store::open(&self.namespace()).unwrap()
    }

    pub fn store_with(&self, limits: Limits) -> Store {
        Store::open_with_limits(&self.namespace(), limits).unwrap()
    }
}

pub const T0: Timestamp = Timestamp::from_millis(1_800_000_000_000);
pub const MINUTE: i64 = 60_000;
pub const DAY: i64 = 86_400_000;

pub fn snapshot() -> Value {
    json!({
        "tool": {"server": "toolgate", "name": "shell.run"},
        "arguments": {"argv": ["cargo", "test"], "cwd": "."},
        "definition_sha256": "ab".repeat(32),
    })
}
