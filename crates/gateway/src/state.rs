//! toolgate's durable state as the gateway uses it: the workspace's namespace under the trusted state root, its
//! SQLite store (pins, approvals, session grants, reporting) and its audit log.
//!
//! Store calls are short synchronous SQLite statements behind one mutex; the audit log is append-only and never
//! blocks a call (its failures are counted, not raised).

use audit::{AuditEvent, AuditLog};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use store::{Namespace, StateRootInputs, Store};

pub struct State {
    namespace: Namespace,
    store: Mutex<Store>,
    audit: AuditLog,
}

impl State {
    /// Opens (creating on first use) the namespace of `workspace` under the state root that
    /// `TOOLGATE_STATE_DIR` / `XDG_STATE_HOME` / `HOME` select.
    pub fn open(workspace: &Path) -> Result<Self, String> {
        let root = state_root()?;
        Self::open_in(&root, workspace)
    }

    pub fn open_in(root: &Path, workspace: &Path) -> Result<Self, String> {
        let namespace = Namespace::open(root, workspace)
            .map_err(|e| format!("state for {}: {e}", workspace.display()))?;
        let store =
            Store::open(&namespace).map_err(|e| format!("cannot open the state database: {e}"))?;
        let audit = AuditLog::new(namespace.dir());
        let mut store = store;
        // Reporting keeps metadata only, and not forever: 30 days and 100,000 events, whichever is less.
        let retention = store::Retention {
            max_age_days: Some(30),
            max_events: Some(100_000),
        };
        if let Err(e) = store.apply_retention(&retention, store::Timestamp::now()) {
            tracing::warn!("reporting retention failed: {e}");
        }
        Ok(Self {
            namespace,
            store: Mutex::new(store),
            audit,
        })
    }

    pub fn namespace(&self) -> &Namespace {
        &self.namespace
    }

    /// Runs `f` with the store. Keep `f` short: it holds the lock.
    pub fn store<T>(&self, f: impl FnOnce(&mut Store) -> T) -> T {
        let mut store = self.store.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut store)
    }

    /// Appends to the audit log; a failure is counted by the log and logged here, never raised.
    pub fn audit(&self, event: &AuditEvent) {
        if let Err(e) = self.audit.record(event) {
            tracing::warn!("audit write failed ({} so far): {e}", self.audit.failures());
        }
    }

    /// The newest `n` audit records (already redacted when written).
    pub fn audit_tail(&self, n: usize) -> Vec<serde_json::Value> {
        self.audit.tail(n).unwrap_or_default()
    }

    pub fn audit_failures(&self) -> u64 {
        self.audit.failures()
    }
}

/// The state root for this process's environment.
pub fn state_root() -> Result<PathBuf, String> {
    store::resolve_state_root(&StateRootInputs::from_process_env())
        .map_err(|e| format!("state root: {e}"))
}
