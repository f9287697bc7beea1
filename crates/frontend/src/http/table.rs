//! The legacy era's sessions (`Mcp-Session-Id`): which id names which gateway session, for whom, and until when.
//!
//! Ids are 128 random bits from the operating system, in hex, so one cannot be guessed or derived from another.
//! A session is bound to the identity that initialized it: an id presented by anyone else is answered as unknown
//! (404), never as someone else's session (the gateway refuses another identity too; this keeps it from even
//! learning the id exists). Sessions are bounded per identity (`maxSessionsPerIdentity`, 429 past it) and in all
//! (`maxSessions`, 503 past it), so one identity cannot take every session. A session ends when no request came
//! for `sessionIdle` and none is in flight — an open GET stream does not keep it, and is closed with it — when
//! DELETEd, when its client stops reading (outbox overflow), or at shutdown. This module does not read requests
//! (`post`, `get`) nor write responses.

use crate::http::reply::Refusal;
use crate::http::shares::{Held, Over, Shares};
use crate::http::streams::Router;
use gateway::{Gateway, Session};
use rand::TryRng;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// One legacy session.
pub(crate) struct Entry {
    pub session: Arc<Session>,
    pub router: Arc<Router>,
    identity: Option<String>,
    /// This session's unit of its identity's share, given back when the last holder of the entry lets go.
    _held: Held,
}

impl Entry {
    /// Whether the session is idle past `idle` at `now`: no request in flight and none for that long.
    fn expired(&self, now: Instant, idle: Duration) -> bool {
        self.router.requests_open() == 0 && now.duration_since(self.router.used_at()) >= idle
    }

    fn end(&self) {
        self.session.close();
        self.router.stop();
    }
}

pub(crate) struct Table {
    entries: Mutex<HashMap<String, Arc<Entry>>>,
    shares: Arc<Shares>,
    idle: Duration,
}

