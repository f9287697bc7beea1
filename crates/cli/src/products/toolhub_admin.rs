//! `mcp-toolhub-admin`: ToolHub's administrator CLI over toolgate's approvals and audit, with the same
//! environment as `mcp-toolhub` (`toolhub::config`), so it reads the state the server writes. `list`, `approve`,
//! `reject` and `prune approvals` are `toolgate approvals list|approve|reject|prune`; `prune audit` is `toolgate
//! audit prune`: the same trust rules hold (no process descended from a running gateway may approve or prune
//! the audit log; `approve` shows the protected request and reads `APPROVE` from the controlling terminal,
//! never stdin, or takes toolgate's operator key). Both prunes are dry runs unless `--apply`. It adds no MCP
//! tool and decides nothing the server could.

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// The trusted human side of ToolHub's approvals (toolgate speaking ToolHub), with the same TOOLHUB_WORKSPACE_ROOT
/// and TOOLHUB_STATE_ROOT as the server.
#[derive(Parser)]
#[command(name = "mcp-toolhub-admin", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List approval requests, newest first.
    List,
    /// Show a pending request in full, then approve it once you type APPROVE on the terminal (never read from
    /// stdin).
    Approve {
        /// The request id (apr_…), as `list` shows it.
        request_id: String,
        /// Approve without a terminal: FILE holds the state root's operator key (toolgate's `operator.key`). For
        /// the operator's own scripts; a process started by a running server is refused even with the key.
        #[arg(long, value_name = "FILE")]
        operator_key: Option<PathBuf>,
    },
    /// Reject a pending request.
    Reject {
        /// The request id (apr_…), as `list` shows it.
        request_id: String,
    },
    /// Delete old approval records or audit events (a dry run unless --apply).
    #[command(subcommand)]
    Prune(Prune),
}

#[derive(Subcommand)]
enum Prune {
    /// Select rejected, expired and consumed requests that finished at least N days ago; still-valid pending
    /// and approved requests are never selected.
    Approvals {
        #[arg(long, value_name = "N")]
        older_than_days: u32,
        /// Delete them; without this flag only list what would go.
        #[arg(long)]
        apply: bool,
    },
    /// Keep only the newest N audit events, in their order (a log that does not verify is refused).
    Audit {
        #[arg(long, value_name = "N")]
        keep_last: u64,
        /// Rewrite the log; without this flag only say what would go.
        #[arg(long)]
        apply: bool,
    },
}

pub fn main() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    crate::runtime::init_logging();
    let config = super::toolhub::config(&|k| std::env::var_os(k))?;
    let state = crate::runtime::state(&config)?;
    use crate::commands::{approvals, audit};
    match cli.command {
        Command::List => approvals::list(&state, None),
        Command::Approve {
            request_id,
            operator_key,
        } => approvals::approve(&state, &request_id, operator_key.as_deref()),
        Command::Reject { request_id } => approvals::reject(&state, &request_id),
        Command::Prune(Prune::Approvals {
            older_than_days,
            apply,
        }) => approvals::prune(&state, older_than_days, apply),
        Command::Prune(Prune::Audit { keep_last, apply }) => audit::prune(&state, keep_last, apply),
    }
}
