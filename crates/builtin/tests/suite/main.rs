//! Integration tests for the built-in tools; hostile tests are named after the attack they try.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::new_without_default)]

mod confinement;
mod files;
mod git;
mod locks;
mod race;
mod shell;

use std::path::{Path, PathBuf};

use builtin::{Builtin, BuiltinConfig, ToolOutcome};
use serde_json::Value;

/// A workspace `ws` inside a private parent directory, so tests can place files beside it ("outside").
pub struct Fixture {
    pub parent: tempfile::TempDir,
    pub root: PathBuf,
    pub tools: Builtin,
}

impl Fixture {
    pub fn new() -> Self {
        Self::with(|_| {})
    }

    pub fn with(adjust: impl FnOnce(&mut BuiltinConfig)) -> Self {
        let parent = tempfile::tempdir().unwrap();
        let root = parent.path().join("ws");
        std::fs::create_dir(&root).unwrap();
        let root = std::fs::canonicalize(root).unwrap();
        let mut config = BuiltinConfig::new(&root);
        adjust(&mut config);
        let tools = Builtin::new(config).unwrap();
        Self {
            parent,
            root,
            tools,
        }
    }

    pub fn outside(&self) -> PathBuf {
        std::fs::canonicalize(self.parent.path()).unwrap()
    }

    pub fn call(&self, name: &str, args: Value) -> ToolOutcome {
        self.tools.call_blocking(name, args).unwrap()
    }

    pub fn write(&self, rel: &str, content: &str) {
        let path = self.root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
}

/// Asserts a refusal with the given error code.
pub fn assert_refused(outcome: &ToolOutcome, code: &str) {
    assert_eq!(outcome.outcome, "REFUSED", "{}", outcome.structured);
    assert_eq!(
        outcome.structured["error"]["code"], code,
        "{}",
        outcome.structured
    );
    assert!(outcome.is_error);
}

pub fn read_to_string(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}
