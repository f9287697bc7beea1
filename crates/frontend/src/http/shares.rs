//! A scarce count shared by identities: a ceiling across all callers and a share per identity, so that one
//! identity reaching its share leaves the rest of the ceiling to the others. Requests in flight, request bodies
//! arriving and legacy sessions are each counted by one `Shares`; what is held is released when its `Held` is
//! dropped, whatever ended it. This module counts; the refusals' wording is the caller's.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Which bound a refused take ran into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Over {
    /// The identity holds its whole share.
    Share,
    /// Every caller together holds the ceiling.
    Ceiling,
}

pub(crate) struct Shares {
    state: Mutex<State>,
    ceiling: usize,
    share: usize,
}

#[derive(Default)]
struct State {
    total: usize,
    /// Only identities holding something are present.
    held: HashMap<Option<String>, usize>,
}

impl Shares {
    pub(crate) fn new(ceiling: usize, share: usize) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State::default()),
            ceiling,
            share: share.min(ceiling),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn ceiling(&self) -> usize {
        self.ceiling
    }

    pub(crate) fn share(&self) -> usize {
        self.share
    }

    /// One more for `who`, or which bound it would pass. The share is checked first, so an identity at its
    /// share is told about its own bound (which only it can free), not the shared one; a share as large as the
    /// ceiling is no bound of its own, and reaching it is reaching the ceiling.
    pub(crate) fn take(self: &Arc<Self>, who: &Option<String>) -> Result<Held, Over> {
        let mut state = self.state();
        let mine = state.held.get(who).copied().unwrap_or(0);
        if mine >= self.share && self.share < self.ceiling {
            return Err(Over::Share);
        }
        if state.total >= self.ceiling {
            return Err(Over::Ceiling);
        }
        state.total += 1;
        state.held.insert(who.clone(), mine + 1);
        Ok(Held {
            shares: Arc::clone(self),
            who: who.clone(),
        })
    }

    /// How many `who` holds.
    #[cfg(test)]
    pub(crate) fn held_by(&self, who: &Option<String>) -> usize {
        self.state().held.get(who).copied().unwrap_or(0)
    }
}

/// One unit of a `Shares`, given back when dropped.
pub(crate) struct Held {
    shares: Arc<Shares>,
    who: Option<String>,
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut state = self.shares.state();
        state.total = state.total.saturating_sub(1);
        if let Some(n) = state.held.get_mut(&self.who) {
            *n -= 1;
            if *n == 0 {
                state.held.remove(&self.who);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn who(name: &str) -> Option<String> {
        Some(format!("key:{name}"))
    }

    #[test]
    fn a_share_is_per_identity_and_the_ceiling_across_all() {
        let shares = Shares::new(5, 2);
        let a: Vec<_> = (0..2).map(|_| shares.take(&who("a")).unwrap()).collect();
        assert_eq!(shares.take(&who("a")).err(), Some(Over::Share));
        let b: Vec<_> = (0..2).map(|_| shares.take(&who("b")).unwrap()).collect();
        let _c = shares.take(&who("c")).unwrap();
        assert_eq!(shares.take(&who("d")).err(), Some(Over::Ceiling));
        assert_eq!(
            shares.take(&who("a")).err(),
            Some(Over::Share),
            "its own bound first"
        );
        drop(a);
        assert_eq!(shares.held_by(&who("a")), 0);
        assert!(shares.take(&who("d")).is_ok(), "released when dropped");
        drop(b);
    }

    /// Any order of takes and releases keeps the counts exact: never above a share or the ceiling, and all
    /// back to zero at the end.
    #[test]
    fn counts_stay_exact_under_any_interleaving() {
        let shares = Shares::new(7, 3);
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut held: Vec<(usize, Held)> = Vec::new();
        for _ in 0..5_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let id = (seed % 4) as usize;
            if seed % 3 == 0 && !held.is_empty() {
                held.swap_remove((seed as usize / 3) % held.len());
            } else if let Ok(h) = shares.take(&who(&id.to_string())) {
                held.push((id, h));
            }
            assert!(held.len() <= 7);
            for i in 0..4 {
                let n = held.iter().filter(|(j, _)| *j == i).count();
                assert!(n <= 3);
                assert_eq!(shares.held_by(&who(&i.to_string())), n);
            }
        }
        held.clear();
        assert_eq!(shares.state().total, 0);
        assert!(shares.state().held.is_empty());
    }
}
