//! Progress routing: a client's progress token is replaced by one unique across clients while its call is
//! forwarded, so an upstream's progress notifications reach the client (and the call) that asked for them. The
//! route lives exactly as long as the call (`ProgressGuard`).

use crate::gateway::Gateway;
use crate::outbox::{Outbox, Stream};
use crate::session::Session;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

impl Gateway {
    /// Replaces a client's progress token with one unique across clients; the guard removes it when the call ends.
    /// The progress goes on the stream of the session's request that gave the token.
    pub(crate) fn register_progress(
        &self,
        session: &Session,
        client_token: Value,
    ) -> ProgressGuard {
        let stream = session.progress_stream(&client_token);
        let token = format!(
            "tg-progress-{}",
            self.progress.next.fetch_add(1, Ordering::Relaxed)
        );
        self.progress
            .lock()
            .insert(token.clone(), (session.outbox(), stream, client_token));
        ProgressGuard {
            table: Arc::clone(&self.progress),
            token,
        }
    }

    /// What the upstreams' readers deliver progress through.
    #[cfg(test)]
    pub(crate) fn progress_routes(&self) -> Arc<dyn upstream::ProgressRoutes> {
        self.progress.clone()
    }
}

type Route = (Outbox, Stream, Value);

/// Gateway progress token → (the client's outbox, the stream of the request it is for, the client's own token).
#[derive(Default)]
pub(crate) struct ProgressTable {
    routes: Mutex<HashMap<String, Route>>,
    pub(crate) next: AtomicU64,
}

impl ProgressTable {
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Route>> {
        self.routes.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl upstream::ProgressRoutes for ProgressTable {
    /// Runs on the upstream's reader, so it only posts: a client that does not read loses its session, it does
    /// not stall the upstream for everyone else.
    fn deliver(&self, params: &Value) -> bool {
        let Some(token) = params.get("progressToken").and_then(Value::as_str) else {
            return false;
        };
        let Some((outbox, stream, client_token)) = self.lock().get(token).cloned() else {
            return false;
        };
        let mut params = params.clone();
        params["progressToken"] = client_token;
        outbox.post(
            stream,
            jsonrpc::notification("notifications/progress", Some(params)),
        );
        true
    }
}

/// Removes a progress route when the call that owns it ends, however it ends.
pub(crate) struct ProgressGuard {
    pub(crate) table: Arc<ProgressTable>,
    pub token: String,
}

impl Drop for ProgressGuard {
    fn drop(&mut self) {
        self.table.lock().remove(&self.token);
    }
}
