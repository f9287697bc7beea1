//! The spare workers a [`Runner`](super::Runner) keeps so a run does not wait for a spawn and a lockdown: up to
//! its depth of workers started, sent `start` with the runner's limits, answered `ready` with their layers met,
//! and waiting for a program. A run takes the oldest that is still alive and was started under the same command
//! and limits (one that is not is killed). Spares are started in the background, one at a time, until the pool
//! is full again: when a run has ended (so a new spare does not compete with the run for the CPU, and a spaced
//! run always finds one), or when the runner is asked to get ready (`prepare`, `warm_up`). A run that finds no
//! spare waiting while one is starting waits for it (it is further along than a worker started now would be), at
//! most `STARTING_WAIT`; a run that finds neither starts its own.
//!
//! A spare is spawned on the same spawner thread as every worker (so it dies with toolgate), and it is killed
//! when the last clone of its runner is dropped: the slot owns it, and a spare still starting holds only a weak
//! reference to the slot, so it is killed on arrival when the runner is gone. A spare's wall clock and its
//! engine's budget start only at its `run`, as for a worker started by the run. This module does not run
//! programs.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use super::channel::{Channel, Parked};
use super::serve::{self, Started};
use super::{RunLimits, WorkerCommand};

/// A started, locked-down worker, its pipes off any runtime, and what it was started under.
struct Spare {
    parked: Parked,
    layers: Vec<(String, String)>,
    command: WorkerCommand,
    limits: RunLimits,
}

/// Where a runner's spares wait; shared by the runner's clones.
pub(super) struct Slot {
    /// Waiting spares, oldest first; never more than `depth`.
    spares: Mutex<Vec<Spare>>,
    /// How many spares the slot keeps.
    depth: usize,
    /// Spares are being started (by one task at a time).
    starting: AtomicBool,
    /// The starts in the background, ended with the slot so a runner dropped mid-start leaves nothing behind.
    task: Mutex<Option<tokio::task::AbortHandle>>,
    /// Told when a start ends, however it ends.
    started: tokio::sync::Notify,
}

/// How long a run waits for a spare that is starting before it starts a worker of its own.
const STARTING_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(task) = self.task.get_mut().ok().and_then(Option::take) {
            task.abort();
        }
    }
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let waiting = self.spares.lock().map(|s| s.len()).unwrap_or_default();
        f.debug_struct("Slot")
            .field("waiting", &waiting)
            .field("depth", &self.depth)
            .finish()
    }
}

impl Slot {
    /// A slot that keeps up to `depth` spares (at least one).
    pub(super) fn new(depth: usize) -> Self {
        Self {
            spares: Mutex::default(),
            depth: depth.max(1),
            starting: AtomicBool::new(false),
            task: Mutex::default(),
            started: tokio::sync::Notify::new(),
        }
    }

    fn waiting(&self) -> usize {
        self.spares.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// The oldest spare that is alive and was started under `command` and `limits`; the ones before it that are
    /// not are killed.
    pub(super) fn take(&self, command: &WorkerCommand, limits: &RunLimits) -> Option<Started> {
        loop {
            let spare = {
                let mut spares = self.spares.lock().unwrap_or_else(|p| p.into_inner());
                if spares.is_empty() {
                    return None;
                }
                spares.remove(0)
            };
            if spare.command != *command || spare.limits != *limits || !spare.parked.quiet() {
                super::spawner::dispose(spare.parked.worker);
                continue;
            }
            match Channel::unpark(spare.parked) {
                Ok(channel) => {
                    return Some(Started {
                        channel,
                        layers: spare.layers,
                    })
                }
                Err(why) => tracing::debug!(%why, "a spare worker could not be used"),
            }
        }
    }

    /// A spare as `take` gives it; when none is waiting but one is starting, the one starting once it waits
    /// (at most `STARTING_WAIT`).
    pub(super) async fn take_or_wait(
        &self,
        command: &WorkerCommand,
        limits: &RunLimits,
    ) -> Option<Started> {
        let deadline = tokio::time::Instant::now() + STARTING_WAIT;
        loop {
            let ended = self.started.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            if let Some(started) = self.take(command, limits) {
                return Some(started);
            }
            if !self.starting.load(Ordering::Acquire) {
                return None;
            }
            if tokio::time::timeout_at(deadline, ended).await.is_err() {
                return self.take(command, limits);
            }
        }
    }

    /// Starts spares in the background until `depth` wait, unless that is under way already. Needs a tokio
    /// runtime; without one (a runtime shutting down) it starts nothing.
    pub(super) fn refill(self: &Arc<Self>, command: WorkerCommand, limits: RunLimits) {
        if self.waiting() >= self.depth || self.starting.swap(true, Ordering::AcqRel) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.starting.store(false, Ordering::Release);
            return;
        };
        let slot = Arc::downgrade(self);
        let task = runtime.spawn(fill(slot, command, limits)).abort_handle();
        *self.task.lock().unwrap_or_else(|p| p.into_inner()) = Some(task);
    }

