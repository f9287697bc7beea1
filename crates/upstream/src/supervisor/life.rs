//! One life of an upstream's transport: connect, handshake (era probe), load and filter the catalog, publish it,
//! then serve `list_changed` refreshes until the transport ends or toolgate shuts down. The supervisor
//! (`supervisor`) runs one life after another and owns the restarts, backoff and state around them.

use super::{State, Upstream};
use crate::catalog::Catalog;
use crate::connection::{Connection, Event, Refresh};
use crate::era::Era;
use crate::handshake::{self, Agreed, ProbeOutcome};
use config::Protocol;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

impl Upstream {
    /// One life of the transport. `Ok` when it ended after a successful start, `Err` when it never became ready.
    pub(super) async fn run_once(&self) -> Result<(), String> {
        // A connector may take its time (a network handshake); shutting down must not wait for it.
        let opened = tokio::select! {
            opened = self.connector.connect(&self.config, self.opts.limits) => opened?,
            () = self.shutdown.cancelled() => return Err("shutting down".to_owned()),
        };
        self.lock().containment = opened.link.containment();
        let (refresh_tx, mut refresh_rx) = mpsc::unbounded_channel();
        let conn = Connection::start(
            &self.config.name,
            opened.link,
            opened.incoming,
            self.sinks.clone(),
            refresh_tx,
        );
        self.lock().pid = opened.pid;
        let ready = tokio::select! {
            r = self.handshake(&conn) => r,
            () = self.shutdown.cancelled() => Err("shutting down".to_owned()),
        };
        let catalog = match ready {
            Ok(c) => c,
            Err(e) => {
                conn.end(self.opts.grace).await;
                let tail = conn.stderr_tail();
                return Err(match tail.last() {
                    Some(line) => format!("{e} (last stderr line: {line})"),
                    None => e,
                });
            }
        };
        {
            let mut inner = self.lock();
            inner.catalog = Arc::new(catalog);
            inner.conn = Some(Arc::clone(&conn));
            inner.state = State::Ready;
            inner.last_error = None;
        }
        self.settled.send_replace(true);
        let server = &self.config.name;
        for event in [
            Event::StatusChanged {
                server: server.clone(),
            },
            Event::CatalogChanged {
                server: server.clone(),
            },
        ] {
            let _ = self.sinks.events.send(event).await;
        }
        loop {
            tokio::select! {
                () = conn.closed() => break,
                () = self.shutdown.cancelled() => break,
                Some(kind) = refresh_rx.recv() => self.refresh(&conn, kind).await,
            }
        }
        conn.end(self.opts.grace).await;
        match conn.end_reason() {
            Some(why) if !self.shutdown.is_cancelled() => Err(why),
            _ => Ok(()),
        }
    }

    async fn handshake(&self, conn: &Arc<Connection>) -> Result<Catalog, String> {
        // A server's own start-up timeout (Codex `startup_timeout_sec`) wins over the default.
        let timeout = self
            .config
            .startup_timeout
            .unwrap_or(self.opts.handshake_timeout);
        let probe = self.lock().probe_modern;
        let agreed = match (self.config.protocol, probe) {
            (Protocol::Legacy, _) | (Protocol::Auto, false) => {
                Agreed::Legacy(handshake::initialize(conn, timeout).await?)
            }
            (Protocol::Modern, _) => match handshake::discover(conn, timeout).await {
                Ok(ProbeOutcome::Modern(result)) => Agreed::Modern(result),
                Ok(ProbeOutcome::NotModern) => {
                    return Err(
                        "the server does not speak protocol 2026-07-28 (configured \"modern\")"
                            .into(),
                    )
                }
                Err(e) => return Err(format!("server/discover failed: {e}")),
            },
            (Protocol::Auto, true) => {
                let probed = handshake::probe(conn, self.opts.probe_timeout, timeout).await;
                if probed.stop_probing {
                    self.lock().probe_modern = false;
                }
                probed.agreed?
            }
        };
        let mut catalog = match agreed {
            Agreed::Modern(result) => {
                conn.set_era(Era::Modern);
                handshake::catalog_from(Era::Modern, &result)
            }
            Agreed::Legacy((result, version)) => {
                let era = Era::Legacy(version);
                conn.set_era(era.clone());
                handshake::catalog_from(era, &result)
            }
        };
        let all = [Refresh::Tools, Refresh::Resources, Refresh::Prompts];
        handshake::load_lists(conn, &mut catalog, &all, timeout)
            .await
            .map_err(|e| format!("loading the catalog failed: {e}"))?;
        self.filter_tools(&mut catalog);
        if catalog.era == Some(Era::Modern) {
            listen_for_changes(conn, &catalog);
        }
        Ok(catalog)
    }

    /// Drops the tools the config turns off (`enabled_tools` / `disabled_tools`): they are neither listed nor
    /// routable, so a call to one is refused as unknown. A tool without a string name is kept for the gateway to
    /// judge.
    fn filter_tools(&self, catalog: &mut Catalog) {
        let filter = &self.config.tools;
        if !filter.is_empty() {
            catalog.tools.retain(|t| {
                t.get("name")
                    .and_then(Value::as_str)
                    .is_none_or(|name| filter.allows(name))
            });
        }
    }

    async fn refresh(&self, conn: &Connection, kind: Refresh) {
        let mut catalog = (*self.catalog()).clone();
        match handshake::load_lists(conn, &mut catalog, &[kind], self.opts.handshake_timeout).await
        {
            Ok(()) => {
                self.filter_tools(&mut catalog);
                self.lock().catalog = Arc::new(catalog);
                let _ = self
                    .sinks
                    .events
                    .send(Event::CatalogChanged {
                        server: self.config.name.clone(),
                    })
                    .await;
            }
            Err(e) => {
                tracing::warn!(server = %self.config.name, "refreshing after list_changed failed: {e}")
            }
        }
    }
}

/// Modern servers deliver `list_changed` only on a `subscriptions/listen` stream; open one for what they offer.
fn listen_for_changes(conn: &Arc<Connection>, catalog: &Catalog) {
    let wants = |cap: &str| {
        catalog.capabilities.pointer(&format!("/{cap}/listChanged")) == Some(&Value::Bool(true))
    };
    let filter = json!({
        "toolsListChanged": wants("tools"),
        "resourcesListChanged": wants("resources"),
        "promptsListChanged": wants("prompts"),
    });
    if !(wants("tools") || wants("resources") || wants("prompts")) {
        return;
    }
    let conn = Arc::clone(conn);
    tokio::spawn(async move {
        // The stream stays open for the life of the connection; its end is not an error worth reporting.
        let year = Duration::from_secs(365 * 24 * 3600);
        let params = json!({"notifications": filter});
        let _ = conn
            .request(
                "subscriptions/listen",
                Some(params),
                year,
                &CancellationToken::new(),
            )
            .await;
    });
}
