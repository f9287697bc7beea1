//! `toolgate serve`: the gateway over stdio for every upstream in the config, in direct or code mode.

use super::common::ConfigArgs;
use config::{Mode, Provenance, Setting};
use std::process::ExitCode;

/// Serve MCP over stdio, aggregating the upstream servers of a config file.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    config: ConfigArgs,
    /// What the client sees: every tool (`direct`), or `search_tools` and `run_code`, with every other tool
    /// reached from programs (`code`). Overrides the config's "mode".
    #[arg(long, value_enum)]
    mode: Option<ModeArg>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ModeArg {
    Direct,
    Code,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut config = args.config.load_to_start()?;
    if let Some(mode) = args.mode {
        let value = match mode {
            ModeArg::Direct => Mode::Direct,
            ModeArg::Code => Mode::Code,
        };
        config.mode = Setting {
            value,
            from: Provenance::Flag("--mode"),
        };
    }
    crate::runtime::serve(config, false)
}
