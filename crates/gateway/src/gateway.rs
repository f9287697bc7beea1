//! The `Gateway`: upstream supervisors, the merged catalog, live sessions, and the routing tables that outlive
//! one request (progress tokens). One per process; front ends create sessions on it.
//!
//! Concurrency: upstream events arrive on one bounded channel and are handled by one task, in order, so catalog
//! rebuilds and the `list_changed` notifications they cause never interleave. A rebuild runs on a blocking thread
//! (`rebuild`), so a large catalog stalls neither this task's runtime nor any session. The `shutdown` token is cancelled
//! by `Gateway::shutdown`, which the binary calls on stdin EOF, SIGINT or SIGTERM.

use crate::aggregate::Aggregate;
use crate::correlate::Correlation;
use crate::cursor::PageLimits;
use crate::guard::Guard;
pub use crate::options::Options;
use crate::pins::PinView;
use crate::progress::ProgressTable;
use crate::rebuild::{Inputs, Merged};
use crate::session::{ListKind, Session};
use crate::state::State;
use crate::status;
use config::Config;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::sync::{mpsc, OnceCell};
use tokio_util::sync::CancellationToken;
use upstream::{Event, Status, Upstream};

/// Bounded so a flood of upstream notifications slows that upstream's reader rather than growing memory.
const EVENT_CAPACITY: usize = 1024;

/// How long shutdown waits for cancelled calls to record how they ended. A cancelled call only writes its records
/// and answers the upstream it was forwarded to, so this is ample; a call stuck past it must not keep toolgate
/// from exiting.
const SETTLE_WAIT: Duration = Duration::from_secs(2);

pub struct Gateway {
    pub(crate) opts: Options,
    /// The served profile's guard: the stdio session's, and every session opened without a profile of its own.
    pub(crate) guard: Arc<Guard>,
    /// The guards of other profiles an HTTP caller's sessions run under.
    profiles: crate::profiles::Profiles,
    /// Approvals, pins, reporting and audit; `None` when this workspace has no usable state directory, in which
    /// case every ask fails closed.
    pub(crate) state: Option<Arc<State>>,
    /// toolgate's own workspace tools, served when a workspace was given explicitly.
    pub(crate) builtin: Option<Arc<builtin::Builtin>>,
    /// Pre- and post-call hooks, in order (`set_hooks`).
    pub(crate) hooks: crate::hooks::Registry,
    upstreams: Vec<Arc<Upstream>>,
    /// The merged catalog and pin view, published by each rebuild.
    merged: Arc<Merged>,
    sessions: Mutex<Vec<Weak<Session>>>,
    pub(crate) progress: Arc<ProgressTable>,
    /// Which session and request caused each call in flight, and where upstream requests were relayed (`route`).
    pub(crate) correlation: Arc<Correlation>,
    /// Calls bridged for modern clients that wait for the clients' answers, by request state (`bridge`).
    pub(crate) bridge: Arc<crate::bridge::Bridge>,
    /// Upstream tasks under toolgate's ids, each bound to its owner (`tasks`).
    pub(crate) tasks: crate::tasks::Tasks,
    /// Set once the first list has waited (bounded) for upstreams still starting.
    first_list: OnceCell<()>,
    /// Legacy clients' subscriptions on modern upstreams, as `subscriptions/listen` streams (`bridge::listen`).
    pub(crate) listens: crate::bridge::Listens,
    shutdown: CancellationToken,
    /// Each client session's code-mode state (call numbers for `recall`, saved files).
    pub(crate) code_sessions: crate::codemode::Sessions,
    /// Runs code-mode programs; it keeps one locked-down worker ready from the first run on, so a run does not
    /// wait for a worker to start and lock itself down.
    pub(crate) code_runner: codemode::Runner,
}

impl Gateway {
    /// Starts every configured upstream and the event loop.
    pub fn start(
        config: &Config,
        opts: Options,
        guard: Arc<Guard>,
        state: Option<Arc<State>>,
    ) -> Arc<Self> {
        Self::start_with(config, opts, guard, state, None)
    }

    /// Like `start`, also serving toolgate's own workspace tools.
    pub fn start_with(
        config: &Config,
        opts: Options,
        guard: Arc<Guard>,
        state: Option<Arc<State>>,
        builtin: Option<Arc<builtin::Builtin>>,
    ) -> Arc<Self> {
        Self::start_linked(config, opts, guard, state, builtin, &HashMap::new())
    }

