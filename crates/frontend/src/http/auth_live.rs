//! The HTTP front end's authentication as a reload replaces it: the API keys and the JWKS are swapped whole
//! (each request authenticates against the set in force when it arrives), and the callers the new set revokes
//! lose what they hold open. A revoked API key (or every JWT caller, when the JWT settings or a key of the JWKS
//! changed) is refused 401 on its next request; its legacy sessions are ended at once, so their GET streams
//! close and their ids are unknown (404) afterwards, and its WebSockets are closed with 1008 (policy violation).
//! A call of such a session that was under way is cancelled with the session, as when the client disconnects;
//! a 2026-07-28 request already under way (a session of its own, authenticated when it arrived) finishes.
//!
//! It does not read the configuration: the binary loads it, the gateway checks the profiles it names, and the
//! result is handed here through `AuthReload`. Turning authentication on or off takes a restart (the per-caller
//! shares were sized at start for one anonymous caller or for many), and so does the listener's address.

use crate::http::auth::{check_profiles, Authenticator, Revoked};
use crate::http::table::Table;
use crate::http::HttpError;
use config::HttpConfig;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use tokio::sync::watch;

/// The authenticator in force, and the last revocation for the open WebSockets to look at.
pub(crate) struct LiveAuth {
    now: RwLock<Arc<Authenticator>>,
    revoked: watch::Sender<Arc<Revoked>>,
}

impl LiveAuth {
    pub(crate) fn new(auth: Authenticator) -> Self {
        Self {
            now: RwLock::new(Arc::new(auth)),
            revoked: watch::channel(Arc::default()).0,
        }
    }

    /// The authenticator as it is now.
    pub(crate) fn load(&self) -> Arc<Authenticator> {
        Arc::clone(&self.now.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// Revocations from now on (a WebSocket closes when one covers its caller).
    pub(crate) fn revocations(&self) -> watch::Receiver<Arc<Revoked>> {
        self.revoked.subscribe()
    }
}

/// What the binary reloads the HTTP front end's authentication through; taken before the server runs.
#[derive(Clone)]
pub struct AuthReload {
    pub(crate) auth: Arc<LiveAuth>,
    pub(crate) sessions: Arc<Table>,
    pub(crate) addr: SocketAddr,
}

/// A new authentication, loaded and checked, not yet in force.
pub struct NextAuth(Authenticator);

impl AuthReload {
    /// Loads the authentication `http` configures (reading its JWKS file) and checks with `check` that
    /// sessions can run under each profile it names; nothing changes yet. Refused: turning authentication on
    /// or off, and a JWKS file that does not load.
    pub fn prepare(
        &self,
        http: &HttpConfig,
        check: impl Fn(&str) -> Result<(), gateway::Error>,
    ) -> Result<NextAuth, HttpError> {
        let next = Authenticator::new(&http.auth)?;
        check_profiles(&http.auth, check)?;
        if next.configured() != self.auth.load().configured() {
            return Err(HttpError::Auth(format!(
                "turning authentication on or off (\"http.auth\") takes a restart of toolgate (listening on {})",
                self.addr
            )));
        }
        Ok(NextAuth(next))
    }

    /// Puts `next` in force for every request from now on, and ends the legacy sessions and WebSockets of the
    /// callers it revoked; returns how many legacy sessions were ended.
    pub fn apply(&self, next: NextAuth) -> usize {
        let mut next = next.0;
        let revoked = {
            let mut now = self.auth.now.write().unwrap_or_else(|p| p.into_inner());
            next.generation = now.generation + 1;
            let revoked = now.revoked_by(&next);
            *now = Arc::new(next);
            revoked
        };
        if revoked.is_empty() {
            return 0;
        }
        let ended = self.sessions.end_where(|identity| revoked.covers(identity));
        self.auth.revoked.send_replace(Arc::new(revoked));
        ended
    }
}
