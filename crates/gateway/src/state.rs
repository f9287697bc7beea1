//! toolgate's durable state as the gateway uses it: the workspace's namespace under the trusted state root, its
//! store (pins, approvals, session grants, reporting, the audit witness, the change feed) and its audit log.
//!
//! The store is a `store::StateStore` (`Arc<dyn …>`): SQLite in the namespace by default (`open*`), any other
//! backend through `open_on`. Nothing here knows which one it holds.
//!
//! Approvals and pins are written synchronously: they decide what runs. Audit events and reporting events are
//! written behind the calls by one writer thread (`write_behind`), in order, in batches. A call waits for them
//! only when the queue is full (backpressure, never loss); an audit log that cannot be written, or whose end is
//! short of the head recorded in the database, shows in `audit_problem`, and the gateway refuses calls while it
//! does. The audit log's witness (head and anchors) lives in the database, and, when the operator names one, in
//! a file outside the state root as well (`outside_witness`); maintenance goes through here so both follow every
//! prune and recovery.

use crate::error::Error;
use crate::outside_witness::{combine, OutsideWitness};
use crate::state_chains::{adopt, database_witness};
use crate::wakeups::Wakeups;
use crate::write_behind::{Health, Record, Room, Taken, Writer};
mod queue_depth;
use audit::{AuditEvent, AuditLog, Head, PruneMode, PrunePlan, Recovery, VerifyReport, Witness};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, sync_channel, Sender};
use std::sync::Arc;
use std::time::Duration;
use store::{Namespace, ReportEvent, SqliteStore, StateRootInputs, StateStore, Timestamp};

/// Records waiting for the writer. Bounded: under a flood a caller waits for room (backpressure) rather than
/// memory growing or a record being lost.
const WRITE_BEHIND_CAPACITY: usize = 8192;

/// How long a record waits for room before the writer counts as stalled and calls are refused. The writer takes
/// a full queue in well under a second (docs/BENCHMARKS.md), so only a writer that is stuck waits this long.
const WRITE_BEHIND_WAIT: Duration = Duration::from_secs(5);

pub struct State {
    namespace: Namespace,
    store: Arc<dyn StateStore>,
    audit: Arc<AuditLog>,
    /// The witness file outside the state root, when the config names one.
    outside: Option<Arc<OutsideWitness>>,
    /// Unbounded itself; `room` bounds it.
    writer: Sender<Record>,
    room: Arc<Room>,
    /// Reporting events that could not be committed.
    dropped: Arc<AtomicU64>,
    /// Records whose caller had to wait for room in the queue.
    waited: AtomicU64,
    health: Arc<Health>,
    /// Tells held calls when the store may have changed.
    wakeups: Wakeups,
    /// Whether reporting events are queued (`set_reporting`); audit events always are.
    reporting: AtomicBool,
    #[cfg(test)]
    pause: crate::write_behind::Pause,
}

fn apply_retention(store: &dyn StateStore, retention: &store::Retention) {
    if let Err(e) = store.apply_retention(retention, store::Timestamp::now()) {
        tracing::warn!("reporting retention failed: {e}");
    }
}

impl State {
    /// Opens (creating on first use) the namespace of `workspace` under the state root that
    /// `TOOLGATE_STATE_DIR` / `XDG_STATE_HOME` / `HOME` select.
    pub fn open(workspace: &Path) -> Result<Self, Error> {
        let root = state_root()?;
        Self::open_in(&root, workspace)
    }

    pub fn open_in(root: &Path, workspace: &Path) -> Result<Self, Error> {
        Self::open_with_queue(root, workspace, WRITE_BEHIND_CAPACITY, WRITE_BEHIND_WAIT)
    }

    /// Like `open_in`, with the audit chain also witnessed in the file `witness` (outside the state root).
    pub fn open_witnessed(root: &Path, workspace: &Path, witness: &Path) -> Result<Self, Error> {
        Self::open_full(
            root,
            workspace,
            WRITE_BEHIND_CAPACITY,
            WRITE_BEHIND_WAIT,
            Some(witness),
        )
    }

    pub(crate) fn open_with_queue(
        root: &Path,
        workspace: &Path,
        capacity: usize,
        wait: Duration,
    ) -> Result<Self, Error> {
        Self::open_full(root, workspace, capacity, wait, None)
    }

    /// Like `open_in` (with a witness file when `witness` names one), on the backend `open` opens for the
    /// namespace. It is called twice: once for the calls' handle and once for the audit writer's, so the writer's
    /// batches never wait behind a call's read.
    pub fn open_on(
        root: &Path,
        workspace: &Path,
        witness: Option<&Path>,
        open: &OpenStore<'_>,
    ) -> Result<Self, Error> {
        Self::open_chain(root, workspace, witness, open, "")
    }

