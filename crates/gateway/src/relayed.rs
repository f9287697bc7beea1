//! Upstream requests relayed to a client session: sent under toolgate's own id on the stream of the call that
//! caused them, remembered until the client answers (the answer goes back to the upstream, and closes the
//! request's records), or until the upstream withdraws them. Whether a request may be relayed at all, and to
//! whom, is decided before (`route`, `pipeline::asks`).

use crate::client::{Client, Relay};
use crate::outbox::Stream;
use crate::session::{Relayed, Session};
use jsonrpc::{error_object, Id};
use serde_json::{json, Value};
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl Session {
    /// Relays an upstream's request to this client (`route` decided it is this client's); `cause` is the client
    /// request whose call caused it, when one did.
    pub(crate) async fn relay(self: &Arc<Self>, relay: Relay) {
        let Relay {
            server,
            upstream_id,
            method,
            params,
            cause,
            records,
        } = relay;
        let server = server.as_str();
        let id = Id::Str(format!(
            "tg-relay-{}",
            self.next_relay.fetch_add(1, Ordering::Relaxed)
        ));
        let client: Arc<dyn Client> = Arc::clone(self) as Arc<dyn Client>;
        let stages = &self.gateway.stages;
        stages
            .correlation
            .relayed(server, &upstream_id, Arc::downgrade(&client));
        // It belongs on the stream of the request whose call caused it.
        let stream = cause.clone().map_or(Stream::Session, Stream::Request);
        let relayed = Relayed {
            server: server.to_owned(),
            upstream_id,
            cause,
            records: Some(records),
        };
        self.lock().relayed.insert(id.clone(), relayed);
        if !self.post_on(stream, jsonrpc::request(&id, &method, params)) {
            let Some(r) = self.lock().relayed.remove(&id) else {
                return;
            };
            stages.correlation.relay_ended(server, &r.upstream_id);
            let err = error_object(
                jsonrpc::INTERNAL_ERROR,
                "the request could not be queued for the client (its session is closed, or it is over the message limit)",
                None,
            );
            stages
                .answer_upstream(server, r.upstream_id, Err(err))
                .await;
        }
    }

    /// The upstream withdrew a request relayed to this client: pass the cancellation on with the client's id.
    pub(crate) async fn relay_cancelled(&self, server: &str, upstream_id: &Value) {
        let found = {
            let mut st = self.lock();
            let key = st
                .relayed
                .iter()
                .find(|(_, r)| r.server == server && &r.upstream_id == upstream_id)
                .map(|(k, _)| k.clone());
            key.and_then(|k| st.relayed.remove(&k).map(|r| (k, r)))
        };
        // Its records are closed (as cancelled) outside the session's lock.
        if let Some((id, _withdrawn)) = found {
            self.notify(
                "notifications/cancelled",
                Some(json!({"requestId": id.to_value()})),
            )
            .await;
        }
    }
}
