//! `toolfence`: toolgate speaking ToolFence's command line — `policy init|check|explain|test` on ToolFence's YAML
//! policy, `wrap` in front of one stdio server as its client entry runs it, and `broker`, `approvals`, `status`
//! over toolgate's approvals.
//!
//! What "broker" means here: ToolFence's per-user broker process carries asks from a wrapped server to the
//! approval terminal. toolgate needs no such process: a call that asks is held in the workspace's sealed approval
//! store under the state root (only the user's account can open it; rows are HMAC-sealed, so a changed row is
//! never approved), and the approval terminal (`toolfence approvals`, which is `toolgate approvals watch`) reads
//! and decides it there. `toolfence broker` therefore starts nothing: it checks that store as `status` does and
//! says so. An ask that no human answers in time is not run, as with ToolFence's broker missing.

mod policy_cli;
mod tty;
mod wrap;

use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// A local, deny-by-default MCP tool-call firewall (toolgate speaking ToolFence).
#[derive(Parser)]
#[command(name = "toolfence", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Create, check, explain and test ToolFence YAML policies.
    Policy(policy_cli::Args),
    /// Put the policy and approvals in front of one stdio MCP server: `toolfence wrap --policy P --server NAME
    /// --workspace DIR -- CMD ARGS…`.
    Wrap(wrap::Args),
    /// No process is needed: asks wait in toolgate's approval store for the approval terminal. Checks that store.
    Broker(StateArgs),
    /// The approval terminal: follow and decide the asks of wrapped servers in this workspace.
    Approvals(StateArgs),
    /// Whether asks can reach a human, the protocol versions spoken, and the store's permissions.
    Status(StateArgs),
}

#[derive(clap::Args)]
struct StateArgs {
    /// The workspace whose asks to show (the `--workspace` given to wrap). Default: the current directory.
    #[arg(long)]
    workspace: Option<PathBuf>,
}

pub fn main() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    crate::runtime::init_logging();
    match cli.command {
        Command::Policy(args) => policy_cli::run(args),
        Command::Wrap(args) => wrap::run(args),
        Command::Broker(args) => {
            println!(
                "toolfence broker: no broker process is needed. Asks of a wrapped server are held in toolgate's \
                 sealed approval store under the state root, and `toolfence approvals` decides them there."
            );
            status(&args)
        }
        Command::Approvals(args) => approvals(&args),
        Command::Status(args) => status(&args),
    }
}

fn workspace(args: &StateArgs) -> anyhow::Result<PathBuf> {
    use anyhow::Context;
    let dir = match &args.workspace {
        Some(w) => w.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    std::fs::canonicalize(&dir)
        .with_context(|| format!("the workspace {} does not exist", dir.display()))
}

/// `toolgate approvals watch` for the workspace, on the state `wrap` uses: the workspace's namespace in the state
/// root (`TOOLGATE_STATE_DIR`, else the default), whatever a toolgate config elsewhere says.
fn approvals(args: &StateArgs) -> anyhow::Result<ExitCode> {
    let mut config = config::Config::empty();
    config.workspace = Some(config::Setting {
        value: workspace(args)?,
        from: config::Provenance::Flag("--workspace"),
    });
    crate::commands::approvals::watch_state(&config, &crate::runtime::state(&config)?)
}

/// The state root and the workspace's namespace, their permissions, and what reaches a human.
fn status(args: &StateArgs) -> anyhow::Result<ExitCode> {
    use std::os::unix::fs::MetadataExt;
    let ws = workspace(args)?;
    let root = gateway::state_root().map_err(anyhow::Error::msg)?;
    println!(
        "protocol versions  {}",
        gateway::SUPPORTED_VERSIONS.join(", ")
    );
    println!("workspace          {}", ws.display());
    let mut ok = true;
    let me = own_uid();
    let mut check = |what: &str, path: &Path, max_mode: u32| match std::fs::metadata(path) {
        Ok(meta) => {
            let mode = meta.mode() & 0o777;
            let private = mode & !max_mode == 0 && Some(meta.uid()) == me;
            ok &= private;
            println!(
                "{what:<18} {} (mode {mode:o}{}{})",
                path.display(),
                if Some(meta.uid()) == me {
                    ""
                } else {
                    ", not owned by you"
                },
                if private { ", private" } else { ", TOO OPEN" }
            );
        }
        Err(_) => println!(
            "{what:<18} {} (not created yet: made private on first use)",
            path.display()
        ),
    };
    check("state root", &root, 0o700);
    check("approval key", &root.join("approval.key"), 0o600);
    check("operator key", &store::operator_key_path(&root), 0o600);
    let tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .is_ok();
    println!(
        "asks reach         the approval terminal (`toolfence approvals --workspace {}`) through the store; \
         with `wrap --approval tty`, this process's terminal ({})",
        ws.display(),
        if tty { "present" } else { "none: asks would be denied" }
    );
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(crate::runtime::EXIT_FAILURE)
    })
}

/// This process's user id.
fn own_uid() -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").ok().map(|m| m.uid())
}
