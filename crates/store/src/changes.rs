//! A cheap "may anything have changed?" signal, so a caller waiting on approval rows re-reads them only when they
//! may differ instead of on every tick.
//!
//! Two counters together see every write: SQLite's `PRAGMA data_version`, which moves when another connection
//! commits (another process such as the admin CLI or the watch terminal, or another handle in this process), and
//! this connection's own count of rows written (`total_changes`), which `data_version` deliberately leaves alone.
//! The signal covers the whole database, not approvals alone: an audit-head update or a reporting event also
//! moves it. A false "changed" costs one row read; a missed change would leave a call waiting until its deadline,
//! so the signal errs on the side of "changed". This module reads no rows and decides nothing.

use crate::error::Result;
use crate::handle::Store;

/// Where a handle last looked: compare with `Store::approvals_changed_since` (or `ChangeFeed::changed_since`).
/// Opaque to callers; what its two parts count is the backend's own (`from_parts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChangeMark {
    /// `PRAGMA data_version` of this connection: moves on commits by any other connection.
    others: i64,
    /// Rows this connection has inserted, updated or deleted since it opened.
    own: u64,
}

impl ChangeMark {
    /// A mark from a backend's own counters: two marks of one handle are equal only when nothing changed in
    /// between as that handle can tell (for SQLite: commits by others, rows written by itself).
    pub const fn from_parts(others: i64, own: u64) -> Self {
        Self { others, own }
    }
}

impl Store {
    /// Where the database stands now, as this handle sees it. Take it before reading what you will wait on, so a
    /// change between the read and the wait is not missed.
    pub fn change_mark(&self) -> Result<ChangeMark> {
        let others: i64 = self
            .conn
            .query_row("PRAGMA data_version", [], |r| r.get(0))?;
        Ok(ChangeMark::from_parts(others, self.rows_written()))
    }

    /// Rows this handle has inserted, updated or deleted since it opened: compare before and after a piece of
    /// work to learn whether it wrote anything (what `data_version` does not show this handle).
    pub fn rows_written(&self) -> u64 {
        self.conn.total_changes()
    }

    /// Whether any approval may have changed since `mark` — a commit by any other connection, or any row written
    /// through this handle — and moves `mark` to now. Over-approximates (any table counts); never misses a commit.
    /// Costs one pragma, no row read.
    pub fn approvals_changed_since(&self, mark: &mut ChangeMark) -> Result<bool> {
        let now = self.change_mark()?;
        let changed = now != *mark;
        *mark = now;
        Ok(changed)
    }
}

#[cfg(test)]
mod tests {
    use crate::{Namespace, Store, Timestamp};
    use serde_json::json;

    fn open(dir: &tempfile::TempDir) -> Store {
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        Store::open(&Namespace::open(&dir.path().join("state"), &ws).unwrap()).unwrap()
    }

    fn request(store: &mut Store) -> String {
        let now = Timestamp::now();
        store
            .create_request("t", &json!({"tool": "x"}), now, now.plus_millis(60_000))
            .unwrap()
            .id
    }

    #[test]
    fn approval_by_another_connection_is_seen_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut gateway = open(&dir);
        let mut admin = open(&dir);
        let id = request(&mut gateway);
        let mut mark = gateway.change_mark().unwrap();
        assert!(!gateway.approvals_changed_since(&mut mark).unwrap());
        // Reads, here or elsewhere, change nothing.
        gateway.get_request(&id, Timestamp::now()).unwrap();
        admin.get_request(&id, Timestamp::now()).unwrap();
        assert!(!gateway.approvals_changed_since(&mut mark).unwrap());
        admin.approve(&id, "operator", Timestamp::now()).unwrap();
        assert!(gateway.approvals_changed_since(&mut mark).unwrap());
        assert!(
            !gateway.approvals_changed_since(&mut mark).unwrap(),
            "the mark moved on"
        );
    }

    #[test]
    fn own_approval_writes_are_seen_although_data_version_ignores_them() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = open(&dir);
        let id = request(&mut store);
        let mut mark = store.change_mark().unwrap();
        store.approve(&id, "elicitation", Timestamp::now()).unwrap();
        assert!(store.approvals_changed_since(&mut mark).unwrap());
        let second = request(&mut store);
        assert!(store.approvals_changed_since(&mut mark).unwrap());
        store.cancel(&second, "gone", Timestamp::now()).unwrap();
        assert!(store.approvals_changed_since(&mut mark).unwrap());
    }

    #[test]
    fn a_refused_transition_is_not_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = open(&dir);
        let id = request(&mut store);
        store.reject(&id, "operator", Timestamp::now()).unwrap();
        let mut mark = store.change_mark().unwrap();
        assert!(store.approve(&id, "late", Timestamp::now()).is_err());
        assert!(!store.approvals_changed_since(&mut mark).unwrap());
    }

    #[test]
    fn a_mark_taken_before_a_commit_sees_it_even_if_nobody_looked_in_between() {
        let dir = tempfile::tempdir().unwrap();
        let mut gateway = open(&dir);
        let mut admin = open(&dir);
        let id = request(&mut gateway);
        let mark = gateway.change_mark().unwrap();
        admin.reject(&id, "operator", Timestamp::now()).unwrap();
        // Two commits elsewhere between looks still read as changed (the counter only moves forward).
        let other = request(&mut admin);
        admin.cancel(&other, "gone", Timestamp::now()).unwrap();
        let mut later = mark;
        assert!(gateway.approvals_changed_since(&mut later).unwrap());
    }
}
