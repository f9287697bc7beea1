//! The spare worker a [`Runner`](super::Runner) keeps so a run does not wait for a spawn and a lockdown: one
//! worker started, sent `start` with the runner's limits, answered `ready` with its layers met, and waiting for
//! a program. A run takes it only when it is still alive and was started under the same command and limits;
//! either way the run then starts the next spare in the background, one at a time. A run that finds no spare
//! waiting while one is starting waits for that one (it is further along than a worker started now would be),
//! at most `STARTING_WAIT`; a run that finds neither starts its own.
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

/// Where a runner's spare waits; shared by the runner's clones.
#[derive(Default)]
pub(super) struct Slot {
    spare: Mutex<Option<Spare>>,
    /// A spare is being started (at most one at a time).
    starting: AtomicBool,
    /// The start in the background, ended with the slot so a runner dropped mid-start leaves nothing behind.
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
        let waiting = self.spare.lock().map(|s| s.is_some()).unwrap_or_default();
        f.debug_struct("Slot").field("waiting", &waiting).finish()
    }
}

impl Slot {
    /// The spare, when one is waiting, alive and started under `command` and `limits`; a spare that is not is
    /// killed.
    pub(super) fn take(&self, command: &WorkerCommand, limits: &RunLimits) -> Option<Started> {
        let spare = self
            .spare
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()?;
        if spare.command != *command || spare.limits != *limits || !spare.parked.quiet() {
            super::spawner::dispose(spare.parked.worker);
            return None;
        }
        match Channel::unpark(spare.parked) {
            Ok(channel) => Some(Started {
                channel,
                layers: spare.layers,
            }),
            Err(why) => {
                tracing::debug!(%why, "a spare worker could not be used");
                None
            }
        }
    }

    /// The spare as `take` gives it; when none is waiting but one is starting, the one starting once it waits
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

    /// Starts the next spare in the background, unless one is waiting or starting.
    pub(super) fn refill(self: &Arc<Self>, command: WorkerCommand, limits: RunLimits) {
        if self.starting.swap(true, Ordering::AcqRel) {
            return;
        }
        let waiting = self
            .spare
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some();
        if waiting {
            self.starting.store(false, Ordering::Release);
            return;
        }
        let slot = Arc::downgrade(self);
        let task = tokio::spawn(start_spare(slot, command, limits)).abort_handle();
        *self.task.lock().unwrap_or_else(|p| p.into_inner()) = Some(task);
    }

    /// Starts a spare now and returns once it waits (or failed to start), unless one is waiting already; while
    /// another start is under way, waits for that one.
    pub(super) async fn warm_up(self: &Arc<Self>, command: WorkerCommand, limits: RunLimits) {
        if self
            .spare
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
        {
            return;
        }
        if self.starting.swap(true, Ordering::AcqRel) {
            loop {
                let ended = self.started.notified();
                tokio::pin!(ended);
                ended.as_mut().enable();
                if !self.starting.load(Ordering::Acquire) {
                    return;
                }
                ended.await;
            }
        }
        start_spare(Arc::downgrade(self), command, limits).await;
    }
}

/// Marks the start over however it ends, even when its task is dropped mid-way (its runtime shutting down), so a
/// later run can start another.
struct Starting(Weak<Slot>);

impl Drop for Starting {
    fn drop(&mut self) {
        if let Some(slot) = self.0.upgrade() {
            slot.starting.store(false, Ordering::Release);
            slot.started.notify_waiters();
        }
    }
}

async fn start_spare(slot: Weak<Slot>, command: WorkerCommand, limits: RunLimits) {
    let _starting = Starting(slot.clone());
    let started = serve::start(&command, &limits).await;
    let Some(owner) = slot.upgrade() else {
        // The runner is gone: the spare dies here, with `started`.
        return;
    };
    let started = match started {
        Ok(started) => started,
        Err((end, _)) => {
            tracing::debug!(?end, "a spare worker did not start");
            return;
        }
    };
    // A spare whose layers are unmet would only fail its run: the run starts its own and reports why.
    if let Some(why) = serve::lacking(&limits, &started) {
        tracing::debug!(%why, "a spare worker was discarded");
        super::spawner::dispose(started.channel.worker);
        return;
    }
    let layers = started.layers;
    match started.channel.park() {
        Ok(parked) => {
            let spare = Spare {
                parked,
                layers,
                command,
                limits,
            };
            let old = owner
                .spare
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .replace(spare);
            if let Some(old) = old {
                super::spawner::dispose(old.parked.worker);
            }
        }
        Err(why) => tracing::debug!(%why, "a spare worker was discarded"),
    }
}
