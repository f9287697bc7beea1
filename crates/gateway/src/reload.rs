//! Reloading a running gateway's configuration: the policy (the served profile's guard and every other
//! profile's), the upstream credentials and the upstreams, checked whole first (`prepare_reload`), then put in force together
//! (`apply_reload`). A bad configuration changes nothing.
//!
//! The upstreams are compared entry by entry, each by its whole launch spec (`ServerConfig`: transport with
//! command, args, env, cwd, url and headers, protocol, kind, timeouts, tool filter, sandbox): an entry that is
//! new starts, one that is gone is shut down as shutdown ends it (its calls in flight end with an error saying
//! the server is unavailable, its tools leave the catalog), one whose spec changed is shut down and started
//! again with the new spec, and one that is equal is left alone — its process, its connection and the calls
//! under way on it carry on. The list is swapped whole (`Stages::set_upstreams`), so a reader sees the old list
//! or the new one, never a mix; the catalog is rebuilt by the event loop like any other change, and sessions
//! hear `list_changed` from it.
//!
//! A call already under way keeps the guard it started with (its `CallContext` holds it), so a call held for
//! approval finishes under the policy it was held by; every call and list that starts afterwards, in every open
//! session, is decided by the new one. It does not read files: the binary loads and checks the configuration
//! the way start-up does and hands the result here. What a reload cannot change while serving (the workspace,
//! the mode) is refused with the old configuration kept.

use crate::error::Error;
use crate::gateway::Gateway;
use crate::guard::Guard;
use crate::rebuild::ListKind;
use config::{Config, ServerConfig};
use std::sync::Arc;
use upstream::{Event, Upstream};

/// A configuration checked whole against the running gateway, not yet in force.
pub struct Reload {
    guard: Arc<Guard>,
    profiles: crate::profiles::Next,
    servers: Vec<ServerConfig>,
    credentials: Vec<config::Credential>,
}

impl Reload {
    /// Checks that sessions can run under `profile` once this reload is in force (an API key or the JWT
    /// settings of the same configuration name it).
    pub fn check_profile(&self, profile: &str) -> Result<(), Error> {
        self.profiles.check(profile)
    }
}

/// What a reload did to the upstreams, by server name in the configuration's order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    /// Entries whose launch spec changed: stopped, and started with the new spec.
    pub restarted: Vec<String>,
}

impl Applied {
    fn changed(&self) -> bool {
        !(self.added.is_empty() && self.removed.is_empty() && self.restarted.is_empty())
    }
}

impl Gateway {
    /// Checks `config`, whose served profile compiled into `guard`, against the running gateway: the same
    /// workspace and mode, every profile compiling, and each profile an open session runs under still
    /// servable. Nothing changes here.
    pub fn prepare_reload(&self, config: &Config, guard: Arc<Guard>) -> Result<Reload, Error> {
        let now = self.stages.guard();
        if guard.workspace() != now.workspace() {
            return Err(Error::NeedsRestart(format!(
                "the workspace (\"workspace\") changed from {} to {}",
                now.workspace(),
                guard.workspace()
            )));
        }
        let mut code = self.stages.opts.code.clone();
        code.settle(config, &guard);
        if code.mode != self.stages.opts.code.mode {
            return Err(Error::NeedsRestart(format!(
                "the mode (\"mode\") changed from {:?} to {:?}",
                self.stages.opts.code.mode, code.mode
            )));
        }
        let mut in_use: Vec<String> = self
            .live_sessions()
            .iter()
            .filter_map(|s| s.profile().map(str::to_owned))
            .collect();
        in_use.sort();
        in_use.dedup();
        let profiles = self.profiles.prepare(config, Arc::clone(&guard), &in_use)?;
        Ok(Reload {
            guard,
            profiles,
            servers: config.servers.clone(),
            credentials: config.credentials.clone(),
        })
    }

