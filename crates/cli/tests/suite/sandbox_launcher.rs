//! The launcher of contained children, `toolgate-sandbox`: the gateway starts every contained tree through it
//! (never a copy of itself, which would hold the gateway's memory), and the launcher obeys nothing but a whole
//! handoff of its own build.

use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::json;

use crate::support::{children, peers, toolgate, Setup};

fn launcher() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_toolgate-sandbox"))
}

/// Starts the launcher with one end of a socket pair as its standard input, writes `bytes` and closes the
/// writing side; returns its answer and its exit code.
fn hand(bytes: &[u8]) -> (Vec<u8>, Option<i32>) {
    let (mut ours, theirs) = UnixStream::pair().unwrap();
    let mut child = Command::new(launcher())
        .env_clear()
        .stdin(Stdio::from(std::os::fd::OwnedFd::from(theirs)))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    ours.write_all(bytes).unwrap();
    ours.shutdown(std::net::Shutdown::Write).unwrap();
    let mut answer = Vec::new();
    ours.read_to_end(&mut answer).unwrap();
    (answer, child.wait().unwrap().code())
}

#[test]
fn the_launcher_run_by_hand_says_what_it_is_and_starts_nothing() {
    let out = Command::new(launcher())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not run by hand"), "{stderr}");
    assert!(out.stdout.is_empty());
}

#[test]
fn a_handoff_of_another_layout_is_answered_with_an_error_not_obeyed() {
    let mut other = b"TGLNCH01".to_vec(); // the layout before the probe flag
    other.extend_from_slice(&5u32.to_le_bytes());
    other.extend_from_slice(b"hello");
    let (answer, code) = hand(&other);
    assert_eq!(answer, libc::EPROTO.to_le_bytes());
    assert_eq!(code, Some(127));
}

#[test]
fn a_handoff_cut_short_is_answered_with_an_error_and_starts_nothing() {
    let mut short = b"TGLNCH02".to_vec();
    short.extend_from_slice(&100u32.to_le_bytes());
    short.extend_from_slice(&[0; 10]);
    for bytes in [&short[..], &short[..5], &[][..]] {
        let (answer, code) = hand(bytes);
        assert_eq!(answer, libc::EPROTO.to_le_bytes(), "{bytes:?}");
        assert_eq!(code, Some(127));
    }
}

/// The process's command name (its executable's file name, cut to 15 bytes), readable by any process where the
/// `exe` link of a non-dumpable one is not.
fn comm(pid: u32) -> Option<String> {
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    Some(comm.trim_end().to_owned())
}

fn comm_of(path: &std::path::Path) -> String {
    path.file_name()
        .unwrap()
        .to_string_lossy()
        .chars()
        .take(15)
        .collect()
}

