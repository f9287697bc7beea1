//! toolgate's durable state as the gateway uses it: the workspace's namespace under the trusted state root, its
//! SQLite store (pins, approvals, session grants, reporting) and its audit log.
//!
//! Approvals and pins are written synchronously: they decide what runs. Audit events and reporting events are
//! written behind the calls by one writer thread (`write_behind`), in order, in batches. A call waits for them
//! only when the queue is full (backpressure, never loss); an audit log that cannot be written, or whose end is
//! short of the head recorded in the database, shows in `audit_problem`, and the gateway refuses calls while it
//! does. The audit log's witness (head and anchors) lives in the database, and maintenance goes through here so
//! the witness follows every prune and recovery.

use crate::error::Error;
use crate::write_behind::{Health, Record, Writer};
use audit::{AuditEvent, AuditLog, Head, PruneMode, PrunePlan, Recovery, VerifyReport, Witness};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use store::{Namespace, ReportEvent, StateRootInputs, Store, Timestamp};

/// Records waiting for the writer. Bounded: under a flood a caller waits for room (backpressure) rather than
/// memory growing or a record being lost.
const WRITE_BEHIND_CAPACITY: usize = 8192;

pub struct State {
    namespace: Namespace,
    store: Mutex<Store>,
    audit: Arc<AuditLog>,
    writer: SyncSender<Record>,
    /// Reporting events that could not be committed.
    dropped: Arc<AtomicU64>,
    /// Records whose caller had to wait for room in the queue.
    waited: AtomicU64,
    health: Arc<Health>,
}

impl State {
    /// Opens (creating on first use) the namespace of `workspace` under the state root that
    /// `TOOLGATE_STATE_DIR` / `XDG_STATE_HOME` / `HOME` select.
    pub fn open(workspace: &Path) -> Result<Self, Error> {
        let root = state_root()?;
        Self::open_in(&root, workspace)
    }

    pub fn open_in(root: &Path, workspace: &Path) -> Result<Self, Error> {
        Self::open_with_capacity(root, workspace, WRITE_BEHIND_CAPACITY)
    }

