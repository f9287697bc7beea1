//! `mcp-unified-gateway`: toolgate speaking MCP Unified's CLI. Its `gateway.json` is read by the config crate
//! (`unified`: `store` is the state root, `default_preset_id` the served profile, `tool_use_reporting` the
//! reporting switch and retention); the role presets are toolgate profiles. Each verb maps onto what toolgate
//! already has: `explain-policy` and `preview-profile-tools` ask a gateway started on the config the admin
//! surface's questions (`Gateway::explain_call`, `Gateway::tool_preview`: no arguments echoed, each audited),
//! `tool-events` reads the reporting events (`unified_events`: report is `toolgate report`, export, cleanup),
//! `validate-config` loads the config and its policy as `serve` would.
//! Stored profiles are written by `unified_profiles`; nothing here is a second policy engine. Every verb also
//! takes `--remote`: it then asks a running gateway's admin API (`unified_remote`), which answers with the same
//! code on its own config (`unified_admin`).
//!
//! MCP Unified's own tool names (`fs.read`, `fs.patch`, …) name toolgate's workspace tools; the workspace is
//! `--workspace`, else the current directory.

use crate::products::unified_remote::Remote;
use crate::products::{unified_events, unified_gateway, unified_profiles};
use anyhow::Context;
use clap::{Parser, Subcommand};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// MCP Unified's gateway CLI (toolgate speaking it): presets and profiles, policy explanation, tool previews,
/// config validation and tool-use reports.
#[derive(Parser)]
#[command(name = "mcp-unified-gateway", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// What this package is: name, version, status, license.
    PackageInfo(JsonFlag),
    /// The bundled role presets (toolgate profiles).
    ListPresets(JsonFlag),
    /// Store a copy of a preset (or stored profile) under a new id.
    DuplicatePreset(unified_profiles::DuplicateArgs),
    /// Store a profile from a JSON file (its `id` names it).
    CreateProfile(unified_profiles::CreateArgs),
    /// A profile's tool surface: visible, deferred, blocked or unavailable, and why.
    PreviewProfileTools(unified_gateway::PreviewArgs),
    /// How a profile's policy decides one hypothetical call; the arguments are never echoed.
    ExplainPolicy(unified_gateway::ExplainArgs),
    /// Load a gateway config and its policy as the gateway would, and say whether it is valid.
    ValidateConfig(ValidateArgs),
    /// Metadata-only tool-use events: aggregate reports, export and retention cleanup.
    ToolEvents(unified_events::EventsArgs),
}

#[derive(clap::Args)]
struct JsonFlag {
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Ask the running gateway at $MCP_UNIFIED_GATEWAY_URL (its admin API, with the key in
    /// $MCP_UNIFIED_GATEWAY_ADMIN_KEY) instead of this binary.
    #[arg(long)]
    remote: bool,
}

/// Where the config and workspace come from, shared by every verb that reads them.
#[derive(clap::Args, Clone)]
pub(crate) struct Place {
    /// The gateway config (MCP Unified's `gateway.json`, or any toolgate config). Default: ./gateway.json when it
    /// exists, else toolgate's default config.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The workspace the workspace tools (`fs.*`, `git.*`, `shell.run`) serve. Default: the current directory.
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
}

#[derive(clap::Args)]
struct ValidateArgs {
    /// The config to validate (or --config).
    path: Option<PathBuf>,
    /// Ask the running gateway at $MCP_UNIFIED_GATEWAY_URL to check the config it was started on, as it now
    /// is on disk (its admin API, with the key in $MCP_UNIFIED_GATEWAY_ADMIN_KEY).
    #[arg(long, conflicts_with_all = ["path", "config", "workspace"])]
    remote: bool,
    #[command(flatten)]
    place: Place,
}

pub fn main() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    crate::runtime::init_logging();
    match cli.command {
        Command::PackageInfo(f) => package_info(f),
        Command::ListPresets(f) => list_presets(f),
        Command::DuplicatePreset(a) => unified_profiles::duplicate(a),
        Command::CreateProfile(a) => unified_profiles::create(a),
        Command::PreviewProfileTools(a) => unified_gateway::preview(a),
        Command::ExplainPolicy(a) => unified_gateway::explain(a),
        Command::ValidateConfig(a) => validate(a),
        Command::ToolEvents(a) => unified_events::events(a),
    }
}

impl Place {
    /// The config file named, or `./gateway.json` when it exists.
    pub(crate) fn path(&self) -> Option<PathBuf> {
        self.config.clone().or_else(|| {
            let here = Path::new("gateway.json");
            here.is_file().then(|| here.to_owned())
        })
    }

    /// The config as `serve` would read it, the workspace defaulting to the current directory and the profile to
    /// `profile` when given.
    pub(crate) fn load(
        &self,
        profile: Option<String>,
        used: crate::runtime::ConfigUse,
    ) -> anyhow::Result<config::Config> {
        let workspace = match &self.workspace {
            Some(w) => w.clone(),
            None => std::env::current_dir().context("cannot read the current directory")?,
        };
        crate::runtime::load_config(self.path().as_deref(), Some(workspace), profile, used)
    }
}

