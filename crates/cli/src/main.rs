//! The `toolgate` binary: parses the command line and dispatches to one module per subcommand.
//! Logs go to stderr (`TOOLGATE_LOG`, default `warn`); in `serve` and `wrap`, stdout carries protocol bytes only.
//!
//! Exit codes are the same for the same failure in every command (the README's table): 0 done, 1 the command ran
//! and the answer is a failure (a check found errors, a request was refused, an upstream did not start), 2 the
//! command could not run as asked (usage, configuration, policy, workspace or state). A closed stdout (`toolgate …
//! | head`) ends the command quietly with 0, as other Unix tools do.

mod commands;
mod harden;
mod products;
mod reload;
mod replica;
mod runtime;

use clap::{CommandFactory, Parser, Subcommand};
use std::process::ExitCode;

/// Per-thread heaps: a record built on the gateway thread and freed by the audit writer takes no lock the gateway
/// thread's next allocation waits on (with glibc's arenas that was a futex wake-up for most records under load).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Memory the allocator no longer uses goes back to the system as it is freed: arenas are committed on demand,
/// so a purge decommits instead of only resetting, and a gateway's resident memory after a burst of sessions
/// falls back as glibc's did (committed eagerly, 200 HTTP sessions peaked at 72 MB instead of 45). Set before the
/// first allocation, which reserves the first arena: the runtime allocates before `main`, so this runs as the
/// binary is loaded.
#[used]
#[link_section = ".init_array"]
static ALLOCATOR_SETTINGS: extern "C" fn() = allocator_settings;

extern "C" fn allocator_settings() {
    /// `mi_option_arena_eager_commit` in mimalloc's `mi_option_t`.
    const ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;
    // SAFETY: sets one of mimalloc's options; any value is valid for it. Nothing else runs yet.
    unsafe { libmimalloc_sys::mi_option_set(ARENA_EAGER_COMMIT, 0) };
}

/// One binary between AI agents and their tools: an MCP gateway that aggregates upstream servers.
#[derive(Parser)]
#[command(name = "toolgate", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Serve(commands::serve::Args),
    Wrap(commands::wrap::Args),
    Demo(commands::demo::Args),
    Doctor(commands::doctor::Args),
    Pins(commands::pins::Args),
    Approvals(commands::approvals::Args),
    Audit(commands::audit::Args),
    Report(commands::report::Args),
    Store(commands::store::Args),
    Policy(commands::policy::Args),
    Preview(commands::preview::Args),
    Completions(commands::completions::Args),
    #[command(name = "install-links")]
    InstallLinks(products::links::Args),
    #[command(name = "fixture-server", hide = true)]
    FixtureServer(commands::fixture::Args),
    #[command(name = "conformance-client", hide = true)]
    ConformanceClient(commands::conformance_client::Args),
}

fn main() -> ExitCode {
    // Started under a product's name (a link made by `install-links`), the binary speaks that product.
    if let Some(code) = products::dispatch() {
        return code;
    }
    runtime::quiet_broken_pipe();
    let cli = Cli::parse();
    runtime::init_logging();
    let result = match cli.command {
        Command::Serve(args) => commands::serve::run(args),
        Command::Wrap(args) => commands::wrap::run(args),
        Command::Demo(args) => commands::demo::run(args),
        Command::Doctor(args) => commands::doctor::run(args),
        Command::Pins(args) => commands::pins::run(args),
        Command::Approvals(args) => commands::approvals::run(args),
        Command::Audit(args) => commands::audit::run(args),
        Command::Report(args) => commands::report::run(args),
        Command::Store(args) => commands::store::run(args),
        Command::Policy(args) => commands::policy::run(args),
        Command::Preview(args) => commands::preview::run(args),
        Command::Completions(args) => commands::completions::run(args, &mut Cli::command()),
        Command::InstallLinks(args) => products::links::run(args),
        Command::FixtureServer(args) => commands::fixture::run(args),
        Command::ConformanceClient(args) => commands::conformance_client::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) if runtime::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("toolgate: {}", runtime::error_chain(&e));
            ExitCode::from(runtime::EXIT_USAGE)
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_allocator_commits_arenas_on_demand_from_the_first_allocation() {
        // SAFETY: reads one of mimalloc's options.
        let eager = unsafe { libmimalloc_sys::mi_option_get(4) };
        assert_eq!(eager, 0, "arenas are committed eagerly");
    }
}
