//! `toolgate policy`: the operator's tools for the firewall's rules — write a starter, lint, explain one call,
//! run declarative cases. Each subcommand lives in its own module; this one dispatches and holds what they share
//! (server kinds from the config, reading a call or case file).
//!
//! Nothing here serves MCP, so results go to stdout. Nothing here decides differently from `serve`: every
//! decision goes through the same `policy` crate and the gateway's canonicaliser.

mod cases;
mod check;
mod explain;
mod init;

use std::collections::HashMap;
use std::process::ExitCode;

/// Write, check, explain and test the policy (deny-by-default rules, permissions and profiles).
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    Init(init::Args),
    Check(check::Args),
    Explain(explain::Args),
    Test(cases::Args),
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Command::Init(args) => init::run(args),
        Command::Check(args) => check::run(args),
        Command::Explain(args) => explain::run(args),
        Command::Test(args) => cases::run(args),
    }
}

/// The built-in adapter table of each configured server, as the gateway chooses it: from the config's `kind`
/// (stated or recognised from the launch command), never from tool names.
fn server_kinds(config: &config::Config) -> HashMap<String, policy::ServerKind> {
    let mut kinds: HashMap<String, policy::ServerKind> = config
        .servers
        .iter()
        .filter_map(|s| {
            let kind = match s.kind {
                config::ServerKind::Filesystem => policy::ServerKind::Filesystem,
                config::ServerKind::Git => policy::ServerKind::Git,
                config::ServerKind::Fetch => policy::ServerKind::Fetch,
                config::ServerKind::Generic => return None,
            };
            Some((s.name.clone(), kind))
        })
        .collect();
    kinds.insert(gateway::OWN_SERVER.to_owned(), policy::ServerKind::Toolgate);
    kinds
}

/// Whether `server` is an upstream of the config or toolgate itself; calls to anything else can only be matched
/// by name, which an operator should be told.
fn is_known_server(config: &config::Config, server: &str) -> bool {
    server == gateway::OWN_SERVER || config.servers.iter().any(|s| s.name == server)
}

/// The `kind` a call file or case may bring: it stands for a server the config does not list (one run by
/// `wrap`, say), and must agree with the config for one it does, so no explanation or case uses an adapter
/// `serve` would not.
fn stated_kind(
    config: &config::Config,
    call: &policy::ToolCall,
) -> anyhow::Result<Option<policy::ServerKind>> {
    let Some(stated) = call.server_kind else {
        return Ok(None);
    };
    if !is_known_server(config, &call.server) {
        return Ok(Some(stated));
    }
    let configured = server_kinds(config).get(&call.server).copied();
    if configured != Some(stated) {
        let name = |k: Option<policy::ServerKind>| {
            k.map_or_else(|| "generic".to_owned(), |k| format!("{k:?}").to_lowercase())
        };
        anyhow::bail!(
            "the call says server {:?} is of kind {}, but the config makes it {}; leave `kind` out for a \
             configured server (it is taken from the config, as `serve` takes it)",
            call.server,
            name(Some(stated)),
            name(configured)
        );
    }
    Ok(Some(stated))
}

/// The note for a call to a server the config does not list: what its tools are matched by.
fn unknown_server_note(server: &str, kind: Option<policy::ServerKind>) -> String {
    match kind {
        Some(k) => format!(
            "note: no server {server:?} in the config; its calls are read as a {} server's, as the call's `kind` says",
            format!("{k:?}").to_lowercase()
        ),
        None => format!(
            "note: no server {server:?} in the config; its tools are matched by name only (for a server run by \
             `wrap`, name it as wrap does, or give `kind` in the call: filesystem, git, fetch)"
        ),
    }
}

/// Reads a JSON document from a file, or from stdin for `-`.
fn read_json(path: &std::path::Path) -> anyhow::Result<serde_json::Value> {
    use anyhow::Context;
    let text = if path.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin()).context("cannot read stdin")?
    } else {
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?
    };
    let is_toml = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("toml"));
    if is_toml {
        let doc: toml::Value = toml::from_str(&text)
            .with_context(|| format!("{} is not valid TOML", path.display()))?;
        serde_json::to_value(doc).context("TOML value does not fit JSON")
    } else {
        serde_json::from_str(&text).with_context(|| format!("{} is not valid JSON", path.display()))
    }
}
