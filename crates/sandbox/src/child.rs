//! Code that runs in the child between its start and the command's `exec`: in the launcher (`launch`), or in a
//! fork of toolgate when there is no launcher.
//!
//! Everything here must be async-signal-safe: a fork of toolgate is a copy of a multi-threaded process, so only
//! raw syscalls on data prepared beforehand are allowed (no allocation, no locks, no formatting). The process
//! tree it builds when a PID namespace is available (C is the launcher itself, or the fork of toolgate):
//!
//! ```text
//! parent ── C (setsid; leader of the process group; waits, ignores TERM)
//!            └─ I (PID 1 of the new namespace; reaps orphans; reports the command's status; when it exits the
//!               │  kernel kills every process left in the namespace, including ones that called setsid)
//!               └─ T (mounts the namespace's own /proc in a private mount namespace, applies rlimits /
//!                     no_new_privs / Landlock / the socket filter, then execs the command)
//! ```
//! I is a copy of the process that started the tree (the launcher, or toolgate) that never execs, and it is the
//! one process outside the command that the command's /proc shows: before it starts T it blanks its copy of
//! that process's arguments and environment and makes itself non-dumpable, so neither its command line, its
//! environment, its executable nor its descriptors can be read or traced from inside. Without a PID namespace,
//! C itself becomes T (and the command sees the host's /proc). This module does not decide which layers to ask
//! for or how to read the reports; `run` does.

use std::io;
use std::os::fd::RawFd;

use crate::layers::{encode, Layer, REC_EXIT, REC_LAYER, ST_ACTIVE, ST_FAILED, ST_UNAVAILABLE};
use crate::spec::LayerMode;
use crate::{landlock, seccomp};

/// Resource limits as (resource, value) pairs; fixed size so the child never allocates.
pub(crate) type LimitList = [(libc::__rlimit_resource_t, libc::rlim_t); 5];

/// The layers one start asks the child to set up: what the parent decided, as plain values that cross a
/// `fork` or (to the launcher) an `exec`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PlanLayers {
    /// The process the child must die with; it checks this is still its parent.
    pub parent_pid: libc::pid_t,
    pub pid_namespace: LayerMode,
    pub no_network: LayerMode,
    pub rlimits: LayerMode,
    pub limits: LimitList,
    pub limit_count: usize,
    pub no_new_privs: LayerMode,
    pub landlock: LayerMode,
    pub socket_filter: LayerMode,
}

/// Everything the child needs, prepared before `fork` (by toolgate, or by the launcher from its handoff).
pub(crate) struct ChildPlan {
    pub layers: PlanLayers,
    pub report_fd: RawFd,
    /// Prepared ruleset, or -1 when Landlock is off or unavailable (then the parent already reported it).
    pub landlock_fd: RawFd,
    /// Compiled seccomp programs; empty when the filter is off or unavailable (then the parent reported it).
    pub filter: seccomp::Programs,
    /// "<uid> <uid> 1\n" and the gid equivalent: map ourselves to ourselves in the new user namespace.
    pub uid_map: Vec<u8>,
    pub gid_map: Vec<u8>,
    /// Where this process's arguments and environment strings lie (`/proc/self/stat`), blanked in I; empty
    /// when unknown.
    pub inherited_strings: [(usize, usize); 2],
}

fn errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

fn report(fd: RawFd, layer: Layer, status: u8, value: i32) {
    let rec = encode(REC_LAYER, layer.code(), status, value);
    // SAFETY: writes a stack buffer of the stated length; a failed report only loses detail.
    unsafe { libc::write(fd, rec.as_ptr().cast(), rec.len()) };
}

/// Records a layer that could not be set up; returns the error to abort the spawn when it was required.
fn setback(
    plan: &ChildPlan,
    layer: Layer,
    mode: LayerMode,
    status: u8,
    err: i32,
) -> io::Result<()> {
    report(plan.report_fd, layer, status, err);
    if mode == LayerMode::Required {
        Err(io::Error::from_raw_os_error(err))
    } else {
        Ok(())
    }
}

