//! `toolgate-codemode-worker`: the code-mode worker, an executable of its own beside `toolgate`, which the gateway
//! starts, contained, for each `run_code` (and keeps a few started and locked down ahead of the next runs). It
//! speaks JSON lines on standard input and output and is never run by hand.
//!
//! It links only the `codemode` crate (and the `sandbox` crate through it), not the gateway: a worker starts
//! for every run, and starting a small executable costs a fraction of re-executing all of toolgate. Nothing but
//! protocol lines reach its standard output.

fn main() -> std::process::ExitCode {
    codemode::worker::worker_main()
}