impl Table {
    /// A table of at most `max` sessions, `per_identity` of them for any one identity.
    pub(crate) fn new(max: usize, per_identity: usize, idle: Duration) -> Arc<Self> {
        Arc::new(Self {
            entries: Mutex::new(HashMap::new()),
            shares: Shares::new(max, per_identity),
            idle,
        })
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Entry>>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Opens a session for `identity`; refused when the identity holds its share or all sessions are open.
    pub(crate) fn create(
        self: &Arc<Self>,
        gateway: &Arc<Gateway>,
        identity: Option<String>,
        profile: Option<&str>,
    ) -> Result<(String, Arc<Entry>), Refusal> {
        let mut random = [0u8; 16];
        rand::rngs::SysRng
            .try_fill_bytes(&mut random)
            .map_err(|_| Refusal::Busy("no randomness for a session id"))?;
        let id = hex::encode(random);
        let mut entries = self.entries();
        let held = self
            .shares
            .take(&identity)
            .map_err(|over| self.refusal(&entries, &identity, over))?;
        // Runs under the caller's profile: a profile that cannot be served is 403, not a session.
        let (session, drain) = Session::open_as(gateway, profile).map_err(|e| {
            tracing::debug!(identity = ?identity, "refused a caller's profile: {e}");
            Refusal::Forbidden("this caller's profile is not served here".into())
        })?;
        let entry = Arc::new(Entry {
            session: Arc::clone(&session),
            router: Router::start(drain),
            identity,
            _held: held,
        });
        entries.insert(id.clone(), Arc::clone(&entry));
        drop(entries);
        tokio::spawn(end_on_overflow(
            Arc::downgrade(self),
            id.clone(),
            session,
            Arc::clone(&entry.router),
        ));
        Ok((id, entry))
    }

    /// A unit of `identity`'s share of sessions for a session kept outside the table (a WebSocket is its own
    /// session for as long as it is open); refused as `create` refuses.
    pub(crate) fn hold(&self, identity: &Option<String>) -> Result<Held, Refusal> {
        let entries = self.entries();
        self.shares
            .take(identity)
            .map_err(|over| self.refusal(&entries, identity, over))
    }

    /// The session `id` names, when it exists and belongs to `identity`; marks it used.
    pub(crate) fn get(&self, id: &str, identity: &Option<String>) -> Option<Arc<Entry>> {
        let entry = self.entries().get(id).cloned()?;
        if entry.identity != *identity {
            tracing::warn!("a session id was presented by an identity other than its owner's");
            return None;
        }
        entry.router.touch();
        Some(entry)
    }

    /// Ends session `id`; false when there is none.
    pub(crate) fn remove(&self, id: &str) -> bool {
        let entry = self.entries().remove(id);
        entry.map(|e| e.end()).is_some()
    }

    /// The refusal for a session `identity` cannot have: which bound, what frees it, and when the first of
    /// the sessions that count against it would end by itself if unused.
    fn refusal(
        &self,
        entries: &HashMap<String, Arc<Entry>>,
        identity: &Option<String>,
        over: Over,
    ) -> Refusal {
        let counted = entries
            .values()
            .filter(|e| over == Over::Ceiling || e.identity == *identity);
        let now = Instant::now();
        let soonest = counted
            .map(|e| (e.router.used_at() + self.idle).saturating_duration_since(now))
            .min()
            .unwrap_or(Duration::ZERO);
        let (share, message) = match over {
            Over::Share => (
                true,
                format!(
                    "this caller holds its share of {} sessions (http.limits.maxSessionsPerIdentity): \
                     DELETE one it no longer uses, or one ends after {} s without a request",
                    self.shares.share(),
                    self.idle.as_secs()
                ),
            ),
            Over::Ceiling => (
                false,
                format!(
                    "all {} sessions are open (http.limits.maxSessions): one ends when DELETEd or after {} s \
                     without a request",
                    self.shares.ceiling(),
                    self.idle.as_secs()
                ),
            ),
        };
        Refusal::Limit {
            share,
            message,
            retry_after_secs: soonest.as_secs_f64().ceil() as u64,
        }
    }

    /// Ends every session idle longer than the limit (an open GET stream does not count as use).
    pub(crate) fn sweep(&self) {
        let now = Instant::now();
        let expired: Vec<_> = {
            let mut entries = self.entries();
            let ids: Vec<String> = entries
                .iter()
                .filter(|(_, e)| e.expired(now, self.idle))
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter().filter_map(|id| entries.remove(id)).collect()
        };
        for entry in expired {
            tracing::debug!("ended an idle session");
            entry.end();
        }
    }

    /// Ends every session whose identity `revoked` says (a reload revoked its credential); returns how many.
    pub(crate) fn end_where(&self, revoked: impl Fn(&Option<String>) -> bool) -> usize {
        let ended: Vec<_> = {
            let mut entries = self.entries();
            let ids: Vec<String> = entries
                .iter()
                .filter(|(_, e)| revoked(&e.identity))
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter().filter_map(|id| entries.remove(id)).collect()
        };
        for entry in &ended {
            entry.end();
        }
        ended.len()
    }

    /// Ends every session (shutdown).
    pub(crate) fn end_all(&self) {
        let all: Vec<_> = self.entries().drain().map(|(_, e)| e).collect();
        for entry in all {
            entry.end();
        }
    }

    /// How often `sweep` runs: often enough that a session outlives its idle limit by at most a quarter of it.
    pub(crate) fn sweep_every(&self) -> Duration {
        (self.idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(30))
    }
}

/// Ends the session once its client stopped reading and its outbox overflowed; returns as soon as the session
/// ended for any other reason, so it never keeps a session alive.
async fn end_on_overflow(
    table: Weak<Table>,
    id: String,
    session: Arc<Session>,
    router: Arc<Router>,
) {
    tokio::select! {
        () = session.closed() => {
            if table.upgrade().is_some_and(|t| t.remove(&id)) {
                tracing::warn!("ended a session whose client stopped reading");
            }
        }
        () = router.stopped() => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gateway::{Guard, Options};

    fn gateway(dir: &std::path::Path) -> Arc<Gateway> {
        let config = config::Config::empty();
        let guard = Guard::load(&config, dir).unwrap();
        Gateway::start(
            &config,
            Options::from_config(&config, false),
            Arc::new(guard),
            None,
        )
    }

    #[tokio::test]
    async fn session_id_presented_by_another_identity_is_unknown() {
        let dir = tempfile::tempdir().unwrap();
        let gw = gateway(dir.path());
        let table = Table::new(8, 8, Duration::from_secs(60));
        let alice = Some("key:alice".to_owned());
        let (id, _) = table.create(&gw, alice.clone(), None).unwrap();
        assert!(table.get(&id, &alice).is_some());
        assert!(table.get(&id, &Some("key:mallory".into())).is_none());
        assert!(
            table.get(&id, &None).is_none(),
            "nor by an anonymous caller"
        );
        assert!(table.get(&id, &alice).is_some(), "the owner keeps it");
    }

    #[tokio::test]
    async fn session_ids_are_random_and_distinct() {
        let dir = tempfile::tempdir().unwrap();
        let gw = gateway(dir.path());
        let table = Table::new(64, 64, Duration::from_secs(60));
        let ids: std::collections::HashSet<String> = (0..32)
            .map(|_| table.create(&gw, None, None).unwrap().0)
            .collect();
        assert_eq!(ids.len(), 32);
        assert!(ids
            .iter()
            .all(|i| i.len() == 32 && i.bytes().all(|b| b.is_ascii_hexdigit())));
    }

    #[tokio::test]
    async fn an_identity_at_its_share_is_429_and_another_still_opens() {
        let dir = tempfile::tempdir().unwrap();
        let gw = gateway(dir.path());
        let table = Table::new(4, 2, Duration::from_secs(60));
        let (a, b, c) = (
            Some("key:a".to_owned()),
            Some("key:b".to_owned()),
            Some("key:c".to_owned()),
        );
        let (first, _) = table.create(&gw, a.clone(), None).unwrap();
        table.create(&gw, a.clone(), None).unwrap();
        let Err(Refusal::Limit {
            share: true,
            message,
            retry_after_secs,
        }) = table.create(&gw, a.clone(), None)
        else {
            panic!("a third session for one identity is over its share");
        };
        assert!(message.contains("maxSessionsPerIdentity"), "{message}");
        assert!((59..=60).contains(&retry_after_secs), "{retry_after_secs}");
        table.create(&gw, b.clone(), None).unwrap();
        table.create(&gw, b.clone(), None).unwrap();
        let Err(Refusal::Limit {
            share: false,
            message,
            ..
        }) = table.create(&gw, c, None)
        else {
            panic!("the ceiling holds across identities");
        };
        assert!(message.contains("maxSessions"), "{message}");
        assert!(table.remove(&first));
        assert!(
            table.create(&gw, a, None).is_ok(),
            "ending one frees its unit"
        );
    }
}
