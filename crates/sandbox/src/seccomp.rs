//! The socket filter: a classic-BPF seccomp program that keeps a command without network away from host
//! services reached through sockets that a network namespace does not cover.
//!
//! A network namespace hides interfaces and abstract unix sockets, but a pathname unix socket (a container
//! daemon's, an SSH agent's, the D-Bus bus) is reached through the filesystem, and Landlock does not mediate
//! `connect` on it. So the filter allows `socket` only for IPv4 and IPv6 (confined by the namespace),
//! `socketpair` only for unix stream and seqpacket pairs (connected, so they cannot be pointed elsewhere), and
//! refuses io_uring (which could create and connect sockets without those syscalls). A syscall from another
//! architecture's table (32-bit entry points, where `socketcall` multiplexes sockets) kills the process; on
//! x86-64 the x32 table is refused. The program is built in the parent; the child only installs it. This
//! module does not decide when the filter applies (`run` does).

/// One BPF instruction, as `struct sock_filter`.
pub(crate) type Insn = libc::sock_filter;

const LD_W_ABS: u16 = 0x20;
const JEQ_K: u16 = 0x15;
const JGE_K: u16 = 0x35;
const AND_K: u16 = 0x54;
const RET_K: u16 = 0x06;

const RET_ALLOW: u32 = 0x7fff_0000;
const RET_KILL_PROCESS: u32 = 0x8000_0000;
const RET_ERRNO: u32 = 0x0005_0000;

/// Offsets in `struct seccomp_data`: nr, arch, then the arguments (low 32 bits first on little-endian).
const OFF_NR: u32 = 0;
const OFF_ARCH: u32 = 4;
const OFF_ARG0: u32 = 16;
const OFF_ARG1: u32 = 24;

/// `SOCK_TYPE_MASK`: the socket type without `SOCK_NONBLOCK` / `SOCK_CLOEXEC`.
const SOCK_TYPE_MASK: u32 = 0xf;

#[cfg(target_arch = "x86_64")]
const ARCH: u32 = 0xc000_003e;
#[cfg(target_arch = "aarch64")]
const ARCH: u32 = 0xc000_00b7;

fn stmt(code: u16, k: u32) -> Insn {
    Insn {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> Insn {
    Insn { code, jt, jf, k }
}

fn nr(n: libc::c_long) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The filter program, or why this architecture has none.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(crate) fn socket_filter() -> Result<Vec<Insn>, String> {
    let deny = RET_ERRNO | libc::EACCES as u32;
    let nosys = RET_ERRNO | libc::ENOSYS as u32;
    let mut p = vec![
        stmt(LD_W_ABS, OFF_ARCH),
        jump(JEQ_K, ARCH, 1, 0),
        stmt(RET_K, RET_KILL_PROCESS),
        stmt(LD_W_ABS, OFF_NR),
    ];
    if cfg!(target_arch = "x86_64") {
        // x32 system calls carry this bit and share the x86-64 audit architecture.
        p.extend([jump(JGE_K, 0x4000_0000, 0, 1), stmt(RET_K, nosys)]);
    }
    p.extend([
        // socket(domain, ...): IPv4 and IPv6 only.
        jump(JEQ_K, nr(libc::SYS_socket), 0, 5),
        stmt(LD_W_ABS, OFF_ARG0),
        jump(JEQ_K, libc::AF_INET as u32, 2, 0),
        jump(JEQ_K, libc::AF_INET6 as u32, 1, 0),
        stmt(RET_K, deny),
        stmt(RET_K, RET_ALLOW),
        // socketpair(AF_UNIX, SOCK_STREAM | SOCK_SEQPACKET, ...) only.
        jump(JEQ_K, nr(libc::SYS_socketpair), 0, 8),
        stmt(LD_W_ABS, OFF_ARG0),
        jump(JEQ_K, libc::AF_UNIX as u32, 0, 4),
        stmt(LD_W_ABS, OFF_ARG1),
        stmt(AND_K, SOCK_TYPE_MASK),
        jump(JEQ_K, libc::SOCK_STREAM as u32, 2, 0),
        jump(JEQ_K, libc::SOCK_SEQPACKET as u32, 1, 0),
        stmt(RET_K, deny),
        stmt(RET_K, RET_ALLOW),
        // io_uring: operations that bypass the checks above.
        jump(JEQ_K, nr(libc::SYS_io_uring_setup), 3, 0),
        jump(JEQ_K, nr(libc::SYS_io_uring_enter), 2, 0),
        jump(JEQ_K, nr(libc::SYS_io_uring_register), 1, 0),
        stmt(RET_K, RET_ALLOW),
        stmt(RET_K, nosys),
    ]);
    Ok(p)
}

/// The filter program, or why this architecture has none.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(crate) fn socket_filter() -> Result<Vec<Insn>, String> {
    Err("no socket filter for this architecture".into())
}

/// Installs a prepared program on the calling thread. Async-signal-safe: one syscall on prepared memory. The
/// caller must already have set no_new_privs. Returns the errno on failure.
pub(crate) fn install(program: &[Insn]) -> Result<(), i32> {
    let prog = libc::sock_fprog {
        len: u16::try_from(program.len()).map_err(|_| libc::EINVAL)?,
        filter: program.as_ptr().cast_mut(),
    };
    // SAFETY: `prog` points at `program`, which outlives the call; the kernel copies the filter.
    let r = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0u32,
            &prog as *const libc::sock_fprog,
        )
    };
    if r < 0 {
        Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EINVAL))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every jump must land inside the program, and the program must end in a return: the kernel would refuse
    /// it otherwise, and a miscounted offset is the likeliest mistake in a hand-written filter.
    #[test]
    fn jumps_stay_inside_the_program_and_it_ends_in_a_return() {
        let p = socket_filter().unwrap();
        for (i, insn) in p.iter().enumerate() {
            if insn.code & 0x07 == 0x05 {
                let far = i + 1 + usize::from(insn.jt.max(insn.jf));
                assert!(far < p.len(), "jump at {i} leaves the program");
            }
        }
        assert_eq!(p.last().map(|i| i.code), Some(RET_K));
    }
}
