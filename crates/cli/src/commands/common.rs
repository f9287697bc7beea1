//! Arguments every command that reads the configuration shares, so `serve`, `doctor` and the admin commands
//! find the same upstreams, workspace and state.

use std::path::PathBuf;

#[derive(clap::Args, Debug, Clone)]
pub struct ConfigArgs {
    /// Config file: TOML, or JSON as Claude Desktop, Claude Code, Cursor, VS Code and Codex write it.
    /// Default: $XDG_CONFIG_HOME/toolgate/config.toml or .json (~/.config/…), then ./toolgate.toml or .json;
    /// every command finds the same file `serve` does.
    #[arg(long, short, global = true)]
    pub config: Option<PathBuf>,
    /// The workspace toolgate guards (overrides "workspace" in the config).
    #[arg(long, short, global = true)]
    pub workspace: Option<PathBuf>,
    /// The policy profile to apply (overrides "profile" in the config).
    #[arg(long, short, global = true)]
    pub profile: Option<String>,
    /// The state directory: approvals, pins, audit and reports (overrides "stateDir" in the config and
    /// TOOLGATE_STATE_DIR). `approvals watch` says which one it reads and where else requests wait.
    #[arg(long, global = true, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
}

impl ConfigArgs {
    /// The config for a command that reads or decides state and starts nothing.
    pub fn load(&self) -> anyhow::Result<config::Config> {
        self.load_for(crate::runtime::ConfigUse::Read)
    }

    /// The config for a command that serves or starts upstreams (`serve`, `wrap`, `doctor`).
    pub fn load_to_start(&self) -> anyhow::Result<config::Config> {
        self.load_for(crate::runtime::ConfigUse::Start)
    }

    fn load_for(&self, used: crate::runtime::ConfigUse) -> anyhow::Result<config::Config> {
        let mut config = crate::runtime::load_config(
            self.config.as_deref(),
            self.workspace.clone(),
            self.profile.clone(),
            used,
        )?;
        if let Some(dir) = &self.state_dir {
            config.state_dir = Some(config::Setting {
                value: std::path::absolute(dir)?,
                from: config::Provenance::Flag("--state-dir"),
            });
        }
        Ok(config)
    }
}
