//! The change feed of a `PostgresStore`: `LISTEN`/`NOTIFY`, never polling.
//!
//! Every write transaction that changed a row sends `NOTIFY toolgate_store, '<namespace> <handle>'` before it
//! commits, so the notification leaves exactly when the change becomes visible, to every replica. Each handle
//! keeps one dedicated connection listening (opened on the first mark, on the store's runtime) and counts the
//! notifications of its namespace from other handles; its own writes it counts itself as they commit, so its
//! marks never wait for its own echo. A mark is the pair of counts; a waiter sleeps on a condition variable
//! until either moves or its deadline passes.
//!
//! When the listening connection is lost (the database restarted, the network cut) notifications sent meanwhile
//! are lost with it, so the loss counts as a change, and so does the reconnection, which is retried until the
//! database answers again: a waiter re-reads rather than sleep through a decision. This module reads no rows.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio_postgres::{AsyncMessage, Client, NoTls};

use super::pool::{block_on, connect_timeout, pg_error, Pool};
use crate::changes::ChangeMark;
use crate::error::{Error, Result};

/// The channel every toolgate write notifies.
pub(crate) const CHANNEL: &str = "toolgate_store";

/// How long the listener waits before trying a lost database again.
const RETRY: Duration = Duration::from_millis(500);

#[derive(Default)]
struct Seen {
    /// Notifications of this namespace from other handles, and losses and recoveries of the listener.
    heard: u64,
    /// Transactions committed through this handle that changed a row.
    wrote: u64,
    /// Whether the listener was started (it keeps itself going from then on).
    listening: bool,
}

/// What one handle has seen change.
pub(crate) struct Feed {
    seen: Mutex<Seen>,
    moved: Condvar,
    /// Held while the listener is being started, so two first marks start one.
    starting: Mutex<()>,
    namespace: String,
    /// This handle's own name in notifications, so it can tell its echo from another's write.
    handle: String,
}

impl Feed {
    pub(crate) fn new(namespace: &str, handle: String) -> Self {
        Self {
            seen: Mutex::new(Seen::default()),
            moved: Condvar::new(),
            starting: Mutex::new(()),
            namespace: namespace.to_owned(),
            handle,
        }
    }

    fn seen(&self) -> MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The payload of this handle's notifications.
    pub(crate) fn payload(&self) -> String {
        format!("{} {}", self.namespace, self.handle)
    }

    /// A write through this handle committed.
    pub(crate) fn wrote(&self) {
        self.seen().wrote += 1;
        self.moved.notify_all();
    }

    pub(crate) fn own_writes(&self) -> u64 {
        self.seen().wrote
    }

    fn heard(&self) {
        self.seen().heard += 1;
        self.moved.notify_all();
    }

    fn notified(&self, payload: &str) {
        match payload.split_once(' ') {
            Some((namespace, handle)) if namespace == self.namespace && handle != self.handle => {
                self.heard();
            }
            _ => {}
        }
    }

    /// Where this handle stands; starts listening first, so nothing committed after the mark goes unheard.
    pub(crate) fn mark(self: &Arc<Self>, pool: &Pool) -> Result<ChangeMark> {
        self.listen(pool)?;
        let seen = self.seen();
        Ok(ChangeMark::from_parts(
            i64::try_from(seen.heard).unwrap_or(i64::MAX),
            seen.wrote,
        ))
    }

    /// Blocks until the counts move past `since` or `deadline` passes; moves `since` to what it saw.
    pub(crate) fn wait(&self, since: &mut ChangeMark, deadline: Instant) -> bool {
        let mut seen = self.seen();
        loop {
            let now_at =
                ChangeMark::from_parts(i64::try_from(seen.heard).unwrap_or(i64::MAX), seen.wrote);
            if now_at != *since {
                *since = now_at;
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            seen = self
                .moved
                .wait_timeout(seen, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Starts the listener once: the first subscription is made before this returns (or its failure is the
    /// answer, and the next mark tries again); later ones the listener makes itself.
    fn listen(self: &Arc<Self>, pool: &Pool) -> Result<()> {
        if self.seen().listening {
            return Ok(());
        }
        let _starting = self.starting.lock().unwrap_or_else(|p| p.into_inner());
        if self.seen().listening {
            return Ok(());
        }
        let handle = pool
            .runtime()
            .handle()
            .ok_or_else(|| Error::Unavailable("the store is shutting down".into()))?;
        let (first, subscribed) = tokio::sync::oneshot::channel();
        handle.spawn(keep_listening(
            pool.config().clone(),
            Arc::clone(self),
            first,
        ));
        match block_on(
            subscribed,
            Instant::now() + connect_timeout(pool.config()) * 2,
        ) {
            Some(Ok(Ok(()))) => {
                self.seen().listening = true;
                Ok(())
            }
            Some(Ok(Err(e))) => Err(e),
            _ => Err(Error::Unavailable(
                "could not listen for changes in time".into(),
            )),
        }
    }
}

/// The listener's life: subscribe, hear until the connection ends, count the loss, subscribe again.
async fn keep_listening(
    config: tokio_postgres::Config,
    feed: Arc<Feed>,
    first: tokio::sync::oneshot::Sender<Result<()>>,
) {
    let mut first = Some(first);
    loop {
        match subscribe(&config, &feed).await {
            Ok((client, ended)) => {
                match first.take() {
                    Some(first) => {
                        let _ = first.send(Ok(()));
                    }
                    // Notifications sent while it was away are lost: count a change.
                    None => feed.heard(),
                }
                let _ = ended.await;
                drop(client);
                feed.heard();
            }
            Err(e) => {
                if let Some(first) = first.take() {
                    let _ = first.send(Err(e));
                    return;
                }
            }
        }
        tokio::time::sleep(RETRY).await;
    }
}

/// One listening connection: its client, and the task hearing it, which ends with the connection.
async fn subscribe(
    config: &tokio_postgres::Config,
    feed: &Arc<Feed>,
) -> Result<(Client, tokio::task::JoinHandle<()>)> {
    let (client, mut connection) =
        tokio::time::timeout(connect_timeout(config), config.connect(NoTls))
            .await
            .map_err(|_| Error::Unavailable("connecting timed out".into()))?
            .map_err(pg_error)?;
    let hearer = Arc::clone(feed);
    let ended = tokio::spawn(async move {
        while let Some(message) = std::future::poll_fn(|cx| connection.poll_message(cx)).await {
            match message {
                Ok(AsyncMessage::Notification(n)) => hearer.notified(n.payload()),
                Ok(_) => {}
                Err(_) => break,
            }
        }
    });
    client
        .batch_execute(&format!("LISTEN {CHANNEL}"))
        .await
        .map_err(pg_error)?;
    Ok((client, ended))
}
