//! `toolgate serve`: the gateway over stdio for every upstream in the config.

use std::path::PathBuf;
use std::process::ExitCode;

/// Serve MCP over stdio, aggregating the upstream servers of a config file.
#[derive(clap::Args)]
pub struct Args {
    /// Config file: TOML, or JSON in the mcpServers shape of Claude Desktop, Claude Code and Cursor.
    /// Without it toolgate serves only its own tools.
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// The workspace toolgate guards (overrides "workspace" in the config).
    #[arg(long, short)]
    workspace: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let config = crate::runtime::load_config(args.config.as_deref(), args.workspace)?;
    crate::runtime::serve(config, false)
}