    fn open_with_capacity(root: &Path, workspace: &Path, capacity: usize) -> Result<Self, Error> {
        let namespace = Namespace::open(root, workspace).map_err(|why| Error::Namespace {
            workspace: workspace.display().to_string(),
            why,
        })?;
        let open = || Store::open(&namespace).map_err(Error::Database);
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
        let expected = match store.audit_head().map_err(Error::AuditHead)? {
            Some(h) => Some(Head {
                seq: h.seq,
                hash: h.hash,
            }),
            None => adopt(&audit, &mut store),
        };
        // Checked before any call can run: a log cut, emptied or torn since the last run refuses calls from the
        // first one, not from the first failed write.
        let health = Arc::new(Health::default());
        if let Err(e) = audit.check_head(expected.as_ref()) {
            let problem = format!("audit log damaged: {e}");
            tracing::error!(
                "{problem}; calls are refused until it is repaired (`toolgate audit recover`)"
            );
            health.fail(problem);
        }
        let dropped = Arc::new(AtomicU64::new(0));
        let (writer, queue) = sync_channel(capacity);
        let behind = Writer {
            log: Arc::clone(&audit),
            store: open()?,
            dropped: Arc::clone(&dropped),
            health: Arc::clone(&health),
            expected,
            capacity,
        };
        std::thread::Builder::new()
            .name("toolgate-audit".into())
            .spawn(move || behind.run(&queue))
            .map_err(Error::Writer)?;
        Ok(Self {
            namespace,
            store: Mutex::new(store),
            audit,
            writer,
            dropped,
            waited: AtomicU64::new(0),
            health,
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

    /// Queues an audit event for the writer; waits only when the queue is full.
    pub fn audit(&self, event: &AuditEvent) {
        self.queue(Record::Audit(Box::new(event.clone())));
    }

    /// Queues a reporting event for the writer; waits only when the queue is full.
    pub fn report(&self, event: ReportEvent) {
        self.queue(Record::Report(Box::new(event)));
    }

    fn queue(&self, record: Record) {
        let record = match self.writer.try_send(record) {
            Ok(()) => return,
            Err(TrySendError::Full(record)) => record,
            Err(TrySendError::Disconnected(_)) => return self.writer_gone(),
        };
        // Backpressure: the caller waits for room rather than a record being lost. On a multi-threaded runtime the
        // wait moves this worker's other tasks elsewhere first.
        let n = self.waited.fetch_add(1, Ordering::Relaxed) + 1;
        if n == 1 || n % 1000 == 0 {
            tracing::warn!("audit writer is behind; {n} records waited for room so far");
        }
        let send = || self.writer.send(record);
        let sent = match tokio::runtime::Handle::try_current() {
            Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(send)
            }
            _ => send(),
        };
        if sent.is_err() {
            self.writer_gone();
        }
    }

    /// The writer thread ended (it only does if it panicked): nothing more can be written, so calls stop.
    fn writer_gone(&self) {
        if self.health.fail("the audit writer stopped".to_owned()) {
            tracing::error!("the audit writer stopped; calls are refused");
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

    /// Why audit records cannot be written now, if they cannot. While this is `Some`, calls are refused.
    pub fn audit_problem(&self) -> Option<String> {
        self.health.problem()
    }

    /// Audit appends that failed (each is retried, not lost) and reporting events that were not recorded.
    pub fn audit_failures(&self) -> u64 {
        self.audit.failures() + self.dropped.load(Ordering::Relaxed)
    }

    /// Records that waited for room in the writer's queue.
    pub fn audit_waits(&self) -> u64 {
        self.waited.load(Ordering::Relaxed)
    }

    /// The audit log of this namespace.
    pub fn audit_log(&self) -> &AuditLog {
        &self.audit
    }

    /// What the audit log is checked against: the head recorded as written and every anchor recorded.
    pub fn audit_witness(&self) -> Result<Witness, Error> {
        self.store(|s| {
            let head = s.audit_head()?.map(|h| Head {
                seq: h.seq,
                hash: h.hash,
            });
            let anchors = s.audit_anchors()?.into_iter().map(|a| a.hash).collect();
            Ok::<_, store::Error>(Witness { head, anchors })
        })
        .map_err(Error::AuditWitness)
    }

    /// Verifies the whole audit log against its witness.
    pub fn verify_audit(&self) -> Result<VerifyReport, Error> {
        self.flush();
        let witness = self.audit_witness()?;
        self.audit.verify_with(&witness).map_err(Error::AuditRead)
    }

    /// Prunes the audit log to its newest `keep` events, recording the new anchor in the witness first.
    pub fn prune_audit(&self, keep: u64, mode: PruneMode) -> Result<PrunePlan, Error> {
        self.flush();
        let witness = self.audit_witness()?;
        let now = Timestamp::now();
        self.audit
            .prune_witnessed(keep, mode, now.as_millis(), &witness, |a| {
                self.record_anchor(a, now)
            })
            .map_err(Error::AuditPrune)
    }

    /// Sets a damaged audit log aside and starts a new one continuing from the witnessed head; `None` when the
    /// log verifies and there is nothing to recover.
    pub fn recover_audit(&self) -> Result<Option<Recovery>, Error> {
        let witness = self.audit_witness()?;
        let now = Timestamp::now();
        self.audit
            .recover(&witness, now.as_millis(), |a| self.record_anchor(a, now))
            .map_err(Error::AuditRecover)
    }

    fn record_anchor(&self, a: &audit::Anchor, now: Timestamp) -> audit::Result<()> {
        self.store(|s| s.record_audit_anchor(&a.hash, a.next_seq, &a.prev, now))
            .map_err(|e| audit::Error::Io(std::io::Error::other(e.to_string())))
    }
}

impl Drop for State {
    /// A command that wrote through the state (an approval decision) must not exit before its record is down.
    fn drop(&mut self) {
        self.flush();
    }
}

/// The first time a state database meets a log (one written before the witness existed), the log is witnessed as
/// it is if its chain verifies: its anchor and its end become the witness. One full read, once. A log that does
/// not verify is left unwitnessed; the start check and `audit verify` report it.
fn adopt(audit: &AuditLog, store: &mut Store) -> Option<Head> {
    let report = audit.verify().ok().filter(VerifyReport::is_ok)?;
    let head = report.head?;
    let now = Timestamp::now();
    let adopted = (|| {
        if let Some(a) = &report.anchor {
            store.record_audit_anchor(&a.hash, a.next_seq, &a.prev, now)?;
        }
        store.advance_audit_head(
            &store::AuditHead {
                seq: head.seq,
                hash: head.hash.clone(),
            },
            now,
        )
    })();
    match adopted {
        Ok(()) => Some(head),
        Err(e) => {
            tracing::warn!("cannot record the audit log's witness: {e}");
            None
        }
    }
}

/// The state root for this process's environment.
pub fn state_root() -> Result<PathBuf, Error> {
    store::resolve_state_root(&StateRootInputs::from_process_env()).map_err(Error::StateRoot)
}

#[cfg(test)]
mod tests {
    use super::*;
    use audit::{EventKind, ProblemKind};
    use std::time::{Duration, Instant};

    fn open(dir: &tempfile::TempDir, capacity: usize) -> State {
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        State::open_with_capacity(&dir.path().join("state"), &ws, capacity).unwrap()
    }

    fn event(i: usize) -> AuditEvent {
        AuditEvent::new(EventKind::Decision, i as i64, &format!("t{i}"))
    }

    fn lines(state: &State) -> Vec<String> {
        std::fs::read_to_string(state.audit_log().path())
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn cut_to(state: &State, keep: usize) {
        let text: String = lines(state)[..keep]
            .iter()
            .map(|l| format!("{l}\n"))
            .collect();
        std::fs::write(state.audit_log().path(), text).unwrap();
    }

    /// The writer clears or sets the problem on its own schedule; wait for it, boundedly.
    fn eventually(state: &State, want_problem: bool) -> Option<String> {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let p = state.audit_problem();
            if p.is_some() == want_problem || Instant::now() > deadline {
                return p;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn audit_flood_past_the_queue_waits_instead_of_dropping() {
        let dir = tempfile::tempdir().unwrap();
        let state = open(&dir, 4);
        for i in 0..2_000 {
            state.audit(&event(i));
        }
        state.flush();
        assert_eq!(lines(&state).len(), 2_000, "every record is written");
        assert_eq!(state.audit_failures(), 0);
        assert!(state.verify_audit().unwrap().is_ok());
    }

    #[test]
    fn truncated_audit_log_is_caught_at_start_and_by_verify() {
        let dir = tempfile::tempdir().unwrap();
        let state = open(&dir, 16);
        for i in 0..3 {
            state.audit(&event(i));
        }
        state.flush();
        assert_eq!(state.audit_problem(), None);
        cut_to(&state, 1);
        drop(state);
        let state = open(&dir, 16);
        let problem = state.audit_problem().expect("refused from the start");
        assert!(problem.contains("sequence 3 was written"), "{problem}");
        let report = state.verify_audit().unwrap();
        assert_eq!(
            report.problem.unwrap().kind,
            ProblemKind::Truncated {
                witnessed: 3,
                last: 1
            }
        );
    }

    #[test]
    fn torn_audit_tail_refuses_calls_until_recovered() {
        let dir = tempfile::tempdir().unwrap();
        let state = open(&dir, 16);
        state.audit(&event(0));
        state.flush();
        let log_path = state.audit_log().path().to_path_buf();
        drop(state);
        let mut text = std::fs::read_to_string(&log_path).unwrap();
        text.push_str("{\"kind\":\"exec"); // a crash mid-write
        std::fs::write(&log_path, text).unwrap();
        let state = open(&dir, 16);
        assert!(state.audit_problem().is_some(), "a torn tail stops calls");
        let recovery = state.recover_audit().unwrap().expect("recovered");
        assert_eq!(recovery.anchor.next_seq, 2);
        assert_eq!(eventually(&state, false), None, "calls resume");
        state.audit(&event(1));
        state.flush();
        assert!(state.verify_audit().unwrap().is_ok());
    }

    #[test]
    fn audit_write_failure_while_running_holds_the_record_and_refuses_until_repaired() {
        let dir = tempfile::tempdir().unwrap();
        let state = open(&dir, 16);
        for i in 0..3 {
            state.audit(&event(i));
        }
        state.flush();
        cut_to(&state, 2);
        state.audit(&event(3));
        let problem = eventually(&state, true).expect("the failed write is published");
        assert!(problem.contains("audit write failed"), "{problem}");
        state.recover_audit().unwrap().expect("recovered");
        assert_eq!(eventually(&state, false), None);
        state.flush();
        // The record that could not be written at first is down now, after the recovery anchor.
        let all = lines(&state);
        assert_eq!(all.len(), 2, "{all:?}");
        assert!(all[1].contains("\"trace_id\":\"t3\""), "{all:?}");
        assert!(state.verify_audit().unwrap().is_ok());
    }

    #[test]
    fn log_pruned_before_the_witness_existed_is_adopted_not_reported_as_forged() {
        let dir = tempfile::tempdir().unwrap();
        let log_path = {
            let state = open(&dir, 16);
            state.audit_log().path().to_path_buf()
        };
        // Written and pruned by the library alone, as an older version did: no witness recorded.
        let log = AuditLog::new(log_path.parent().unwrap());
        for i in 0..4 {
            log.record(&event(i)).unwrap();
        }
        log.prune_keep_last(2, PruneMode::Apply, 1).unwrap();
        // A state database that never saw a head adopts the verified log, anchor included; without that, the
        // first new record would make the old anchor look forged.
        let state = open(&dir, 16);
        let report = state.verify_audit().unwrap();
        assert!(report.is_ok(), "{report}");
        state.audit(&event(9));
        state.flush();
        let report = state.verify_audit().unwrap();
        assert!(
            report.is_ok() && report.anchored && report.events == 3,
            "{report}"
        );
    }

    /// The wait for room works on both runtime flavours, from inside a task.
    async fn flood_from_a_task() {
        let dir = tempfile::tempdir().unwrap();
        let state = Arc::new(open(&dir, 2));
        let s = Arc::clone(&state);
        tokio::spawn(async move {
            for i in 0..300 {
                s.audit(&event(i));
            }
        })
        .await
        .unwrap();
        state.flush();
        assert_eq!(lines(&state).len(), 300);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn audit_flood_waits_on_a_multi_threaded_runtime() {
        flood_from_a_task().await;
    }

    #[tokio::test(flavor = "current_thread")]
    async fn audit_flood_waits_on_a_current_thread_runtime() {
        flood_from_a_task().await;
    }
}
