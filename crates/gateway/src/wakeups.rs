//! Wake-ups for held calls: one watcher for the whole process tells every held call when the store may have
//! changed, so each re-reads its approval row only then instead of polling it.
//!
//! The watcher runs only while at least one call is held. Every `TICK` it asks the store whether anything was
//! committed since it last looked (`ChangeFeed::changed_since`: for SQLite one pragma, no row read), which sees
//! the admin CLI and the watch terminal in other processes and the write-behind thread's connection in this one.
//! Writes made through this process's own store handle (an elicitation answer, a cancellation) wake the held
//! calls at once (`State::store` calls `wake`). A wake-up may be false — any commit counts, the audit writer's
//! too — and then costs each held call one row read, at most one per `TICK`; a change is never missed, because a
//! held call subscribes before it first reads its row and the watcher's mark is always older than the
//! subscription. Expiry is not a write and wakes nobody: a held call times its own look at it. This module never
//! looks inside approval rows or decides what a held call does with them (that is `approval`).

use crate::state::State;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use store::{ChangeMark, StateStore};
use tokio::sync::watch;

/// How often the watcher looks while calls are held: a pragma is cheaper than a row read, and 50 ms is well under
/// what a human approving in another window can notice.
pub(crate) const TICK: Duration = Duration::from_millis(50);

/// The process-wide wake-up signal, owned by `State`.
#[derive(Debug)]
pub(crate) struct Wakeups {
    /// Moves on every possible change; held calls wait for it to move.
    signal: watch::Sender<u64>,
    waiting: Mutex<Waiting>,
    /// Approval rows read by held calls, so tests can tell wake-ups from polling without timing anything.
    reads: AtomicU64,
    /// Looks the watcher took at the store, for the same reason.
    looks: AtomicU64,
}

#[derive(Debug, Default)]
struct Waiting {
    /// Held calls subscribed now.
    held: usize,
    /// Whether the watcher task runs. Set and cleared under the same lock as `held`, so a call held just as the
    /// last one leaves either keeps the watcher or starts a new one, never neither.
    watcher: bool,
}

impl Default for Wakeups {
    fn default() -> Self {
        Self {
            signal: watch::Sender::new(0),
            waiting: Mutex::default(),
            reads: AtomicU64::new(0),
            looks: AtomicU64::new(0),
        }
    }
}

impl Wakeups {
    /// Wakes every held call now.
    pub(crate) fn wake(&self) {
        self.signal.send_modify(|n| *n = n.wrapping_add(1));
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }

    #[cfg(test)]
    pub(crate) fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    #[cfg(test)]
    pub(crate) fn looks(&self) -> u64 {
        self.looks.load(Ordering::Relaxed)
    }

    #[cfg(test)]
    pub(crate) fn watcher_running(&self) -> bool {
        self.waiting().watcher
    }
}

/// One held call's subscription. Subscribe before the first read of the row; dropping it unsubscribes, and the
/// watcher stops once nobody is subscribed.
pub(crate) struct Waiter {
    woken: watch::Receiver<u64>,
    state: Arc<State>,
}

impl Waiter {
    /// Subscribes a held call, starting the watcher if it is the only one.
    pub(crate) fn subscribe(state: &Arc<State>) -> Self {
        let wakeups = state.wakeups();
        let woken = wakeups.signal.subscribe();
        let mut waiting = wakeups.waiting();
        waiting.held += 1;
        if !waiting.watcher {
            waiting.watcher = true;
            // Taken under the lock, before this call (or one subscribing right after) reads its row: any commit
            // after the read differs from this mark. Without a mark the first look counts as a change.
            let mark = state.store(|s| s.change_mark()).ok();
            tokio::spawn(watch_store(Arc::clone(state), mark));
        }
        drop(waiting);
        Self {
            woken,
            state: Arc::clone(state),
        }
    }

    /// Reads through the store on behalf of the held call, counted.
    pub(crate) fn read<T>(&self, f: impl FnOnce(&dyn StateStore) -> T) -> T {
        self.state.wakeups().reads.fetch_add(1, Ordering::Relaxed);
        self.state.store(f)
    }

    /// Resolves when the store may have changed since the last wake-up this waiter saw (or since it subscribed).
    pub(crate) async fn changed(&mut self) {
        if self.woken.changed().await.is_err() {
            // The signal lives as long as the state this waiter holds, so this does not happen; if it did, the
            // call's own deadline still ends the wait.
            std::future::pending::<()>().await;
        }
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        let mut waiting = self.state.wakeups().waiting();
        waiting.held = waiting.held.saturating_sub(1);
    }
}

/// The watcher: looks at the store every `TICK` while any call is held, wakes them all on a change, and ends when
/// none is held.
async fn watch_store(state: Arc<State>, mark: Option<ChangeMark>) {
    let wakeups = state.wakeups();
    let mut mark = mark;
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    loop {
        tick.tick().await;
        {
            let mut waiting = wakeups.waiting();
            if waiting.held == 0 {
                waiting.watcher = false;
                return;
            }
        }
        wakeups.looks.fetch_add(1, Ordering::Relaxed);
        let changed = state.store(|s| {
            let Some(m) = mark.as_mut() else {
                mark = s.change_mark().ok();
                return Ok(true);
            };
            s.changed_since(m)
        });
        match changed {
            Ok(false) => {}
            Ok(true) => wakeups.wake(),
            Err(e) => {
                // A store that cannot answer may have changed: wake, and let each call's read report the error.
                tracing::debug!("change check failed: {e}");
                wakeups.wake();
            }
        }
    }
}

#[cfg(test)]
#[path = "wakeups_tests.rs"]
mod tests;
