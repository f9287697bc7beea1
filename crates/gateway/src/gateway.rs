//! The `Gateway`: composition (it starts the upstreams and composes the `Stages` the pipeline runs on), the live
//! sessions, and the event loop over what upstreams send. One per process; front ends create sessions on it.
//!
//! Concurrency: upstream events arrive on one bounded channel and are handled by one task, in order, so catalog
//! rebuilds and the `list_changed` notifications they cause never interleave. A rebuild runs on a blocking thread
//! (`rebuild`), so a large catalog stalls neither this task's runtime nor any session. The `shutdown` token is cancelled
//! by `Gateway::shutdown`, which the binary calls on stdin EOF, SIGINT or SIGTERM.

use crate::aggregate::Aggregate;
use crate::correlate::Correlation;
use crate::guard::Guard;
pub use crate::options::Options;
use crate::pins::PinView;
use crate::progress::ProgressTable;
use crate::rebuild::ListKind;
use crate::session::Session;
use crate::stages::{Parts, Stages};
use crate::state::State;
use crate::status;
use config::Config;
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

/// Composition, sessions and the event loop: the stages run on `stages`, which knows no session.
pub struct Gateway {
    pub(crate) stages: Arc<Stages>,
    /// The guards of other profiles an HTTP caller's sessions run under.
    pub(crate) profiles: crate::profiles::Profiles,
    /// Live sessions by id: where what an upstream sends on its own is delivered (`route`).
    sessions: Mutex<HashMap<String, Weak<Session>>>,
    /// Set once the first list has waited (bounded) for upstreams still starting.
    first_list: OnceCell<()>,
    pub(crate) shutdown: CancellationToken,
    /// How upstreams are started, for those a reload adds or changes.
    pub(crate) launcher: crate::launch::Launcher,
    /// Held by a reload from its first check to its last upstream stopped, and by shutdown once it has begun:
    /// two reloads never interleave, and none starts an upstream that shutdown would not end.
    pub(crate) reloading: tokio::sync::Mutex<()>,
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
        crate::warm::start();
        let (tx, rx) = mpsc::channel(EVENT_CAPACITY);
        let correlation = Arc::new(Correlation::watching(tx.downgrade()));
        let progress = Arc::new(ProgressTable::default());
        let routes: Arc<dyn upstream::ProgressRoutes> = progress.clone();
        let sinks = upstream::Sinks {
            events: tx,
            progress: Some(routes),
        };
        let launcher = crate::launch::Launcher {
            opts: opts.upstream.clone(),
            sinks,
            links: links.clone(),
        };
        let upstreams = config.servers.iter().map(|s| launcher.start(s)).collect();
        let profiles = crate::profiles::Profiles::new(config, Arc::clone(&guard), opts.code.mode);
        let stages = Arc::new(Stages::new(Parts {
            opts,
            guard,
            state,
            builtin,
            upstreams,
            progress,
            correlation,
        }));
        let gw = Arc::new(Self {
            stages,
            profiles,
            sessions: Mutex::new(HashMap::new()),
            first_list: OnceCell::new(),
            shutdown: CancellationToken::new(),
            launcher,
            reloading: tokio::sync::Mutex::new(()),
        });
        // What toolgate offers before any upstream has answered: its own tools, and every list kind to come (no
        // upstream catalog yet, so this build is small enough to run here).
        gw.stages.merged.rebuild(&gw.stages.rebuild_inputs());
        tokio::spawn(Arc::clone(&gw).event_loop(rx));
        gw
    }

    /// Waits for every upstream's first start, at most the start-up timeout each, and builds the merged catalog
    /// from what came up (for `doctor` and `preview`, which report on the whole start). Nothing here is fatal: an
    /// upstream that failed is reported by its status, an item that cannot be served by the aggregate's `held`.
    pub async fn ready(&self) {
        self.wait_settled(self.stages.opts.startup_timeout, true)
            .await;
        self.rebuild().await;
    }

    /// The first list (or call) of the process waits for upstreams still starting, at most `first_list_wait`, so
    /// a client that lists right after `initialize` sees the servers that start quickly. Later ones arrive with
    /// `list_changed`. Every later request finds this done.
    pub(crate) async fn first_list(&self) {
        self.first_list
            .get_or_init(|| async {
                self.wait_settled(self.stages.opts.first_list_wait, false)
                    .await;
                self.rebuild().await;
                // From here on a list may be served, so later rebuilds announce what they change.
                self.stages.merged.mark_listed();
            })
            .await;
    }

    /// Waits until every upstream has settled (ready or failed), at most `limit`; with `own_timeouts`, a server's
    /// own start-up timeout (Codex `startup_timeout_sec`) replaces `limit` for that server.
    async fn wait_settled(&self, limit: Duration, own_timeouts: bool) {
        let mut waits = tokio::task::JoinSet::new();
        for up in self.stages.upstreams().iter() {
            let up = Arc::clone(up);
            let limit = match up.config().startup_timeout {
                Some(own) if own_timeouts => own,
                _ => limit,
            };
            waits.spawn(async move { up.wait_settled(limit).await });
        }
        while waits.join_next().await.is_some() {}
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

    /// Closes every session still open, lets the calls that cancels record how they ended (bounded), writes what
    /// is queued for the audit log and the report, then ends every upstream process group and waits for them.
    ///
    /// The calls must run before the flush: on a current-thread runtime the flush blocks the one thread their
    /// cancellation runs on, so a held call not yet cancelled would leave its approval pending and its records
    /// unwritten by the time toolgate exits. A front end whose loop was dropped (a signal) never closed its
    /// session, which is why it is closed here too.
    pub async fn shutdown(&self) {
        self.shutdown.cancel();
        // A reload under way finishes first (it sees the token and starts nothing); none begins after this.
        let _no_reload = self.reloading.lock().await;
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
        self.stages.bridge.abandon_all().await;
        if let Some(state) = &self.stages.state {
            // What calls left queued for the audit log and the report is written before toolgate exits.
            state.flush();
        }
        let mut stops = tokio::task::JoinSet::new();
        for up in self.stages.upstreams().iter() {
            let up = Arc::clone(up);
            stops.spawn(async move { up.shutdown().await });
        }
        while stops.join_next().await.is_some() {}
    }

    pub(crate) fn register_session(&self, session: &Arc<Session>) {
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        sessions.retain(|_, s| s.strong_count() > 0);
        sessions.insert(session.id.clone(), Arc::downgrade(session));
    }

    pub(crate) fn live_sessions(&self) -> Vec<Arc<Session>> {
        let sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        sessions.values().filter_map(Weak::upgrade).collect()
    }

    /// The live session with this id, if it is still there.
    pub(crate) fn session(&self, id: &str) -> Option<Arc<Session>> {
        let sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        sessions.get(id).and_then(Weak::upgrade)
    }

    /// Registers the call hooks, in order, replacing any registered before. Meant for start-up, before
    /// serving: a call already under way keeps the list it started with.
    pub fn set_hooks(&self, hooks: Vec<Arc<dyn crate::hooks::CallHook>>) {
        self.stages.recorder.hooks.set(hooks);
    }

    /// Post-hook runs that failed (error, timeout, panic) since start; none of them changed a result.
    pub fn hook_failures(&self) -> u64 {
        self.stages.recorder.hooks.failures()
    }

    /// Records the `host:port` the other replicas of a team reach this process at: the request states of bridged
    /// calls name it from now on, so a retry that reaches another replica can be sent on here.
    pub fn advertise(&self, address: String) {
        self.stages.bridge.advertise(address);
    }

    /// Where a modern request must be served when what it names is held by one process: a retry of a bridged
    /// call (`tools/call`, `prompts/get` or `resources/read` with toolgate's `requestState`), or a task method
    /// (`tasks/get`, `tasks/update`, `tasks/cancel`, `tasks/result`) on a task whose upstream call another
    /// replica made. `Here` for every other request, and for whatever does not open as genuine.
    pub fn holder_of(&self, method: &str, params: Option<&serde_json::Value>) -> crate::Holder {
        let Some(params) = params else {
            return crate::Holder::Here;
        };
        if method.starts_with("tasks/") && method != "tasks/list" {
            let state = self.stages.state.as_deref();
            return match params.get("taskId").and_then(serde_json::Value::as_str) {
                Some(ours) => self
                    .stages
                    .tasks
                    .holder(state, ours, self.stages.bridge.seal()),
                None => crate::Holder::Here,
            };
        }
        let state = Some(params)
            .filter(|_| crate::bridge::BRIDGED.contains(&method))
            .and_then(crate::bridge::retry_state);
        match state {
            Some(state) => self.stages.bridge.holder(&state),
            None => crate::Holder::Here,
        }
    }

    /// The merged catalog as it is now.
    pub fn aggregate(&self) -> Arc<Aggregate> {
        self.stages.aggregate()
    }

    /// Pin and poisoning status of every upstream tool, keyed `server__tool`.
    pub fn pins(&self) -> Arc<PinView> {
        self.stages.pins()
    }

    /// Whether audit records are being written (for `toolgate_status` and `doctor`).
    pub fn audit_health(&self) -> status::AuditHealth {
        self.stages.audit_health()
    }

    pub fn upstream(&self, name: &str) -> Option<Arc<Upstream>> {
        self.stages.upstream(name)
    }

    /// The upstreams as they are now (a reload may replace the list; this one stays as it was).
    pub fn upstreams(&self) -> Arc<Vec<Arc<Upstream>>> {
        self.stages.upstreams()
    }

    pub fn statuses(&self) -> Vec<Status> {
        self.stages.statuses()
    }

    /// Rebuilds the merged catalog on a blocking thread; returns which lists changed. The build publishes before
    /// it ends, even when the caller stops waiting for it.
    async fn rebuild(&self) -> Vec<ListKind> {
        let merged = Arc::clone(&self.stages.merged);
        let inputs = self.stages.rebuild_inputs();
        match tokio::task::spawn_blocking(move || merged.rebuild(&inputs)).await {
            Ok(changed) => changed,
            Err(e) => {
                // The published catalog stays as it was: nothing new is served that was not checked.
                tracing::error!("building the merged catalog failed: {e}");
                Vec::new()
            }
        }
    }

    async fn event_loop(self: Arc<Self>, mut rx: mpsc::Receiver<Event>) {
        loop {
            let event = tokio::select! {
                e = rx.recv() => match e { Some(e) => e, None => return },
                () = self.shutdown.cancelled() => return,
            };
            self.stages.correlation.took_one();
            self.on_event(event).await;
            self.stages.correlation.handled_one();
        }
    }

    /// Handles one upstream event. Deliveries to sessions only post (`Session::post`): a client that does not
    /// read is closed, never waited on, so it cannot stall this loop for the other clients.
    pub(crate) async fn on_event(&self, mut event: Event) {
        // What an upstream says to a client (a log message, a question) holds none of its credentials' values.
        if let Event::Notification {
            server,
            params: Some(params),
            ..
        }
        | Event::Request {
            server,
            params: Some(params),
            ..
        } = &mut event
        {
            self.stages.credentials().scrub(server, params);
        }
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
                let s = self.stages.upstream(&server).map(|u| u.status());
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
