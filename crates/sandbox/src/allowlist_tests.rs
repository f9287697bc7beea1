//! The worker's syscall allowlist, applied for real in a forked child: what it kills, what it refuses, and that
//! what the worker needs still works.

use super::*;

/// Forks a child that installs the worker filter and runs `body`, whose return value is its exit code.
/// Returns the child's raw wait status.
fn in_filtered_child(body: fn() -> i32) -> i32 {
    let filter = worker_filter().unwrap();
    // SAFETY: the child only installs the prepared filter, makes raw syscalls and `_exit`s.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        // SAFETY: freshly forked child, raw syscalls only.
        unsafe {
            if filter.install().is_err() {
                libc::_exit(100);
            }
            libc::_exit(body());
        }
    }
    let mut status = 0;
    // SAFETY: waits for the child we just forked.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    status
}

fn killed_by_sigsys(status: i32) -> bool {
    libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGSYS
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

#[test]
fn worker_filter_round_trips_through_words() {
    let filter = worker_filter().unwrap();
    let words = filter.to_words();
    assert_eq!(words.len(), 2);
    assert_eq!(WorkerFilter::from_words(&words).unwrap(), filter);
    assert!(WorkerFilter::from_words(&[]).is_err());
    assert!(WorkerFilter::from_words(&[vec![0; MAX_INSTRUCTIONS + 1]]).is_err());
}

#[test]
fn allowlisted_worker_is_killed_on_socket() {
    let status = in_filtered_child(|| {
        // SAFETY: a plain syscall; the filter kills the process before it returns.
        unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0) };
        0
    });
    assert!(killed_by_sigsys(status), "status {status:#x}");
}

#[test]
fn allowlisted_worker_is_killed_on_execve() {
    let status = in_filtered_child(|| {
        let argv = [c"/bin/sh".as_ptr(), std::ptr::null()];
        // SAFETY: NUL-terminated program and argument vector; the filter kills the process first.
        unsafe { libc::execve(c"/bin/sh".as_ptr(), argv.as_ptr(), std::ptr::null()) };
        0
    });
    assert!(killed_by_sigsys(status), "status {status:#x}");
}

#[test]
fn allowlisted_worker_cannot_open_files() {
    let status = in_filtered_child(|| {
        // SAFETY: a NUL-terminated path; the call is refused before the kernel looks at it.
        let fd = unsafe { libc::open(c"/etc/hostname".as_ptr(), libc::O_RDONLY) };
        if fd < 0 && errno() == libc::EPERM {
            7
        } else {
            1
        }
    });
    assert!(libc::WIFEXITED(status), "status {status:#x}");
    assert_eq!(libc::WEXITSTATUS(status), 7);
}

#[test]
fn allowlisted_worker_still_computes_and_writes() {
    let status = in_filtered_child(|| {
        let mut random = [0u8; 8];
        // SAFETY: writes into a buffer we own.
        let got = unsafe { libc::getrandom(random.as_mut_ptr().cast(), random.len(), 0) };
        // SAFETY: maps and unmaps one anonymous page.
        let mapped = unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            p != libc::MAP_FAILED && libc::munmap(p, 4096) == 0
        };
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: writes one struct we own.
        let clock = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) } == 0;
        // SAFETY: writes zero bytes to standard error.
        let wrote = unsafe { libc::write(2, random.as_ptr().cast(), 0) } == 0;
        if got == 8 && mapped && clock && wrote {
            0
        } else {
            3
        }
    });
    assert!(libc::WIFEXITED(status), "status {status:#x}");
    assert_eq!(libc::WEXITSTATUS(status), 0);
}
