//! toolgate's durable state as the gateway uses it: the workspace's namespace under the trusted state root, its
//! SQLite store (pins, approvals, session grants, reporting) and its audit log.
//!
//! Approvals and pins are written synchronously: they decide what runs. Audit events and reporting events are
//! written behind the calls by one writer thread, in order, in batches (one commit per batch): a call never
//! waits for them, and a failed or dropped write is counted, never raised.

use audit::{AuditEvent, AuditLog};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use store::{Namespace, ReportEvent, StateRootInputs, Store};

/// Records waiting for the writer. Bounded: under a flood the newest records are dropped (and counted) rather
/// than growing memory or slowing calls down.
const WRITE_BEHIND_CAPACITY: usize = 8192;
/// Records written per batch at most.
const BATCH: usize = 512;

enum Record {
    Audit(Box<AuditEvent>),
    Report(Box<ReportEvent>),
    /// Answered once everything queued before it is written.
    Flush(SyncSender<()>),
}

pub struct State {
    namespace: Namespace,
    store: Mutex<Store>,
    audit: Arc<AuditLog>,
    writer: SyncSender<Record>,
    dropped: Arc<AtomicU64>,
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
        let open =
            || Store::open(&namespace).map_err(|e| format!("cannot open the state database: {e}"));
        let mut store = open()?;
        // Reporting keeps metadata only, and not forever: 30 days and 100,000 events, whichever is less.
        let retention = store::Retention {
            max_age_days: Some(30),
            max_events: Some(100_000),
        };
        if let Err(e) = store.apply_retention(&retention, store::Timestamp::now()) {
            tracing::warn!("reporting retention failed: {e}");
        }
        let audit = Arc::new(AuditLog::new(namespace.dir()));
        let dropped = Arc::new(AtomicU64::new(0));
        let (writer, queue) = sync_channel(WRITE_BEHIND_CAPACITY);
        let (log, reports, count) = (Arc::clone(&audit), open()?, Arc::clone(&dropped));
        std::thread::Builder::new()
            .name("toolgate-audit".into())
            .spawn(move || write_behind(&queue, &log, reports, &count))
            .map_err(|e| format!("cannot start the audit writer: {e}"))?;
        Ok(Self {
            namespace,
            store: Mutex::new(store),
            audit,
            writer,
            dropped,
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

    /// Queues an audit event for the writer; never blocks.
    pub fn audit(&self, event: &AuditEvent) {
        self.queue(Record::Audit(Box::new(event.clone())));
    }

    /// Queues a reporting event for the writer; never blocks.
    pub fn report(&self, event: ReportEvent) {
        self.queue(Record::Report(Box::new(event)));
    }

    fn queue(&self, record: Record) {
        match self.writer.try_send(record) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                let n = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
                if n == 1 || n % 1000 == 0 {
                    tracing::warn!("audit/report writer is behind; {n} records dropped so far");
                }
            }
        }
    }

    /// Waits until everything queued so far is written (at shutdown, and before reading the log back).
    pub fn flush(&self) {
        let (done, wait) = sync_channel(1);
        if self.writer.send(Record::Flush(done)).is_ok() {
            let _ = wait.recv_timeout(std::time::Duration::from_secs(5));
        }
    }

    /// The newest `n` audit records (already redacted when written).
    pub fn audit_tail(&self, n: usize) -> Vec<serde_json::Value> {
        self.flush();
        self.audit.tail(n).unwrap_or_default()
    }

    /// Audit and report writes that failed or were dropped.
    pub fn audit_failures(&self) -> u64 {
        self.audit.failures() + self.dropped.load(Ordering::Relaxed)
    }
}

impl Drop for State {
    /// A command that wrote through the state (an approval decision) must not exit before its record is down.
    fn drop(&mut self) {
        self.flush();
    }
}

fn write_behind(queue: &Receiver<Record>, log: &AuditLog, mut reports: Store, dropped: &AtomicU64) {
    while let Ok(first) = queue.recv() {
        let mut batch = vec![first];
        while batch.len() < BATCH {
            match queue.try_recv() {
                Ok(r) => batch.push(r),
                Err(_) => break,
            }
        }
        let mut pending_audit = Vec::new();
        let mut pending_reports = Vec::new();
        let mut flushes = Vec::new();
        for record in batch {
            match record {
                Record::Audit(e) => pending_audit.push(*e),
                Record::Report(e) => pending_reports.push(*e),
                Record::Flush(done) => flushes.push(done),
            }
        }
        if !pending_audit.is_empty() {
            if let Err(err) = log.record_all(&pending_audit) {
                let n = log.failures();
                // Counted always; logged the first time and then rarely, so a broken disk cannot flood stderr.
                if n == pending_audit.len() as u64 || n % 1000 < pending_audit.len() as u64 {
                    tracing::warn!("audit write failed ({n} events so far): {err}");
                }
            }
        }
        if !pending_reports.is_empty() {
            if let Err(e) = reports.record_events(&pending_reports) {
                dropped.fetch_add(pending_reports.len() as u64, Ordering::Relaxed);
                tracing::warn!("reporting events not recorded: {e}");
            }
        }
        for done in flushes {
            let _ = done.send(());
        }
    }
}

/// The state root for this process's environment.
pub fn state_root() -> Result<PathBuf, String> {
    store::resolve_state_root(&StateRootInputs::from_process_env())
        .map_err(|e| format!("state root: {e}"))
}
