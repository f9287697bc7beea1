//! The launcher of contained children, `toolgate-sandbox`: the gateway starts every contained tree through it
//! (never a copy of itself, which would hold the gateway's memory), and the launcher obeys nothing but a whole
//! handoff of its own build.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::json;

use crate::support::{peers, toolgate, Setup};

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
    let mut other = b"TGLNCH00".to_vec();
    other.extend_from_slice(&5u32.to_le_bytes());
    other.extend_from_slice(b"hello");
    let (answer, code) = hand(&other);
    assert_eq!(answer, libc::EPROTO.to_le_bytes());
    assert_eq!(code, Some(127));
}

#[test]
fn a_handoff_cut_short_is_answered_with_an_error_and_starts_nothing() {
    let mut short = b"TGLNCH01".to_vec();
    short.extend_from_slice(&100u32.to_le_bytes());
    short.extend_from_slice(&[0; 10]);
    for bytes in [&short[..], &short[..5], &[][..]] {
        let (answer, code) = hand(bytes);
        assert_eq!(answer, libc::EPROTO.to_le_bytes(), "{bytes:?}");
        assert_eq!(code, Some(127));
    }
}

/// The pids of `pid`'s children, from each of its threads.
fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        let list = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        out.extend(
            list.split_whitespace()
                .filter_map(|p| p.parse::<u32>().ok()),
        );
    }
    out
}

fn exe(pid: u32) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/exe")).ok()
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
    let gateway = client.pid().expect("the gateway runs");
    let launcher = launcher().canonicalize().unwrap();
    let gateway_exe = toolgate().canonicalize().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let handles = loop {
        let kids: Vec<(u32, Option<PathBuf>)> =
            children(gateway).into_iter().map(|p| (p, exe(p))).collect();
        if kids
            .iter()
            .any(|(_, e)| e.as_deref() == Some(launcher.as_path()))
        {
            break kids;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no child of the gateway runs {}: {kids:?}",
            launcher.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    for (pid, exe) in &handles {
        assert_ne!(
            exe.as_deref(),
            Some(gateway_exe.as_path()),
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
