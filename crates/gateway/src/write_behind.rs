//! The writer thread behind the calls: audit events and reporting events, in order, in batches.
//!
//! Evidence is never dropped. An audit batch that cannot be written (I/O error, a lock held too long, a log whose
//! end is short of the head last written) is kept and retried, the failure is published in `Health` so calls are
//! refused while it lasts, and the thread stops taking new records once it holds a full queue's worth, so
//! producers wait (backpressure) instead of records being lost. Every audit batch written moves the witnessed head
//! in the state database forward. Reporting events are metrics, not evidence: a failed commit is counted.
//! This module does not decide what to record (see `record`) nor refuse calls (the gateway reads `Health`).

use audit::{AuditEvent, AuditLog, Head};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use store::{AuditHead, ReportEvent, Store, Timestamp};

/// Records written per batch at most.
const BATCH: usize = 512;
/// How often a failing log is tried again; short enough that calls resume soon after an administrator repairs it.
const RETRY: Duration = Duration::from_millis(250);

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
}

impl Health {
    pub(crate) fn problem(&self) -> Option<String> {
        if !self.failing.load(Ordering::Acquire) {
            return None;
        }
        self.problem
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
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

pub(crate) struct Writer {
    pub log: Arc<AuditLog>,
    pub store: Store,
    /// Reporting events that could not be committed.
    pub dropped: Arc<AtomicU64>,
    pub health: Arc<Health>,
    /// The head this writer last saw written (from the state database at start).
    pub expected: Option<Head>,
    /// Most audit events held while the log cannot be written; then producers wait.
    pub capacity: usize,
}

impl Writer {
    pub(crate) fn run(mut self, queue: &Receiver<Record>) {
        let mut held: Vec<AuditEvent> = Vec::new();
        let mut flushes: Vec<SyncSender<()>> = Vec::new();
        loop {
            let failing = self.health.problem().is_some();
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
                let mut reports = Vec::new();
                let mut next = first;
                while let Some(record) = next {
                    match record {
                        Record::Audit(e) => held.push(*e),
                        Record::Report(e) => reports.push(*e),
                        Record::Flush(done) => flushes.push(done),
                    }
                    let room = held.len() < self.capacity && held.len() + reports.len() < BATCH;
                    next = if room { queue.try_recv().ok() } else { None };
                }
                self.reports(&reports);
            } else {
                std::thread::sleep(RETRY);
            }
            if held.is_empty() {
                if failing {
                    self.probe();
                }
            } else if self.append(&held) {
                held.clear();
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

    /// Writes the held events; true when they are down.
    fn append(&mut self, held: &[AuditEvent]) -> bool {
        match self.log.append_checked(held, self.expected.as_ref()) {
            Ok(head) => {
                let witnessed = AuditHead {
                    seq: head.seq,
                    hash: head.hash.clone(),
                };
                if let Err(e) = self.store.advance_audit_head(&witnessed, Timestamp::now()) {
                    // The events are down; only the witness lags, which a later batch catches up.
                    tracing::warn!("cannot record the audit head: {e}");
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
