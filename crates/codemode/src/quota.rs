//! Shares of one resource (bytes of memory, bytes on disk) between identities: each identity may hold at most
//! its share, and all of them together at most the ceiling. A client session is free to open (a 2026-07-28
//! request is one), so nothing here is counted per session: what a session holds is charged to its identity,
//! and given back when the session lets it go.
//!
//! It only counts. Whoever holds an amount gives it back exactly once (`CodeSession` does when a result is
//! evicted, a file is replaced, or the session ends); a refusal says which bound was reached, so the caller
//! can say what frees it.

use std::collections::HashMap;
use std::sync::Mutex;

/// Which bound a charge would break.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exceeded {
    /// The identity's share: `held` by it already, `share` its limit.
    Identity { held: u64, share: u64 },
    /// The ceiling over every identity: `held` in all, `ceiling` the limit.
    Overall { held: u64, ceiling: u64 },
}

/// One resource's per-identity share and overall ceiling, with what each identity holds now.
#[derive(Debug)]
pub struct Quota {
    share: u64,
    ceiling: u64,
    held: Mutex<Held>,
}

#[derive(Debug, Default)]
struct Held {
    total: u64,
    by_identity: HashMap<String, u64>,
}

impl Quota {
    /// `share` per identity and `ceiling` in all (a share above the ceiling is the ceiling).
    pub fn new(share: u64, ceiling: u64) -> Self {
        Self {
            share: share.min(ceiling),
            ceiling,
            held: Mutex::new(Held::default()),
        }
    }

    pub fn share(&self) -> u64 {
        self.share
    }

    pub fn ceiling(&self) -> u64 {
        self.ceiling
    }

    /// Charges `amount` to `identity`, or refuses with the bound it would break (nothing is charged then).
    pub fn take(&self, identity: &str, amount: u64) -> Result<(), Exceeded> {
        let mut held = self.lock();
        let mine = held.by_identity.get(identity).copied().unwrap_or(0);
        if mine.saturating_add(amount) > self.share {
            return Err(Exceeded::Identity {
                held: mine,
                share: self.share,
            });
        }
        if held.total.saturating_add(amount) > self.ceiling {
            return Err(Exceeded::Overall {
                held: held.total,
                ceiling: self.ceiling,
            });
        }
        held.total += amount;
        *held.by_identity.entry(identity.to_owned()).or_default() += amount;
        Ok(())
    }

    /// Gives back `amount` that `identity` took. Never more than it holds, so a mistaken double return cannot
    /// lend another identity room it does not have.
    pub fn give_back(&self, identity: &str, amount: u64) {
        let mut held = self.lock();
        let Some(mine) = held.by_identity.get_mut(identity) else {
            return;
        };
        let back = amount.min(*mine);
        *mine -= back;
        if *mine == 0 {
            held.by_identity.remove(identity);
        }
        held.total -= back;
    }

    /// What `identity` holds now.
    pub fn held_by(&self, identity: &str) -> u64 {
        self.lock().by_identity.get(identity).copied().unwrap_or(0)
    }

    /// What every identity holds now, in all.
    pub fn held(&self) -> u64 {
        self.lock().total
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Held> {
        // The counts are updated in one step under the lock, so a poisoned lock still holds consistent ones.
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
#[path = "quota_tests.rs"]
mod tests;
