//! The correlation table: which client session (and which of its requests) caused each call now forwarded to an
//! upstream, and which session each upstream request was relayed to. It is what lets an upstream's request,
//! log message or cancellation reach the one client it concerns instead of "the first" or "every" client.
//!
//! A stdio upstream's request carries no link to the call that caused it, so the table attributes by what is in
//! flight on that upstream: calls of one session only attribute to that session (and to its request when there
//! is exactly one); calls of several sessions attribute to nobody, and the caller refuses rather than guesses.
//! An HTTP upstream's request that arrived on a call's own answer stream names that call (`Event::Request`'s
//! `caller`, the key of the call's `CallGuard` given to `Connection::request_for`): it is attributed to that
//! call exactly, whatever else is in flight, and to nobody once that call is forgotten.
//! Deciding what to do with an attribution is `route`'s; this file only keeps the facts.
//!
//! A call's answer is read ahead of the notifications the upstream sent before it: they wait in the gateway's
//! event queue, the answer goes straight to the call. So an ended call stays counted until the event loop has
//! handled every event that was queued when it ended, and the one it was handling then (taken off the queue, not
//! yet handled: a log line the loop took while it waited on a catalog rebuild is no longer queued, but not yet
//! routed either); otherwise a log line written just before the answer would find no call and go to every client.

use crate::bridge::AskSink;
use crate::client::Client;
use crate::client::LogLevel;
use jsonrpc::Id;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use tokio::sync::mpsc;
use upstream::Event;

/// What caused an upstream's message, as far as the calls in flight on it tell.
#[derive(Clone, Debug)]
pub(crate) enum Cause {
    /// Every call in flight on the upstream came from this session; `request` names the client request when
    /// exactly one call is in flight.
    Call {
        /// `None`: no client stands behind the call (a code-mode run's, a bridged one), or it is not known.
        client: Option<Weak<dyn Client>>,
        request: Option<Id>,
        /// Set when the call is bridged for a modern client (`bridge`): the upstream's requests go there, to
        /// become `inputRequests` of the client's result, instead of to a session.
        bridge: Option<AskSink>,
        /// With `request`: the log level that request asked for (a modern client's opt-in).
        log_level: Option<LogLevel>,
    },
    /// Calls of this many different sessions are in flight: the message cannot be attributed.
    Ambiguous { sessions: usize },
    /// No call is in flight on the upstream.
    Idle,
}

/// One call forwarded to an upstream and not yet answered.
struct Call {
    server: String,
    session_id: String,
    client: Option<Weak<dyn Client>>,
    request: Option<Id>,
    bridge: Option<AskSink>,
    log_level: Option<LogLevel>,
    /// The governed call's trace id, which what the upstream asks during it names as its parent.
    trace: Option<String>,
    /// Once the call ended: the count of handled events after which it is forgotten.
    forget_after: Option<u64>,
}

impl Call {
    /// A call of `session_id` on `server`, with no client, request, sink, level or trace yet.
    fn new(server: &str, session_id: String) -> Self {
        Self {
            server: server.to_owned(),
            session_id,
            client: None,
            request: None,
            bridge: None,
            log_level: None,
            trace: None,
            forget_after: None,
        }
    }
}

#[derive(Default)]
struct Inner {
    calls: HashMap<u64, Call>,
    /// Upstream requests relayed to a client: (server, the upstream's id as JSON text) → that client.
    relays: HashMap<(String, String), Weak<dyn Client>>,
}

#[derive(Default)]
pub(crate) struct Correlation {
    inner: Mutex<Inner>,
    next: AtomicU64,
    /// The gateway's event queue (weak: the table must not keep it open), to see what is still queued.
    events: Option<mpsc::WeakSender<Event>>,
    /// Events the event loop has taken off the queue so far (handled, or being handled).
    taken: AtomicU64,
    /// Events the event loop has handled so far.
    handled: AtomicU64,
}

impl Correlation {
    /// A table that keeps ended calls until the events queued before their end on `events` are handled.
    pub(crate) fn watching(events: mpsc::WeakSender<Event>) -> Self {
        Self {
            events: Some(events),
            ..Self::default()
        }
    }

    /// The event loop took one more event off the queue; it calls `handled_one` once that event is handled.
    pub(crate) fn took_one(&self) {
        self.taken.fetch_add(1, Ordering::SeqCst);
    }

    /// The event loop handled one more event: calls whose queued events are all handled are forgotten.
    pub(crate) fn handled_one(&self) {
        let handled = self.handled.fetch_add(1, Ordering::SeqCst) + 1;
        self.lock()
            .calls
            .retain(|_, c| c.forget_after.is_none_or(|n| n > handled));
    }

    /// A call ended: forgotten at once when nothing is queued or being handled, else once what is queued now and
    /// what is being handled were handled. The queue is read before the count of taken events: an event taken in
    /// between is then counted as taken, where the other order would miss it in both.
    fn end(&self, key: u64) {
        let queued = self
            .events
            .as_ref()
            .and_then(mpsc::WeakSender::upgrade)
            .map_or(0, |tx| tx.max_capacity() - tx.capacity()) as u64;
        let taken = self.taken.load(Ordering::SeqCst);
        let mut inner = self.lock();
        let forget_after = taken + queued;
        if forget_after <= self.handled.load(Ordering::SeqCst) {
            inner.calls.remove(&key);
        } else if let Some(call) = inner.calls.get_mut(&key) {
            call.forget_after = Some(forget_after);
        }
    }
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records that `session` has a call in flight on `server`, caused by its client request `request` (the
    /// call's `Requester`); the guard removes it when the call ends, however it ends.
    #[cfg(test)]
    pub(crate) fn begin_for<C: Client + 'static>(
        self: &Arc<Self>,
        server: &str,
        client: &Arc<C>,
        request: Option<Id>,
    ) -> CallGuard {
        let client: Arc<dyn Client> = Arc::clone(client) as Arc<dyn Client>;
        self.begin_logging(server, &client, request, None, "test-call")
    }

