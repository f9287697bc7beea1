//! One pin pass of a running gateway, and what it keeps for the next: hashes and flags of definitions it saw,
//! and what the store said of catalogs that did not change. It reuses nothing the store's pins generation says
//! may be stale, so a pass with the cache says exactly what a pass without it says, only sooner.

use super::{add_flag, effect, flag_text, items, Item, PinEffect, PinView};
use crate::state::State;
use policy::PoisonFlag;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use store::{FirstUse, Observed, PinObservation, PinsSince, Timestamp};
use upstream::Catalog;

/// What a gateway's last pin pass found, so the next one redoes only what may have changed. A definition equal
/// to one seen before keeps its hash and flags; a server whose catalog is the same keeps what the store said of
/// it as long as no pin changed since (the store's pins generation, which every pin write advances, whichever
/// process writes: an accept from the admin CLI is seen at the next pass). Nothing else is assumed.
#[derive(Default)]
pub struct PinCache {
    /// The pins generation the kept store results were read at; `None` when they cannot be trusted.
    generation: Option<u64>,
    servers: HashMap<String, Seen>,
    /// The catalogs the look-alike flags were computed from (compared by pointer), and those flags.
    lookalikes: Option<Lookalikes>,
    /// The view the last pass returned, and its `hold_new`.
    last: Option<(Arc<PinView>, bool)>,
}

/// Look-alike flags and the catalogs they were computed from.
struct Lookalikes {
    catalogs: Vec<Arc<Catalog>>,
    flags: Vec<(String, PoisonFlag)>,
}

/// What the last pass found for one server's catalog.
struct Seen {
    catalog: Arc<Catalog>,
    /// One entry per `items(catalog)`, in order.
    items: Vec<SeenItem>,
}

#[derive(Clone)]
struct SeenItem {
    key: String,
    /// `store::definition_hash` of the definition, as the store's check of it said (only with state): the next
    /// pass hands it back, so an equal definition is not serialised again.
    sha256: Option<String>,
    /// Its poisoning flags, as the view shows them.
    flags: Vec<String>,
    /// What the store said of it (`None` without state).
    pin: Option<PinEffect>,
}

