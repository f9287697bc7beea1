//! Test harness for sessions and the pipeline without processes: a `Gateway` over a temporary state directory,
//! a policy given as config, the fixture MCP server in this process over the in-memory upstream link, and
//! scripted clients, each driving one session of that gateway message by message (as many as a test opens).
//!
//! How a session is opened, fed and read is confined to `Wire`, the one adapter over the session API, which every
//! session test's client is built on; it keeps the stream each outgoing message was tagged with, so tests can tell
//! which request a message belongs to. `gateway` builds the bare gateway (no in-process upstream) those tests
//! share. Nothing here checks anything itself; the tests do.

use crate::front::RequestMeta;
use crate::gateway::{Gateway, Options};
use crate::guard::Guard;
use crate::outbox::{Drain, Stream};
use crate::session::Session;
use crate::state::State;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;
use test_support::FixtureOptions;
use upstream::memory::MemoryConnector;

/// One trace's records: (decision reason codes, finished outcomes).
pub(crate) type Records = (Vec<String>, Vec<String>);

/// How long a test waits for anything before it fails.
pub(crate) const WAIT: Duration = Duration::from_secs(20);

/// The one adapter over the session API, shared by every test that drives a session: open a session as a front
/// end does (`Session::open`), hand it a message with the `RequestMeta` a transport would give, read what it
/// queues with the stream it is tagged with.
pub(crate) struct Wire {
    pub session: Arc<Session>,
    drain: Drain,
    /// What the transport says about each message; a test changes it to play another transport or identity.
    pub meta: RequestMeta,
}

impl Wire {
    pub(crate) fn open(gateway: &Arc<Gateway>) -> Self {
        let (session, drain) = Session::open(gateway);
        Self {
            session,
            drain,
            meta: RequestMeta::default(),
        }
    }

    /// Decodes `msg` under the session's limits, as a front end would, and hands it to the session.
    pub(crate) async fn handle(&self, msg: &Value) {
        let bytes = serde_json::to_vec(msg).unwrap();
        let decoded = jsonrpc::decode(&bytes, &self.session.limits()).unwrap();
        self.session.handle(decoded, &self.meta).await;
    }

    /// The next message queued for the client and its stream; `None` once the drain has ended.
    pub(crate) async fn next(&mut self) -> Option<(Stream, Value)> {
        let line = self.drain.next().await?;
        Some((
            line.stream().clone(),
            serde_json::from_slice(line.json()).unwrap(),
        ))
    }

    /// Whether the drain ended within `within` (discarding what was still queued).
    pub(crate) async fn ended(&mut self, within: Duration) -> bool {
        tokio::time::timeout(within, async { while self.next().await.is_some() {} })
            .await
            .is_ok()
    }

    pub(crate) fn close(&self) {
        self.session.close();
    }

    /// Lets go of the session, as a front end that is done with it does; what it queued stays in the drain.
    pub(crate) fn release(self) -> Drain {
        self.drain
    }
}

/// A client scripted message by message. What arrives while it waits for one answer (notifications, requests
/// from toolgate) is kept, with its stream, for `wait_for`.
pub(crate) struct Client {
    wire: Wire,
    next_id: i64,
    kept: VecDeque<(Stream, Value)>,
}

/// How long a client listens for messages that must not come (`unexpected`): what toolgate sends a client is
/// queued before the call that caused it answers, so a short pause after that answer is enough.
const QUIET: Duration = Duration::from_millis(300);

impl Client {
    /// Sends a request of the modern era (without `initialize`: `modern_meta` with no capabilities is merged into
    /// the `_meta` given, if any); returns its id.
    pub(crate) async fn send_modern(&mut self, method: &str, mut params: Value) -> Value {
        if !params["_meta"].is_object() {
            params["_meta"] = json!({});
        }
        if let (Some(meta), Value::Object(modern)) =
            (params["_meta"].as_object_mut(), modern_meta(json!({})))
        {
            meta.extend(modern);
        }
        self.send_request(method, params).await
    }

    /// A modern-era request (`send_modern`) and its whole response.
    pub(crate) async fn modern(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_modern(method, params).await;
        self.response(&id).await
    }

