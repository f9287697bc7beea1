//! Accepting TCP connections and serving HTTP/1.1 on each, under the bounds that keep a connection which sends
//! nothing useful from holding anything.
//!
//! - A request head must arrive within hyper's header read timeout: `keepAlive` (never less than
//!   `headerTimeout`), which also closes a kept-alive connection that sends no next request.
//! - A connection is *unauthenticated* from its accept until a request on it passes the caller check (`auth`;
//!   with no authentication configured, any request to `/mcp` does; an admitted admin request does too). An unauthenticated connection is closed
//!   `headerTimeout` after its accept, and at most `maxPendingConnections` exist: accepting one more closes the
//!   oldest. So a flood of keyless sockets costs a bounded number of descriptors for a bounded time, the accept
//!   loop never waits on them, and a client that sends its request as soon as it connects — every real one — is
//!   the newest, the last to be closed, and authenticated long before a flood could push it out.
//! - An authenticated connection counts against the share of connections of the identity that first
//!   authenticated on it (`maxConnectionsPerIdentity`); past it the request is refused with 429 and the
//!   connection closed, so one identity's sockets cannot take every descriptor.
//!
//! What a request may then hold (sessions, request slots) is bounded elsewhere (`table`, `shares`). This module
//! does not look at requests beyond marking their connection.

use crate::http::shares::{Held, Shares};
use axum::extract::Request;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// How long the accept loop pauses after a failed accept (out of descriptors): the flood's connections close on
/// their own clocks meanwhile.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// The connections not yet authenticated, oldest first.
pub(crate) struct Pending {
    state: Mutex<PendingState>,
    max: usize,
    /// Authenticated connections, per identity.
    identities: Arc<Shares>,
}

#[derive(Default)]
struct PendingState {
    /// Accept order → the token that closes that connection.
    open: BTreeMap<u64, CancellationToken>,
    next: u64,
}

impl Pending {
    /// At most `max` unauthenticated connections, and `per_identity` authenticated ones for each identity.
    pub(crate) fn new(max: usize, per_identity: usize) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(PendingState::default()),
            max: max.max(1),
            identities: Shares::new(usize::MAX, per_identity),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, PendingState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts a newly accepted connection, closing the oldest unauthenticated ones past the bound.
    fn admit(self: &Arc<Self>) -> Arc<Ticket> {
        let close = CancellationToken::new();
        let mut state = self.state();
        let seq = state.next;
        state.next += 1;
        state.open.insert(seq, close.clone());
        while state.open.len() > self.max {
            if let Some((_, oldest)) = state.open.pop_first() {
                oldest.cancel();
            }
        }
        Arc::new(Ticket {
            pending: Arc::clone(self),
            seq,
            close,
            authenticated: AtomicBool::new(false),
            unit: Mutex::new(None),
        })
    }

    /// How many connections are unauthenticated now.
    #[cfg(test)]
    pub(crate) fn count(&self) -> usize {
        self.state().open.len()
    }
}

/// One connection's place among the unauthenticated; every request on the connection carries it (as an
/// extension) so the caller check can release it.
pub(crate) struct Ticket {
    pending: Arc<Pending>,
    seq: u64,
    close: CancellationToken,
    authenticated: AtomicBool,
    /// The connection's unit of its identity's share, once authenticated.
    unit: Mutex<Option<Held>>,
}

impl Ticket {
    /// A request on this connection passed the caller check as `who`: the connection now counts against
    /// `who`'s share instead of among the unauthenticated, and is never closed for being unauthenticated.
    /// False when `who` holds its whole share of connections (the connection stays unauthenticated).
    pub(crate) fn authenticated(&self, who: &Option<String>) -> bool {
        let mut unit = self.unit.lock().unwrap_or_else(|p| p.into_inner());
        if unit.is_some() {
            return true;
        }
        let Ok(held) = self.pending.identities.take(who) else {
            return false;
        };
        *unit = Some(held);
        self.authenticated.store(true, Ordering::Release);
        self.pending.state().open.remove(&self.seq);
        true
    }

