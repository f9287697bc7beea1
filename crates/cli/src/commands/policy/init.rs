//! `toolgate policy init`: writes the conservative starter policy (TOML, a config file of its own) and never
//! replaces an existing file. It does not add servers: the operator merges the tables into their config or adds
//! `[mcp_servers.NAME]` tables to this one.

use anyhow::Context;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Write a conservative starter policy (TOML) that `serve` and `policy check` accept; never overwrites a file.
#[derive(clap::Args)]
pub struct Args {
    /// Where to write it.
    #[arg(long, default_value = "toolgate.toml")]
    path: PathBuf,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // `create_new` makes "does it exist?" and "create it" one step, so a file appearing in between is never
    // truncated.
    let mut file = match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&args.path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => anyhow::bail!(
            "{} already exists; not overwriting it (choose another file with --path)",
            args.path.display()
        ),
        Err(e) => return Err(e).with_context(|| format!("cannot create {}", args.path.display())),
    };
    file.write_all(policy::STARTER_POLICY.as_bytes())
        .and_then(|()| file.sync_all())
        .with_context(|| format!("cannot write {}", args.path.display()))?;
    let path = args.path.display();
    println!("wrote the starter policy to {path}");
    println!("check it:  toolgate policy check --config {path}");
    println!("serve it:  add [mcp_servers.NAME] tables, then toolgate serve --config {path}");
    Ok(ExitCode::SUCCESS)
}
