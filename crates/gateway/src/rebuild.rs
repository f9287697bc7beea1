//! The merged catalog a gateway serves, and building it: the pin pass over every upstream catalog, withholding
//! what is held, the merge, which tools the policy shows, and the swap that publishes all of it at once.
//!
//! A build of a large catalog takes a while, so the gateway runs it on a blocking thread (`Gateway::rebuild`),
//! never on the event loop or a session's task. Builds are serialised by the pin cache's lock, each reads the
//! upstream catalogs after taking it (the newest catalogs win), and a build publishes before it returns: a list
//! served after a build finished sees it. This module does not decide when to build or tell sessions (the
//! gateway does), and it does not page lists (`cursor` does).

use crate::aggregate::{Aggregate, Layout, Naming};
use crate::guard::Guard;
use crate::pins::{PinCache, PinView};
use crate::state::State;
use codemode::SearchIndex;
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};
use upstream::Upstream;

/// A merged list whose change sessions are told of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ListKind {
    Tools,
    Prompts,
    Resources,
}

impl ListKind {
    pub(crate) fn method(self) -> &'static str {
        match self {
            ListKind::Tools => "notifications/tools/list_changed",
            ListKind::Prompts => "notifications/prompts/list_changed",
            ListKind::Resources => "notifications/resources/list_changed",
        }
    }
    pub(crate) fn filter_key(self) -> &'static str {
        match self {
            ListKind::Tools => "toolsListChanged",
            ListKind::Prompts => "promptsListChanged",
            ListKind::Resources => "resourcesListChanged",
        }
    }
}

/// What one build reads besides the upstream catalogs; owned, so a build can run on another thread.
pub(crate) struct Inputs {
    pub upstreams: Arc<Vec<Arc<Upstream>>>,
    pub state: Option<Arc<State>>,
    pub guard: Arc<Guard>,
    pub naming: Naming,
    /// The largest definition a list page can carry.
    pub max_item_bytes: usize,
    pub hold_new_tools: bool,
    pub quarantine_asks: bool,
    /// toolgate's own tools, listed first.
    pub own_tools: Arc<Vec<Value>>,
    /// Code mode: a client lists only toolgate's control tools and the code-mode tools, and the search index
    /// is built with the catalog.
    pub code_mode: bool,
}

/// The published merged catalog and pin view.
#[derive(Default)]
pub(crate) struct Merged {
    aggregate: RwLock<Arc<Aggregate>>,
    /// Pin and poisoning status of every upstream item, refreshed with the catalog (and by `recheck_pin`).
    pub(crate) pins: RwLock<Arc<PinView>>,
    /// Held while a merged catalog is built, so two builds never race and the newest catalogs win; it keeps what
    /// the last pin pass found, so the next one redoes only what changed.
    building: Mutex<Building>,
    /// Which tools of the current aggregate each profile's policy shows, computed once per aggregate, pin view
    /// and guard (one entry per guard in use: the served profile's and those of HTTP callers).
    visible: Mutex<Vec<VisibleTools>>,
    /// A list may have been served (set once the first list has waited for the starting upstreams).
    listed: AtomicBool,
    /// Code mode's search index over the published catalog, published with it.
    search: RwLock<Arc<SearchIndex>>,
}

/// What the last build kept for the next.
#[derive(Default)]
struct Building {
    pins: PinCache,
    /// The aggregate and pin view the last build published, with what it worked out from them (which tools the
    /// served profile's policy shows, code mode's search index).
    published: Option<(Arc<Aggregate>, Arc<PinView>)>,
}

/// The indices of the visible entries of one aggregate's `tools` under one pin view and guard, and code mode's
/// search index over them when a profile other than the served one needs it.
struct VisibleTools {
    guard: Arc<Guard>,
    aggregate: Arc<Aggregate>,
    pins: Arc<PinView>,
    indices: Arc<Vec<usize>>,
    search: Option<Arc<SearchIndex>>,
}

impl Merged {
    pub(crate) fn aggregate(&self) -> Arc<Aggregate> {
        Arc::clone(&self.aggregate.read().unwrap_or_else(|p| p.into_inner()))
    }

    pub(crate) fn pins(&self) -> Arc<PinView> {
        Arc::clone(&self.pins.read().unwrap_or_else(|p| p.into_inner()))
    }

