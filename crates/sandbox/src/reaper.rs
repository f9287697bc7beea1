//! The children this process started itself, and the orphans it adopts.
//!
//! A gateway is a child subreaper (so a descendant that double-forks or calls `setsid` stays in its tree), and
//! every orphan below it becomes its child: the namespace init of each contained tree whose handle was killed
//! (every code-mode run ends that way, every stopped upstream and every command killed at its deadline), or a
//! daemon an upstream left behind. An orphan that exits is a zombie until its parent waits for it; nobody else
//! will, so [`reap_adopted`] does.
//!
//! It must not wait for a child an owner waits for (a [`crate::Piped`], a command of [`crate::run`]): the owner
//! would lose its exit status. So every child this crate starts is started through [`started`], which notes its
//! pid, and its owner calls [`waited`] once it has reaped it. Starts share a lock that `reap_adopted` takes
//! alone, so a child that exits before its pid is noted is never taken for an orphan, while starts on several
//! threads still run side by side. A pid is counted, not just noted: the kernel may hand a reaped child's pid
//! to the next child before its owner calls `waited`.

use std::collections::HashMap;
use std::io;
use std::sync::{Mutex, MutexGuard, RwLock};

/// Held shared while a child starts and its pid is noted, alone while orphans are reaped.
static STARTING: RwLock<()> = RwLock::new(());

/// The pids of the children started here that their owners have not reaped yet, each with how many owners
/// wait for that pid (more than one only for the moment a reused pid takes to be noted).
static OWN: Mutex<Option<HashMap<libc::pid_t, u32>>> = Mutex::new(None);

fn own() -> MutexGuard<'static, Option<HashMap<libc::pid_t, u32>>> {
    OWN.lock().unwrap_or_else(|p| p.into_inner())
}

/// Starts a child with `start`, which returns it and its pid, noted as this crate's own until [`waited`].
pub(crate) fn started<T>(start: impl FnOnce() -> io::Result<(T, libc::pid_t)>) -> io::Result<T> {
    let _starting = STARTING.read().unwrap_or_else(|p| p.into_inner());
    let (child, pid) = start()?;
    *own()
        .get_or_insert_with(HashMap::new)
        .entry(pid)
        .or_default() += 1;
    Ok(child)
}

/// Spawns `command` through [`started`].
pub(crate) fn spawn(command: &mut std::process::Command) -> io::Result<std::process::Child> {
    started(|| {
        let child = command.spawn()?;
        let pid = child.id() as libc::pid_t;
        Ok((child, pid))
    })
}

/// Its owner has reaped the child `pid` (or given up on it): from now on an exited process with that pid is an
/// orphan.
pub(crate) fn waited(pid: libc::pid_t) {
    let mut own = own();
    let Some(map) = own.as_mut() else { return };
    if let Some(count) = map.get_mut(&pid) {
        *count -= 1;
        if *count == 0 {
            map.remove(&pid);
        }
    }
}

/// Reaps every child of this process that exited and that no owner waits for: the orphans it adopted.
/// Returns how many it reaped. Never blocks on a live child.
pub fn reap_adopted() -> usize {
    let _alone = STARTING.write().unwrap_or_else(|p| p.into_inner());
    let own = own();
    let mut reaped = 0;
    for pid in children() {
        if own.as_ref().is_some_and(|map| map.contains_key(&pid)) {
            continue;
        }
        let mut status = 0;
        // SAFETY: waitpid on a pid listed as our child and not waited for by anyone else (no child is starting
        // meanwhile, so every child an owner waits for is noted); WNOHANG never blocks.
        if unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } == pid {
            reaped += 1;
        }
    }
    reaped
}

/// The pids of this process's children, from every thread's `children` list (a child belongs to the thread that
/// started it, an adopted orphan to whichever thread the kernel chose).
pub fn children() -> Vec<libc::pid_t> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for task in tasks.flatten() {
        if let Ok(list) = std::fs::read_to_string(task.path().join("children")) {
            out.extend(
                list.split_whitespace()
                    .filter_map(|p| p.parse::<libc::pid_t>().ok()),
            );
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}
