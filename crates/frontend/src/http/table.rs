//! The legacy era's sessions (`Mcp-Session-Id`): which id names which gateway session, for whom, and until when.
//!
//! Ids are 128 random bits from the operating system, in hex, so one cannot be guessed or derived from another.
//! A session is bound to the identity that initialized it: an id presented by anyone else is answered as unknown
//! (404), never as someone else's session (the gateway refuses another identity too; this keeps it from even
//! learning the id exists). Sessions are bounded in number (`maxSessions`, 503 past it) and end when idle
//! longer than `sessionIdle` with no stream open, when DELETEd, when their client stops reading (outbox
//! overflow), or at shutdown. This module does not read requests (`post`, `get`) nor write responses.

use crate::http::reply::Refusal;
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
    last_used: Mutex<Instant>,
}

impl Entry {
    fn touch(&self) {
        *self.last_used.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
    }

    fn idle_since(&self) -> Instant {
        *self.last_used.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn end(&self) {
        self.session.close();
        self.router.stop();
    }
}

pub(crate) struct Table {
    entries: Mutex<HashMap<String, Arc<Entry>>>,
    max: usize,
    idle: Duration,
}

impl Table {
    pub(crate) fn new(max: usize, idle: Duration) -> Arc<Self> {
        Arc::new(Self {
            entries: Mutex::new(HashMap::new()),
            max,
            idle,
        })
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Entry>>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Opens a session for `identity`; refused when `maxSessions` are open.
    pub(crate) fn create(
        self: &Arc<Self>,
        gateway: &Arc<Gateway>,
        identity: Option<String>,
    ) -> Result<(String, Arc<Entry>), Refusal> {
        let mut random = [0u8; 16];
        rand::rngs::SysRng
            .try_fill_bytes(&mut random)
            .map_err(|_| Refusal::Busy("no randomness for a session id"))?;
        let id = hex::encode(random);
        let mut entries = self.entries();
        if entries.len() >= self.max {
            return Err(Refusal::Busy("too many sessions open; retry later"));
        }
        let (session, drain) = Session::open(gateway);
        let entry = Arc::new(Entry {
            session: Arc::clone(&session),
            router: Router::start(drain),
            identity,
            last_used: Mutex::new(Instant::now()),
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

    /// The session `id` names, when it exists and belongs to `identity`; marks it used.
    pub(crate) fn get(&self, id: &str, identity: &Option<String>) -> Option<Arc<Entry>> {
        let entry = self.entries().get(id).cloned()?;
        if entry.identity != *identity {
            tracing::warn!("a session id was presented by an identity other than its owner's");
            return None;
        }
        entry.touch();
        Some(entry)
    }

    /// Ends session `id`; false when there is none.
    pub(crate) fn remove(&self, id: &str) -> bool {
        let entry = self.entries().remove(id);
        entry.map(|e| e.end()).is_some()
    }

    /// Ends every session idle longer than the limit with no stream open.
    pub(crate) fn sweep(&self) {
        let now = Instant::now();
        let expired: Vec<_> = {
            let mut entries = self.entries();
            let ids: Vec<String> = entries
                .iter()
                .filter(|(_, e)| {
                    e.router.open_streams() == 0 && now.duration_since(e.idle_since()) >= self.idle
                })
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter().filter_map(|id| entries.remove(id)).collect()
        };
        for entry in expired {
            tracing::debug!("ended an idle session");
            entry.end();
        }
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
        let table = Table::new(8, Duration::from_secs(60));
        let alice = Some("key:alice".to_owned());
        let (id, _) = table.create(&gw, alice.clone()).unwrap();
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
        let table = Table::new(64, Duration::from_secs(60));
        let ids: std::collections::HashSet<String> = (0..32)
            .map(|_| table.create(&gw, None).unwrap().0)
            .collect();
        assert_eq!(ids.len(), 32);
        assert!(ids
            .iter()
            .all(|i| i.len() == 32 && i.bytes().all(|b| b.is_ascii_hexdigit())));
    }
}