    /// `begin_for`, with the log level a modern client's request asked for and the call's trace.
    pub(crate) fn begin_logging(
        self: &Arc<Self>,
        server: &str,
        client: &Arc<dyn Client>,
        request: Option<Id>,
        log_level: Option<LogLevel>,
        trace_id: &str,
    ) -> CallGuard {
        self.insert(Call {
            client: Some(Arc::downgrade(client)),
            request,
            log_level,
            trace: Some(trace_id.to_owned()),
            ..Call::new(server, client.session_id().to_owned())
        })
    }

    /// Records a call in flight on `server` bridged for a modern client: what the upstream asks while it runs goes
    /// to `sink`. Each bridged call counts as a requester of its own, so a request while it and any other call are
    /// in flight is ambiguous and refused, as between two sessions.
    pub(crate) fn begin_bridged(self: &Arc<Self>, server: &str, sink: AskSink) -> CallGuard {
        let key = format!("bridged call {}", crate::ids::session_id());
        self.insert(Call {
            bridge: Some(sink),
            ..Call::new(server, key)
        })
    }

    /// Records a call in flight on `server` that no client session stands behind (a code-mode run's call):
    /// what the upstream asks while it runs has no client to go to, so it is refused, and it is never
    /// attributed to some other session that happens to be open.
    pub(crate) fn begin_unowned(self: &Arc<Self>, server: &str, trace_id: &str) -> CallGuard {
        self.insert(Call {
            trace: Some(trace_id.to_owned()),
            ..Call::new(server, format!("call {trace_id}"))
        })
    }

    fn insert(self: &Arc<Self>, call: Call) -> CallGuard {
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock().calls.insert(key, call);
        CallGuard {
            table: Arc::clone(self),
            key,
        }
    }

    /// Who caused a request `server` sends now: the call `caller` names when the upstream said which call it
    /// came with (a call no longer known, or another server's, is a call with no client to ask), else what the
    /// calls in flight on `server` say.
    pub(crate) fn cause_of(&self, server: &str, caller: Option<u64>) -> Cause {
        let Some(key) = caller else {
            return self.cause(server);
        };
        let inner = self.lock();
        match inner.calls.get(&key).filter(|c| c.server == server) {
            Some(call) => Cause::Call {
                client: call.client.clone(),
                request: call.request.clone(),
                bridge: call.bridge.clone(),
                log_level: call.log_level,
            },
            None => Cause::Call {
                client: None,
                request: None,
                bridge: None,
                log_level: None,
            },
        }
    }

    /// The trace of the one call that caused a request `server` sends now: the call `caller` names, else the only
    /// call in flight on `server`; `None` when there is no such one call.
    pub(crate) fn trace_of(&self, server: &str, caller: Option<u64>) -> Option<String> {
        let inner = self.lock();
        let call = match caller {
            Some(key) => inner.calls.get(&key).filter(|c| c.server == server),
            None => {
                let mut on = inner.calls.values().filter(|c| c.server == server);
                on.next().filter(|_| on.next().is_none())
            }
        };
        call.and_then(|c| c.trace.clone())
    }

    /// What the calls in flight on `server` say about who caused a message it sends now.
    pub(crate) fn cause(&self, server: &str) -> Cause {
        let inner = self.lock();
        let mut calls = inner.calls.values().filter(|c| c.server == server);
        let Some(first) = calls.next() else {
            return Cause::Idle;
        };
        let mut sessions = vec![first.session_id.as_str()];
        let mut count = 1;
        for c in calls {
            count += 1;
            if !sessions.contains(&c.session_id.as_str()) {
                sessions.push(&c.session_id);
            }
        }
        match sessions.len() {
            1 => Cause::Call {
                client: first.client.clone(),
                request: if count == 1 {
                    first.request.clone()
                } else {
                    None
                },
                bridge: first.bridge.clone(),
                log_level: if count == 1 { first.log_level } else { None },
            },
            n => Cause::Ambiguous { sessions: n },
        }
    }

    /// Records that the upstream request `upstream_id` of `server` was relayed to `client`.
    pub(crate) fn relayed(&self, server: &str, upstream_id: &Value, client: Weak<dyn Client>) {
        self.lock()
            .relays
            .insert(relay_key(server, upstream_id), client);
    }

    /// Forgets a relayed request (answered, withdrawn or never delivered); returns the client it went to.
    pub(crate) fn relay_ended(&self, server: &str, upstream_id: &Value) -> Option<Arc<dyn Client>> {
        self.lock()
            .relays
            .remove(&relay_key(server, upstream_id))
            .and_then(|s| s.upgrade())
    }
}

fn relay_key(server: &str, upstream_id: &Value) -> (String, String) {
    (server.to_owned(), upstream_id.to_string())
}

/// Removes a call from the table when it ends.
pub(crate) struct CallGuard {
    table: Arc<Correlation>,
    key: u64,
}

impl CallGuard {
    /// The call's key, given to `Connection::request_for` so that what the upstream asks on the call's own
    /// stream names it (`Correlation::cause_of`).
    pub(crate) fn key(&self) -> u64 {
        self.key
    }
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        self.table.end(self.key);
    }
}