    fn is_authenticated(&self) -> bool {
        self.authenticated.load(Ordering::Acquire)
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.pending.state().open.remove(&self.seq);
    }
}

/// What serving connections needs besides the router.
pub(crate) struct Rules {
    pub header_timeout: Duration,
    pub keep_alive: Duration,
    pub pending: Arc<Pending>,
}

/// Accepts and serves until `stop`; then lets every connection finish its current response (at most `grace`).
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    rules: Rules,
    stop: CancellationToken,
    grace: Duration,
) {
    let rules = Arc::new(rules);
    // Each connection task holds a sender; all of them gone means every connection ended.
    let (alive, mut ended) = mpsc::channel::<()>(1);
    loop {
        let accepted = tokio::select! {
            () = stop.cancelled() => break,
            a = listener.accept() => a,
        };
        match accepted {
            Ok((stream, _)) => {
                tokio::spawn(connection(
                    stream,
                    router.clone(),
                    Arc::clone(&rules),
                    stop.clone(),
                    alive.clone(),
                ));
            }
            Err(e) => {
                tracing::warn!("accepting a connection failed: {e}");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
            }
        }
    }
    drop(listener);
    drop(alive);
    let _ = tokio::time::timeout(grace, ended.recv()).await;
}

async fn connection(
    stream: TcpStream,
    router: Router,
    rules: Arc<Rules>,
    stop: CancellationToken,
    _alive: mpsc::Sender<()>,
) {
    let _ = stream.set_nodelay(true);
    let ticket = rules.pending.admit();
    let close = ticket.close.clone();
    let tower = TowerToHyperService::new(router);
    let mark = Arc::clone(&ticket);
    let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
        request.extensions_mut().insert(Arc::clone(&mark));
        hyper::service::Service::call(&tower, request)
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(rules.keep_alive.max(rules.header_timeout));
    // Upgrades are for the WebSocket entry point (`ws`), which keeps the connection's ticket while it is open.
    let conn = builder
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades();
    tokio::pin!(conn);
    let deadline = tokio::time::sleep(rules.header_timeout);
    tokio::pin!(deadline);
    let (mut draining, mut timed) = (false, true);
    loop {
        tokio::select! {
            served = conn.as_mut() => {
                if let Err(e) = served {
                    tracing::debug!("a connection ended: {e}");
                }
                return;
            }
            () = close.cancelled() => {
                tracing::debug!("closed the oldest unauthenticated connection to admit a new one");
                return;
            }
            () = &mut deadline, if timed => {
                if !ticket.is_authenticated() {
                    tracing::debug!("closed a connection that did not authenticate in time");
                    return;
                }
                timed = false;
            }
            () = stop.cancelled(), if !draining => {
                conn.as_mut().graceful_shutdown();
                draining = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_the_bound_the_oldest_unauthenticated_connection_is_closed() {
        let pending = Pending::new(2, 8);
        let first = pending.admit();
        let second = pending.admit();
        assert!(second.authenticated(&None));
        let third = pending.admit();
        let fourth = pending.admit();
        assert!(first.close.is_cancelled(), "the oldest goes");
        assert!(
            !second.close.is_cancelled(),
            "an authenticated one never counts"
        );
        assert!(!third.close.is_cancelled() && !fourth.close.is_cancelled());
        assert_eq!(pending.count(), 2);
        drop(third);
        assert_eq!(pending.count(), 1, "a closed connection no longer counts");
    }

    #[test]
    fn an_identity_past_its_share_of_connections_stays_unauthenticated() {
        let pending = Pending::new(8, 2);
        let who = Some("key:a".to_owned());
        let held: Vec<_> = (0..2).map(|_| pending.admit()).collect();
        assert!(held.iter().all(|t| t.authenticated(&who)));
        assert!(held[0].authenticated(&who), "a connection counts once");
        let third = pending.admit();
        assert!(!third.authenticated(&who));
        assert!(!third.is_authenticated());
        assert!(
            pending.admit().authenticated(&Some("key:b".into())),
            "another identity connects"
        );
        drop(held);
        assert!(
            third.authenticated(&who),
            "a closed connection frees its unit"
        );
    }
}
