//! Reloading the policy of a running gateway: the served profile's guard and every other profile's, replaced
//! together once the new configuration's policy compiled whole, and the upstream credentials with them. A call already under way keeps the guard it
//! started with (its `CallContext` holds it), so a call held for approval finishes under the policy it was held
//! by; every call and list that starts afterwards, in every open session, is decided by the new one.
//!
//! It does not read files or restart upstreams: the binary loads and checks the configuration the way start-up
//! does and hands the result here. What a reload cannot change while serving (the workspace, the mode) is refused
//! with the old policy kept.

use crate::error::Error;
use crate::gateway::Gateway;
use crate::guard::Guard;
use crate::rebuild::ListKind;
use config::Config;
use std::sync::Arc;

impl Gateway {
    /// Replaces the policy and profiles with those of `config`, compiled into `guard` (the served profile's),
    /// then tells every open session its tool list may have changed. On error nothing changes.
    pub async fn reload_policy(&self, config: &Config, guard: Arc<Guard>) -> Result<(), Error> {
        let now = self.stages.guard();
        if guard.workspace() != now.workspace() {
            return Err(Error::NeedsRestart(format!(
                "the workspace changed from {} to {}",
                now.workspace(),
                guard.workspace()
            )));
        }
        let mut code = self.stages.opts.code.clone();
        code.settle(config, &guard);
        if code.mode != self.stages.opts.code.mode {
            return Err(Error::NeedsRestart(format!(
                "the mode changed from {:?} to {:?}",
                self.stages.opts.code.mode, code.mode
            )));
        }
        let sessions = self.live_sessions();
        let mut in_use: Vec<String> = sessions
            .iter()
            .filter_map(|s| s.profile().map(str::to_owned))
            .collect();
        in_use.sort();
        in_use.dedup();
        self.profiles.replace(config, Arc::clone(&guard), &in_use)?;
        self.stages.set_guard(guard);
        // Rotated or regranted credentials apply from the next request on (`credentials`).
        self.stages.set_credentials(&config.credentials);
        for session in sessions {
            session.list_changed(ListKind::Tools).await;
        }
        Ok(())
    }
}
