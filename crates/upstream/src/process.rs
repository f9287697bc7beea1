//! Starting an stdio upstream in its own process group with a clean environment, and ending the whole group.

use config::{upstream_env, Transport};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::process::Stdio;
use std::time::Duration;
use tokio::process::{Child, Command};

pub(crate) fn spawn(transport: &Transport) -> std::io::Result<Child> {
    let Transport::Stdio {
        command,
        args,
        env,
        cwd,
    } = transport
    else {
        return Err(std::io::Error::other("not an stdio upstream"));
    };
    let mut cmd = Command::new(command);
    cmd.args(args)
        .env_clear()
        .envs(upstream_env(env, |k| std::env::var(k).ok()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own group, so ending it also ends what it started (npx → node, uvx → python).
        .process_group(0)
        .kill_on_drop(true);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: runs in the child between fork and exec; it calls only async-signal-safe functions (prctl,
    // getppid, _exit) and touches no memory shared with the parent.
    unsafe {
        cmd.pre_exec(move || {
            // If toolgate dies without a chance to end its upstreams (SIGKILL, a crash), the kernel ends this one:
            // a server that ignores the end of its stdin would otherwise live on as an orphan.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // toolgate may have died between fork and prctl; then the signal will never come.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    cmd.spawn()
}

/// Ends a process group: the leader gets `grace` to exit after stdin closed, then the group gets TERM, then KILL.
/// Stragglers that outlive the leader are signalled too.
pub(crate) async fn terminate(child: &mut Child, grace: Duration) {
    let pgid = child.id().map(|id| Pid::from_raw(id as i32));
    if tokio::time::timeout(grace, child.wait()).await.is_err() {
        if let Some(pgid) = pgid {
            let _ = killpg(pgid, Signal::SIGTERM);
        }
        if tokio::time::timeout(grace, child.wait()).await.is_err() {
            let _ = child.start_kill();
        }
    }
    if let Some(pgid) = pgid {
        // The leader is gone; anything left in its group is an orphan of ours.
        let _ = killpg(pgid, Signal::SIGKILL);
    }
    let _ = child.wait().await;
}
