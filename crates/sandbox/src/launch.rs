//! How a contained child is started: through the launcher, or by forking this process.
//!
//! Forking toolgate to build a contained tree copies its whole address space three times (the tree's handle C,
//! its init I, the command T; see `child`), and every copy makes toolgate's own threads fault on their next
//! writes; I then keeps a copy of toolgate's memory for as long as the command runs. The launcher,
//! `toolgate-sandbox`, is a small executable started without a copy (`posix_spawn`): toolgate hands it the
//! plan over a unix socket that is its standard input (the bytes of `wire`, and beside them the command's
//! standard input, the report pipe and the Landlock ruleset), and the launcher runs the very same
//! `child::setup` in its own small address space, then execs the command (or, for `probe`, exits once the layers
//! are up). The socket also carries the answer: nothing before end of file means the command was exec'd; four
//! bytes are the errno that stopped it (a required layer, a missing program), as `Command::spawn` reports a
//! `pre_exec` or exec failure.
//!
//! Which one: `TOOLGATE_SANDBOX_LAUNCHER` names the launcher when set (a packager's libexec; a path that does
//! not start fails every contained start, it never falls back); otherwise `toolgate-sandbox` beside this
//! executable, when it is there; otherwise this process forks itself, as before the launcher existed. This
//! module does not decide the layers (`run` does) or set them up (`child` does, in whichever process).

mod launcher;
pub(crate) mod wire;

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

use nix::sys::socket::{
    sendmsg, socketpair, AddressFamily, ControlMessage, MsgFlags, SockFlag, SockType,
};

pub use launcher::launcher_main;

/// The launcher's file name, beside toolgate.
pub const LAUNCHER_EXE: &str = "toolgate-sandbox";

/// The variable that names the launcher elsewhere.
pub const LAUNCHER_VAR: &str = "TOOLGATE_SANDBOX_LAUNCHER";

/// The launcher contained starts go through, or `None` when they fork this process (see the module
/// documentation for the order).
pub fn launcher() -> Option<&'static Path> {
    static LAUNCHER: OnceLock<Option<PathBuf>> = OnceLock::new();
    LAUNCHER
        .get_or_init(|| {
            resolve(
                std::env::var_os(LAUNCHER_VAR),
                std::env::current_exe().ok().as_deref(),
            )
        })
        .as_deref()
}

/// The launcher named by the variable's value, else the one beside `exe` when it is a file.
fn resolve(named: Option<std::ffi::OsString>, exe: Option<&Path>) -> Option<PathBuf> {
    if let Some(named) = named.filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(named));
    }
    let beside = exe?.with_file_name(LAUNCHER_EXE);
    beside.is_file().then_some(beside)
}

/// What the child's standard input is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChildStdin {
    Null,
    Piped,
}

/// A contained child that started (its command was exec'd), with this process's ends of its streams.
pub(crate) struct Started {
    pub child: Child,
    pub stdin: Option<OwnedFd>,
    pub stdout: Option<OwnedFd>,
    pub stderr: Option<OwnedFd>,
}

/// How one prepared child starts.
pub(crate) enum Starter {
    /// This process forks, and the copy sets the layers up before it execs (`child::setup` as `pre_exec`).
    Fork(Command),
    /// The launcher starts without a copy and is handed the plan.
    Launch(Launch),
}

/// A start through the launcher: its path, the handoff's bytes and the descriptors that go beside them.
pub(crate) struct Launch {
    pub launcher: &'static Path,
    pub handoff: Vec<u8>,
    pub report_fd: RawFd,
    pub landlock_fd: Option<RawFd>,
}

impl Starter {
    /// Starts the child; `Err` when it did not reach its command's exec (and then it is reaped).
    pub(crate) fn start(self, stdin: ChildStdin) -> io::Result<Started> {
        let mut command = match self {
            Starter::Launch(launch) => return launch.start(stdin),
            Starter::Fork(command) => command,
        };
        command.stdin(match stdin {
            ChildStdin::Null => Stdio::null(),
            ChildStdin::Piped => Stdio::piped(),
        });
        let mut child = crate::reaper::spawn(&mut command)?;
        Ok(Started {
            stdin: child.stdin.take().map(OwnedFd::from),
            stdout: child.stdout.take().map(OwnedFd::from),
            stderr: child.stderr.take().map(OwnedFd::from),
            child,
        })
    }
}