    /// Sends a request and returns its whole response (`result` or `error`).
    pub(crate) async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params).await;
        self.response(&id).await
    }

    /// Sends a request without waiting; returns its id.
    pub(crate) async fn send_request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = json!(self.next_id);
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.wire.handle(&msg).await;
        id
    }

    /// The response to the request `id`.
    pub(crate) async fn response(&mut self, id: &Value) -> Value {
        let is_it = |m: &Value| {
            m.get("id") == Some(id) && (m.get("result").is_some() || m.get("error").is_some())
        };
        self.wait_for(is_it).await
    }

    pub(crate) async fn notify(&mut self, method: &str, params: Value) {
        let msg = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.wire.handle(&msg).await;
    }

    /// Answers a request toolgate sent this client.
    pub(crate) async fn respond(&mut self, id: &Value, result: Value) {
        let msg = json!({"jsonrpc": "2.0", "id": id, "result": result});
        self.wire.handle(&msg).await;
    }

    /// The first message (kept or new) that `pred` accepts; fails the test after `WAIT`.
    pub(crate) async fn wait_for(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        self.wait_for_on(pred).await.1
    }

    /// Like `wait_for`, with the stream the message was sent on.
    pub(crate) async fn wait_for_on(&mut self, pred: impl Fn(&Value) -> bool) -> (Stream, Value) {
        if let Some(i) = self.kept.iter().position(|(_, m)| pred(m)) {
            return self.kept.remove(i).unwrap();
        }
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let (stream, msg) = tokio::time::timeout_at(deadline, self.wire.next())
                .await
                .unwrap_or_else(|_| panic!("nothing expected arrived; kept {:#?}", self.kept))
                .expect("the session was closed");
            if pred(&msg) {
                return (stream, msg);
            }
            self.kept.push_back((stream, msg));
        }
    }

    /// Whether a message `pred` accepts arrived and is still kept (not taken by `wait_for`).
    pub(crate) fn kept(&self, pred: impl Fn(&Value) -> bool) -> bool {
        self.kept.iter().any(|(_, m)| pred(m))
    }

    /// Everything kept and everything that arrives within `QUIET` (taken): for asserting what must not come.
    pub(crate) async fn unexpected(&mut self) -> Vec<Value> {
        let mut all: Vec<Value> = self.kept.drain(..).map(|(_, m)| m).collect();
        while let Ok(Some((_, msg))) = tokio::time::timeout(QUIET, self.wire.next()).await {
            all.push(msg);
        }
        all
    }

    /// A tools/call in the client's era; returns the whole response.
    pub(crate) async fn call(&mut self, name: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": name, "arguments": arguments}))
            .await
    }

    /// `initialize` and `notifications/initialized`: a legacy client with `capabilities`.
    pub(crate) async fn initialize(&mut self, capabilities: Value) -> Value {
        let params = json!({"protocolVersion": "2025-11-25", "capabilities": capabilities,
                            "clientInfo": {"name": "scripted", "version": "1"}});
        let answer = self.request("initialize", params).await;
        self.notify("notifications/initialized", json!({})).await;
        answer
    }

    pub(crate) fn close(&self) {
        self.wire.close();
    }

    /// Speaks as `identity` from now on, as an authenticating transport would say (before the first message,
    /// which binds the session to it).
    pub(crate) fn as_identity(&mut self, identity: &str) {
        self.wire.meta.identity = Some(identity.to_owned());
    }

    /// Closes the session and lets go of it, as a front end whose client went away does; whether its drain then
    /// ended within `within` (it ends once the session and its requests are gone).
    pub(crate) async fn leave(self, within: Duration) -> bool {
        self.wire.close();
        let mut drain = self.wire.release();
        tokio::time::timeout(within, async { while drain.next().await.is_some() {} })
            .await
            .is_ok()
    }
}

/// The `_meta` a modern client puts on every request.
pub(crate) fn modern_meta(capabilities: Value) -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientCapabilities": capabilities,
           "io.modelcontextprotocol/clientInfo": {"name": "scripted", "version": "1"}})
}

/// A gateway for `config` whose upstreams are never started in process (none, or HTTP ones this version does not
/// connect), guarding `workspace`, with `state` if given.
pub(crate) fn gateway(
    config: &config::Config,
    workspace: &std::path::Path,
    state: Option<Arc<State>>,
) -> Arc<Gateway> {
    let guard = Guard::load(config, workspace).unwrap();
    let opts = Options::from_config(config, false);
    Gateway::start(config, opts, Arc::new(guard), state)
}

/// A gateway with state and policy, and the fixture as upstream `fx` in this process.
pub(crate) struct Harness {
    pub gateway: Arc<Gateway>,
    pub state: Arc<State>,
    _dir: tempfile::TempDir,
}

impl Harness {
    /// `policy` is the config's top level without servers, workspace or state (`permissions`, `approvals`, …).
    pub(crate) async fn start(policy: Value, fixture: FixtureOptions) -> Self {
        Self::start_with(policy, fixture, |_| {}).await
    }

    /// `start`, with the parsed config changed by `configure` first (a setting no config key gives yet).
    pub(crate) async fn start_with(
        policy: Value,
        fixture: FixtureOptions,
        configure: impl FnOnce(&mut config::Config),
    ) -> Self {
        Self::start_serving(policy, fixture, configure, |_| {}, false).await
    }

    /// `start_with`, with the gateway's options changed by `tune` (a setting no config key gives).
    pub(crate) async fn start_tuned(
        policy: Value,
        fixture: FixtureOptions,
        configure: impl FnOnce(&mut config::Config),
        tune: impl FnOnce(&mut Options),
    ) -> Self {
        Self::start_serving(policy, fixture, configure, tune, false).await
    }

    /// `start`, also serving toolgate's own workspace tools.
    pub(crate) async fn start_with_workspace_tools(policy: Value) -> Self {
        Self::start_serving(policy, FixtureOptions::default(), |_| {}, |_| {}, true).await
    }