fn write_file(path: &std::ffi::CStr, data: &[u8]) -> Result<(), i32> {
    // SAFETY: `path` is NUL-terminated; the descriptor is closed before returning.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(errno());
        }
        let n = libc::write(fd, data.as_ptr().cast(), data.len());
        let err = errno();
        libc::close(fd);
        if n < 0 || n as usize != data.len() {
            return Err(err);
        }
    }
    Ok(())
}

/// Enters a new user namespace mapping our uid/gid to themselves, so later namespaces need no privilege.
fn enter_user_namespace(plan: &ChildPlan) -> Result<(), (u8, i32)> {
    // A child of an undumpable parent is undumpable until it execs, and then the kernel owns its
    // `/proc/self/*_map` files as root, which the new namespace cannot write. This process execs the command next.
    // SAFETY: prctl with integer arguments changes only this process.
    unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0) };
    // SAFETY: unshare only changes this (single-threaded) process's namespaces.
    if unsafe { libc::unshare(libc::CLONE_NEWUSER) } != 0 {
        return Err((ST_UNAVAILABLE, errno()));
    }
    write_file(c"/proc/self/uid_map", &plan.uid_map).map_err(|e| (ST_FAILED, e))?;
    write_file(c"/proc/self/setgroups", b"deny").map_err(|e| (ST_FAILED, e))?;
    write_file(c"/proc/self/gid_map", &plan.gid_map).map_err(|e| (ST_FAILED, e))?;
    Ok(())
}

/// The `pre_exec` body. Returns only in the process that will exec the command (T).
///
/// # Safety
/// Must be called in a freshly forked child, before exec, with `plan` prepared by the parent.
pub(crate) unsafe fn setup(plan: &ChildPlan) -> io::Result<()> {
    // SAFETY (whole function): only raw syscalls on prepared data, as the module documentation requires.
    unsafe {
        if libc::setsid() < 0 {
            return Err(io::Error::last_os_error());
        }
        // Die with the parent thread; if it is already gone, do not run at all.
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        if libc::getppid() != plan.layers.parent_pid {
            libc::_exit(127);
        }

        // Without a user namespace (unavailable), the unshares below still work when privileged and
        // otherwise report their own EPERM.
        if plan.layers.pid_namespace.wanted() || plan.layers.no_network.wanted() {
            if let Err((ST_FAILED, e)) = enter_user_namespace(plan) {
                // Half-entered: uid unmapped, files cannot be created; do not run like that.
                report(plan.report_fd, Layer::PidNamespace, ST_FAILED, e);
                return Err(io::Error::from_raw_os_error(e));
            }
        }

        if plan.layers.no_network.wanted() {
            if libc::unshare(libc::CLONE_NEWNET) == 0 {
                report(plan.report_fd, Layer::NoNetwork, ST_ACTIVE, 0);
            } else {
                setback(
                    plan,
                    Layer::NoNetwork,
                    plan.layers.no_network,
                    ST_UNAVAILABLE,
                    errno(),
                )?;
            }
        }

        if plan.layers.pid_namespace.wanted() {
            if libc::unshare(libc::CLONE_NEWPID) == 0 {
                become_init_chain(plan)?;
                mount_own_proc(plan)?;
            } else {
                setback(
                    plan,
                    Layer::PidNamespace,
                    plan.layers.pid_namespace,
                    ST_UNAVAILABLE,
                    errno(),
                )?;
            }
        }

        apply_process_layers(plan)?;
        // Descriptors the parent opened without O_CLOEXEC (a library's socket, a database file) must not
        // reach the command; stdio stays, everything else closes at exec.
        libc::close_range(3, u32::MAX, CLOSE_RANGE_CLOEXEC);
        Ok(())
    }
}

/// `close_range` flag: mark the range close-on-exec instead of closing it now (Linux 5.11+; older kernels
/// fail the call, which only loses this hardening).
const CLOSE_RANGE_CLOEXEC: libc::c_int = 1 << 2;

