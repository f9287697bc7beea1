//! `toolgate wrap -- CMD ARGS…`: one upstream behind toolgate, looking exactly like itself (no name prefixes, its
//! own identity, no extra tools), governed by the policy of `--config` if given.

use super::common::ConfigArgs;
use anyhow::{bail, Context};
use serde_json::json;
use std::path::Path;
use std::process::ExitCode;

/// Wrap one stdio MCP server: toolgate sits in front of it, decides each call, and it keeps its own names.
#[derive(clap::Args)]
pub struct Args {
    /// Config (policy, profiles, limits). It must not list servers: the server is the command after --.
    #[command(flatten)]
    config: ConfigArgs,
    /// Name for the wrapped server in rules, logs and status (default: the command's file name).
    #[arg(long)]
    server: Option<String>,
    /// Pass an environment variable to the server: NAME (from toolgate's environment) or NAME=VALUE. Repeatable.
    /// Nothing else from toolgate's environment reaches it beyond a short allowlist (PATH, HOME, LANG, …).
    #[arg(long = "env", short = 'e', value_name = "NAME[=VALUE]")]
    env: Vec<String>,
    /// The server command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<String>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (program, rest) = args
        .command
        .split_first()
        .context("wrap needs a command after --")?;
    let name = args.server.clone().unwrap_or_else(|| default_name(program));
    let mut env = serde_json::Map::new();
    for item in &args.env {
        let (k, v) = match item.split_once('=') {
            Some((k, v)) => (k.to_owned(), v.to_owned()),
            None => {
                let v = std::env::var(item)
                    .with_context(|| format!("--env {item}: not set in toolgate's environment"))?;
                (item.clone(), v)
            }
        };
        env.insert(k, v.into());
    }
    let mut config = args.config.load()?;
    if !config.servers.is_empty() {
        bail!("the config given to wrap lists servers; wrap serves only the command after --");
    }
    let text =
        json!({"mcpServers": {name: {"command": program, "args": rest, "env": env}}}).to_string();
    let overrides = config::Overrides {
        self_exe: crate::runtime::self_exe(),
        ..config::Overrides::default()
    };
    // Values are already expanded by the shell; no `${VAR}` expansion applies to them.
    let no_vars = |_: &str| None;
    let server = config::parse_str(
        &text,
        config::Format::Json,
        Path::new("(command line)"),
        &no_vars,
        &overrides,
    )?;
    config.servers = server.servers;
    crate::runtime::serve(config, true)
}

/// The command's file name, reduced to a valid server name (`mcp-server-git`, `node`).
fn default_name(program: &str) -> String {
    let base = Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("server");
    let cleaned: String = base
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let trimmed = cleaned
        .trim_matches('-')
        .split("--")
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    // "toolgate" names toolgate's own tools in rules.
    if trimmed.is_empty() || trimmed.eq_ignore_ascii_case("toolgate") {
        "server".to_owned()
    } else {
        trimmed.chars().take(48).collect()
    }
}