    /// Like `start_with`, with the named upstreams started through the given connectors (an in-process server
    /// over `upstream::memory`, say) instead of their configured transport.
    pub fn start_linked(
        config: &Config,
        opts: Options,
        guard: Arc<Guard>,
        state: Option<Arc<State>>,
        builtin: Option<Arc<builtin::Builtin>>,
        links: &HashMap<String, Arc<dyn upstream::Connector>>,
    ) -> Arc<Self> {
        let mut opts = opts;
        // A wrapped server must look exactly like itself: no code mode.
        match opts.wrap {
            true => opts.code.mode = config::Mode::Direct,
            false => opts.code.settle(config, &guard),
        }
        let (tx, rx) = mpsc::channel(EVENT_CAPACITY);
        let correlation = Arc::new(Correlation::watching(tx.downgrade()));
        let progress = Arc::new(ProgressTable::default());
        let routes: Arc<dyn upstream::ProgressRoutes> = progress.clone();
        let sinks = upstream::Sinks {
            events: tx,
            progress: Some(routes),
        };
        let upstreams = config
            .servers
            .iter()
            .map(|s| match links.get(&s.name) {
                Some(link) => Upstream::start_linked(
                    s.clone(),
                    opts.upstream.clone(),
                    sinks.clone(),
                    Arc::clone(link),
                ),
                None => Upstream::start(s.clone(), opts.upstream.clone(), sinks.clone()),
            })
            .collect();
        let code_runner = codemode::Runner::new(opts.code.worker.clone(), opts.code.limits.clone())
            .with_spare(true);
        let profiles = crate::profiles::Profiles::new(config, Arc::clone(&guard), opts.code.mode);
        let bridge = crate::bridge::Bridge::new(opts.bridge_wait);
        let gw = Arc::new(Self {
            code_runner,
            opts,
            guard,
            profiles,
            state,
            builtin,
            hooks: Default::default(),
            upstreams,
            merged: Arc::default(),
            sessions: Mutex::new(Vec::new()),
            progress,
            correlation,
            bridge,
            tasks: Default::default(),
            first_list: OnceCell::new(),
            listens: Default::default(),
            shutdown: CancellationToken::new(),
            code_sessions: Default::default(),
        });
        // What toolgate offers before any upstream has answered: its own tools, and every list kind to come (no
        // upstream catalog yet, so this build is small enough to run here).
        gw.merged.rebuild(&gw.rebuild_inputs());
        tokio::spawn(Arc::clone(&gw).event_loop(rx));
        gw
    }

    /// Waits for every upstream's first start, at most the start-up timeout each, and builds the merged catalog
    /// from what came up (for `doctor` and `preview`, which report on the whole start). Nothing here is fatal: an
    /// upstream that failed is reported by its status, an item that cannot be served by the aggregate's `held`.
    pub async fn ready(&self) {
        self.wait_settled(self.opts.startup_timeout, true).await;
        self.rebuild().await;
    }

    /// The first list (or call) of the process waits for upstreams still starting, at most `first_list_wait`, so
    /// a client that lists right after `initialize` sees the servers that start quickly. Later ones arrive with
    /// `list_changed`. Every later request finds this done.
    pub(crate) async fn first_list(&self) {
        self.first_list
            .get_or_init(|| async {
                self.wait_settled(self.opts.first_list_wait, false).await;
                self.rebuild().await;
                // From here on a list may be served, so later rebuilds announce what they change.
                self.merged.mark_listed();
            })
            .await;
    }

    /// Waits until every upstream has settled (ready or failed), at most `limit`; with `own_timeouts`, a server's
    /// own start-up timeout (Codex `startup_timeout_sec`) replaces `limit` for that server.
    async fn wait_settled(&self, limit: Duration, own_timeouts: bool) {
        let mut waits = tokio::task::JoinSet::new();
        for up in &self.upstreams {
            let up = Arc::clone(up);
            let limit = match up.config().startup_timeout {
                Some(own) if own_timeouts => own,
                _ => limit,
            };
            waits.spawn(async move { up.wait_settled(limit).await });
        }
        while waits.join_next().await.is_some() {}
    }

    /// The aggregate and which of its tools `guard`'s policy shows (indices into `tools`), cached until either
    /// the aggregate or the pin view is replaced: listing a large catalog page by page must not recompute it.
    pub(crate) fn visible_tools(&self, guard: &Arc<Guard>) -> (Arc<Aggregate>, Arc<Vec<usize>>) {
        self.merged
            .visible_tools(guard, self.opts.quarantine_asks, self.opts.code.on())
    }

    /// The guard sessions of `profile` decide with (`None`: the served profile's). It fails for a profile the
    /// configuration does not define or that sets the other mode.
    pub(crate) fn guard_for(&self, profile: Option<&str>) -> Result<Arc<Guard>, crate::Error> {
        self.profiles.guard(profile)
    }

    /// Checks at start that sessions can run under `profile` (an API key or the JWT settings name it), so a
    /// misconfigured key is found before anybody presents it.
    pub fn check_profile(&self, profile: &str) -> Result<(), crate::Error> {
        self.profiles.guard(Some(profile)).map(drop)
    }

