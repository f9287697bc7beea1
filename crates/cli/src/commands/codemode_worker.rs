//! `toolgate codemode-worker` (hidden): the code-mode worker, which toolgate starts itself, contained, for each
//! `run_code`. It speaks JSON lines on standard input and output and is never run by hand. `main` dispatches it
//! before logging is set up, so nothing but protocol lines reach its standard output.

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The run this worker serves (its trace id), so it can be told apart in a process list; the worker does not
    /// use it.
    #[arg(long)]
    run: Option<String>,
}

pub fn run(_args: Args) -> ExitCode {
    codemode::worker::worker_main()
}
