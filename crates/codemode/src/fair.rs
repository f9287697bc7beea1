//! Fair admission to a bounded number of slots (workers, program calls in flight): each identity may hold at
//! most its share of the slots, and when slots are scarce the next one goes to the identities that wait in
//! turn (round robin), not to whoever asked first over everything. So one identity that asks for a thousand
//! slots waits behind itself, and a quiet identity's one request is admitted within one slot's release.
//!
//! Within one identity the same holds between its parties (the client sessions or runs it asks for): every
//! caller without an identity of its own is one identity, so its stdio clients and unauthenticated sessions
//! share one share, and they are served in turn among themselves, not first come first served.
//!
//! A slot is a [`Permit`], given back when it is dropped. The number of requests one identity may have waiting
//! is bounded too: past it, `acquire` refuses at once (what is waiting holds memory, and a caller should learn
//! that it is over its share rather than wait without end). It decides nothing about what runs in a slot.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

/// Slots, a share per identity, and room to wait.
#[derive(Debug, Clone)]
pub struct FairGate {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    capacity: usize,
    share: usize,
    max_waiting: usize,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    in_use: usize,
    by_identity: HashMap<String, Slots>,
    /// Identities with someone waiting, in the order they are served next.
    turn: VecDeque<String>,
}

#[derive(Debug, Default)]
struct Slots {
    running: usize,
    /// Parties of this identity with someone waiting, in the order they are served next.
    waiting: VecDeque<Party>,
}

/// The requests one party of an identity has waiting, oldest first.
#[derive(Debug)]
struct Party {
    name: String,
    queue: VecDeque<oneshot::Sender<Permit>>,
}

impl Slots {
    fn forget_closed(&mut self) {
        for party in &mut self.waiting {
            party.queue.retain(|w| !w.is_closed());
        }
        self.waiting.retain(|p| !p.queue.is_empty());
    }

    fn waiting_count(&self) -> usize {
        self.waiting.iter().map(|p| p.queue.len()).sum()
    }

    fn queue(&mut self, party: &str, waiter: oneshot::Sender<Permit>) {
        match self.waiting.iter_mut().find(|p| p.name == party) {
            Some(p) => p.queue.push_back(waiter),
            None => self.waiting.push_back(Party {
                name: party.to_owned(),
                queue: VecDeque::from([waiter]),
            }),
        }
    }

    /// The oldest request of the party whose turn it is; that party goes to the back of the turn.
    fn next_waiter(&mut self) -> Option<oneshot::Sender<Permit>> {
        loop {
            let mut party = self.waiting.pop_front()?;
            let waiter = party.queue.pop_front();
            if !party.queue.is_empty() {
                self.waiting.push_back(party);
            }
            if waiter.is_some() {
                return waiter;
            }
        }
    }
}

/// Why a request was not even queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooManyWaiting {
    /// How many of the identity's requests wait already (its limit).
    pub limit: usize,
}

/// One slot held by one identity; dropping it frees the slot for the next identity in turn.
#[derive(Debug)]
pub struct Permit {
    gate: Option<Arc<Inner>>,
    identity: String,
}

impl FairGate {
    /// `capacity` slots in all, `share` at most per identity (at least 1), at most `max_waiting` requests of one
    /// identity queued.
    pub fn new(capacity: usize, share: usize, max_waiting: usize) -> Self {
        let capacity = capacity.max(1);
        Self {
            inner: Arc::new(Inner {
                capacity,
                share: share.clamp(1, capacity),
                max_waiting,
                state: Mutex::new(State::default()),
            }),
        }
    }

    pub fn capacity(&self) -> usize {
        self.inner.capacity
    }

    pub fn share(&self) -> usize {
        self.inner.share
    }

    pub fn max_waiting(&self) -> usize {
        self.inner.max_waiting
    }

    /// A slot for `identity`: at once when one is free and the identity is under its share, else when its turn
    /// comes. Cancel-safe: a request dropped while it waits takes no slot.
    pub async fn acquire(&self, identity: &str) -> Result<Permit, TooManyWaiting> {
        self.acquire_for(identity, "").await
    }