    pub(crate) fn search(&self) -> Arc<SearchIndex> {
        Arc::clone(&self.search.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// From now on a list may be served from what is published; set before the first one is.
    pub(crate) fn mark_listed(&self) {
        self.listed.store(true, Ordering::SeqCst);
    }

    /// Builds the merged catalog from the upstreams' current catalogs and publishes it; returns which lists
    /// changed, or nothing when no list can have been served before it was published (whether one was is read
    /// right after publishing: read later, a build that finished before the first list would announce a change
    /// nobody could have missed). Blocking: the gateway calls it on a blocking thread.
    pub(crate) fn rebuild(&self, inputs: &Inputs) -> Vec<ListKind> {
        let mut building = self.building.lock().unwrap_or_else(|p| p.into_inner());
        // Timed at debug level: how long each stage of a build takes is what a slow list is diagnosed with.
        let started = Instant::now();
        let catalogs: Vec<_> = inputs
            .upstreams
            .iter()
            .map(|u| (u.name().to_owned(), u.catalog()))
            .collect();
        let layout = Layout {
            naming: &inputs.naming,
            max_item_bytes: inputs.max_item_bytes,
            awaiting: inputs.upstreams.iter().any(|u| !u.is_settled()),
        };
        let current = self.aggregate();
        let current_pins = self.pins();
        let (pins, next, pinned) = pin_and_merge(
            &mut building.pins,
            inputs,
            &catalogs,
            &layout,
            &current,
            started,
        );
        // With the merge beside the pass, `merged - pinned` is what the merge added after the pass ended.
        let merged = started.elapsed();
        // An equal pin view keeps its allocation, so what was worked out from the published one stays valid.
        let pins = match Arc::ptr_eq(&current_pins, &pins) || *current_pins == *pins {
            true => current_pins,
            false => pins,
        };
        let changed = changed_lists(&current, &next);
        if self.still_published(&building, &next, &pins) {
            tracing::debug!(
                tools = next.tools.len(),
                pins_ms = pinned.as_millis(),
                total_ms = started.elapsed().as_millis(),
                "merged catalog unchanged"
            );
        } else {
            building.published = Some((Arc::clone(&next), Arc::clone(&pins)));
            self.publish(inputs, next, pins, pinned, merged, started);
        }
        if self.listed.load(Ordering::SeqCst) {
            changed
        } else {
            Vec::new()
        }
    }

    /// Whether `aggregate` and `pins` are the ones the last build published and still published (a pin rechecked
    /// since replaces the view): what was worked out from them stands, nothing needs publishing.
    fn still_published(
        &self,
        building: &Building,
        aggregate: &Arc<Aggregate>,
        pins: &Arc<PinView>,
    ) -> bool {
        let published = building
            .published
            .as_ref()
            .is_some_and(|(a, p)| Arc::ptr_eq(a, aggregate) && Arc::ptr_eq(p, pins));
        published && Arc::ptr_eq(pins, &self.pins())
    }

    /// Works out which tools the served profile's policy shows (and code mode's search index), then publishes
    /// the aggregate, the pin view and both at once.
    fn publish(
        &self,
        inputs: &Inputs,
        next: Arc<Aggregate>,
        pins: Arc<PinView>,
        pinned: Duration,
        merged: Duration,
        started: Instant,
    ) {
        // Worked out here, off the event loop, so the first page of a large list does not pay for it.
        let indices = shown(
            &inputs.guard,
            inputs.quarantine_asks,
            inputs.code_mode,
            &next,
            &pins,
        );
        let search = match inputs.code_mode {
            true => Arc::new(crate::codemode::index(
                &inputs.guard,
                inputs.quarantine_asks,
                &next,
                &pins,
            )),
            false => Arc::default(),
        };
        tracing::debug!(
            tools = next.tools.len(),
            pins_ms = pinned.as_millis(),
            merge_ms = (merged - pinned).as_millis(),
            total_ms = started.elapsed().as_millis(),
            "merged catalog built"
        );
        *self.pins.write().unwrap_or_else(|p| p.into_inner()) = Arc::clone(&pins);
        *self.search.write().unwrap_or_else(|p| p.into_inner()) = search;
        *self.aggregate.write().unwrap_or_else(|p| p.into_inner()) = Arc::clone(&next);
        // Other profiles' entries are stale now; each is computed again when its profile next lists.
        *self.visible.lock().unwrap_or_else(|p| p.into_inner()) = vec![VisibleTools {
            guard: Arc::clone(&inputs.guard),
            aggregate: next,
            pins,
            indices,
            search: None,
        }];
    }

    /// The aggregate and which of its tools `guard`'s policy shows (indices into `tools`), cached until either
    /// the aggregate or the pin view is replaced: listing a large catalog page by page must not recompute it.
    pub(crate) fn visible_tools(
        &self,
        guard: &Arc<Guard>,
        quarantine_asks: bool,
        code_mode: bool,
    ) -> (Arc<Aggregate>, Arc<Vec<usize>>) {
        let aggregate = self.aggregate();
        let pins = self.pins();
        let mut cache = self.visible.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = cache.iter().find(|c| c.fits(guard, &aggregate, &pins)) {
            return (aggregate, Arc::clone(&c.indices));
        }
        let indices = shown(guard, quarantine_asks, code_mode, &aggregate, &pins);
        cache.retain(|c| !Arc::ptr_eq(&c.guard, guard));
        cache.push(VisibleTools {
            guard: Arc::clone(guard),
            aggregate: Arc::clone(&aggregate),
            pins,
            indices: Arc::clone(&indices),
            search: None,
        });
        (aggregate, indices)
    }

    /// Code mode's search index as `guard`'s profile sees the catalog: the published one for the served
    /// profile (`served`), else built once per aggregate and pin view.
    pub(crate) fn search_for(
        &self,
        guard: &Arc<Guard>,
        served: bool,
        quarantine_asks: bool,
    ) -> Arc<SearchIndex> {
        if served {
            return self.search();
        }
        let aggregate = self.aggregate();
        let pins = self.pins();
        let mut cache = self.visible.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(search) = cache
            .iter()
            .find(|c| c.fits(guard, &aggregate, &pins))
            .and_then(|c| c.search.clone())
        {
            return search;
        }
        let search = Arc::new(crate::codemode::index(
            guard,
            quarantine_asks,
            &aggregate,
            &pins,
        ));
        match cache.iter_mut().find(|c| c.fits(guard, &aggregate, &pins)) {
            Some(c) => c.search = Some(Arc::clone(&search)),
            None => {
                cache.retain(|c| !Arc::ptr_eq(&c.guard, guard));
                cache.push(VisibleTools {
                    guard: Arc::clone(guard),
                    indices: shown(guard, quarantine_asks, true, &aggregate, &pins),
                    aggregate,
                    pins,
                    search: Some(Arc::clone(&search)),
                });
            }
        }
        search
    }
}

/// Catalogs with at least this many tools in all are merged beside the pin pass instead of after it.
const MERGE_BESIDE_PINS_FROM: usize = 2_000;

/// The pin pass over `catalogs` and the aggregate built from what it leaves served. The aggregate depends on the
/// pass only through what the pass withholds (held or flagged prompts, resources and instructions; held tools are
/// filtered when listed), so for a large catalog it is built on a second thread while the pass runs, from the
/// catalogs as they are, and kept only when the pass withholds nothing; otherwise it is built again from what
/// the pass left. Nothing is published before the pass has answered either way. The very catalogs, own tools and
/// layout the published aggregate (`current`) was built from make that aggregate again: it is kept, not rebuilt
/// (the first list's build right after the one an upstream's arrival caused finds exactly that). Returns the view,
/// the aggregate, and when (since the build's `started`) the pass ended.
fn pin_and_merge(
    cache: &mut PinCache,
    inputs: &Inputs,
    catalogs: &[(String, Arc<upstream::Catalog>)],
    layout: &Layout<'_>,
    current: &Arc<Aggregate>,
    started: Instant,
) -> (Arc<PinView>, Arc<Aggregate>, Duration) {
    let own = &inputs.own_tools;
    let build = |from: &[(String, Arc<upstream::Catalog>)]| {
        Arc::new(Aggregate::build_after(from, own, layout, current))
    };
    let large =
        catalogs.iter().map(|(_, c)| c.tools.len()).sum::<usize>() >= MERGE_BESIDE_PINS_FROM;
    let (pins, pinned, early) = std::thread::scope(|scope| {
        let early = (large && !current.built_from(catalogs, own, layout))
            .then(|| scope.spawn(|| build(catalogs)));
        let pins = cache.observe(inputs.state.as_ref(), catalogs, inputs.hold_new_tools);
        let pinned = started.elapsed();
        (pins, pinned, early.and_then(|h| h.join().ok()))
    });
    // Held or flagged prompts, resources and instructions never reach the merged catalog.
    let served = crate::pins::withhold(catalogs, &pins);
    let withheld_nothing = served
        .iter()
        .zip(catalogs)
        .all(|((_, a), (_, b))| Arc::ptr_eq(a, b));
    let next = match (current.built_from(&served, own, layout), early) {
        (true, _) => Arc::clone(current),
        (false, Some(early)) if withheld_nothing => early,
        (false, _) => build(&served),
    };
    (pins, next, pinned)
}

impl VisibleTools {
    fn fits(&self, guard: &Arc<Guard>, aggregate: &Arc<Aggregate>, pins: &Arc<PinView>) -> bool {
        Arc::ptr_eq(&self.guard, guard)
            && Arc::ptr_eq(&self.aggregate, aggregate)
            && Arc::ptr_eq(&self.pins, pins)
    }
}

/// Which lists differ between the published aggregate and the next (none when it is kept).
fn changed_lists(current: &Arc<Aggregate>, next: &Arc<Aggregate>) -> Vec<ListKind> {
    let mut changed = Vec::new();
    if Arc::ptr_eq(current, next) {
        return changed;
    }
    if current.tools != next.tools {
        changed.push(ListKind::Tools);
    }
    if current.prompts != next.prompts {
        changed.push(ListKind::Prompts);
    }
    if current.resources != next.resources || current.templates != next.templates {
        changed.push(ListKind::Resources);
    }
    changed
}

/// Which tools of `aggregate` the policy shows under `pins` (in code mode, of toolgate's own control and
/// code-mode tools only).
fn shown(
    guard: &Guard,
    quarantine_asks: bool,
    code_mode: bool,
    aggregate: &Aggregate,
    pins: &PinView,
) -> Arc<Vec<usize>> {
    let shown = guard.visible(&aggregate.tool_owners, pins, quarantine_asks);
    Arc::new(
        shown
            .iter()
            .zip(&aggregate.tool_owners)
            .enumerate()
            .filter(|(_, (shown, owner))| {
                **shown && crate::codemode::client_lists(code_mode, owner)
            })
            .map(|(i, _)| i)
            .collect(),
    )
}

#[cfg(test)]
#[path = "rebuild_tests.rs"]
mod tests;
