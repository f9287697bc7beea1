//! `toolgate codemode-worker` (hidden): the code-mode worker, which toolgate starts itself, contained, for each
//! `run_code`. It speaks JSON lines on standard input and output and is never run by hand. `main` dispatches it
//! before the command line is parsed and logging is set up, so nothing but protocol lines reach its standard
//! output; the clap entry documents it and is the path for anything `invoked` does not catch.

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The run this worker serves (its trace id), so it can be told apart in a process list; the worker does not
    /// use it.
    #[arg(long)]
    run: Option<String>,
}

/// Whether this process was started as the worker: `toolgate codemode-worker …`, checked before any parsing.
pub fn invoked() -> bool {
    std::env::args_os()
        .nth(1)
        .is_some_and(|arg| arg == "codemode-worker")
}

pub fn run(_args: Args) -> ExitCode {
    codemode::worker::worker_main()
}
