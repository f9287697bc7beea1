//! `toolgate fixture-server` (hidden): the bundled test MCP server, for the demo, tests and benchmarks.

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Fixture options: --era legacy|modern|dual, --tools N, --page-size N, --garbage, --conformance.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    options: Vec<String>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let opts =
        test_support::FixtureOptions::from_args(&args.options).map_err(anyhow::Error::msg)?;
    crate::runtime::tokio()?.block_on(test_support::serve_stdio(opts))?;
    Ok(ExitCode::SUCCESS)
}
