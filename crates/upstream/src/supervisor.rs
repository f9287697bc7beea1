//! The life of one upstream: start, handshake, load the catalog, serve, and on exit restart with backoff —
//! until toolgate shuts down, which ends the whole process group.
//!
//! One task per upstream owns each life of its transport, started by a `Connector` (a process on stdio, an HTTP
//! link, an in-process server over memory); everyone else sees a `Status` snapshot, the current `Catalog` and, while it
//! is up, the `Connection`. One life of the transport (connect, handshake, catalog, refreshes) is `life`; the
//! status types others read are `status`.

mod life;
mod status;

pub use status::{State, Status};

use crate::catalog::Catalog;
use crate::connection::{Connection, Event, Sinks};
use crate::error::CallError;
use crate::http::HttpConnector;
use crate::link::Connector;
use crate::stdio::StdioConnector;
use config::{Protocol, ServerConfig, Transport};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

#[derive(Clone, Debug)]
pub struct Options {
    pub limits: jsonrpc::Limits,
    /// Default per-request timeout (a server's own setting wins).
    pub request_timeout: Duration,
    /// How long the handshake and catalog load may take.
    pub handshake_timeout: Duration,
    /// How long to wait for an answer to the `server/discover` probe before trying `initialize`.
    pub probe_timeout: Duration,
    /// Time given to exit after stdin closes, and again after TERM.
    pub grace: Duration,
    pub first_backoff: Duration,
    pub max_backoff: Duration,
    /// What every stdio upstream is kept from (the state root, the config file) and which layers it must have.
    pub containment: Arc<crate::process::Containment>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            limits: jsonrpc::Limits::default(),
            request_timeout: Duration::from_secs(120),
            handshake_timeout: Duration::from_secs(30),
            probe_timeout: Duration::from_secs(3),
            grace: Duration::from_millis(1500),
            first_backoff: Duration::from_millis(250),
            max_backoff: Duration::from_secs(30),
            containment: Arc::default(),
        }
    }
}

struct Inner {
    state: State,
    conn: Option<Arc<Connection>>,
    catalog: Arc<Catalog>,
    pid: Option<u32>,
    /// How the current (or last) life's process is contained.
    containment: Vec<String>,
    restarts: u32,
    last_error: Option<String>,
    /// Cleared when a `server/discover` probe killed or hung the server, so restarts go straight to `initialize`.
    probe_modern: bool,
}

