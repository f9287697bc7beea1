//! `toolfence wrap --approval tty`: asks answered on the controlling terminal.
//!
//! The gateway gives up its terminal before it starts anything (a child could otherwise type `APPROVE` into it
//! with `TIOCSTI`), so the terminal stays with a process above it: this process starts the gateway as its child,
//! handing it the client's stdin and stdout, and itself becomes the approval terminal for the workspace
//! (`toolgate approvals watch`, which reads the terminal, never stdin). Its own stdin is closed and its
//! output goes to the terminal, so it never reads or writes the client's protocol stream. It is the gateway's
//! parent, not its descendant, so the approvals' trust check admits it, and nothing the gateway starts can reach
//! the terminal. When the gateway ends, so does this process, with its exit status.

use std::ffi::OsString;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::ExitCode;

/// The controlling terminal, when there is one.
pub fn open() -> Option<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .ok()
}

/// Starts the gateway as a child and answers its asks on `tty` until it ends.
pub fn serve_with_terminal(tty: File, workspace: &Path) -> anyhow::Result<ExitCode> {
    use anyhow::Context;
    let me = std::env::current_exe().context("cannot find this binary")?;
    let mut args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let at = args.iter().position(|a| a == "--").unwrap_or(args.len());
    args.insert(at, "--tty-child".into());
    let mut child = std::process::Command::new(me)
        .arg0("toolfence")
        .args(&args)
        .spawn()
        .context("cannot start the gateway")?;
    let null = File::open("/dev/null").context("cannot open /dev/null")?;
    // SAFETY: dup2 onto this process's own standard descriptors, with descriptors open for the call; from here
    // on this process reads nothing of the client's and writes only to the terminal.
    unsafe {
        libc::dup2(null.as_raw_fd(), 0);
        libc::dup2(tty.as_raw_fd(), 1);
        libc::dup2(tty.as_raw_fd(), 2);
    }
    std::thread::spawn(move || {
        let code = child.wait().ok().and_then(|s| s.code()).unwrap_or(1);
        std::process::exit(code);
    });
    let state = super::StateArgs {
        workspace: Some(workspace.to_owned()),
    };
    let watched = super::approvals(&state);
    // The operator quit the terminal: asks now wait for `toolfence approvals` elsewhere, and the gateway serves on.
    if let Err(e) = &watched {
        eprintln!("toolfence: approval terminal: {e:#}");
    }
    loop {
        std::thread::park();
    }
}
