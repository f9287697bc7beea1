//! A legacy client's `resources/subscribe` and `resources/unsubscribe` on an upstream reached in the 2026-07-28
//! era, which removed both RPCs. The era's equivalent is a `subscriptions/listen` stream whose filter names the
//! URIs (`notifications.resourceSubscriptions`): the server acknowledges it
//! (`notifications/subscriptions/acknowledged`, the subset it honours) and sends `notifications/resources/updated`
//! for them, which `route` delivers as a legacy server's, to the sessions subscribed to that URI there.
//!
//! A modern server that still serves `resources/subscribe` itself keeps doing so: the subscribe is forwarded
//! first, and only a JSON-RPC error answer (the era's "method not found", or a refusal naming the removed RPC)
//! turns it into a listen stream.
//!
//! One stream per (server, URI), shared by every session subscribed, as a legacy server's one subscription is:
//! opened by the first subscribe, which is answered once the server acknowledged that URI (an error, or a
//! stream that ends or is not acknowledged in time, fails the subscribe); closed (its request cancelled, which
//! closes an HTTP stream) by the unsubscribe that `pipeline` forwards when no session is subscribed any more, or
//! with the connection it was opened on. It decides nothing: both requests were governed before they came here.

use crate::outcome::{CallOutcome, Refusal, RefusalCode};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use upstream::{Connection, Upstream};

/// How long a listen stream stays open at most: the life of the connection, in practice.
const FOREVER: Duration = Duration::from_secs(365 * 24 * 3600);

/// The open listen streams, by (server, URI).
#[derive(Default)]
pub(crate) struct Listens {
    open: Mutex<HashMap<(String, String), Listen>>,
}

struct Listen {
    conn: Weak<Connection>,
    cancel: CancellationToken,
    /// Told once the server acknowledged the URI; taken then.
    acked: Option<oneshot::Sender<()>>,
}

fn failed(why: String) -> CallOutcome {
    CallOutcome::Refused(Refusal::new(RefusalCode::Failed, why))
}

impl Listens {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), Listen>> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `resources/subscribe` or `resources/unsubscribe` (`params` name the upstream's URI) on `conn`, a modern
    /// upstream's connection: the outcome, or `None` when the request goes upstream as it is (an unsubscribe
    /// of a subscription the server holds itself).
    pub(crate) async fn forward(
        &self,
        up: &Upstream,
        conn: Arc<Connection>,
        method: &str,
        params: &Value,
    ) -> Option<CallOutcome> {
        let uri = params
            .get("uri")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if method == "resources/unsubscribe" {
            return self
                .close(up.name(), &uri)
                .then(|| CallOutcome::complete(json!({})));
        }
        let never = CancellationToken::new();
        let timeout = up.request_timeout();
        match conn
            .request(method, Some(params.clone()), timeout, &never)
            .await
        {
            Err(upstream::CallError::Rpc(refused)) => {
                tracing::debug!(
                    server = up.name(),
                    uri,
                    "resources/subscribe refused ({refused}); listening instead"
                );
            }
            answer => return Some(CallOutcome::from_upstream(answer)),
        }
        Some(self.listen(up, conn, uri).await)
    }

    /// Opens (or shares) the listen stream for `uri`, answered once the server acknowledged it.
    async fn listen(&self, up: &Upstream, conn: Arc<Connection>, uri: String) -> CallOutcome {
        let key = (up.name().to_owned(), uri.clone());
        let (acked, ack) = oneshot::channel();
        let cancel = CancellationToken::new();
        {
            let mut open = self.lock();
            let live = open.get(&key).is_some_and(|l| {
                !l.cancel.is_cancelled() && l.conn.upgrade().is_some_and(|c| Arc::ptr_eq(&c, &conn))
            });
            if live {
                return CallOutcome::complete(json!({}));
            }
            let listen = Listen {
                conn: Arc::downgrade(&conn),
                cancel: cancel.clone(),
                acked: Some(acked),
            };
            if let Some(old) = open.insert(key.clone(), listen) {
                old.cancel.cancel();
            }
        }
        let filter = json!({"notifications": {"resourceSubscriptions": [uri]}});
        let (ended_tx, ended) = oneshot::channel();
        let stream_cancel = cancel.clone();
        tokio::spawn(async move {
            let answer = conn
                .request(
                    "subscriptions/listen",
                    Some(filter),
                    FOREVER,
                    &stream_cancel,
                )
                .await;
            let _ = ended_tx.send(answer);
        });
        let outcome = tokio::select! {
            Ok(()) = ack => return CallOutcome::complete(json!({})),
            ended = ended => match ended {
                Ok(Err(e)) => CallOutcome::from_upstream(Err(e)),
                _ => failed(format!(
                    "{} ended the subscriptions/listen stream for {} before acknowledging it",
                    key.0, key.1
                )),
            },
            () = tokio::time::sleep(up.request_timeout()) => failed(format!(
                "{} did not acknowledge a subscriptions/listen stream for {} within {} s",
                key.0,
                key.1,
                up.request_timeout().as_secs()
            )),
        };
        cancel.cancel();
        let mut open = self.lock();
        if open.get(&key).is_some_and(|l| l.cancel.is_cancelled()) {
            open.remove(&key);
        }
        outcome
    }

    /// Closes the listen stream for `uri` on `server`, if toolgate holds one; false when it holds none (the
    /// subscription, if any, is a legacy server's own).
    pub(crate) fn close(&self, server: &str, uri: &str) -> bool {
        let listen = self.lock().remove(&(server.to_owned(), uri.to_owned()));
        listen.map(|l| l.cancel.cancel()).is_some()
    }

    /// `notifications/subscriptions/acknowledged` from `server`: the streams waiting for the URIs it honours
    /// are answered.
    pub(crate) fn acknowledged(&self, server: &str, params: Option<&Value>) {
        let uris = params
            .and_then(|p| p.pointer("/notifications/resourceSubscriptions"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str);
        let mut open = self.lock();
        for uri in uris {
            if let Some(tx) = open
                .get_mut(&(server.to_owned(), uri.to_owned()))
                .and_then(|l| l.acked.take())
            {
                let _ = tx.send(());
            }
        }
    }
}