pub struct Upstream {
    config: ServerConfig,
    opts: Options,
    inner: Mutex<Inner>,
    /// Becomes true once the first start attempt has finished, either way.
    settled: watch::Sender<bool>,
    shutdown: CancellationToken,
    sinks: Sinks,
    connector: Arc<dyn Connector>,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl Upstream {
    /// Starts supervising `config` over the transport it names (a process on stdio, Streamable HTTP, HTTP+SSE).
    /// What the server sends arrives on `sinks`.
    pub fn start(config: ServerConfig, opts: Options, sinks: Sinks) -> Arc<Self> {
        let connector: Arc<dyn Connector> = match config.transport {
            Transport::Stdio { .. } => Arc::new(StdioConnector::new(Arc::clone(&opts.containment))),
            Transport::Http { .. } => Arc::new(HttpConnector),
        };
        Self::supervised(config, opts, sinks, connector)
    }

    /// Like `start`, with every life of the transport opened by `connector` (an in-process server over
    /// `memory`, say) whatever transport `config` names.
    pub fn start_linked(
        config: ServerConfig,
        opts: Options,
        sinks: Sinks,
        connector: Arc<dyn Connector>,
    ) -> Arc<Self> {
        Self::supervised(config, opts, sinks, connector)
    }

    fn supervised(
        config: ServerConfig,
        opts: Options,
        sinks: Sinks,
        connector: Arc<dyn Connector>,
    ) -> Arc<Self> {
        let up = Arc::new(Self {
            inner: Mutex::new(Inner {
                state: State::Starting,
                conn: None,
                catalog: Arc::new(Catalog::default()),
                pid: None,
                containment: Vec::new(),
                restarts: 0,
                last_error: None,
                probe_modern: config.protocol != Protocol::Legacy,
            }),
            config,
            opts,
            settled: watch::channel(false).0,
            shutdown: CancellationToken::new(),
            sinks,
            connector,
            task: Mutex::new(None),
        });
        let handle = tokio::spawn(Arc::clone(&up).supervise());
        if let Ok(mut t) = up.task.lock() {
            *t = Some(handle);
        }
        up
    }

    pub fn name(&self) -> &str {
        &self.config.name
    }

    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// The per-request timeout for this upstream.
    pub fn request_timeout(&self) -> Duration {
        self.config
            .request_timeout
            .unwrap_or(self.opts.request_timeout)
    }

    pub fn catalog(&self) -> Arc<Catalog> {
        Arc::clone(&self.lock().catalog)
    }

    /// The live connection, or why there is none.
    pub fn connection(&self) -> Result<Arc<Connection>, CallError> {
        let inner = self.lock();
        match &inner.conn {
            Some(c) if !c.is_closed() => Ok(Arc::clone(c)),
            _ => Err(CallError::Unavailable {
                server: self.config.name.clone(),
                why: match (&inner.state, &inner.last_error) {
                    (State::Ready, _) => "it just exited".to_owned(),
                    (state, Some(e)) => format!("{}: {e}", state.as_str()),
                    (state, None) => state.as_str().to_owned(),
                },
            }),
        }
    }

    pub fn status(&self) -> Status {
        let inner = self.lock();
        let conn = inner.conn.as_ref();
        Status {
            server: self.config.name.clone(),
            state: inner.state,
            protocol_version: inner.catalog.era.as_ref().map(|e| e.version().to_owned()),
            pid: inner.pid,
            containment: inner.containment.clone(),
            restarts: inner.restarts,
            last_error: inner.last_error.clone(),
            tools: inner.catalog.tools.len(),
            resources: inner.catalog.resources.len(),
            prompts: inner.catalog.prompts.len(),
            garbage_lines: conn.map_or(0, |c| c.garbage_lines()),
            stderr_tail: conn.map(|c| c.stderr_tail()).unwrap_or_default(),
            list_errors: inner
                .catalog
                .list_errors
                .iter()
                .map(|(list, why)| ((*list).to_owned(), why.clone()))
                .collect(),
        }
    }

    /// Whether the first start attempt has finished (ready or failed).
    pub fn is_settled(&self) -> bool {
        *self.settled.borrow()
    }

    /// Waits until the first start attempt has finished (ready or failed), at most `timeout`.
    pub async fn wait_settled(&self, timeout: Duration) {
        let mut rx = self.settled.subscribe();
        let _ = tokio::time::timeout(timeout, rx.wait_for(|s| *s)).await;
    }

    /// Stops the upstream and ends its process group; returns when it is gone.
    pub async fn shutdown(&self) {
        self.shutdown.cancel();
        let task = self.task.lock().ok().and_then(|mut t| t.take());
        if let Some(task) = task {
            let _ = task.await;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn set_state(&self, state: State, error: Option<String>) {
        {
            let mut inner = self.lock();
            inner.state = state;
            // The error may quote the upstream (its stderr, an HTTP error's URL): redacted once, here, for
            // everyone who reads it.
            if let Some(e) = error {
                inner.last_error = Some(audit::redact(&e));
            }
            if state != State::Ready {
                inner.conn = None;
                inner.pid = None;
            }
        }
        let _ = self.sinks.events.try_send(Event::StatusChanged {
            server: self.config.name.clone(),
        });
    }

    async fn supervise(self: Arc<Self>) {
        let mut backoff = self.opts.first_backoff;
        loop {
            self.set_state(State::Starting, None);
            let started = Instant::now();
            let outcome = self.run_once().await;
            self.settled.send_replace(true);
            if self.shutdown.is_cancelled() {
                self.set_state(State::Stopped, None);
                return;
            }
            let error = match outcome {
                Ok(()) => "the server exited".to_owned(),
                Err(e) => e,
            };
            tracing::warn!(server = %self.config.name, "{error}; restarting in {} ms", backoff.as_millis());
            self.set_state(State::Backoff, Some(error));
            let _ = self.sinks.events.try_send(Event::CatalogChanged {
                server: self.config.name.clone(),
            });
            if started.elapsed() > Duration::from_secs(60) {
                backoff = self.opts.first_backoff;
            }
            tokio::select! {
                () = tokio::time::sleep(backoff) => {}
                () = self.shutdown.cancelled() => {
                    self.set_state(State::Stopped, None);
                    return;
                }
            }
            backoff = (backoff * 2).min(self.opts.max_backoff);
            self.lock().restarts += 1;
        }
    }
}

#[cfg(test)]
#[path = "supervisor_tests.rs"]
mod tests;
