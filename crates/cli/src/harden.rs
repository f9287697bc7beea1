//! What `serve` and `wrap` (and `doctor` and `preview`, which start upstreams too) do to their own process before
//! anything else runs, and to what is left of their
//! descendants when they end, and how an admin command tells that it is one of those descendants.
//!
//! Every upstream, command and hook runs with the user's rights, so toolgate keeps from them what the kernel
//! would otherwise show any process of the same user: its memory, environment and descriptors (`/proc/PID/mem`,
//! `environ`, `fd`, ptrace), its controlling terminal, and the way out of its process tree. The gateway also
//! names itself (`GATEWAY_NAME`), which the admin CLI looks for among its own ancestors: a process descended
//! from a running gateway is the agent's or an upstream's, never the operator's. Containing the children
//! themselves is the sandbox's job; this module only changes toolgate's own process.

use std::ffi::CStr;
use std::path::Path;

/// The name a running gateway gives its main thread (`/proc/PID/comm`, at most 15 bytes). Only the process
/// itself can set it, so no descendant can hide that it has a gateway above it; another program that takes the
/// name only makes its own descendants look like a gateway's, which refuses more, never less.
pub const GATEWAY_NAME: &CStr = c"toolgate-gw";

/// Longest chain of ancestors followed; a real one is a few dozen at most.
const MAX_ANCESTORS: usize = 4096;

/// The first reason this process may not act as the operator, found among its ancestors: the pid of a running
/// gateway above it, or of an ancestor whose record cannot be read (no `/proc`, or it exited meanwhile), which
/// counts against it too, since what cannot be checked is not believed. `None`: no gateway above it.
pub fn gateway_ancestor() -> Option<String> {
    let mut pid = std::os::unix::process::parent_id();
    for _ in 0..MAX_ANCESTORS {
        if pid <= 1 {
            return None;
        }
        let Some((name, parent)) = stat(pid) else {
            return Some(format!(
                "its ancestor {pid} cannot be read in /proc, so whether a running toolgate gateway started it \
                 cannot be told"
            ));
        };
        if name.as_bytes() == GATEWAY_NAME.to_bytes() {
            return Some(format!(
                "this process descends from the running toolgate gateway {pid}, so the agent or an upstream \
                 server started it"
            ));
        }
        pid = parent;
    }
    Some("its chain of ancestors does not end".to_owned())
}

/// A process's name and parent, from `/proc/PID/stat` (readable for every process). The name is everything
/// between the first `(` and the last `)`, since it may itself contain parentheses.
fn stat(pid: u32) -> Option<(String, u32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let name = text.get(open + 1..close)?.to_owned();
    let mut rest = text.get(close + 1..)?.split_whitespace();
    let _state = rest.next()?;
    let parent = rest.next()?.parse().ok()?;
    Some((name, parent))
}

/// Hardens the gateway process. Each step is best effort (a kernel without one leaves the others), and none
/// changes what toolgate can do to itself: the kernel still lets a process read its own `/proc/self`.
pub fn gateway() {
    // SAFETY: these prctl calls take integer arguments and change only this process's attributes.
    unsafe {
        // Not dumpable: `/proc/PID/{environ,mem,fd,maps}` and ptrace are closed to other processes of the same
        // user (the environment names the state root; the memory holds the approval key). Children get their
        // own flag back when they exec.
        if libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 {
            tracing::warn!(
                "cannot make toolgate undumpable: processes of this user can read its memory"
            );
        }
        // A child subreaper: a descendant that double-forks or calls setsid is re-parented to toolgate rather
        // than to init, so it stays in toolgate's tree (the admin CLI sees where it came from) and is ended at
        // shutdown.
        if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0 {
            tracing::warn!(
                "cannot make toolgate a child subreaper: orphaned descendants leave its tree"
            );
        } else {
            reap_adopted_orphans();
        }
        libc::prctl(libc::PR_SET_NAME, GATEWAY_NAME.as_ptr(), 0, 0, 0);
    }
    drop_controlling_terminal();
}

/// How often the orphans toolgate adopted are reaped: each exited one holds a process slot (counted against the
/// user's process limit) until then.
const REAP_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Reaps the orphans a subreaper adopts (`sandbox::reap_adopted`) for as long as the process runs, on a thread
/// of its own, started once.
fn reap_adopted_orphans() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        let spawned = std::thread::Builder::new()
            .name("toolgate-reaper".into())
            .spawn(|| loop {
                std::thread::sleep(REAP_EVERY);
                sandbox::reap_adopted();
            });
        if let Err(e) = spawned {
            tracing::warn!("cannot start the reaper of adopted orphans: {e}; they stay zombies until toolgate ends");
        }
    });
}

/// Gives up the controlling terminal, so no child inherits it: a child could otherwise push `APPROVE` into the
/// operator's input with `TIOCSTI`, or open `/dev/tty` to look like the operator. A session leader keeps its
/// terminal, because giving it up would hang up the terminal's foreground jobs; toolgate is one only when
/// started with `setsid` on a terminal.
fn drop_controlling_terminal() {
    use std::os::fd::AsRawFd;
    // SAFETY: getsid and getpid have no preconditions.
    let leader = unsafe { libc::getsid(0) == libc::getpid() };
    if leader {
        return;
    }
    let Ok(tty) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(Path::new("/dev/tty"))
    else {
        return; // no controlling terminal: nothing to give up
    };
    // SAFETY: TIOCNOTTY takes no argument; the descriptor is open for the duration of the call.
    unsafe {
        libc::ioctl(tty.as_raw_fd(), libc::TIOCNOTTY);
    }
}

/// Ends every descendant still alive once the gateway has shut down: orphans re-parented to toolgate (see
/// `gateway`) would otherwise outlive it and keep the user's rights with nobody watching. Kills the children,
/// reaps them, and repeats for the grandchildren that their deaths re-parented, a bounded number of rounds.
pub fn end_descendants() {
    for _ in 0..64 {
        let children = sandbox::children();
        if children.is_empty() {
            return;
        }
        for pid in children {
            // SAFETY: kill and waitpid on a pid that is our child; it stays ours (a zombie) until reaped here.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, std::ptr::null_mut(), 0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_stat_names_it_and_its_parent() {
        let (name, parent) = stat(std::process::id()).unwrap();
        assert!(!name.is_empty());
        assert_eq!(parent, std::os::unix::process::parent_id());
    }
}
