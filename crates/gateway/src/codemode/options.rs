//! Code mode's settings as the gateway runs them: the mode, the run limits and how a worker starts, from the config
//! and the active profile. A leaf of the gateway: it imports neither the gateway nor the pipeline.

use crate::guard::Guard;
use codemode::{RunLimits, WorkerCommand};
use config::{Config, Mode};

/// Code mode's settings as the gateway runs them.
#[derive(Clone, Debug)]
pub struct CodeOptions {
    pub mode: Mode,
    pub limits: RunLimits,
    /// How a worker is started: `toolgate-codemode-worker`, beside this executable.
    pub worker: WorkerCommand,
}

impl CodeOptions {
    /// From the config; the worker is the one beside the running executable.
    pub fn from_config(config: &Config) -> Self {
        Self {
            mode: config.mode.value,
            limits: RunLimits {
                wall: config.code.timeout.value,
                require: worker_require(&config.sandbox.require),
                ..RunLimits::default()
            },
            worker: WorkerCommand::beside(&std::env::current_exe().unwrap_or_default()),
        }
    }

    /// The mode in force: the `--mode` flag, else the active profile's, else the config's `"mode"`.
    pub(crate) fn settle(&mut self, config: &Config, guard: &Guard) {
        if matches!(config.mode.from, config::Provenance::Flag(_)) {
            return;
        }
        match guard.policy().active_mode() {
            Some(policy::ProfileMode::Code) => self.mode = Mode::Code,
            Some(policy::ProfileMode::Direct) => self.mode = Mode::Direct,
            None => {}
        }
    }

    pub(crate) fn on(&self) -> bool {
        self.mode == Mode::Code
    }
}

/// The layers a worker must have, from the layers `sandbox.require` asks of every command. A worker allows no
/// socket at all (its syscall allowlist has none), so where commands must have the socket filter a worker must
/// have its syscall allowlist instead; every other layer is required of the worker as named.
pub(crate) fn worker_require(required: &[String]) -> Vec<String> {
    required
        .iter()
        .map(|layer| match layer.as_str() {
            "socket_filter" => "syscall_allowlist".to_owned(),
            other => other.to_owned(),
        })
        .collect()
}
