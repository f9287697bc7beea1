//! `toolgate serve`: the gateway over stdio for every upstream in the config.

use super::common::ConfigArgs;
use std::process::ExitCode;

/// Serve MCP over stdio, aggregating the upstream servers of a config file.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    config: ConfigArgs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    crate::runtime::serve(args.config.load_to_start()?, false)
}