    /// A slot for `identity` asked for by `party` (a session or run of it): as [`FairGate::acquire`], and among
    /// the identity's waiting parties in turn.
    pub async fn acquire_for(&self, identity: &str, party: &str) -> Result<Permit, TooManyWaiting> {
        let rx = {
            let mut st = self.inner.lock();
            let free = st.in_use < self.inner.capacity;
            let slots = st.by_identity.entry(identity.to_owned()).or_default();
            slots.forget_closed();
            if free && slots.running < self.inner.share && slots.waiting.is_empty() {
                slots.running += 1;
                st.in_use += 1;
                return Ok(self.inner.permit(identity));
            }
            if slots.waiting_count() >= self.inner.max_waiting {
                let limit = self.inner.max_waiting;
                st.tidy(identity);
                return Err(TooManyWaiting { limit });
            }
            let (tx, rx) = oneshot::channel();
            slots.queue(party, tx);
            if !st.turn.iter().any(|i| i == identity) {
                st.turn.push_back(identity.to_owned());
            }
            rx
        };
        // The sender is dropped only with the gate's state, which this gate keeps alive.
        rx.await.map_err(|_| TooManyWaiting { limit: 0 })
    }

    /// Slots `identity` holds now.
    pub fn running(&self, identity: &str) -> usize {
        let st = self.inner.lock();
        st.by_identity.get(identity).map_or(0, |s| s.running)
    }

    /// Slots held now, by every identity.
    pub fn in_use(&self) -> usize {
        self.inner.lock().in_use
    }

    /// Requests of `identity` waiting now.
    pub fn waiting(&self, identity: &str) -> usize {
        let st = self.inner.lock();
        st.by_identity.get(identity).map_or(0, |s| {
            s.waiting
                .iter()
                .flat_map(|p| &p.queue)
                .filter(|w| !w.is_closed())
                .count()
        })
    }
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // Every change under the lock is a few counter steps that cannot panic midway.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn permit(self: &Arc<Self>, identity: &str) -> Permit {
        Permit {
            gate: Some(Arc::clone(self)),
            identity: identity.to_owned(),
        }
    }

    /// Gives free slots to waiting identities in turn, each under its share.
    fn admit(self: &Arc<Self>, st: &mut State) {
        let mut passed = 0;
        while st.in_use < self.capacity && passed < st.turn.len() {
            let Some(identity) = st.turn.pop_front() else {
                break;
            };
            let slots = st.by_identity.entry(identity.clone()).or_default();
            if slots.running >= self.share {
                // Over its share: it keeps its place for when one of its own slots frees.
                st.turn.push_back(identity);
                passed += 1;
                continue;
            }
            let mut admitted = false;
            while let Some(waiter) = slots.next_waiter() {
                match waiter.send(self.permit(&identity)) {
                    Ok(()) => {
                        admitted = true;
                        break;
                    }
                    // That request stopped waiting: the permit comes back unused, and is not counted.
                    Err(mut unused) => unused.gate = None,
                }
            }
            if admitted {
                slots.running += 1;
                st.in_use += 1;
                passed = 0;
            }
            if st
                .by_identity
                .get(&identity)
                .is_some_and(|s| !s.waiting.is_empty())
            {
                st.turn.push_back(identity);
            } else {
                st.tidy(&identity);
            }
        }
    }
}

impl State {
    /// Forgets an identity that holds nothing and waits for nothing.
    fn tidy(&mut self, identity: &str) {
        if self
            .by_identity
            .get(identity)
            .is_some_and(|s| s.running == 0 && s.waiting.is_empty())
        {
            self.by_identity.remove(identity);
            self.turn.retain(|i| i != identity);
        }
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let Some(gate) = self.gate.take() else {
            return;
        };
        let mut st = gate.lock();
        st.in_use = st.in_use.saturating_sub(1);
        if let Some(slots) = st.by_identity.get_mut(&self.identity) {
            slots.running = slots.running.saturating_sub(1);
        }
        st.tidy(&self.identity);
        gate.admit(&mut st);
    }
}

#[cfg(test)]
#[path = "fair_tests.rs"]
mod tests;
