//! `toolgate serve`: the gateway for every upstream in the config, in direct or code mode, over stdio or
//! Streamable HTTP (`--http`). SIGHUP, or a change of the config file, reloads the configuration (`reload`).

use super::common::ConfigArgs;
use config::{Mode, Provenance, Setting};
use std::process::ExitCode;

/// Serve MCP over stdio (or Streamable HTTP with --http), aggregating the upstream servers of a config file.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    config: ConfigArgs,
    /// What the client sees: every tool (`direct`), or `search_tools` and `run_code`, with every other tool
    /// reached from programs (`code`). Overrides the config's "mode".
    #[arg(long, value_enum)]
    mode: Option<ModeArg>,
    /// Serve Streamable HTTP at ADDR instead of stdio; the endpoint is http://ADDR/mcp. Without ADDR: the
    /// config's "http.listen", else 127.0.0.1:8787. Only loopback is served unless "http.auth" is configured;
    /// Host and Origin must be loopback on the listening port or listed in "http.allowedHosts" /
    /// "http.allowedOrigins".
    #[arg(long, value_name = "ADDR", num_args = 0..=1)]
    #[arg(value_parser = crate::runtime::parse_listen)]
    http: Option<Option<std::net::SocketAddr>>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ModeArg {
    Direct,
    Code,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let config = load(&args.config, args.mode)?;
    let transport = match args.http {
        None => crate::runtime::Transport::Stdio,
        Some(addr) => crate::runtime::Transport::Http(addr),
    };
    let options = crate::runtime::gateway_options(&config, false);
    // A reload loads the file with the same flags, so it is checked exactly as it was at start.
    let (flags, mode) = (args.config, args.mode);
    let reload: crate::reload::Load = Box::new(move || load(&flags, mode));
    crate::runtime::serve_reloading(config, options, transport, Some(reload))
}

fn load(flags: &ConfigArgs, mode: Option<ModeArg>) -> anyhow::Result<config::Config> {
    let mut config = flags.load_to_start()?;
    if let Some(mode) = mode {
        let value = match mode {
            ModeArg::Direct => Mode::Direct,
            ModeArg::Code => Mode::Code,
        };
        config.mode = Setting {
            value,
            from: Provenance::Flag("--mode"),
        };
    }
    Ok(config)
}