    /// The guard of `profile` for admin explanations and previews (`None`: the served profile's).
    pub fn profile_guard(&self, profile: Option<&str>) -> Result<Arc<Guard>, crate::Error> {
        self.profiles.guard(profile)
    }

    /// What one page of a merged list may hold.
    pub(crate) fn page_limits(&self) -> PageLimits {
        PageLimits::new(self.opts.page_size, self.opts.limits.max_message_bytes)
    }

    pub fn aggregate(&self) -> Arc<Aggregate> {
        self.merged.aggregate()
    }

    /// Code mode's search index over the current merged catalog as `guard`'s profile sees it (empty in direct
    /// mode).
    pub(crate) fn search_index(&self, guard: &Arc<Guard>) -> Arc<codemode::SearchIndex> {
        if !self.opts.code.on() {
            return self.merged.search();
        }
        let served = Arc::ptr_eq(guard, self.profiles.served());
        self.merged
            .search_for(guard, served, self.opts.quarantine_asks)
    }

    /// Pin and poisoning status of every upstream tool, keyed `server__tool`.
    pub fn pins(&self) -> Arc<PinView> {
        self.merged.pins()
    }

    /// A quarantined or flagged tool may have been accepted by a human since the view was built: ask the store
    /// again with the tool's current definition, and update the view when the pin now matches (lifting the
    /// quarantine, and the flags' block when that exact definition was accepted despite them). Returns whether
    /// the pin now matches.
    pub(crate) fn recheck_pin(&self, server: &str, tool: &str) -> bool {
        let (Some(state), Some(up)) = (&self.state, self.upstream(server)) else {
            return false;
        };
        let catalog = up.catalog();
        let Some(def) = catalog
            .tools
            .iter()
            .find(|t| t.get("name").and_then(Value::as_str) == Some(tool))
        else {
            return false;
        };
        let key = format!("{server}__{tool}");
        let now = store::Timestamp::now();
        let checked = state.store(|s| {
            let check = s.observe_tool(&key, def, store::FirstUse::Accept, now)?;
            let overridden = s.get_pin(&key)?.is_some_and(|p| p.flags_overridden());
            Ok::<_, store::Error>((check, overridden))
        });
        let Ok((store::PinCheck::Unchanged, overridden)) = checked else {
            return false;
        };
        let mut slot = self.merged.pins.write().unwrap_or_else(|p| p.into_inner());
        let mut view = (**slot).clone();
        if let Some(p) = view.get_mut(&key) {
            p.quarantined = false;
            p.flags_overridden = overridden;
        }
        *slot = Arc::new(view);
        true
    }

    /// Whether audit records are being written (for `toolgate_status` and `doctor`).
    pub fn audit_health(&self) -> status::AuditHealth {
        match &self.state {
            None => status::AuditHealth::Off,
            Some(s) => match s.audit_problem() {
                None => status::AuditHealth::Ok,
                Some(p) => status::AuditHealth::Failing(p),
            },
        }
    }

    /// Whether a flagged tool is still blocked after asking the store again (a human may have accepted it
    /// despite its flags since the view was built).
    pub(crate) fn flags_still_block(&self, server: &str, tool: &str) -> bool {
        !self.recheck_pin(server, tool)
            || self
                .pins()
                .get(&format!("{server}__{tool}"))
                .is_none_or(crate::pins::PinStatus::blocked_by_flags)
    }

    /// Answers a request an upstream sent, if that upstream is still connected (else there is no one to answer).
    pub(crate) async fn answer_upstream(
        &self,
        server: &str,
        id: Value,
        outcome: Result<Value, Value>,
    ) {
        if let Some(conn) = self.upstream(server).and_then(|u| u.connection().ok()) {
            let _ = conn.respond(id, outcome).await;
        }
    }

    pub fn upstream(&self, name: &str) -> Option<&Arc<Upstream>> {
        self.upstreams.iter().find(|u| u.name() == name)
    }

    pub fn upstreams(&self) -> &[Arc<Upstream>] {
        &self.upstreams
    }

    pub fn statuses(&self) -> Vec<Status> {
        self.upstreams.iter().map(|u| u.status()).collect()
    }

