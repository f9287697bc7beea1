//! Progress routing: a requester's progress token is replaced by one unique across requesters while its call is
//! forwarded, so an upstream's progress notifications reach the requester (and the call) that asked for them,
//! through the call's `Progress` sink. The route lives exactly as long as the call (`ProgressGuard`). What a
//! server with credentials reports is scrubbed of their values on the way (`credentials`).

use crate::client::Progress;
use crate::credentials::Credentials;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Gateway progress token → the requester's own token and sink.
#[derive(Default)]
pub(crate) struct ProgressTable {
    routes: Mutex<HashMap<String, Progress>>,
    /// Gateway token → the credentials of the server the call went to, whose values its progress messages are
    /// scrubbed of (`credentials`); only for servers that have some.
    scrubbed: Mutex<HashMap<String, (Arc<Credentials>, String)>>,
    next: AtomicU64,
}

impl ProgressTable {
    /// A gateway token, unique across requesters, routed to `progress`; the guard removes it when the call ends.
    pub(crate) fn register(
        self: &Arc<Self>,
        progress: Progress,
        server: &str,
        credentials: Arc<Credentials>,
    ) -> ProgressGuard {
        let token = format!("tg-progress-{}", self.next.fetch_add(1, Ordering::Relaxed));
        self.lock().insert(token.clone(), progress);
        if credentials.scrubs(server) {
            self.scrubs()
                .insert(token.clone(), (credentials, server.to_owned()));
        }
        ProgressGuard {
            table: Arc::clone(self),
            token,
        }
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Progress>> {
        self.routes.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn scrubs(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Arc<Credentials>, String)>> {
        self.scrubbed.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl upstream::ProgressRoutes for ProgressTable {
    /// Runs on the upstream's reader, so it only posts (`ProgressSink` never waits): a client that does not read
    /// loses its session, it does not stall the upstream for everyone else.
    fn deliver(&self, params: &Value) -> bool {
        let Some(token) = params.get("progressToken").and_then(Value::as_str) else {
            return false;
        };
        let Some(progress) = self.lock().get(token).cloned() else {
            return false;
        };
        let mut params = params.clone();
        if let Some((credentials, server)) = self.scrubs().get(token) {
            credentials.scrub(server, &mut params);
        }
        progress.report(params);
        true
    }
}

/// Removes a progress route when the call that owns it ends, however it ends.
pub(crate) struct ProgressGuard {
    pub(crate) table: Arc<ProgressTable>,
    pub token: String,
}

impl ProgressGuard {
    /// Points the route at another requester (the retry of a bridged call), or nowhere while none waits.
    pub(crate) fn redirect(&self, to: Option<Progress>) {
        let mut routes = self.table.lock();
        match to {
            Some(progress) => routes.insert(self.token.clone(), progress),
            None => routes.remove(&self.token),
        };
    }
}

impl Drop for ProgressGuard {
    fn drop(&mut self) {
        self.table.lock().remove(&self.token);
        self.table.scrubs().remove(&self.token);
    }
}
