//! Integration tests for the sandbox: each test is named after the attack or failure it pins.
//!
//! Commands are run through `/bin/sh` with an explicit PATH, since the child inherits no environment.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod capture;
mod containment;
mod launched;
mod layers;
mod piped;
mod protected;
mod reaping;
mod sockets;
mod stdin;

use std::path::Path;
use std::time::Duration;

use sandbox::CommandSpec;

/// A `sh -c SCRIPT` spec with a minimal PATH, run in `cwd`.
pub fn sh(script: &str, cwd: &Path) -> CommandSpec {
    CommandSpec::new("/bin/sh", cwd)
        .args(["-c", script])
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .timeout(Duration::from_secs(20))
}
