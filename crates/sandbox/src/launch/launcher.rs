//! The launcher's side: the `main` of `toolgate-sandbox`, which toolgate starts (without a copy of itself) for
//! each contained child.
//!
//! Its standard input is the unix socket toolgate hands the plan over; its environment is empty. It reads the
//! handoff and its descriptors (close-on-exec from the moment they arrive), puts the command's standard input
//! in place, goes to the command's directory, then runs `child::setup` (the same code a fork of toolgate runs)
//! and execs the command with the handoff's arguments and environment. Whatever stops it before that exec is
//! answered on the socket as an errno; the socket is close-on-exec, so a successful exec answers end of file.
//! It prints nothing: its standard output and error are already the command's.

use std::ffi::{c_char, CString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use nix::sys::socket::{recvmsg, ControlMessageOwned, MsgFlags};

use super::wire::{Handoff, HEADER_LEN};
use crate::child;
use crate::prelude::child_plan;
use crate::seccomp;

/// The most descriptors a handoff carries: standard input, the report pipe, the Landlock ruleset.
const MAX_FDS: usize = 3;

/// `toolgate-sandbox`'s `main`. Never returns: it execs the command or exits.
pub fn launcher_main() -> ! {
    if !stdin_is_socket() {
        eprintln!(
            "toolgate-sandbox: toolgate starts this launcher for each contained command; it is not run by hand"
        );
        std::process::exit(2);
    }
    // SAFETY: fcntl duplicates a descriptor we were given; the copy is ours and close-on-exec.
    let answer = unsafe { libc::fcntl(0, libc::F_DUPFD_CLOEXEC, 3) };
    if answer < 0 {
        std::process::exit(126);
    }
    let errno = match receive().and_then(|(handoff, fds)| launch(&handoff, fds)) {
        Ok(never) => match never {},
        Err(e) => e,
    };
    // SAFETY: writes a stack buffer of the stated length on our own descriptor, then exits without unwinding.
    unsafe {
        let bytes = errno.to_le_bytes();
        libc::write(answer, bytes.as_ptr().cast(), bytes.len());
        libc::_exit(127);
    }
}

fn stdin_is_socket() -> bool {
    let mut kind: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes one int of the stated length.
    unsafe {
        libc::getsockopt(
            0,
            libc::SOL_SOCKET,
            libc::SO_TYPE,
            (&mut kind as *mut libc::c_int).cast(),
            &mut len,
        ) == 0
    }
}

fn last_errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// Reads the handoff from standard input with the descriptors beside it. `Err(EPROTO)` for anything that is
/// not a whole handoff of this build's layout with the descriptors it announces.
fn receive() -> Result<(Handoff, Vec<OwnedFd>), i32> {
    let mut first = vec![0u8; 64 << 10];
    let mut space = nix::cmsg_space!([RawFd; MAX_FDS]);
    let mut fds = Vec::new();
    let got = {
        let mut iov = [io::IoSliceMut::new(&mut first)];
        let msg = recvmsg::<()>(0, &mut iov, Some(&mut space), MsgFlags::MSG_CMSG_CLOEXEC)
            .map_err(|e| e as i32)?;
        for cmsg in msg.cmsgs().map_err(|_| libc::EPROTO)? {
            if let ControlMessageOwned::ScmRights(received) = cmsg {
                // SAFETY: the kernel just installed these descriptors in this process; nothing else owns them.
                fds.extend(
                    received
                        .into_iter()
                        .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }),
                );
            }
        }
        msg.bytes
    };
    let mut bytes = first;
    bytes.truncate(got);
    read_to(&mut bytes, HEADER_LEN)?;
    let rest = Handoff::rest_len(&bytes).ok_or(libc::EPROTO)?;
    read_to(&mut bytes, HEADER_LEN + rest)?;
    if bytes.len() != HEADER_LEN + rest {
        return Err(libc::EPROTO);
    }
    let handoff = Handoff::decode(&bytes[HEADER_LEN..]).ok_or(libc::EPROTO)?;
    if fds.len() != 2 + usize::from(handoff.landlock) {
        return Err(libc::EPROTO);
    }
    Ok((handoff, fds))
}

/// Reads standard input until `bytes` holds `len` bytes (or more arrived in the first message).
fn read_to(bytes: &mut Vec<u8>, len: usize) -> Result<(), i32> {
    let mut buf = [0u8; 16 << 10];
    while bytes.len() < len {
        let want = (len - bytes.len()).min(buf.len());
        // SAFETY: reads into a stack buffer of at least `want` bytes.
        let n = unsafe { libc::read(0, buf.as_mut_ptr().cast(), want) };
        match n {
            0 => return Err(libc::EPROTO),
            n if n < 0 && last_errno() == libc::EINTR => continue,
            n if n < 0 => return Err(last_errno()),
            n => bytes.extend_from_slice(&buf[..n as usize]),
        }
    }
    Ok(())
}

/// Puts the command's standard input in place, enters its directory, sets the layers up and execs it. Returns
/// only the errno that stopped it.
fn launch(handoff: &Handoff, fds: Vec<OwnedFd>) -> Result<std::convert::Infallible, i32> {
    let mut fds = fds.into_iter();
    let (Some(stdin), Some(report)) = (fds.next(), fds.next()) else {
        return Err(libc::EPROTO);
    };
    let landlock = fds.next();
    // SAFETY: dup2 onto standard input (which clears close-on-exec there); `stdin` closes when dropped.
    if unsafe { libc::dup2(stdin.as_raw_fd(), 0) } < 0 {
        return Err(last_errno());
    }
    drop(stdin);
    // The Rust runtime ignores SIGPIPE; the command starts with it at its default, as a fork of toolgate's does.
    // SAFETY: resets one signal's disposition in this single-threaded process.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    // SAFETY: chdir on a NUL-terminated path.
    if unsafe { libc::chdir(handoff.cwd.as_ptr()) } != 0 {
        return Err(last_errno());
    }
    let filter = if handoff.socket_filter {
        // The same compiler as toolgate's, which compiled it before handing over: it does not fail here.
        seccomp::socket_filter().map_err(|_| libc::EINVAL)?
    } else {
        seccomp::Programs::default()
    };
    let plan = child_plan(
        handoff.layers,
        report.as_raw_fd(),
        landlock.as_ref().map_or(-1, AsRawFd::as_raw_fd),
        filter,
    );
    let argv = pointers(&handoff.argv);
    let envp = pointers(&handoff.envp);
    // SAFETY: this process is single-threaded, as `child::setup` requires of the process it runs in; it returns
    // only in the process that execs the command (C and I wait and exit inside it).
    unsafe { child::setup(&plan) }.map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
    if handoff.probe {
        // SAFETY: exits this process (the probe's T) without running anything; the answer socket closes with it.
        unsafe { libc::_exit(0) };
    }
    // SAFETY: the vectors are NUL-terminated arrays of pointers into strings that outlive the call.
    unsafe { libc::execve(handoff.program.as_ptr(), argv.as_ptr(), envp.as_ptr()) };
    Err(last_errno())
}

/// A NUL-terminated array of pointers into `strings`.
fn pointers(strings: &[CString]) -> Vec<*const c_char> {
    strings
        .iter()
        .map(|s| s.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect()
}