#[tokio::test]
async fn a_contained_upstream_is_started_through_the_launcher_not_a_copy_of_the_gateway() {
    let python = peers().join(".venv/bin/python");
    let setup = Setup::new(json!({
        "permissions": {"default": "allow"},
        "mcpServers": {"sleepy": {
            "command": python,
            "args": ["-c", "import sys\nfor line in sys.stdin: pass"],
        }},
    }));
    let client = setup.serve();
    let gateway_pid = client.pid().expect("the gateway runs");
    let launcher = comm_of(&launcher());
    let gateway = comm_of(&toolgate());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let handles = loop {
        let kids: Vec<(u32, Option<String>)> = children(gateway_pid)
            .into_iter()
            .map(|p| (p, comm(p)))
            .collect();
        if kids
            .iter()
            .any(|(_, c)| c.as_deref() == Some(launcher.as_str()))
        {
            break kids;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no child of the gateway runs {launcher}: {kids:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    for (pid, comm) in &handles {
        assert_ne!(
            comm.as_deref(),
            Some(gateway.as_str()),
            "child {pid} of the gateway is a copy of it"
        );
    }
}

/// `doctor` names the launcher; one named by the variable that is not there fails the check (every contained
/// start would fail), while a toolgate with none beside it passes and says what starting without one costs.
#[test]
fn doctor_names_the_launcher_and_fails_on_a_named_one_that_is_missing() {
    let setup = Setup::new(json!({"permissions": {"default": "allow"}}));
    let doctor = |exe: &std::path::Path, named: Option<&str>| {
        let mut command = Command::new(exe);
        command
            .args(["doctor", "--no-start", "--config"])
            .arg(&setup.config);
        if let Some(named) = named {
            command.env("TOOLGATE_SANDBOX_LAUNCHER", named);
        }
        let out = command.output().unwrap();
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            out.status.code(),
        )
    };
    let (out, code) = doctor(&toolgate(), None);
    let beside = toolgate().with_file_name("toolgate-sandbox");
    assert!(
        out.contains(&format!("sandbox launcher: {}", beside.display())),
        "{out}"
    );
    assert_eq!(code, Some(0), "{out}");

    let (out, code) = doctor(&toolgate(), Some("/nonexistent/toolgate-sandbox"));
    assert!(
        out.contains("sandbox launcher: MISSING (/nonexistent/toolgate-sandbox"),
        "{out}"
    );
    assert_eq!(code, Some(1), "{out}");

    let alone = setup.dir.path().join("alone");
    std::fs::create_dir_all(&alone).unwrap();
    let exe = alone.join("toolgate");
    if std::fs::hard_link(toolgate(), &exe).is_err() {
        std::fs::copy(toolgate(), &exe).unwrap();
    }
    let (out, code) = doctor(&exe, None);
    assert!(
        out.contains("sandbox launcher: not found beside toolgate"),
        "{out}"
    );
    assert_eq!(code, Some(0), "{out}");
}

/// A handoff in this build's layout (see `sandbox`'s `launch/wire.rs`) that runs `touch MARKER` with no layers.
fn touch_handoff(marker: &std::path::Path) -> Vec<u8> {
    let string = |out: &mut Vec<u8>, s: &[u8]| {
        out.extend_from_slice(&(s.len() as u32).to_le_bytes());
        out.extend_from_slice(s);
    };
    let touch = b"/usr/bin/touch";
    let mut rest = Vec::new();
    rest.extend_from_slice(&(std::process::id() as i32).to_le_bytes());
    rest.extend_from_slice(&[0; 6]); // every layer off
    rest.extend_from_slice(&[0, 0]); // no ruleset, no filter, no probe; no limits
    string(&mut rest, b"/");
    string(&mut rest, touch);
    rest.extend_from_slice(&2u32.to_le_bytes());
    string(&mut rest, touch);
    string(&mut rest, marker.as_os_str().as_encoded_bytes());
    rest.extend_from_slice(&0u32.to_le_bytes());
    let mut out = b"TGLNCH02".to_vec();
    out.extend_from_slice(&(rest.len() as u32).to_le_bytes());
    out.extend_from_slice(&rest);
    out
}

#[test]
fn a_whole_handoff_without_its_descriptors_is_answered_with_an_error_and_starts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let (answer, code) = hand(&touch_handoff(&marker));
    assert_eq!(answer, libc::EPROTO.to_le_bytes());
    assert_eq!(code, Some(127));
    assert!(!marker.exists(), "the command ran");

    // The same handoff with its two descriptors (standard input, the report pipe) runs the command.
    let (mut ours, theirs) = UnixStream::pair().unwrap();
    let mut child = Command::new(launcher())
        .env_clear()
        .stdin(Stdio::from(std::os::fd::OwnedFd::from(theirs)))
        .spawn()
        .unwrap();
    let null = std::fs::File::open("/dev/null").unwrap();
    let (_report_read, report_write) = std::io::pipe().unwrap();
    let fds = [null.as_raw_fd(), report_write.as_raw_fd()];
    let bytes = touch_handoff(&marker);
    let sent = nix::sys::socket::sendmsg::<()>(
        ours.as_raw_fd(),
        &[std::io::IoSlice::new(&bytes)],
        &[nix::sys::socket::ControlMessage::ScmRights(&fds)],
        nix::sys::socket::MsgFlags::empty(),
        None,
    )
    .unwrap();
    assert_eq!(sent, bytes.len());
    drop(report_write);
    let mut answer = Vec::new();
    ours.read_to_end(&mut answer).unwrap();
    assert_eq!(answer, Vec::<u8>::new(), "exec'd: nothing but end of file");
    assert_eq!(child.wait().unwrap().code(), Some(0));
    assert!(marker.exists(), "the command did not run");
}
