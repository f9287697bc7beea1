//! Arguments every command that reads the configuration shares, so `serve`, `doctor` and the admin commands
//! find the same upstreams, workspace and state.

use std::path::PathBuf;

#[derive(clap::Args, Debug, Clone)]
pub struct ConfigArgs {
    /// Config file: TOML, or JSON in the mcpServers shape of Claude Desktop, Claude Code and Cursor.
    /// Without it toolgate serves only its own tools.
    #[arg(long, short, global = true)]
    pub config: Option<PathBuf>,
    /// The workspace toolgate guards (overrides "workspace" in the config).
    #[arg(long, short, global = true)]
    pub workspace: Option<PathBuf>,
    /// The policy profile to apply (overrides "profile" in the config).
    #[arg(long, short, global = true)]
    pub profile: Option<String>,
}

impl ConfigArgs {
    pub fn load(&self) -> anyhow::Result<config::Config> {
        crate::runtime::load_config(
            self.config.as_deref(),
            self.workspace.clone(),
            self.profile.clone(),
        )
    }
}
