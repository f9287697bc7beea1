//! Progress routing: a client's progress token is replaced by one unique across clients while its call is
//! forwarded, so an upstream's progress notifications reach the client (and the call) that asked for them. The
//! route lives exactly as long as the call (`ProgressGuard`).

use crate::gateway::Gateway;
use crate::session::Session;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

impl Gateway {
    /// Replaces a client's progress token with one unique across clients; the guard removes it when the call ends.
    pub(crate) fn register_progress(
        &self,
        session: &Session,
        client_token: Value,
    ) -> ProgressGuard {
        let token = format!(
            "tg-progress-{}",
            self.progress.next.fetch_add(1, Ordering::Relaxed)
        );
        self.progress
            .lock()
            .insert(token.clone(), (session.outbox(), client_token));
        ProgressGuard {
            table: Arc::clone(&self.progress),
            token,
        }
    }
}

/// Gateway progress token → (the client's outbox, the client's own token).
#[derive(Default)]
pub(crate) struct ProgressTable {
    routes: Mutex<HashMap<String, (mpsc::Sender<Value>, Value)>>,
    pub(crate) next: AtomicU64,
}

impl ProgressTable {
    pub(crate) fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, (mpsc::Sender<Value>, Value)>> {
        self.routes.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl upstream::ProgressRoutes for ProgressTable {
    fn route(&self, token: &Value) -> Option<(mpsc::Sender<Value>, Value)> {
        token.as_str().and_then(|t| self.lock().get(t).cloned())
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