    async fn start_serving(
        policy: Value,
        fixture: FixtureOptions,
        configure: impl FnOnce(&mut config::Config),
        tune: impl FnOnce(&mut Options),
        workspace_tools: bool,
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().join("ws");
        std::fs::create_dir_all(&workspace).unwrap();
        let mut text = policy;
        text["mcpServers"] = json!({"fx": {"command": "fixture-in-process"}});
        let origin = dir.path().join("toolgate.json");
        let config = config::parse_str(
            &text.to_string(),
            config::Format::Json,
            &origin,
            &|_| None,
            &config::Overrides::default(),
        )
        .unwrap();
        let mut config = config;
        configure(&mut config);
        let state = Arc::new(State::open_in(&dir.path().join("state"), &workspace).unwrap());
        let guard = Arc::new(Guard::load(&config, &workspace).unwrap());
        let connector = Arc::new(MemoryConnector::new(move |end| {
            tokio::spawn(test_support::serve(
                fixture.clone(),
                end.incoming,
                end.outgoing,
            ));
        }));
        let links: HashMap<String, Arc<dyn upstream::Connector>> =
            HashMap::from([("fx".to_owned(), connector as Arc<dyn upstream::Connector>)]);
        let mut opts = Options::from_config(&config, false);
        tune(&mut opts);
        let builtin = workspace_tools.then(|| {
            Arc::new(builtin::Builtin::new(builtin::BuiltinConfig::new(&workspace)).unwrap())
        });
        let gateway = Gateway::start_linked(
            &config,
            opts,
            guard,
            Some(Arc::clone(&state)),
            builtin,
            &links,
        );
        gateway.ready().await;
        Self {
            gateway,
            state,
            _dir: dir,
        }
    }

    /// A client session under `profile` whose messages the transport attributes to `identity`, as the HTTP
    /// front end opens one for an authenticated caller.
    pub(crate) fn client_as(&self, profile: Option<&str>, identity: Option<&str>) -> Client {
        let (session, drain) = Session::open_as(&self.gateway, profile).unwrap();
        let meta = RequestMeta {
            identity: identity.map(str::to_owned),
            ..RequestMeta::default()
        };
        Client {
            wire: Wire {
                session,
                drain,
                meta,
            },
            next_id: 0,
            kept: VecDeque::new(),
        }
    }

    /// The temporary directory the harness's config, workspace (`ws`) and state live in.
    pub(crate) fn root(&self) -> &std::path::Path {
        self._dir.path()
    }

    /// A new client session on this gateway.
    pub(crate) fn client(&self) -> Client {
        Client {
            wire: Wire::open(&self.gateway),
            next_id: 0,
            kept: VecDeque::new(),
        }
    }

    /// Every audit record written so far (the writer is flushed first).
    pub(crate) fn audit(&self) -> Vec<Value> {
        self.state.flush();
        std::fs::read_to_string(self.state.audit_log().path())
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// Decision and finished records after the first `skip` records, grouped by trace id; only those naming
    /// `tool` (the upstream's own name) when given.
    pub(crate) fn by_trace(&self, skip: usize, tool: Option<&str>) -> BTreeMap<String, Records> {
        let mut traces: BTreeMap<String, Records> = BTreeMap::new();
        for r in self.audit().iter().skip(skip) {
            if tool.is_some_and(|t| r["tool"] != t) {
                continue;
            }
            let s = |k: &str| r[k].as_str().unwrap_or_default().to_owned();
            let (list, value) = match r["kind"].as_str() {
                Some("decision") => (0, s("reason_code")),
                Some("execution") => (1, s("outcome")),
                _ => continue,
            };
            let entry = traces.entry(s("trace_id")).or_default();
            if list == 0 {
                entry.0.push(value);
            } else {
                entry.1.push(value);
            }
        }
        traces
    }

    /// Waits until the records after the first `skip` form exactly one trace with a finished record; returns it.
    pub(crate) async fn one_trace_since(&self, skip: usize) -> (String, Records) {
        self.one_trace_of(skip, None).await
    }

    /// As `one_trace_since`, counting only the records of `tool` (its upstream name, or a method's).
    pub(crate) async fn one_trace_of(&self, skip: usize, tool: Option<&str>) -> (String, Records) {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let traces = self.by_trace(skip, tool);
            if traces.len() == 1 && traces.values().all(|r| !r.1.is_empty()) {
                return traces.into_iter().next().unwrap();
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "not one finished trace: {traces:#?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until an approval request is pending in the store; returns the newest.
    pub(crate) async fn pending_request(&self) -> store::Approval {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let now = store::Timestamp::now();
            let pending = self
                .state
                .store(|s| s.list_requests(Some(store::ApprovalStatus::Pending), now))
                .unwrap();
            if let Some(request) = pending.into_iter().next() {
                return request;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the call was never held"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub(crate) async fn stop(self, clients: &[&Client]) {
        for c in clients {
            c.close();
        }
        self.gateway.shutdown().await;
    }
}
