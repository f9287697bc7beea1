//! `toolgate completions SHELL`: prints a completion script for the shell to stdout. It installs nothing.

use std::process::ExitCode;

/// Print a shell completion script (e.g. `toolgate completions bash > ~/.local/share/bash-completion/completions/toolgate`).
#[derive(clap::Args)]
pub struct Args {
    /// The shell: bash, elvish, fish, powershell or zsh.
    shell: clap_complete::Shell,
}

pub fn run(args: Args, cli: &mut clap::Command) -> anyhow::Result<ExitCode> {
    // Generated into memory first: the generator panics on a write error, and a closed stdout
    // (`toolgate completions bash | head`) must end quietly like every other command.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, cli, "toolgate", &mut script);
    std::io::Write::write_all(&mut std::io::stdout().lock(), &script)?;
    Ok(ExitCode::SUCCESS)
}
