//! The writer thread behind the calls: audit events and reporting events, in order, in batches.
//!
//! Evidence is never dropped. An audit batch that cannot be written (I/O error, a lock held too long, a log whose
//! end is short of the head last written) is kept and retried, the failure is published in `Health` so calls are
//! refused while it lasts, and the thread stops taking new records once it holds a full queue's worth, so
//! producers wait (backpressure) instead of records being lost. Every audit batch written moves the witnessed head
//! in the state database forward. Reporting events are metrics, not evidence: a failed commit is counted.
//!
//! Producers wait for room (`Room`) at most a bounded time. A writer that takes nothing for that long (a disk that
//! hangs, a log locked by another process) is declared stalled: the record that waited is still queued, never
//! dropped, `Health` refuses calls until the writer has caught up, and records of calls already running are queued
//! without waiting (there are at most as many as calls in flight, since new calls are refused).
//! This module does not decide what to record (see `record`) nor refuse calls (the gateway reads `Health`).

use audit::{AuditEvent, AuditLog, Head};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use store::{AuditHead, ReportEvent, Timestamp};

/// Records written per batch at most.
const BATCH: usize = 512;
/// How often a failing log is tried again; short enough that calls resume soon after an administrator repairs it.
const RETRY: Duration = Duration::from_millis(250);
/// How long the writer lets records gather after the first one of a batch before it writes them. A batch pays
/// the log's lock, its head check, one write and the witness's commit once, whatever its size; without the
/// window every call woke the writer and paid them alone. Records are written behind the calls either way (a
/// call's answer never waits for this), a flush ends the window at once, and the queue's bound is unchanged.
const GATHER: Duration = Duration::from_millis(2);

pub(crate) enum Record {
    Audit(Box<AuditEvent>),
    Report(Box<ReportEvent>),
    /// Answered once everything queued before it is written.
    Flush(SyncSender<()>),
}

/// Whether audit records are being written; shared by the writer (which sets and clears it) and the calls (which
/// are refused while it holds a problem).
#[derive(Debug, Default)]
pub(crate) struct Health {
    /// Read on every call; the message behind it only when it is set.
    failing: AtomicBool,
    problem: Mutex<Option<String>>,
    /// Set by `Room` while the writer is stalled; independent of `problem`, which the writer sets and clears.
    stalled: AtomicBool,
    stall: Mutex<Option<String>>,
}

impl Health {
    /// A failed write names its cause, so it comes before the stall it leads to.
    pub(crate) fn problem(&self) -> Option<String> {
        if self.failing.load(Ordering::Acquire) {
            let problem = self.problem.lock().unwrap_or_else(|p| p.into_inner());
            if problem.is_some() {
                return problem.clone();
            }
        }
        if self.stalled.load(Ordering::Acquire) {
            return self.stall.lock().unwrap_or_else(|p| p.into_inner()).clone();
        }
        None
    }

    /// Records a problem; true when it is new (so it is logged once, not once per retry).
    pub(crate) fn fail(&self, problem: String) -> bool {
        let mut slot = self.problem.lock().unwrap_or_else(|p| p.into_inner());
        let new = slot.as_deref() != Some(problem.as_str());
        *slot = Some(problem);
        self.failing.store(true, Ordering::Release);
        new
    }

    fn clear(&self) -> bool {
        let mut slot = self.problem.lock().unwrap_or_else(|p| p.into_inner());
        self.failing.store(false, Ordering::Release);
        slot.take().is_some()
    }
}

/// Places for records between the producers and the writer. The channel itself is unbounded; this is what bounds
/// it: a producer takes a place before sending and the writer gives places back as it takes records.
#[derive(Debug)]
pub(crate) struct Room {
    capacity: usize,
    /// How long a producer waits for a place before the writer is declared stalled.
    wait: Duration,
    queued: Mutex<usize>,
    freed: Condvar,
    health: Arc<Health>,
}

/// How a producer got its place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Taken {
    /// There was room.
    AtOnce,
    /// The producer waited for room, and got it within the bound.
    Waited,
    /// The bound ran out: the record is queued all the same and calls are refused until the writer catches up.
    Stalled,
}