/// Forks I (PID 1 of the new namespace) and T. Returns only in T; C and I wait and `_exit`.
unsafe fn become_init_chain(plan: &ChildPlan) -> io::Result<()> {
    // SAFETY: fork in a single-threaded child; each branch only uses raw syscalls.
    unsafe {
        let init = libc::fork();
        if init < 0 {
            return setback(
                plan,
                Layer::PidNamespace,
                plan.layers.pid_namespace,
                ST_FAILED,
                errno(),
            );
        }
        if init > 0 {
            // C: stay as the handle the parent waits on. Ignore TERM so a timeout's SIGTERM reaches the command
            // without C exiting early and making the parent think the tree is gone.
            for sig in [
                libc::SIGTERM,
                libc::SIGINT,
                libc::SIGHUP,
                libc::SIGQUIT,
                libc::SIGPIPE,
            ] {
                libc::signal(sig, libc::SIG_IGN);
            }
            // C stays for as long as the command runs, outside its namespaces: what it shows another process of
            // the user must not be its starter's (toolgate's environment, when C is a fork of toolgate).
            blank_inherited(plan);
            libc::close_range(0, u32::MAX, 0);
            let mut status = 0;
            loop {
                let r = libc::waitpid(init, &mut status, 0);
                if r == init {
                    break;
                }
                if r < 0 && errno() != libc::EINTR {
                    libc::_exit(125);
                }
            }
            if libc::WIFEXITED(status) {
                libc::_exit(libc::WEXITSTATUS(status));
            }
            libc::_exit(128 + libc::WTERMSIG(status));
        }

        // I: PID 1 of the namespace.
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        report(plan.report_fd, Layer::PidNamespace, ST_ACTIVE, 0);
        hide_inherited(plan);
        let target = libc::fork();
        if target < 0 {
            report(plan.report_fd, Layer::PidNamespace, ST_FAILED, errno());
            libc::_exit(125);
        }
        if target == 0 {
            return Ok(());
        }
        // Keep only the report pipe: the output pipes must reach EOF as soon as the command's tree is gone.
        let fd = plan.report_fd as u32;
        if fd > 0 {
            libc::close_range(0, fd - 1, 0);
        }
        libc::close_range(fd + 1, u32::MAX, 0);
        let mut status = 0;
        loop {
            let r = libc::waitpid(-1, &mut status, 0);
            if r == target {
                let rec = encode(REC_EXIT, 0, 0, status);
                libc::write(plan.report_fd, rec.as_ptr().cast(), rec.len());
                // Exiting as PID 1 makes the kernel SIGKILL everything left in the namespace.
                libc::_exit(0);
            }
            if r < 0 && errno() != libc::EINTR {
                libc::_exit(125);
            }
        }
    }
}

/// Blanks this process's copy of its starter's (the launcher's, or toolgate's) argument and environment strings
/// (what /proc/PID/cmdline and environ read) and makes it non-dumpable, which also closes /proc/PID/exe, fd,
/// root, cwd, mem and ptrace: the kernel then asks for CAP_SYS_PTRACE in the starter's user namespace, which
/// nothing inside has and no other unprivileged process of the user has either. Done in C and in I, which never
/// exec.
unsafe fn blank_inherited(plan: &ChildPlan) {
    // SAFETY: the regions were read from /proc/self/stat before the fork; they are this (copied-on-write)
    // process's own stack pages, which nothing reads any more: C and I never return to their starter's code.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        for (start, end) in plan.inherited_strings {
            if start != 0 && end > start {
                libc::memset(start as *mut libc::c_void, 0, end - start);
            }
        }
    }
}

/// I, before it starts T: blanked like C, and named so that the command's /proc shows what it is.
unsafe fn hide_inherited(plan: &ChildPlan) {
    // SAFETY: prctl on a static string; `blank_inherited` as documented.
    unsafe {
        blank_inherited(plan);
        libc::prctl(
            libc::PR_SET_NAME,
            c"sandbox-init".as_ptr() as libc::c_ulong,
            0,
            0,
            0,
        );
    }
}

