//! The ports the stages run on: what the pipeline's stages receive instead of the whole gateway. The merged
//! catalog and pins, the upstreams calls execute on, the built-in tools, durable state (approvals, grants, pins,
//! records), the hooks, the code runner and code sessions, and the tables that outlive one request (progress
//! routes, the correlation of calls to their clients, bridged calls, tasks, listen streams).
//!
//! It knows no session: a stage reaches the client behind a request only through its `CallContext`
//! (`client::Client`). The `Gateway` composes one `Stages` at start and keeps the sessions and the event loop.

use crate::aggregate::Aggregate;
use crate::bridge::{Bridge, Listens};
use crate::correlate::Correlation;
use crate::cursor::PageLimits;
use crate::guard::Guard;
use crate::options::Options;
use crate::pins::PinView;
use crate::pipeline::finish::Recorder;
use crate::progress::ProgressTable;
use crate::rebuild::{Inputs, Merged};
use crate::state::State;
use crate::status;
use serde_json::Value;
use std::sync::Arc;
use upstream::{Status, Upstream};

pub(crate) struct Stages {
    pub(crate) opts: Options,
    /// The served profile's guard: the stdio session's, and every session opened without a profile of its own.
    /// Replaced whole by a reload (`Gateway::apply_reload`); a call keeps the one it started with.
    served: crate::live::Live<Guard>,
    /// Upstream credentials by server (`credentials`), replaced whole by a reload.
    credentials: crate::live::Live<crate::credentials::Credentials>,
    /// Approvals, pins, reporting and audit; `None` when this workspace has no usable state directory, in which
    /// case every ask fails closed.
    pub(crate) state: Option<Arc<State>>,
    /// toolgate's own workspace tools, served when a workspace was given explicitly.
    pub(crate) builtin: Option<Arc<builtin::Builtin>>,
    /// Where each request's records go (the same state) and its pre- and post-call hooks, in order
    /// (`Gateway::set_hooks`).
    pub(crate) recorder: Recorder,
    /// The upstreams calls go to, replaced whole by a reload (`Gateway::apply_reload`): a reader takes the list
    /// as it is now and keeps it for as long as it needs, so a call under way keeps the upstream it started on.
    upstreams: crate::live::Live<Vec<Arc<Upstream>>>,
    /// The merged catalog and pin view, published by each rebuild.
    pub(crate) merged: Arc<Merged>,
    pub(crate) progress: Arc<ProgressTable>,
    /// Which client and request caused each call in flight, and where upstream requests were relayed (`route`).
    pub(crate) correlation: Arc<Correlation>,
    /// Calls bridged for modern clients that wait for the clients' answers, by request state (`bridge`).
    pub(crate) bridge: Arc<Bridge>,
    /// Upstream tasks under toolgate's ids, each bound to its owner (`tasks`).
    pub(crate) tasks: crate::tasks::Tasks,
    /// Legacy clients' subscriptions on modern upstreams, as `subscriptions/listen` streams (`bridge::listen`).
    pub(crate) listens: Listens,
    /// Each client session's code-mode state (call numbers for `recall`, saved files).
    pub(crate) code_sessions: crate::codemode::Sessions,
    /// Runs code-mode programs; it keeps `CODE_SPARES` locked-down workers ready from the first client of code
    /// mode on (`Session::initialize`, `discover`), so a run does not wait for a worker to start and lock itself
    /// down.
    pub(crate) code_runner: codemode::Runner,
    /// toolgate's own tool definitions, worked out once: they follow only the options, which no reload changes.
    own_tools: std::sync::OnceLock<Arc<Vec<Value>>>,
}

/// Workers code mode keeps started and locked down ahead of runs: two, so that a run right after another finds
/// one while the spare used by the first is replaced. Each is one idle process of a few MB; they are the
/// gateway's, not any identity's, and count against no share.
const CODE_SPARES: usize = 2;

/// What `Stages::new` is composed of besides what it makes itself.
pub(crate) struct Parts {
    pub opts: Options,
    pub guard: Arc<Guard>,
    pub state: Option<Arc<State>>,
    pub builtin: Option<Arc<builtin::Builtin>>,
    pub upstreams: Vec<Arc<Upstream>>,
    pub progress: Arc<ProgressTable>,
    pub correlation: Arc<Correlation>,
}

impl Stages {
    pub(crate) fn new(p: Parts) -> Self {
        let code_runner =
            codemode::Runner::new(p.opts.code.worker.clone(), p.opts.code.limits.clone())
                .with_spares(CODE_SPARES);
        let root = p.state.as_deref().map(|s| s.namespace().state_root());
        let bridge = Bridge::new(p.opts.bridge_wait, root);
        let credentials = Arc::new(crate::credentials::Credentials::new(&p.opts.credentials));
        let recorder = Recorder {
            state: p.state.clone(),
            hooks: Arc::default(),
            telemetry: p.opts.telemetry.clone(),
        };
        Self {
            code_runner,
            opts: p.opts,
            served: crate::live::Live::new(p.guard),
            credentials: crate::live::Live::new(credentials),
            state: p.state,
            builtin: p.builtin,
            recorder,
            upstreams: crate::live::Live::new(Arc::new(p.upstreams)),
            merged: Arc::default(),
            progress: p.progress,
            correlation: p.correlation,
            bridge,
            tasks: Default::default(),
            listens: Default::default(),
            code_sessions: Default::default(),
            own_tools: Default::default(),
        }
    }