    /// Like `open_on`, as the replica `chain` of several sharing the backend: its audit log is
    /// `audit-CHAIN.jsonl` in the namespace and its witness is that chain's (the backend handle `open` returns
    /// must witness the same chain). `""` is the namespace's one log.
    pub fn open_chain(
        root: &Path,
        workspace: &Path,
        witness: Option<&Path>,
        open: &OpenStore<'_>,
        chain: &str,
    ) -> Result<Self, Error> {
        let queue = (WRITE_BEHIND_CAPACITY, WRITE_BEHIND_WAIT);
        Self::open_any(root, workspace, queue, witness, open, chain)
    }

    fn open_full(
        root: &Path,
        workspace: &Path,
        capacity: usize,
        wait: Duration,
        witness: Option<&Path>,
    ) -> Result<Self, Error> {
        Self::open_any(root, workspace, (capacity, wait), witness, &open_sqlite, "")
    }

    fn open_any(
        root: &Path,
        workspace: &Path,
        (capacity, wait): (usize, Duration),
        witness: Option<&Path>,
        open: &OpenStore<'_>,
        chain: &str,
    ) -> Result<Self, Error> {
        let namespace = Namespace::open(root, workspace).map_err(|why| Error::Namespace {
            workspace: workspace.display().to_string(),
            why,
        })?;
        let open = || open(&namespace).map_err(Error::Database);
        let store = open()?;
        // Reporting keeps metadata only, and not forever: unless the config says otherwise (`set_reporting`), 30
        // days and 100,000 events, whichever is less.
        apply_retention(&*store, &store::Retention::DEFAULT);
        let audit = Arc::new(AuditLog::for_chain(namespace.dir(), chain));
        let mut expected = match store.audit_head().map_err(Error::AuditHead)? {
            Some(h) => Some(Head {
                seq: h.seq,
                hash: h.hash,
            }),
            None => adopt(&audit, &*store),
        };
        let outside = match witness {
            Some(path) => {
                let (outside, head) =
                    open_outside(path, (&namespace, chain), &*store, expected.clone())?;
                expected = head;
                Some(Arc::new(outside))
            }
            None => None,
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
        let (writer, queue) = channel();
        let room = Arc::new(Room::new(capacity, wait, Arc::clone(&health)));
        #[cfg(test)]
        let pause = crate::write_behind::Pause::default();
        let behind = Writer {
            log: Arc::clone(&audit),
            store: open()?,
            dropped: Arc::clone(&dropped),
            health: Arc::clone(&health),
            expected,
            outside: outside.clone(),
            capacity,
            room: Arc::clone(&room),
            #[cfg(test)]
            pause: pause.clone(),
        };
        std::thread::Builder::new()
            .name("toolgate-audit".into())
            .spawn(move || behind.run(&queue))
            .map_err(Error::Writer)?;
        Ok(Self {
            namespace,
            store,
            audit,
            outside,
            writer,
            room,
            dropped,
            waited: AtomicU64::new(0),
            health,
            wakeups: Wakeups::default(),
            reporting: AtomicBool::new(true),
            #[cfg(test)]
            pause,
        })
    }

    /// Stalls the writer before its next write (`true`) or lets it go on, as a disk that hangs and recovers would.
    #[cfg(test)]
    pub(crate) fn stall_writer(&self, on: bool) {
        self.pause.set(on);
    }

    pub fn namespace(&self) -> &Namespace {
        &self.namespace
    }

    /// Runs `f` with the store. Anything `f` wrote (an elicitation answer, a cancellation) wakes the held calls at
    /// once rather than at the watcher's next look. Each store call is one atomic step of its own: `f` is not a
    /// transaction.
    pub fn store<T>(&self, f: impl FnOnce(&dyn StateStore) -> T) -> T {
        let before = self.store.own_writes();
        let out = f(&*self.store);
        if self.store.own_writes() != before {
            self.wakeups.wake();
        }
        out
    }

    /// The store itself, for a caller that keeps a handle (a thread of its own).
    pub fn store_handle(&self) -> Arc<dyn StateStore> {
        Arc::clone(&self.store)
    }

    /// The wake-up signal of held calls.
    pub(crate) fn wakeups(&self) -> &Wakeups {
        &self.wakeups
    }

    /// Queues an audit event for the writer; waits only when the queue is full.
    pub fn audit(&self, event: AuditEvent) {
        self.queue(Record::Audit(Box::new(event)));
    }

    /// Queues a reporting event for the writer; waits only when the queue is full.
    pub fn report(&self, event: ReportEvent) {
        if self.reporting.load(Ordering::Relaxed) {
            self.queue(Record::Report(Box::new(event)));
        }
    }

    /// The config's reporting: whether reporting events are kept at all (the audit log is kept regardless), and
    /// how long. A retention longer than the default keeps what the default would have pruned only from now on.
    pub fn set_reporting(&self, enabled: bool, retention: store::Retention) {
        self.reporting.store(enabled, Ordering::Relaxed);
        if retention != store::Retention::DEFAULT {
            apply_retention(&*self.store, &retention);
        }
    }

    fn queue(&self, record: Record) {
        // Backpressure: the caller waits for room (bounded) rather than a record being lost. On a multi-threaded
        // runtime the wait moves this worker's other tasks elsewhere first.
        let take = || self.room.take();
        let taken = match tokio::runtime::Handle::try_current() {
            Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(take)
            }
            _ => take(),
        };
        match taken {
            Taken::AtOnce => {}
            Taken::Waited => {
                let n = self.waited.fetch_add(1, Ordering::Relaxed) + 1;
                if n == 1 || n % 1000 == 0 {
                    tracing::warn!("audit writer is behind; {n} records waited for room so far");
                }
            }
            Taken::Stalled => {
                self.waited.fetch_add(1, Ordering::Relaxed);
                tracing::error!(
                    "{}; calls are refused until it catches up (no record is dropped)",
                    self.audit_problem().unwrap_or_default()
                );
            }
        }
        if self.writer.send(record).is_err() {
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

    /// What the audit log is checked against: the head recorded as written and every anchor recorded; with a
    /// witness file, the higher head of the two and the file's anchors alone.
    pub fn audit_witness(&self) -> Result<Witness, Error> {
        let database = self.store(database_witness).map_err(Error::AuditWitness)?;
        match &self.outside {
            None => Ok(database),
            Some(w) => {
                let recorded = w.read().map_err(|e| Error::OutsideWitness {
                    path: w.path().display().to_string(),
                    why: e,
                })?;
                Ok(combine(database, recorded))
            }
        }
    }

    /// The witness file outside the state root, if one is kept.
    pub fn outside_witness(&self) -> Option<&OutsideWitness> {
        self.outside.as_deref()
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
            .map_err(|e| audit::Error::Io(std::io::Error::other(e.to_string())))?;
        // Before the pruned or recovered log replaces the old one: an anchor the file never saw fails verification.
        if let Some(w) = &self.outside {
            w.record_anchor(&a.hash).map_err(audit::Error::Io)?;
        }
        Ok(())
    }
}

impl Drop for State {
    /// A command that wrote through the state (an approval decision) must not exit before its record is down.
    fn drop(&mut self) {
        self.flush();
    }
}

/// Opens the witness file for this namespace's log. A file new to the log adopts the database's witness as it
/// stands (its head and every anchor); the head the log must then reach is the higher of the two.
fn open_outside(
    path: &Path,
    (namespace, chain): (&Namespace, &str),
    store: &dyn StateStore,
    database_head: Option<Head>,
) -> Result<(OutsideWitness, Option<Head>), Error> {
    let failed = |why| Error::OutsideWitness {
        path: path.display().to_string(),
        why,
    };
    let mut log = namespace
        .dir()
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !chain.is_empty() {
        log = format!("{log}/{chain}");
    }
    let outside = OutsideWitness::open(path, &log).map_err(failed)?;
    let recorded = outside.read().map_err(failed)?;
    if !recorded.known {
        let anchors = store.audit_anchors().map_err(Error::AuditWitness)?;
        for a in anchors {
            outside.record_anchor(&a.hash).map_err(failed)?;
        }
        if let Some(h) = &database_head {
            outside.record_head(h).map_err(failed)?;
        }
    }
    if outside.append_only() != Some(true) {
        tracing::warn!(
            "the audit witness {} is not append-only: a process of this user can rewrite it (make it so with              `sudo chattr +a {}`)",
            path.display(),
            path.display()
        );
    }
    let head = combine(
        Witness {
            head: database_head,
            anchors: Vec::new(),
        },
        recorded,
    )
    .head;
    Ok((outside, head))
}

/// Opens a namespace's store: one handle of a backend (`State::open_on`).
pub type OpenStore<'a> =
    dyn Fn(&Namespace) -> Result<Arc<dyn StateStore>, store::Error> + Sync + 'a;

/// The default backend: the namespace's SQLite database.
fn open_sqlite(namespace: &Namespace) -> Result<Arc<dyn StateStore>, store::Error> {
    Ok(Arc::new(SqliteStore::open(namespace)?))
}

/// The state root for this process's environment.
pub fn state_root() -> Result<PathBuf, Error> {
    store::resolve_state_root(&StateRootInputs::from_process_env()).map_err(Error::StateRoot)
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