    /// Has the pool full (or its starts failed) before it returns: waits for starts under way elsewhere, then
    /// starts what is still missing.
    pub(super) async fn warm_up(self: &Arc<Self>, command: WorkerCommand, limits: RunLimits) {
        loop {
            let ended = self.started.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            if !self.starting.load(Ordering::Acquire) {
                break;
            }
            ended.await;
        }
        if self.waiting() < self.depth && !self.starting.swap(true, Ordering::AcqRel) {
            fill(Arc::downgrade(self), command, limits).await;
        }
    }
}

/// Marks the starts over however they end, even when their task is dropped mid-way (its runtime shutting down),
/// so a later run can start more.
struct Starting(Weak<Slot>);

impl Drop for Starting {
    fn drop(&mut self) {
        if let Some(slot) = self.0.upgrade() {
            slot.starting.store(false, Ordering::Release);
            slot.started.notify_waiters();
        }
    }
}

/// Starts spares one after the other until the pool is full, the runner is gone, or a start fails (the next
/// run then starts its own worker and says why).
async fn fill(slot: Weak<Slot>, command: WorkerCommand, limits: RunLimits) {
    let _starting = Starting(slot.clone());
    loop {
        match slot.upgrade() {
            Some(owner) if owner.waiting() < owner.depth => {}
            _ => return,
        }
        if !start_spare(&slot, &command, &limits).await {
            return;
        }
        if let Some(owner) = slot.upgrade() {
            // Each spare is announced as it arrives: a run waiting for one need not wait for the whole pool.
            owner.started.notify_waiters();
        }
    }
}

/// Starts one spare and puts it in the pool; whether it got there.
async fn start_spare(slot: &Weak<Slot>, command: &WorkerCommand, limits: &RunLimits) -> bool {
    let started = serve::start(command, limits).await;
    let Some(owner) = slot.upgrade() else {
        // The runner is gone: the spare dies here, with `started`.
        return false;
    };
    let started = match started {
        Ok(started) => started,
        Err((end, _)) => {
            tracing::debug!(?end, "a spare worker did not start");
            return false;
        }
    };
    // A spare whose layers are unmet would only fail its run: the run starts its own and reports why.
    if let Some(why) = serve::lacking(limits, &started) {
        tracing::debug!(%why, "a spare worker was discarded");
        super::spawner::dispose(started.channel.worker);
        return false;
    }
    let layers = started.layers;
    match started.channel.park() {
        Ok(parked) => {
            let spare = Spare {
                parked,
                layers,
                command: command.clone(),
                limits: limits.clone(),
            };
            let mut spares = owner.spares.lock().unwrap_or_else(|p| p.into_inner());
            spares.push(spare);
            // Never more than the depth: the oldest goes (a run may have been given one meanwhile, never more).
            while spares.len() > owner.depth {
                super::spawner::dispose(spares.remove(0).parked.worker);
            }
            true
        }
        Err(why) => {
            tracing::debug!(%why, "a spare worker was discarded");
            false
        }
    }
}