/// In T, first thing in the PID namespace: a private mount namespace with a fresh /proc on top, so the
/// command sees its own processes (and I) and none of the host's. Before Landlock, which forbids mounting;
/// the command cannot unmount it afterwards either (no capability survives its exec, and Landlock refuses
/// it). Same mode as the PID namespace.
unsafe fn mount_own_proc(plan: &ChildPlan) -> io::Result<()> {
    let mode = plan.layers.pid_namespace;
    // SAFETY: raw syscalls on static strings.
    unsafe {
        if libc::unshare(libc::CLONE_NEWNS) != 0 {
            return setback(plan, Layer::OwnProc, mode, ST_UNAVAILABLE, errno());
        }
        // Nothing mounted here may propagate back to the host's mount namespace.
        let none = std::ptr::null();
        if libc::mount(
            none,
            c"/".as_ptr(),
            none,
            libc::MS_REC | libc::MS_PRIVATE,
            none.cast(),
        ) != 0
        {
            return setback(plan, Layer::OwnProc, mode, ST_FAILED, errno());
        }
        let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
        if libc::mount(
            c"proc".as_ptr(),
            c"/proc".as_ptr(),
            c"proc".as_ptr(),
            flags,
            none.cast(),
        ) != 0
        {
            return setback(plan, Layer::OwnProc, mode, ST_FAILED, errno());
        }
        // Landlock checks no rule at a mount point, so the parent's grant of the host's /proc does not reach
        // this one: grant it here, as the parent grants every readable directory.
        if plan.landlock_fd >= 0 {
            if let Err(e) = landlock::grant_read_in_child(plan.landlock_fd, c"/proc") {
                return setback(plan, Layer::OwnProc, mode, ST_FAILED, e);
            }
        }
        report(plan.report_fd, Layer::OwnProc, ST_ACTIVE, 0);
        Ok(())
    }
}

/// Layers that act on the command process itself: rlimits, no_new_privs, Landlock, the socket filter.
unsafe fn apply_process_layers(plan: &ChildPlan) -> io::Result<()> {
    // SAFETY: raw syscalls on prepared, stack- or plan-owned data.
    unsafe {
        if plan.layers.rlimits.wanted() {
            let mut failed = 0;
            let core = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            if libc::setrlimit(libc::RLIMIT_CORE, &core) != 0 {
                failed = errno();
            }
            for &(resource, value) in plan.layers.limits.iter().take(plan.layers.limit_count) {
                let lim = libc::rlimit {
                    rlim_cur: value,
                    rlim_max: value,
                };
                if libc::setrlimit(resource, &lim) != 0 {
                    failed = errno();
                }
            }
            if failed == 0 {
                report(plan.report_fd, Layer::Rlimits, ST_ACTIVE, 0);
            } else {
                setback(plan, Layer::Rlimits, plan.layers.rlimits, ST_FAILED, failed)?;
            }
        }

        // Landlock and seccomp need no_new_privs when unprivileged, so asking for either implies it.
        if plan.layers.no_new_privs.wanted() || plan.landlock_fd >= 0 || !plan.filter.is_empty() {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 {
                if plan.layers.no_new_privs.wanted() {
                    report(plan.report_fd, Layer::NoNewPrivs, ST_ACTIVE, 0);
                }
            } else {
                let e = errno();
                if plan.layers.no_new_privs.wanted() {
                    setback(
                        plan,
                        Layer::NoNewPrivs,
                        plan.layers.no_new_privs,
                        ST_FAILED,
                        e,
                    )?;
                }
            }
        }

        if plan.landlock_fd >= 0 {
            match landlock::restrict_self(plan.landlock_fd) {
                Ok(()) => report(plan.report_fd, Layer::Landlock, ST_ACTIVE, 0),
                Err(e) => setback(plan, Layer::Landlock, plan.layers.landlock, ST_FAILED, e)?,
            }
        }

        // Last, so that nothing above runs under the filter.
        if !plan.filter.is_empty() {
            match seccomp::install(&plan.filter) {
                Ok(()) => report(plan.report_fd, Layer::SocketFilter, ST_ACTIVE, 0),
                Err(e) => {
                    let status = if e == libc::EINVAL {
                        ST_UNAVAILABLE
                    } else {
                        ST_FAILED
                    };
                    setback(
                        plan,
                        Layer::SocketFilter,
                        plan.layers.socket_filter,
                        status,
                        e,
                    )?
                }
            }
        }
        Ok(())
    }
}