impl Room {
    pub(crate) fn new(capacity: usize, wait: Duration, health: Arc<Health>) -> Self {
        Self {
            capacity,
            wait,
            queued: Mutex::new(0),
            freed: Condvar::new(),
            health,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, usize> {
        self.queued.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records holding a place now.
    pub(crate) fn depth(&self) -> usize {
        *self.lock()
    }

    /// Takes a place for one record: at once while there is room (or while the writer is known stalled, so the
    /// calls already running are not each held for the whole bound), else after waiting at most `wait`. When the
    /// wait runs out the place is taken anyway, so the record is kept, and the writer is declared stalled.
    pub(crate) fn take(&self) -> Taken {
        let mut queued = self.lock();
        if *queued < self.capacity || self.health.stalled.load(Ordering::Acquire) {
            *queued += 1;
            return Taken::AtOnce;
        }
        let deadline = Instant::now() + self.wait;
        while *queued >= self.capacity && !self.health.stalled.load(Ordering::Acquire) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                let stall = format!(
                    "the audit writer took no record for {} ms with {} records queued (stalled)",
                    self.wait.as_millis(),
                    *queued
                );
                *self.health.stall.lock().unwrap_or_else(|p| p.into_inner()) = Some(stall);
                self.health.stalled.store(true, Ordering::Release);
                *queued += 1;
                return Taken::Stalled;
            }
            queued = self
                .freed
                .wait_timeout(queued, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        *queued += 1;
        Taken::Waited
    }

    /// The writer took `n` records. Once the queue is below its capacity again a stall is over.
    fn release(&self, n: usize) {
        if n == 0 {
            return;
        }
        let mut queued = self.lock();
        *queued = queued.saturating_sub(n);
        if *queued < self.capacity {
            if self.health.stalled.swap(false, Ordering::AcqRel) {
                tracing::warn!("the audit writer caught up; calls resume");
            }
            self.freed.notify_all();
        }
    }
}

pub(crate) struct Writer {
    pub log: Arc<AuditLog>,
    pub store: std::sync::Arc<dyn store::StateStore>,
    /// Reporting events that could not be committed.
    pub dropped: Arc<AtomicU64>,
    pub health: Arc<Health>,
    /// The head this writer last saw written (from the state database at start).
    pub expected: Option<Head>,
    /// The witness file outside the state root, which gets every head too.
    pub outside: Option<Arc<crate::outside_witness::OutsideWitness>>,
    /// Most audit events held while the log cannot be written; then producers wait.
    pub capacity: usize,
    pub room: Arc<Room>,
    /// Set by a test to stall the writer before it writes, as a disk that hangs would.
    #[cfg(test)]
    pub pause: Pause,
}

/// A test's switch that stalls the writer before each write while it is on.
#[cfg(test)]
#[derive(Clone, Default)]
pub(crate) struct Pause(Arc<(Mutex<bool>, Condvar)>);

#[cfg(test)]
impl Pause {
    pub(crate) fn set(&self, on: bool) {
        *self.0 .0.lock().unwrap_or_else(|p| p.into_inner()) = on;
        self.0 .1.notify_all();
    }

    fn wait_off(&self) {
        let mut on = self.0 .0.lock().unwrap_or_else(|p| p.into_inner());
        while *on {
            on = self.0 .1.wait(on).unwrap_or_else(|p| p.into_inner());
        }
    }
}

impl Writer {
    pub(crate) fn run(mut self, queue: &Receiver<Record>) {
        let mut held: Vec<AuditEvent> = Vec::new();
        let mut flushes: Vec<SyncSender<()>> = Vec::new();
        loop {
            let failing = self.health.problem().is_some();
            let mut reports = Vec::new();
            if held.len() < self.capacity {
                let first = if failing {
                    match queue.recv_timeout(RETRY) {
                        Ok(r) => Some(r),
                        Err(RecvTimeoutError::Timeout) => None,
                        Err(RecvTimeoutError::Disconnected) => break,
                    }
                } else {
                    match queue.recv() {
                        Ok(r) => Some(r),
                        Err(_) => break,
                    }
                };
                reports = self.gather(queue, first, failing, &mut held, &mut flushes);
            } else {
                std::thread::sleep(RETRY);
            }
            if held.is_empty() {
                if failing {
                    self.probe();
                }
                self.reports(&reports);
            } else if self.append(&held, &reports) {
                held.clear();
            } else {
                // The log is not written; the reporting events are metrics and are recorded all the same.
                self.reports(&reports);
            }
            if held.is_empty() {
                for done in flushes.drain(..) {
                    let _ = done.send(());
                }
            }
        }
        if !held.is_empty() {
            tracing::error!(
                "{} audit events could not be written before the writer stopped",
                held.len()
            );
        }
    }

    /// Takes `first` and whatever follows it within the gathering window (at once when the writer is failing,
    /// the batch is full or a flush waits), up to the batch and the held capacity; returns the reporting events.
    fn gather(
        &self,
        queue: &Receiver<Record>,
        first: Option<Record>,
        failing: bool,
        held: &mut Vec<AuditEvent>,
        flushes: &mut Vec<SyncSender<()>>,
    ) -> Vec<ReportEvent> {
        let mut reports = Vec::new();
        // Records that held a place in `Room` (flushes do not).
        let mut taken = 0;
        let mut next = first;
        let mut gathered = failing || next.is_none();
        loop {
            while let Some(record) = next {
                match record {
                    Record::Audit(e) => {
                        held.push(*e);
                        taken += 1;
                    }
                    Record::Report(e) => {
                        reports.push(*e);
                        taken += 1;
                    }
                    Record::Flush(done) => flushes.push(done),
                }
                let room = held.len() < self.capacity && taken < BATCH;
                next = if room { queue.try_recv().ok() } else { None };
            }
            let full = held.len() >= self.capacity || taken >= BATCH;
            if gathered || full || !flushes.is_empty() {
                break;
            }
            // Sleeping, not waiting on the queue: producers send without waking this thread.
            std::thread::sleep(GATHER);
            gathered = true;
            next = queue.try_recv().ok();
        }
        self.room.release(taken);
        reports
    }

    /// Writes the held events, then records `reports` and the new head in one commit; true when the events are
    /// down.
    fn append(&mut self, held: &[AuditEvent], reports: &[ReportEvent]) -> bool {
        #[cfg(test)]
        self.pause.wait_off();
        match self.log.append_checked(held, self.expected.as_ref()) {
            Ok(head) => {
                let witnessed = AuditHead {
                    seq: head.seq,
                    hash: head.hash.clone(),
                };
                if let Err(e) = self
                    .store
                    .record_written(reports, &witnessed, Timestamp::now())
                {
                    // The events are down; only the witness lags, which a later batch catches up.
                    self.dropped
                        .fetch_add(reports.len() as u64, Ordering::Relaxed);
                    tracing::warn!("cannot record the audit head and reporting events: {e}");
                }
                if let Some(w) = &self.outside {
                    if let Err(e) = w.record_head(&head) {
                        // The events are down; the next batch's head covers these as well.
                        tracing::warn!(
                            "cannot append to the audit witness {}: {e}",
                            w.path().display()
                        );
                    }
                }
                self.expected = Some(head);
                if self.health.clear() {
                    tracing::warn!("audit log writable again; calls resume");
                }
                true
            }
            Err(err) => {
                let problem = format!("audit write failed: {err}");
                if self.health.fail(problem.clone()) {
                    tracing::error!(
                        "{problem}; calls are refused until it is repaired (`toolgate audit verify`, \
                         `toolgate audit recover`)"
                    );
                }
                false
            }
        }
    }

    /// With nothing to write, checks whether a failing log was repaired.
    fn probe(&mut self) {
        match self.log.check_head(self.expected.as_ref()) {
            Ok(()) => {
                if self.health.clear() {
                    tracing::warn!("audit log repaired; calls resume");
                }
            }
            Err(e) => {
                self.health.fail(format!("audit log damaged: {e}"));
            }
        }
    }

    fn reports(&mut self, reports: &[ReportEvent]) {
        if reports.is_empty() {
            return;
        }
        if let Err(e) = self.store.record_events(reports) {
            self.dropped
                .fetch_add(reports.len() as u64, Ordering::Relaxed);
            tracing::warn!("reporting events not recorded: {e}");
        }
    }
}
