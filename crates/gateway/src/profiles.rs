//! The guards of the profiles a gateway serves besides its own: an HTTP caller's key or token names the profile
//! its sessions run under, and each session decides its calls and computes its visible catalog with that
//! profile's guard. Each guard is compiled on first use from the configuration in force and kept; only configured
//! profiles compile, so there are at most as many as the configuration names. A reload (`prepare`, then
//! `install`) swaps the whole set at once: the configuration, the served guard and the compiled guards, after
//! every profile compiled.
//!
//! One gateway serves one mode: a profile that sets the other mode is refused, since code mode changes what the
//! whole gateway lists and runs. It does not choose a profile for anybody; the front end says which.

use crate::error::Error;
use crate::guard::Guard;
use config::{Config, Mode};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

pub(crate) struct Profiles {
    current: crate::live::Live<Set>,
}

/// One configuration's profiles.
struct Set {
    config: Config,
    /// The guard of the profile the gateway was started with.
    served: Arc<Guard>,
    mode: Mode,
    loaded: Mutex<HashMap<String, Arc<Guard>>>,
}

impl Profiles {
    pub(crate) fn new(config: &Config, served: Arc<Guard>, mode: Mode) -> Self {
        Self {
            current: crate::live::Live::new(Arc::new(Set::new(config, served, mode))),
        }
    }

    /// The guard of `profile` (`None`, or the served profile's name: the gateway's own).
    pub(crate) fn guard(&self, profile: Option<&str>) -> Result<Arc<Guard>, Error> {
        self.current.load().guard(profile)
    }

    /// The profiles of `config`, once each of them compiles (a profile of the other mode is refused when used,
    /// as at start) and each of `in_use` can serve sessions; nothing is replaced yet (`install`).
    pub(crate) fn prepare(
        &self,
        config: &Config,
        served: Arc<Guard>,
        in_use: &[String],
    ) -> Result<Next, Error> {
        let mode = self.current.load().mode;
        let next = Set::new(config, served, mode);
        for name in next.served.policy().profile_names() {
            match next.guard(Some(name)) {
                Ok(_) | Err(Error::ProfileMode { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        for name in in_use {
            next.guard(Some(name))?;
        }
        Ok(Next(Arc::new(next)))
    }

    /// Puts prepared profiles in force for every session that decides a call from now on.
    pub(crate) fn install(&self, next: Next) {
        self.current.store(next.0);
    }
}

/// A reload's profiles, compiled and checked, not yet in force.
pub(crate) struct Next(Arc<Set>);

impl Next {
    /// Whether sessions can run under `profile` once these profiles are in force.
    pub(crate) fn check(&self, profile: &str) -> Result<(), Error> {
        self.0.guard(Some(profile)).map(drop)
    }
}

/// Whether every profile `config` defines compiles, which `serve` requires at start as a reload does (with the
/// same error): a profile nobody uses yet is still one an API key or a token may name tomorrow. A profile that
/// sets the other mode compiles and is refused only when a session asks for it.
pub fn check_profiles(config: &Config, served: &Guard) -> Result<(), Error> {
    let workspace = Path::new(served.workspace());
    for name in served.policy().profile_names() {
        if Some(name) != served.profile() {
            Guard::load_as(config, workspace, Some(name.to_owned()))?;
        }
    }
    Ok(())
}

impl Set {
    fn new(config: &Config, served: Arc<Guard>, mode: Mode) -> Self {
        Self {
            config: config.clone(),
            served,
            mode,
            loaded: Mutex::new(HashMap::new()),
        }
    }

    fn guard(&self, profile: Option<&str>) -> Result<Arc<Guard>, Error> {
        let Some(name) = profile.filter(|p| Some(*p) != self.served.profile()) else {
            return Ok(Arc::clone(&self.served));
        };
        let mut loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(guard) = loaded.get(name) {
            return Ok(Arc::clone(guard));
        }
        let workspace = Path::new(self.served.workspace());
        let guard = Guard::load_as(&self.config, workspace, Some(name.to_owned()))?;
        let mode = match guard.policy().active_mode() {
            Some(policy::ProfileMode::Code) => Some(Mode::Code),
            Some(policy::ProfileMode::Direct) => Some(Mode::Direct),
            None => None,
        };
        if let Some(mode) = mode.filter(|m| *m != self.mode) {
            return Err(Error::ProfileMode {
                name: name.to_owned(),
                mode: mode_name(mode),
                served: mode_name(self.mode),
            });
        }
        let guard = Arc::new(guard);
        loaded.insert(name.to_owned(), Arc::clone(&guard));
        Ok(guard)
    }
}

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Direct => "direct",
        Mode::Code => "code",
    }
}

#[cfg(test)]
#[path = "profiles_tests.rs"]
mod tests;