impl Launch {
    fn start(self, stdin: ChildStdin) -> io::Result<Started> {
        let (ours, theirs) = socketpair(
            AddressFamily::Unix,
            SockType::Stream,
            None,
            SockFlag::SOCK_CLOEXEC,
        )?;
        let (child_stdin, stdin_writer) = match stdin {
            ChildStdin::Null => (OwnedFd::from(std::fs::File::open("/dev/null")?), None),
            ChildStdin::Piped => {
                let (read, write) = crate::prelude::pipe().map_err(io::Error::other)?;
                (read, Some(write))
            }
        };
        let mut command = Command::new(self.launcher);
        // Nothing of toolgate's environment reaches the launcher (a variable the dynamic loader reads would run
        // code in it before any layer is up); the command's own comes in the handoff.
        command
            .env_clear()
            .stdin(Stdio::from(theirs))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = crate::reaper::spawn(&mut command).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "the sandbox launcher {} cannot be started: {e}",
                    self.launcher.display()
                ),
            )
        })?;
        // Our copy of the launcher's end goes, so the answer ends when the launcher's copies do.
        drop(command);
        let answer = self
            .hand_over(&ours, &child_stdin)
            .and_then(|()| self.answer(&ours));
        drop(child_stdin);
        if let Err(e) = answer {
            // A launcher that answered is ending by itself; one that could not read the handoff is ended here.
            let _ = child.kill();
            let _ = child.wait();
            crate::reaper::waited(child.id() as libc::pid_t);
            return Err(e);
        }
        Ok(Started {
            stdin: stdin_writer,
            stdout: child.stdout.take().map(OwnedFd::from),
            stderr: child.stderr.take().map(OwnedFd::from),
            child,
        })
    }

    /// Sends the handoff with the command's standard input, the report pipe and the ruleset beside it.
    fn hand_over(&self, socket: &OwnedFd, child_stdin: &OwnedFd) -> io::Result<()> {
        let mut fds = vec![child_stdin.as_raw_fd(), self.report_fd];
        fds.extend(self.landlock_fd);
        let rights = [ControlMessage::ScmRights(&fds)];
        let fd = socket.as_raw_fd();
        let mut sent = sendmsg::<()>(
            fd,
            &[io::IoSlice::new(&self.handoff)],
            &rights,
            MsgFlags::MSG_NOSIGNAL,
            None,
        )?;
        while sent < self.handoff.len() {
            let rest = &self.handoff[sent..];
            sent += nix::sys::socket::send(fd, rest, MsgFlags::MSG_NOSIGNAL)?;
        }
        Ok(())
    }

    /// Reads the launcher's answer: end of file alone once the command was exec'd, an errno otherwise.
    fn answer(&self, socket: &OwnedFd) -> io::Result<()> {
        let mut buf = [0u8; 4];
        let mut got = 0;
        while got < buf.len() {
            match nix::unistd::read(socket, &mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        match got {
            0 => Ok(()),
            4 => match i32::from_le_bytes(buf) {
                libc::EPROTO => Err(io::Error::other(format!(
                    "the sandbox launcher {} did not understand the handoff: is it from the same build as \
                     toolgate?",
                    self.launcher.display()
                ))),
                errno => Err(io::Error::from_raw_os_error(errno)),
            },
            _ => Err(io::Error::other(format!(
                "the sandbox launcher {} ended in the middle of its answer",
                self.launcher.display()
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variable_wins_then_the_launcher_beside_the_executable_then_none() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("toolgate");
        assert_eq!(resolve(None, Some(&exe)), None);
        assert_eq!(resolve(Some("".into()), Some(&exe)), None);
        std::fs::write(dir.path().join(LAUNCHER_EXE), "").unwrap();
        assert_eq!(
            resolve(None, Some(&exe)),
            Some(dir.path().join(LAUNCHER_EXE))
        );
        // A named launcher is taken as named, even missing: a start through it fails, it never falls back.
        let named = Some("/nowhere/launcher".into());
        assert_eq!(resolve(named, Some(&exe)), Some("/nowhere/launcher".into()));
    }

    #[test]
    fn a_launcher_that_cannot_be_started_fails_the_start_and_says_which() {
        let (_read, write) = crate::prelude::pipe().unwrap();
        let launch = Launch {
            launcher: Path::new("/nonexistent/toolgate-sandbox"),
            handoff: Vec::new(),
            report_fd: write.as_raw_fd(),
            landlock_fd: None,
        };
        let Err(e) = Starter::Launch(launch).start(ChildStdin::Null) else {
            panic!("started through a missing launcher");
        };
        assert!(
            e.to_string()
                .contains("the sandbox launcher /nonexistent/toolgate-sandbox cannot be started"),
            "{e}"
        );
    }
}
