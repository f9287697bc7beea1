//! The spare workers a [`Runner`](super::Runner) keeps so a run does not wait for a spawn and a lockdown: up to
//! its depth of workers started, sent `start` with the runner's limits, answered `ready` with their layers met,
//! and waiting for a program. A run takes the oldest that is still alive and was started under the same command
//! and limits (one that is not is killed). Spares are started in the background, each missing one at once, until
//! the pool is full again: when a run has ended (so a new spare does not compete with the run for the CPU, and a
//! spaced run always finds one), or when the runner is asked to get ready (`prepare`, `warm_up`). Starting them
//! side by side matters for runs one after another: a start is mostly waiting (for the kernel to make the
//! worker's namespaces, for the worker to load and lock itself down), so one at a time the pool refills more
//! slowly than such runs take from it. Spares waiting and spares starting together never exceed the depth. A run
//! that finds no spare waiting while one is starting waits for it (it is further along than a worker started now
//! would be), at most `STARTING_WAIT`; a run that finds neither starts its own.
//!
//! A spare is spawned on the same spawner thread as every worker (so it dies with toolgate), and it is killed
//! when the last clone of its runner is dropped: the slot owns it, and a spare still starting holds only a weak
//! reference to the slot, so it is killed on arrival when the runner is gone. A spare's wall clock and its
//! engine's budget start only at its `run`, as for a worker started by the run. This module does not run
//! programs.

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
    pool: Mutex<Pool>,
    /// How many spares the slot keeps.
    depth: usize,
    /// The starts in the background, ended with the slot so a runner dropped mid-start leaves nothing behind.
    tasks: Mutex<Vec<tokio::task::AbortHandle>>,
    /// Told when a start ends, however it ends.
    started: tokio::sync::Notify,
}

/// The spares waiting and how many are on their way, counted under one lock so that together they never exceed
/// the depth.
#[derive(Default)]
struct Pool {
    /// Waiting spares, oldest first.
    waiting: Vec<Spare>,
    /// Starts under way.
    starting: usize,
}

/// How long a run waits for a spare that is starting before it starts a worker of its own.
const STARTING_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

impl Drop for Slot {
    fn drop(&mut self) {
        if let Ok(tasks) = self.tasks.get_mut() {
            tasks.drain(..).for_each(|t| t.abort());
        }
    }
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let counts = self.counts();
        f.debug_struct("Slot")
            .field("waiting", &counts.waiting)
            .field("starting", &counts.starting)
            .field("depth", &self.depth)
            .finish()
    }
}

impl Slot {
    /// A slot that keeps up to `depth` spares (at least one).
    pub(super) fn new(depth: usize) -> Self {
        Self {
            pool: Mutex::default(),
            depth: depth.max(1),
            tasks: Mutex::default(),
            started: tokio::sync::Notify::new(),
        }
    }

    fn pool(&self) -> std::sync::MutexGuard<'_, Pool> {
        self.pool.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn starting(&self) -> usize {
        self.pool().starting
    }

    pub(super) fn counts(&self) -> super::Spares {
        let pool = self.pool();
        super::Spares {
            waiting: pool.waiting.len(),
            starting: pool.starting,
        }
    }

    /// Counts as starting every spare the pool misses (neither waiting nor on its way), and returns how many.
    fn claim_missing(&self) -> usize {
        let mut pool = self.pool();
        let missing = self
            .depth
            .saturating_sub(pool.waiting.len() + pool.starting);
        pool.starting += missing;
        missing
    }

    /// The oldest spare that is alive and was started under `command` and `limits`; the ones before it that are
    /// not are killed.
    pub(super) fn take(&self, command: &WorkerCommand, limits: &RunLimits) -> Option<Started> {
        loop {
            let spare = {
                let mut pool = self.pool();
                if pool.waiting.is_empty() {
                    return None;
                }
                pool.waiting.remove(0)
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
            if self.starting() == 0 {
                return None;
            }
            if tokio::time::timeout_at(deadline, ended).await.is_err() {
                return self.take(command, limits);
            }
        }
    }

    /// Starts every missing spare in the background, side by side (none when the pool is full with those on
    /// their way). Needs a tokio runtime; without one (a runtime shutting down) it starts nothing.
    pub(super) fn refill(self: &Arc<Self>, command: WorkerCommand, limits: RunLimits) {
        let claimed = self.claim_missing();
        if claimed == 0 {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.pool().starting -= claimed;
            return;
        };
        let mut tasks = self.tasks.lock().unwrap_or_else(|p| p.into_inner());
        tasks.retain(|t| !t.is_finished());
        for _ in 0..claimed {
            let start = start_one(Arc::downgrade(self), command.clone(), limits.clone());
            tasks.push(runtime.spawn(start).abort_handle());
        }
    }

    /// Has the pool full (or its starts failed) before it returns: starts what is missing, then waits until no
    /// start is under way.
    pub(super) async fn warm_up(self: &Arc<Self>, command: WorkerCommand, limits: RunLimits) {
        self.refill(command, limits);
        loop {
            let ended = self.started.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            if self.starting() == 0 {
                return;
            }
            ended.await;
        }
    }
}

/// One start under way: counted as starting until it ends however it ends, even when its task is dropped
/// mid-way (its runtime shutting down), so a later run can start more.
struct Starting {
    slot: Weak<Slot>,
    /// The spare arrived: it was counted off when put in the pool, under the same lock.
    arrived: bool,
}

impl Drop for Starting {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.upgrade() {
            if !self.arrived {
                slot.pool().starting -= 1;
            }
            slot.started.notify_waiters();
        }
    }
}

/// Starts one spare, counted as starting until it is in the pool or failed (the next run then starts its own
/// worker and says why). Each spare is announced as it arrives: a run waiting for one need not wait for the
/// whole pool.
async fn start_one(slot: Weak<Slot>, command: WorkerCommand, limits: RunLimits) {
    let mut starting = Starting {
        slot,
        arrived: false,
    };
    start_spare(&mut starting, &command, &limits).await;
}

/// Starts one spare and puts it in the pool, counted off `starting` as it is put there.
async fn start_spare(starting: &mut Starting, command: &WorkerCommand, limits: &RunLimits) {
    let started = serve::start(command, limits).await;
    let Some(owner) = starting.slot.upgrade() else {
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
    if let Some(why) = serve::lacking(limits, &started) {
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
                command: command.clone(),
                limits: limits.clone(),
            };
            let mut pool = owner.pool();
            pool.waiting.push(spare);
            pool.starting -= 1;
            starting.arrived = true;
            // Never more than the depth: the oldest goes (counted together with the starts, it cannot happen;
            // kept so that a miscount costs a process, not a leak).
            while pool.waiting.len() > owner.depth {
                super::spawner::dispose(pool.waiting.remove(0).parked.worker);
            }
        }
        Err(why) => tracing::debug!(%why, "a spare worker was discarded"),
    }
}