    /// Closes every session still open, lets the calls that cancels record how they ended (bounded), writes what
    /// is queued for the audit log and the report, then ends every upstream process group and waits for them.
    ///
    /// The calls must run before the flush: on a current-thread runtime the flush blocks the one thread their
    /// cancellation runs on, so a held call not yet cancelled would leave its approval pending and its records
    /// unwritten by the time toolgate exits. A front end whose loop was dropped (a signal) never closed its
    /// session, which is why it is closed here too.
    pub async fn shutdown(&self) {
        self.shutdown.cancel();
        let sessions = self.live_sessions();
        for session in &sessions {
            session.close();
        }
        let settled = async {
            for session in &sessions {
                session.settled().await;
            }
        };
        if tokio::time::timeout(SETTLE_WAIT, settled).await.is_err() {
            tracing::warn!("calls still running at shutdown; their records may be missing");
        }
        drop(sessions);
        // Calls waiting for a client's answers are cancelled upstream and recorded before the flush.
        self.bridge.abandon_all().await;
        if let Some(state) = &self.state {
            // What calls left queued for the audit log and the report is written before toolgate exits.
            state.flush();
        }
        let mut stops = tokio::task::JoinSet::new();
        for up in &self.upstreams {
            let up = Arc::clone(up);
            stops.spawn(async move { up.shutdown().await });
        }
        while stops.join_next().await.is_some() {}
    }

    /// toolgate's own tools, listed before upstream tools.
    pub(crate) fn own_tools(&self) -> Vec<Value> {
        if self.opts.surface == crate::own::Surface::ToolHub {
            return crate::toolhub::definitions();
        }
        let mut tools = Vec::new();
        if !self.opts.wrap {
            tools.push(status::definition());
        }
        // The approval tools come with approvals: without state there is nothing to resume.
        if self.state.is_some() {
            tools.extend(crate::intrinsics::definitions());
        }
        if self.opts.code.on() && !self.opts.wrap {
            tools.extend(crate::codemode::definitions());
        }
        if self.builtin.is_some() {
            tools.extend(builtin::tool_definitions());
            tools.extend(crate::intrinsics::workspace_definitions());
        }
        tools
    }

    pub(crate) fn register_session(&self, session: &Arc<Session>) {
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        sessions.retain(|s| s.strong_count() > 0);
        sessions.push(Arc::downgrade(session));
    }

    pub(crate) fn live_sessions(&self) -> Vec<Arc<Session>> {
        let sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        sessions.iter().filter_map(Weak::upgrade).collect()
    }

    /// Rebuilds the merged catalog on a blocking thread; returns which lists changed. The build publishes before
    /// it ends, even when the caller stops waiting for it.
    async fn rebuild(&self) -> Vec<ListKind> {
        let merged = Arc::clone(&self.merged);
        let inputs = self.rebuild_inputs();
        match tokio::task::spawn_blocking(move || merged.rebuild(&inputs)).await {
            Ok(changed) => changed,
            Err(e) => {
                // The published catalog stays as it was: nothing new is served that was not checked.
                tracing::error!("building the merged catalog failed: {e}");
                Vec::new()
            }
        }
    }

    fn rebuild_inputs(&self) -> Inputs {
        Inputs {
            upstreams: self.upstreams.clone(),
            state: self.state.clone(),
            guard: Arc::clone(&self.guard),
            naming: self.opts.naming.clone(),
            max_item_bytes: self.page_limits().bytes,
            hold_new_tools: self.opts.hold_new_tools,
            quarantine_asks: self.opts.quarantine_asks,
            own_tools: self.own_tools(),
            code_mode: self.opts.code.on(),
        }
    }

    async fn event_loop(self: Arc<Self>, mut rx: mpsc::Receiver<Event>) {
        loop {
            let event = tokio::select! {
                e = rx.recv() => match e { Some(e) => e, None => return },
                () = self.shutdown.cancelled() => return,
            };
            self.correlation.took_one();
            self.on_event(event).await;
            self.correlation.handled_one();
        }
    }

    /// Handles one upstream event. Deliveries to sessions only post (`Session::post`): a client that does not
    /// read is closed, never waited on, so it cannot stall this loop for the other clients.
    pub(crate) async fn on_event(&self, event: Event) {
        match event {
            Event::CatalogChanged { server } => {
                // Empty until the first list has waited for the starting upstreams: nobody holds a list that could
                // be stale. After it, sessions learn of every change, including servers that arrive late.
                let changed = self.rebuild().await;
                tracing::debug!(server, "merged catalog rebuilt");
                for session in self.live_sessions() {
                    for kind in &changed {
                        session.list_changed(*kind).await;
                    }
                }
            }
            Event::StatusChanged { server } => {
                let s = self.upstream(&server).map(|u| u.status());
                if let Some(s) = s {
                    tracing::info!(server, state = s.state.as_str(), "upstream state changed");
                }
            }
            Event::Notification {
                server,
                method,
                params,
            } => self.on_notification(&server, method, params).await,
            Event::Request {
                server,
                id,
                method,
                params,
                caller,
            } => {
                self.on_upstream_request(&server, id, method, params, caller)
                    .await
            }
        }
    }
}