    /// The served profile's guard as it is now.
    pub(crate) fn guard(&self) -> Arc<Guard> {
        self.served.load()
    }

    /// Replaces the served profile's guard for every call that starts from now on.
    pub(crate) fn set_guard(&self, guard: Arc<Guard>) {
        self.served.store(guard);
    }

    /// The credentials as they are now.
    pub(crate) fn credentials(&self) -> Arc<crate::credentials::Credentials> {
        self.credentials.load()
    }

    /// Replaces the credentials for every request that starts from now on.
    pub(crate) fn set_credentials(&self, all: &[config::Credential]) {
        self.credentials
            .store(Arc::new(crate::credentials::Credentials::new(all)));
    }

    /// In code mode, starts the spare workers in the background unless they are ready or starting: called when
    /// a client arrives (its handshake, its first list), so its first run finds one, and after the answer is
    /// made rather than with the gateway, whose upstreams start meanwhile.
    pub(crate) fn prepare_code_workers(&self) {
        if self.opts.code.on() {
            self.code_runner.prepare();
        }
    }

    /// The aggregate and which of its tools `guard`'s policy shows (indices into `tools`), cached until either
    /// the aggregate or the pin view is replaced: listing a large catalog page by page must not recompute it.
    pub(crate) fn visible_tools(&self, guard: &Arc<Guard>) -> (Arc<Aggregate>, Arc<Vec<usize>>) {
        self.merged
            .visible_tools(guard, self.opts.quarantine_asks, self.opts.code.on())
    }

    /// What one page of a merged list may hold.
    pub(crate) fn page_limits(&self) -> PageLimits {
        PageLimits::new(self.opts.page_size, self.opts.limits.max_message_bytes)
    }

    pub(crate) fn aggregate(&self) -> Arc<Aggregate> {
        self.merged.aggregate()
    }

    /// Code mode's search index over the current merged catalog as `guard`'s profile sees it (empty in direct
    /// mode).
    pub(crate) fn search_index(&self, guard: &Arc<Guard>) -> Arc<codemode::SearchIndex> {
        if !self.opts.code.on() {
            return self.merged.search();
        }
        let served = Arc::ptr_eq(guard, &self.guard());
        self.merged
            .search_for(guard, served, self.opts.quarantine_asks)
    }

    /// Pin and poisoning status of every upstream tool, keyed `server__tool`.
    pub(crate) fn pins(&self) -> Arc<PinView> {
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
    pub(crate) fn audit_health(&self) -> status::AuditHealth {
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

    pub(crate) fn upstream(&self, name: &str) -> Option<Arc<Upstream>> {
        self.upstreams
            .load()
            .iter()
            .find(|u| u.name() == name)
            .cloned()
    }

    /// The upstreams as they are now; a reload later does not change the list returned.
    pub(crate) fn upstreams(&self) -> Arc<Vec<Arc<Upstream>>> {
        self.upstreams.load()
    }

    /// Replaces the upstreams for every reader from now on (a reload); whoever holds the old list keeps it.
    pub(crate) fn set_upstreams(&self, upstreams: Vec<Arc<Upstream>>) {
        self.upstreams.store(Arc::new(upstreams));
    }

    /// Every upstream's status, its errors and stderr scrubbed of its credentials' values (`credentials`).
    pub(crate) fn statuses(&self) -> Vec<Status> {
        let credentials = self.credentials();
        self.upstreams()
            .iter()
            .map(|u| {
                let mut status = u.status();
                credentials.scrub_status(&mut status);
                status
            })
            .collect()
    }

    /// toolgate's own tools, listed before upstream tools.
    pub(crate) fn own_tools(&self) -> Arc<Vec<Value>> {
        Arc::clone(
            self.own_tools
                .get_or_init(|| Arc::new(self.own_tool_definitions())),
        )
    }

    fn own_tool_definitions(&self) -> Vec<Value> {
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

    pub(crate) fn rebuild_inputs(&self) -> Inputs {
        Inputs {
            upstreams: self.upstreams(),
            state: self.state.clone(),
            guard: self.guard(),
            naming: self.opts.naming.clone(),
            max_item_bytes: self.page_limits().bytes,
            hold_new_tools: self.opts.hold_new_tools,
            quarantine_asks: self.opts.quarantine_asks,
            own_tools: self.own_tools(),
            code_mode: self.opts.code.on(),
        }
    }

    /// The instructions a client gets: the upstreams' (`upstream`), after code mode's own in code mode.
    pub(crate) fn instructions(&self, upstream: Option<&str>) -> Option<String> {
        let own = crate::codemode::INSTRUCTIONS;
        match (self.opts.code.on() && !self.opts.wrap, upstream) {
            (true, Some(u)) => Some(format!("{own}\n\n{u}")),
            (true, None) => Some(own.to_owned()),
            (false, u) => u.map(str::to_owned),
        }
    }
}
