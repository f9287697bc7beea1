//! The socket filter: seccomp programs, compiled by `seccompiler`, that keep a command without network away
//! from host services reached through sockets that a network namespace does not cover.
//!
//! A network namespace hides interfaces and abstract unix sockets, but a pathname unix socket (a container
//! daemon's, an SSH agent's, the D-Bus bus) is reached through the filesystem, and Landlock does not mediate
//! `connect` on it. So the filter allows `socket` only for IPv4 and IPv6 (confined by the namespace),
//! `socketpair` only for unix stream and seqpacket pairs (connected, so they cannot be pointed elsewhere), and
//! refuses io_uring (which could create and connect sockets without those syscalls). A syscall from another
//! architecture's table (32-bit entry points, where `socketcall` multiplexes sockets) kills the process:
//! `seccompiler` checks the audit architecture first. x32 calls share the x86-64 audit architecture, so that
//! check does not see them; on x86-64 the x32 entry points of `socket`, `socketpair` and io_uring are refused
//! by number. Every other syscall is allowed.
//!
//! The programs are compiled in the parent; the child only installs them, which is one `prctl` and one
//! `seccomp` syscall each on prepared memory (async-signal-safe after `fork`). This module does not decide
//! when the filter applies (`run` does).

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// `SOCK_TYPE_MASK`: the socket type without `SOCK_NONBLOCK` / `SOCK_CLOEXEC`.
const SOCK_TYPE_MASK: u64 = 0xf;

/// Set in the number of every x32 system call; x32 shares the x86-64 audit architecture.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: i64 = 0x4000_0000;

#[cfg(target_arch = "x86_64")]
pub(crate) const ARCH: TargetArch = TargetArch::x86_64;
#[cfg(target_arch = "aarch64")]
pub(crate) const ARCH: TargetArch = TargetArch::aarch64;

/// The compiled filters, installed together. Two because a `seccompiler` filter has one action on match: one
/// answers EACCES (socket families and pair types), the other ENOSYS (io_uring, x32 entry points). Empty when
/// the filter is off or unavailable.
#[derive(Debug, Default)]
pub(crate) struct Programs(Vec<BpfProgram>);

impl Programs {
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Calls refused with ENOSYS whatever their arguments: io_uring, whose operations bypass the argument checks,
/// and on x86-64 the x32 entry points of every call this filter governs.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn refused_outright() -> Vec<i64> {
    let io_uring = [
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ];
    let mut calls = io_uring.to_vec();
    #[cfg(target_arch = "x86_64")]
    calls.extend(
        [libc::SYS_socket, libc::SYS_socketpair]
            .into_iter()
            .chain(io_uring)
            .map(|nr| nr | X32_SYSCALL_BIT),
    );
    calls
}

/// Compares the low 32 bits of argument `index` (the kernel reads these arguments as `int`).
fn arg(
    index: u8,
    op: SeccompCmpOp,
    value: i32,
) -> Result<SeccompCondition, seccompiler::BackendError> {
    SeccompCondition::new(
        index,
        SeccompCmpArgLen::Dword,
        op,
        u64::from(value.unsigned_abs()),
    )
}

/// Rules under which `socket` and `socketpair` are refused; any matching rule refuses the call.
fn refused_socket_rules() -> Result<BTreeMap<i64, Vec<SeccompRule>>, seccompiler::BackendError> {
    let socket = vec![SeccompRule::new(vec![
        arg(0, SeccompCmpOp::Ne, libc::AF_INET)?,
        arg(0, SeccompCmpOp::Ne, libc::AF_INET6)?,
    ])?];
    // Any family but unix, and every unix type but stream and seqpacket: the four type bits hold sixteen values,
    // so listing the refused ones covers types that do not exist yet too.
    let mut socketpair = vec![SeccompRule::new(vec![arg(
        0,
        SeccompCmpOp::Ne,
        libc::AF_UNIX,
    )?])?];
    let allowed = [libc::SOCK_STREAM, libc::SOCK_SEQPACKET].map(|t| u64::from(t.unsigned_abs()));
    for kind in (0..=SOCK_TYPE_MASK).filter(|t| !allowed.contains(t)) {
        socketpair.push(SeccompRule::new(vec![SeccompCondition::new(
            1,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::MaskedEq(SOCK_TYPE_MASK),
            kind,
        )?])?);
    }
    Ok(BTreeMap::from([
        (libc::SYS_socket, socket),
        (libc::SYS_socketpair, socketpair),
    ]))
}

/// Compiles one filter: `action` on a matching rule, allow otherwise.
fn compile(
    rules: BTreeMap<i64, Vec<SeccompRule>>,
    action: SeccompAction,
) -> Result<BpfProgram, String> {
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, action, ARCH)
        .map_err(|e| format!("socket filter: {e}"))?;
    BpfProgram::try_from(filter).map_err(|e| format!("socket filter: {e}"))
}

/// The compiled filters, or why this architecture has none.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(crate) fn socket_filter() -> Result<Programs, String> {
    let sockets = refused_socket_rules().map_err(|e| format!("socket filter: {e}"))?;
    let outright = refused_outright()
        .into_iter()
        .map(|nr| (nr, Vec::new()))
        .collect();
    let eacces = u32::try_from(libc::EACCES).unwrap_or(1);
    let enosys = u32::try_from(libc::ENOSYS).unwrap_or(1);
    Ok(Programs(vec![
        compile(sockets, SeccompAction::Errno(eacces))?,
        compile(outright, SeccompAction::Errno(enosys))?,
    ]))
}

/// The compiled filters, or why this architecture has none.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(crate) fn socket_filter() -> Result<Programs, String> {
    Err("no socket filter for this architecture".into())
}

/// Installs prepared programs on the calling thread. Async-signal-safe: `seccompiler::apply_filter` makes one
/// `prctl` and one `seccomp` syscall on prepared memory, and its error holds only an errno. Returns the errno
/// on failure.
pub(crate) fn install(programs: &Programs) -> Result<(), i32> {
    install_all(&programs.0)
}

/// Installs each program in order (the socket filter's, the worker allowlist's). Returns the errno on failure.
pub(crate) fn install_all(programs: &[BpfProgram]) -> Result<(), i32> {
    for program in programs {
        seccompiler::apply_filter(program).map_err(|e| match e {
            seccompiler::Error::Prctl(e) | seccompiler::Error::Seccomp(e) => {
                e.raw_os_error().unwrap_or(libc::EINVAL)
            }
            _ => libc::EINVAL,
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_filter_compiles_to_two_programs() {
        let p = socket_filter().unwrap();
        assert_eq!(p.0.len(), 2);
        assert!(p.0.iter().all(|prog| !prog.is_empty()));
    }

    /// x32 calls pass the audit-architecture check, so their entry points must be refused by number.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn x32_socket_entry_points_that_pass_the_arch_check_are_refused() {
        let refused = refused_outright();
        for nr in [
            libc::SYS_socket,
            libc::SYS_socketpair,
            libc::SYS_io_uring_setup,
            libc::SYS_io_uring_enter,
            libc::SYS_io_uring_register,
        ] {
            assert!(refused.contains(&(nr | X32_SYSCALL_BIT)), "x32 {nr}");
        }
    }

    /// Every socket type but stream and seqpacket, with or without the flag bits, is covered by a rule.
    #[test]
    fn socketpair_rules_cover_every_refused_type() {
        let rules = refused_socket_rules().unwrap();
        // One rule for a foreign family, one per refused type value.
        assert_eq!(rules[&libc::SYS_socketpair].len(), 1 + 16 - 2);
        assert_eq!(rules[&libc::SYS_socket].len(), 1);
    }
}
