//! The syscall allowlist of a locked worker: seccomp programs, compiled by `seccompiler` in the parent and
//! installed by the worker itself once its engine is up, that leave it the few calls a process needs to compute
//! and to talk over the pipes it already holds.
//!
//! Two programs, because a `seccompiler` filter has one action on match and the kernel applies the strictest
//! answer of all installed filters: the first kills the process on calls only an attacker would make (running a
//! program, tracing, sockets, namespaces, new processes, io_uring, BPF); the second allows the listed calls and
//! answers EPERM to everything else, so a library that tries something harmless (opening a time zone file)
//! fails gently instead of killing the worker. A syscall from another architecture's table kills the process
//! (`seccompiler` checks the audit architecture first); x32 entry points share the x86-64 audit architecture but
//! carry the x32 bit in their number, so they match no allowed entry and are refused.
//!
//! The programs travel to the worker as plain numbers ([`WorkerFilter::to_words`]), since the worker receives
//! them over its standard input. This module does not decide when the filter applies (`lockdown` does).

use std::collections::BTreeMap;

use seccompiler::{sock_filter, BpfProgram, SeccompAction, SeccompFilter};

use crate::seccomp::ARCH;

/// Calls the locked worker makes: reading and writing the descriptors it holds, memory management, futexes,
/// clocks, random bytes (hash seeds), signal return and masks, and exit. `close` and `lseek` are harmless on
/// descriptors it already holds and cannot open new ones.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
const ALLOWED: &[i64] = &[
    libc::SYS_read,
    libc::SYS_write,
    libc::SYS_readv,
    libc::SYS_writev,
    libc::SYS_close,
    libc::SYS_lseek,
    libc::SYS_mmap,
    libc::SYS_munmap,
    libc::SYS_mremap,
    libc::SYS_mprotect,
    libc::SYS_madvise,
    libc::SYS_brk,
    libc::SYS_futex,
    libc::SYS_clock_gettime,
    libc::SYS_clock_getres,
    libc::SYS_gettimeofday,
    libc::SYS_getrandom,
    libc::SYS_rt_sigreturn,
    libc::SYS_rt_sigprocmask,
    libc::SYS_sigaltstack,
    libc::SYS_sched_yield,
    libc::SYS_exit,
    libc::SYS_exit_group,
];

/// Calls that kill the worker on the spot: nothing the worker does needs them, and each is a step out of the
/// sandbox (a new program, another process's memory, the network, a namespace, the kernel's attack surface).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn hostile() -> Vec<i64> {
    let mut calls = vec![
        libc::SYS_execve,
        libc::SYS_execveat,
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_socket,
        libc::SYS_socketpair,
        libc::SYS_connect,
        libc::SYS_bind,
        libc::SYS_clone,
        libc::SYS_clone3,
        libc::SYS_setns,
        libc::SYS_unshare,
        libc::SYS_mount,
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
        libc::SYS_userfaultfd,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_kill,
        libc::SYS_tkill,
        libc::SYS_tgkill,
    ];
    #[cfg(target_arch = "x86_64")]
    calls.extend([libc::SYS_fork, libc::SYS_vfork]);
    calls
}

/// The compiled programs for a locked worker, in installation order (the killing one first: once the allowlist
/// is in force, installing another filter is itself refused).
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerFilter(Vec<BpfProgram>);

/// Compiles the worker's filter, or says why this architecture has none.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub fn worker_filter() -> Result<WorkerFilter, String> {
    let eperm = u32::try_from(libc::EPERM).unwrap_or(1);
    let kill: BTreeMap<i64, Vec<_>> = hostile().into_iter().map(|nr| (nr, Vec::new())).collect();
    let allow: BTreeMap<i64, Vec<_>> = ALLOWED.iter().map(|&nr| (nr, Vec::new())).collect();
    Ok(WorkerFilter(vec![
        compile(kill, SeccompAction::Allow, SeccompAction::KillProcess)?,
        compile(allow, SeccompAction::Errno(eperm), SeccompAction::Allow)?,
    ]))
}

/// Compiles the worker's filter, or says why this architecture has none.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub fn worker_filter() -> Result<WorkerFilter, String> {
    Err("no syscall allowlist for this architecture".into())
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn compile(
    rules: BTreeMap<i64, Vec<seccompiler::SeccompRule>>,
    otherwise: SeccompAction,
    on_match: SeccompAction,
) -> Result<BpfProgram, String> {
    let filter = SeccompFilter::new(rules, otherwise, on_match, ARCH)
        .map_err(|e| format!("syscall allowlist: {e}"))?;
    BpfProgram::try_from(filter).map_err(|e| format!("syscall allowlist: {e}"))
}

/// The longest program the kernel accepts (`BPF_MAXINSNS`); anything longer in a decoded filter is refused
/// before it is handed to the kernel.
const MAX_INSTRUCTIONS: usize = 4096;

impl WorkerFilter {
    /// Each instruction as one number: code (16 bits), jt (8), jf (8), k (32).
    pub fn to_words(&self) -> Vec<Vec<u64>> {
        self.0
            .iter()
            .map(|program| {
                program
                    .iter()
                    .map(|i| {
                        u64::from(i.code) << 48
                            | u64::from(i.jt) << 40
                            | u64::from(i.jf) << 32
                            | u64::from(i.k)
                    })
                    .collect()
            })
            .collect()
    }

    /// The inverse of [`WorkerFilter::to_words`]; refuses empty, too many or too long programs.
    pub fn from_words(words: &[Vec<u64>]) -> Result<Self, String> {
        if words.is_empty() || words.len() > 4 {
            return Err("a worker filter has one to four programs".into());
        }
        let mut programs = Vec::with_capacity(words.len());
        for program in words {
            if program.is_empty() || program.len() > MAX_INSTRUCTIONS {
                return Err("a filter program has 1 to 4096 instructions".into());
            }
            programs.push(
                program
                    .iter()
                    .map(|&w| sock_filter {
                        code: (w >> 48) as u16,
                        jt: (w >> 40) as u8,
                        jf: (w >> 32) as u8,
                        k: w as u32,
                    })
                    .collect(),
            );
        }
        Ok(Self(programs))
    }

    /// Installs the programs on the calling thread (which must be the process's only thread, so the filter
    /// covers everything it will run). Returns the errno on failure.
    pub(crate) fn install(&self) -> Result<(), i32> {
        crate::seccomp::install_all(&self.0)
    }
}

#[cfg(test)]
#[path = "allowlist_tests.rs"]
mod tests;