impl PinCache {
    /// Pins what is new, notices what changed, flags what looks poisoned. Without state nothing can be pinned, so
    /// only the flags are computed. `hold_new`: a tool or prompt new to an already-listed server is held.
    /// Every pin is checked in one store transaction, so a pass costs one commit, not one per item, and none when
    /// neither a catalog nor a pin changed.
    pub fn observe(
        &mut self,
        state: Option<&Arc<State>>,
        catalogs: &[(String, Arc<Catalog>)],
        hold_new: bool,
    ) -> Arc<PinView> {
        if let Some(last) = self.unchanged(state, catalogs, hold_new) {
            return last;
        }
        let started = std::time::Instant::now();
        let mut previous = std::mem::take(&mut self.servers);
        // A server that has not answered yet has an empty catalog: pinning that would mark it as listed and hold
        // its whole real catalog later.
        let mut seen: Vec<(&str, Seen, bool)> = Vec::new();
        let mut uninspected = Vec::new();
        for (server, catalog) in catalogs.iter().filter(|(_, c)| c.era.is_some()) {
            let (s, same, todo) = see(catalog, server, previous.remove(server));
            uninspected.push(todo);
            seen.push((server.as_str(), s, same));
        }
        let seen_at = started.elapsed();
        let cached = self.lookalikes.take();
        let generation = self.generation;
        let check = |seen: &mut [(&str, Seen, bool)]| {
            let at = std::time::Instant::now();
            state.map(|state| (check_pins(state, seen, generation, hold_new), at.elapsed()))
        };
        // Look-alike names and the inspection of new definitions need no store: when there is any of either to
        // do, it runs beside the store's transaction, which is most of a first pass over a large catalog.
        let beside_work = |cached, servers: Vec<Arc<Catalog>>, uninspected: Vec<Vec<usize>>| {
            (
                lookalikes(cached, catalogs),
                inspect(&servers, &uninspected),
            )
        };
        let servers: Vec<Arc<Catalog>> = seen
            .iter()
            .map(|(_, s, _)| Arc::clone(&s.catalog))
            .collect();
        let idle = uninspected.iter().all(Vec::is_empty)
            && cached
                .as_ref()
                .is_some_and(|c: &Lookalikes| c.computed_from(catalogs));
        let (((flags, kept), found), checked) = if idle {
            let checked = check(&mut seen);
            (beside_work(cached, servers, uninspected), checked)
        } else {
            std::thread::scope(|scope| {
                let beside = scope.spawn(move || beside_work(cached, servers, uninspected));
                let checked = check(&mut seen);
                match beside.join() {
                    Ok(done) => (done, checked),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            })
        };
        for (si, flags) in found.into_iter().enumerate() {
            for (ii, flags) in flags {
                seen[si].1.items[ii].flags = flags;
            }
        }
        if let Some((generation, _)) = checked {
            self.generation = generation;
        }
        tracing::debug!(
            see_ms = seen_at.as_millis(),
            store_ms = checked.map_or(0, |(_, took)| took.as_millis()),
            total_ms = started.elapsed().as_millis(),
            "pin pass"
        );
        self.lookalikes = Some(kept);
        let view = Arc::new(view_of(&flags, &seen));
        self.servers = seen
            .into_iter()
            .map(|(server, s, _)| (server.to_owned(), s))
            .collect();
        self.last = Some((Arc::clone(&view), hold_new));
        view
    }

    /// The last pass's very view, when this pass would find exactly what it found: the same catalog allocations
    /// (all of them already inspected and checked), the same `hold_new`, look-alike flags computed from these
    /// catalogs, and no pin written since, whoever wrote (one read of the store's pins generation). This is what
    /// a rebuild finds when nothing changed since the one before (the first list's right after an upstream's
    /// arrival): for 50,000 items, going through every item only to find the same was most of that rebuild.
    fn unchanged(
        &self,
        state: Option<&Arc<State>>,
        catalogs: &[(String, Arc<Catalog>)],
        hold_new: bool,
    ) -> Option<Arc<PinView>> {
        let (last, last_hold_new) = self.last.as_ref()?;
        let (state, generation) = (state?, self.generation?);
        let answered: Vec<&(String, Arc<Catalog>)> =
            catalogs.iter().filter(|(_, c)| c.era.is_some()).collect();
        let same = *last_hold_new == hold_new
            && answered.len() == self.servers.len()
            && answered.iter().all(|(server, catalog)| {
                self.servers
                    .get(server)
                    .is_some_and(|seen| Arc::ptr_eq(&seen.catalog, catalog))
            })
            && self
                .lookalikes
                .as_ref()
                .is_some_and(|l| l.computed_from(catalogs));
        let unwritten = || state.store(|s| s.pins_generation()).ok() == Some(generation);
        (same && unwritten()).then(|| Arc::clone(last))
    }
}

/// The view a pass found: look-alike flags, then each item's flags and what its pin says.
fn view_of(lookalikes: &[(String, PoisonFlag)], seen: &[(&str, Seen, bool)]) -> PinView {
    let mut view = PinView::new();
    for (key, flag) in lookalikes {
        add_flag(&mut view, key, flag);
    }
    for (_, s, _) in seen {
        for item in &s.items {
            let entry = view.entry(item.key.clone()).or_default();
            for flag in &item.flags {
                if !entry.flags.contains(flag) {
                    entry.flags.push(flag.clone());
                }
            }
            match item.pin {
                Some(PinEffect::Accepted { flags_overridden }) => {
                    entry.flags_overridden = flags_overridden;
                }
                Some(PinEffect::Held { new }) => {
                    entry.quarantined = true;
                    entry.new = new;
                }
                None => {}
            }
        }
    }
    view
}

/// Look-alike names across every catalog, computed again only when some catalog is not the one `cached` was
/// computed from; with what to keep for the next pass.
fn lookalikes(
    cached: Option<Lookalikes>,
    catalogs: &[(String, Arc<Catalog>)],
) -> (Vec<(String, PoisonFlag)>, Lookalikes) {
    if let Some(cached) = cached.filter(|c| c.computed_from(catalogs)) {
        return (cached.flags.clone(), cached);
    }
    let names: Vec<(String, String)> = catalogs
        .iter()
        .flat_map(|(s, c)| {
            c.tools
                .iter()
                .filter_map(move |t| Some((s.clone(), t.get("name")?.as_str()?.to_owned())))
        })
        .collect();
    let flags = policy::lookalike_flags(&names);
    let kept = Lookalikes {
        catalogs: catalogs.iter().map(|(_, c)| Arc::clone(c)).collect(),
        flags: flags.clone(),
    };
    (flags, kept)
}

impl Lookalikes {
    /// Whether these flags were computed from exactly `catalogs` (the same allocations, in the same order).
    fn computed_from(&self, catalogs: &[(String, Arc<Catalog>)]) -> bool {
        self.catalogs.len() == catalogs.len()
            && self
                .catalogs
                .iter()
                .zip(catalogs)
                .all(|(a, (_, b))| Arc::ptr_eq(a, b))
    }
}

/// The poisoning flags of the definitions `see` left uninspected: for each server, its items' indices in
/// `items(catalog)` with their flags.
fn inspect(servers: &[Arc<Catalog>], uninspected: &[Vec<usize>]) -> Vec<Vec<(usize, Vec<String>)>> {
    servers
        .iter()
        .zip(uninspected)
        .map(|(catalog, todo)| {
            if todo.is_empty() {
                return Vec::new();
            }
            let defs = items(catalog);
            todo.iter()
                .map(|&i| {
                    let flags = policy::inspect_definition(&defs[i].2)
                        .iter()
                        .map(flag_text)
                        .collect();
                    (i, flags)
                })
                .collect()
        })
        .collect()
}

/// The items of `catalog` with their keys, hashes and flags, reusing what `previous` found for equal
/// definitions; and whether the whole catalog is the one seen before (so the store's results for it stand).
fn see(catalog: &Arc<Catalog>, server: &str, previous: Option<Seen>) -> (Seen, bool, Vec<usize>) {
    let previous = match previous {
        Some(p) if Arc::ptr_eq(&p.catalog, catalog) => return (p, true, Vec::new()),
        other => other,
    };
    let before: Vec<(Cow<'_, Value>, &SeenItem)> = previous
        .as_ref()
        .map(|p| {
            items(&p.catalog)
                .into_iter()
                .map(|(_, _, def)| def)
                .zip(&p.items)
                .collect()
        })
        .unwrap_or_default();
    let mut by_key: HashMap<&str, usize> = HashMap::with_capacity(before.len());
    for (i, (_, item)) in before.iter().enumerate() {
        by_key.entry(item.key.as_str()).or_insert(i);
    }
    let mut same = previous.is_some();
    let now = items(catalog);
    same &= now.len() == before.len();
    let mut uninspected = Vec::new();
    let items = now
        .into_iter()
        .enumerate()
        .map(|(i, (kind, name, def))| {
            let key = kind.key(server, name);
            let earlier = by_key
                .get(key.as_str())
                .map(|&j| (j, &before[j]))
                .filter(|(_, (old, _))| **old == *def);
            match earlier {
                Some((j, (_, item))) => {
                    same &= i == j;
                    (*item).clone()
                }
                None => {
                    same = false;
                    uninspected.push(i);
                    SeenItem {
                        key,
                        sha256: None,
                        flags: Vec::new(),
                        pin: None,
                    }
                }
            }
        })
        .collect();
    (
        Seen {
            catalog: Arc::clone(catalog),
            items,
        },
        same,
        uninspected,
    )
}

/// Checks every item against its pin in one store transaction, skipping the servers whose catalogs are the ones
/// checked before when no pin changed since `generation`. Returns the generation the results were read at, or
/// `None` when some check failed: those items are held, and the next pass checks everything again.
fn check_pins(
    state: &Arc<State>,
    seen: &mut [(&str, Seen, bool)],
    generation: Option<u64>,
    hold_new: bool,
) -> Option<u64> {
    let listed_before: Vec<bool> = seen
        .iter()
        .map(|(server, _, _)| {
            state
                .store(|st| st.get_pin(&Item::Instructions.key(server, "")))
                .map_or(true, |p| p.is_some())
        })
        .collect();
    let catalogs: Vec<Arc<Catalog>> = seen
        .iter()
        .map(|(_, s, _)| Arc::clone(&s.catalog))
        .collect();
    let defs: Vec<Vec<(Item, Cow<'_, Value>)>> = catalogs
        .iter()
        .map(|c| items(c).into_iter().map(|(k, _, d)| (k, d)).collect())
        .collect();
    let (mut changed, mut unchanged) = (Vec::new(), Vec::new());
    let (mut changed_at, mut unchanged_at) = (Vec::new(), Vec::new());
    for (si, (_, s, same)) in seen.iter().enumerate() {
        for (ii, ((kind, def), item)) in defs[si].iter().zip(&s.items).enumerate() {
            let first_use = if listed_before[si] && kind.held_when_new(hold_new) {
                FirstUse::Quarantine
            } else {
                FirstUse::Accept
            };
            let observation = PinObservation {
                name: &item.key,
                definition: def,
                sha256: item.sha256.as_deref(),
                first_use,
            };
            if *same {
                unchanged.push(observation);
                unchanged_at.push((si, ii));
            } else {
                changed.push(observation);
                changed_at.push((si, ii));
            }
        }
    }
    let pass = PinsSince {
        generation,
        changed: &changed,
        unchanged: &unchanged,
    };
    let checks = state.store(|s| s.observe_pins_since(pass, Timestamp::now()));
    let checks = match checks {
        Ok(checks) => checks,
        Err(e) => {
            // The transaction itself failed: nothing was checked, so everything counts as changed.
            tracing::warn!("pin transaction failed ({e}); quarantining every item");
            for (_, s, _) in seen.iter_mut() {
                for item in &mut s.items {
                    item.pin = Some(PinEffect::Held { new: false });
                }
            }
            return None;
        }
    };
    let mut trusted = true;
    let mut apply = |at: Vec<(usize, usize)>, results: Vec<Result<Observed, store::Error>>| {
        for ((si, ii), check) in at.into_iter().zip(results) {
            let item = &mut seen[si].1.items[ii];
            trusted &= check.is_ok();
            if let Ok(observed) = &check {
                if item.sha256.is_none() {
                    item.sha256 = Some(observed.sha256.clone());
                }
            }
            item.pin = Some(effect(&item.key, check));
        }
    };
    apply(changed_at, checks.changed);
    if let Some(results) = checks.unchanged {
        apply(unchanged_at, results);
    }
    trusted.then_some(checks.generation)
}