    /// Puts a prepared configuration in force: the policy and profiles, then the upstreams (started, stopped,
    /// restarted as their entries changed). A changed entry's old server is gone before its new one starts, so
    /// the two never run side by side (a server may hold a lock or a port). Returns once the upstreams it
    /// stopped are gone; the ones it started come up in the background, as at start-up. Refused once shutdown
    /// has begun.
    pub async fn apply_reload(&self, next: Reload) -> Result<Applied, Error> {
        let _one = self.reloading.lock().await;
        if self.shutdown.is_cancelled() {
            return Err(Error::ShuttingDown);
        }
        let (mut slots, applied, stopping) = self.plan_upstreams(&next.servers);
        self.profiles.install(next.profiles);
        self.stages.set_guard(next.guard);
        // Rotated or regranted credentials apply from the next request on (`credentials`); an env credential's
        // server is restarted below, its entry having changed.
        self.stages.set_credentials(&next.credentials);
        self.stages
            .set_upstreams(slots.iter().flatten().cloned().collect());
        self.catalog_changed(&applied).await;
        for session in self.live_sessions() {
            session.list_changed(ListKind::Tools).await;
        }
        let mut stops = tokio::task::JoinSet::new();
        for up in stopping {
            stops.spawn(async move { up.shutdown().await });
        }
        while stops.join_next().await.is_some() {}
        // Shutdown, waiting for this reload, would end what starts now right away: nothing is started.
        if !applied.restarted.is_empty() && !self.shutdown.is_cancelled() {
            for (slot, server) in slots.iter_mut().zip(&next.servers) {
                if slot.is_none() {
                    *slot = Some(self.launcher.start(server));
                }
            }
            self.stages
                .set_upstreams(slots.into_iter().flatten().collect());
            self.catalog_changed(&applied).await;
        }
        Ok(applied)
    }

    /// Has the event loop rebuild the catalog when the upstreams changed, in turn with the upstreams' own
    /// changes; it announces what the rebuild changed to every session.
    async fn catalog_changed(&self, applied: &Applied) {
        if !applied.changed() {
            return;
        }
        let event = Event::CatalogChanged {
            server: "(reload)".to_owned(),
        };
        // Once shutdown has begun nobody drains the events, and shutdown waits for this reload to end.
        tokio::select! {
            _ = self.launcher.sinks.events.send(event) => {}
            () = self.shutdown.cancelled() => {}
        }
    }

    /// `prepare_reload` then `apply_reload`.
    pub async fn reload(&self, config: &Config, guard: Arc<Guard>) -> Result<Applied, Error> {
        let next = self.prepare_reload(config, guard)?;
        self.apply_reload(next).await
    }

    /// For each of `servers`, in order: the running upstream of an equal entry (kept), a new one for a new
    /// entry (started), or none for a changed entry (started once its old server is gone); with what is done,
    /// and the running upstreams to stop.
    #[allow(clippy::type_complexity)]
    fn plan_upstreams(
        &self,
        servers: &[ServerConfig],
    ) -> (Vec<Option<Arc<Upstream>>>, Applied, Vec<Arc<Upstream>>) {
        let running = self.stages.upstreams();
        let mut applied = Applied::default();
        let mut stopping = Vec::new();
        let mut slots = Vec::with_capacity(servers.len());
        for server in servers {
            match running.iter().find(|u| u.name() == server.name) {
                Some(up) if up.config() == server => slots.push(Some(Arc::clone(up))),
                Some(up) => {
                    stopping.push(Arc::clone(up));
                    applied.restarted.push(server.name.clone());
                    slots.push(None);
                }
                None => {
                    applied.added.push(server.name.clone());
                    slots.push(Some(self.launcher.start(server)));
                }
            }
        }
        for up in running.iter() {
            if !servers.iter().any(|s| s.name == up.name()) {
                applied.removed.push(up.name().to_owned());
                stopping.push(Arc::clone(up));
            }
        }
        (slots, applied, stopping)
    }
}
