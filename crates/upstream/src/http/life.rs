//! What one life of an HTTP link keeps whatever its transport: where incoming messages go, whether the life
//! ended, and the first reason it ended for (shown as the server's last error). Ending drops the sender, so the
//! connection above sees the stream of incoming messages end.

use crate::link::Incoming;
use std::sync::Mutex;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub(crate) struct Life {
    tx: Mutex<Option<mpsc::Sender<Incoming>>>,
    /// Cancelled when the life ends; the link's tasks stop on it.
    pub(crate) ended: CancellationToken,
    why: Mutex<Option<String>>,
}

impl Life {
    pub(crate) fn new(tx: mpsc::Sender<Incoming>) -> Self {
        Self {
            tx: Mutex::new(Some(tx)),
            ended: CancellationToken::new(),
            why: Mutex::new(None),
        }
    }

    /// Hands one item to the connection; nothing once the life ended.
    pub(crate) async fn deliver(&self, item: Incoming) {
        let tx = lock(&self.tx).clone();
        if let Some(tx) = tx {
            let _ = tx.send(item).await;
        }
    }

    /// Ends the life, keeping the first reason given.
    pub(crate) fn end(&self, why: String) {
        lock(&self.why).get_or_insert(why);
        self.ended.cancel();
        lock(&self.tx).take();
    }

    /// Why the life ended, once it did.
    pub(crate) fn reason(&self) -> Option<String> {
        lock(&self.why).clone()
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A poisoned lock only means a panic elsewhere mid-update of a plain value.
    m.lock().unwrap_or_else(|p| p.into_inner())
}