/// toolgate keeps its state where the workspace's tools cannot reach it; a `store` beside a `gateway.json` in
/// the project would put it there. Said before anything opens it, with the way out.
pub(crate) fn state_outside_workspace(config: &config::Config) -> anyhow::Result<()> {
    let Some(dir) = &config.state_dir else {
        return Ok(());
    };
    let workspace = crate::runtime::workspace(config)?;
    let root = std::path::absolute(&dir.value).unwrap_or_else(|_| dir.value.clone());
    let root = std::fs::canonicalize(&root).unwrap_or(root);
    anyhow::ensure!(
        !root.starts_with(&workspace),
        "the store ({}, from {}) lies inside the workspace {}: toolgate keeps its state (approvals, audit, \
         reports) where the workspace's tools cannot reach it. Give store.sqlite_path outside the project (an \
         absolute path), or name the project with --workspace DIR",
        root.display(),
        dir.from,
        workspace.display()
    );
    Ok(())
}

/// What this package is, as `package-info` prints it and the admin API answers it.
pub(crate) fn package_info_value() -> Value {
    serde_json::json!({
        "package_name": env!("CARGO_PKG_NAME"),
        "version": env!("CARGO_PKG_VERSION"),
        "invoked_as": "mcp-unified-gateway",
        "replaces": "mcp-unified (MCP Unified's gateway CLI)",
        "license_expression": env!("CARGO_PKG_LICENSE"),
        "protocol_versions": gateway::SUPPORTED_VERSIONS,
        "runtime": "one binary: gateway (stdio, Streamable HTTP), policy, approvals, audit and reporting",
    })
}

fn package_info(flags: JsonFlag) -> anyhow::Result<ExitCode> {
    let info = if flags.remote {
        Remote::from_env()?.get(&["package-info"], &[])?
    } else {
        package_info_value()
    };
    if flags.json {
        println!("{}", serde_json::to_string_pretty(&info)?);
        return Ok(ExitCode::SUCCESS);
    }
    let text = |k: &str| info[k].as_str().unwrap_or("-").to_owned();
    println!("package: {} {}", text("package_name"), text("version"));
    println!("invoked as: mcp-unified-gateway (MCP Unified's gateway CLI)");
    println!("license expression: {}", text("license_expression"));
    let versions: Vec<&str> = info["protocol_versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    println!("protocol versions: {}", versions.join(", "));
    Ok(ExitCode::SUCCESS)
}

fn list_presets(flags: JsonFlag) -> anyhow::Result<ExitCode> {
    let presets = if flags.remote {
        match Remote::from_env()?.get(&["presets"], &[])? {
            Value::Object(map) => map,
            _ => anyhow::bail!("the gateway's presets are not a JSON object"),
        }
    } else {
        config::unified_presets()
    };
    if flags.json {
        println!("{}", serde_json::to_string_pretty(&presets)?);
        return Ok(ExitCode::SUCCESS);
    }
    let width = presets.keys().map(String::len).max().unwrap_or(0);
    for (id, profile) in &presets {
        let description = profile
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("");
        println!("{id:<width$}  {description}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Valid when the config loads and its policy (presets and stored profiles included) compiles, as `serve`
/// would load them; the answer is on stdout, the reason for a failure on stderr, exit 1.
fn validate(args: ValidateArgs) -> anyhow::Result<ExitCode> {
    let checked = if args.remote {
        Remote::from_env()?.get(&["config", "validate"], &[])?
    } else {
        let mut place = args.place;
        if let Some(p) = args.path {
            anyhow::ensure!(
                place.config.is_none() || place.config.as_ref() == Some(&p),
                "give the config once: as the argument or as --config"
            );
            place.config = Some(p);
        }
        check_config(&place)?
    };
    let text = |k: &str| checked[k].as_str().map(str::to_owned);
    let config = text("config").unwrap_or_default();
    if checked["valid"] != true {
        println!("invalid: {config}");
        eprintln!("mcp-unified-gateway: {}", text("error").unwrap_or_default());
        return Ok(ExitCode::from(crate::runtime::EXIT_FAILURE));
    }
    println!("valid: {config}");
    if let Some(p) = text("default_profile") {
        println!("default profile: {p}");
    }
    if let Some(store) = text("store") {
        println!("store: {store}");
    }
    if let Some(w) = text("warning") {
        println!("warning: {w}");
    }
    let reporting = if checked["tool_use_reporting"] == true {
        "enabled"
    } else {
        "disabled"
    };
    println!("tool-use reporting: {reporting}");
    Ok(ExitCode::SUCCESS)
}

/// Loads the config at `place` and its policy as `serve` would: `valid`, and what `validate-config` prints.
pub(crate) fn check_config(place: &Place) -> anyhow::Result<Value> {
    let path = place
        .path()
        .context("no config: give the file (validate-config ./gateway.json)")?;
    let checked = place
        .load(None, crate::runtime::ConfigUse::Read)
        .and_then(|c| crate::runtime::load_guard(&c).map(|g| (c, g)));
    let mut answer = serde_json::json!({"config": path.display().to_string()});
    match checked {
        Ok((config, guard)) => {
            answer["valid"] = true.into();
            answer["default_profile"] = guard.profile().into();
            answer["store"] = config
                .state_dir
                .as_ref()
                .map(|d| format!("{} ({})", d.value.display(), d.from))
                .into();
            answer["warning"] = state_outside_workspace(&config)
                .err()
                .map(|e| e.to_string())
                .into();
            answer["tool_use_reporting"] = config.reporting.enabled.value.into();
        }
        Err(e) => {
            answer["valid"] = false.into();
            answer["error"] = crate::runtime::error_chain(&e).into();
        }
    }
    Ok(answer)
}
