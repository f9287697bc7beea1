//! `toolgate store migrate`: moves the configured store's schema to the version this build needs. PostgreSQL's
//! schema changes only here (every replica checks it at start and refuses one behind); SQLite's database in the
//! state root migrates itself when opened, so for it this says so and changes nothing.

use super::common::ConfigArgs;
use std::process::ExitCode;

/// The durable state's store: its schema.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
    #[command(flatten)]
    config: ConfigArgs,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Apply every schema migration the configured store lacks (`"store": {"kind": "postgres", "url": …}`);
    /// safe to run again, and from several replicas at once (they take turns).
    Migrate,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Action::Migrate = args.action;
    let config = args.config.load()?;
    let config::Store::Postgres(url, pool) = &config.store else {
        println!("store: SQLite in the state root migrates itself when opened; nothing to do");
        return Ok(ExitCode::SUCCESS);
    };
    let done =
        store::PostgresStore::migrate_with(url.value.expose(), crate::runtime::pg_options(pool))
            .map_err(|e| anyhow::anyhow!("store {} ({}): {e}", url.value, url.from))?;
    if done.from == done.to {
        println!(
            "store: {} is at schema version {} already",
            url.value, done.to
        );
    } else {
        println!(
            "store: {} migrated from schema version {} to {}",
            url.value, done.from, done.to
        );
    }
    Ok(ExitCode::SUCCESS)
}
