//! Process-tree containment: timeouts, TERM-ignoring children, background and `setsid` descendants.

use std::path::Path;
use std::time::{Duration, Instant};

use sandbox::{run, Layer, LayerMode, LayerState, Outcome};

use crate::sh;

/// Script fragment: a loop that rewrites `beat` every 50 ms, proving its process is alive. The rename keeps
/// `beat` whole: a process killed mid-write never leaves it empty.
const HEARTBEAT: &str = "while :; do date +%s%N > beat.new && mv beat.new beat; sleep 0.05; done";

/// Script fragment: returns once the heartbeat has written its first beat, so the command never ends before
/// the descendant it is about to leave behind is running (on a loaded machine that can take a while).
const AWAIT_BEAT: &str = "until [ -s beat ]; do sleep 0.01; done";

/// Asserts the heartbeat ran during the command and nothing is still rewriting `dir/beat`. A heartbeat that
/// never started fails here: "nothing is beating" proves nothing unless something was beating before.
fn assert_heartbeat_stopped(dir: &Path) {
    let beat = dir.join("beat");
    let started = std::fs::read_to_string(&beat).unwrap_or_default();
    assert!(
        !started.trim().is_empty(),
        "the heartbeat never started, so this run proves nothing"
    );
    std::thread::sleep(Duration::from_millis(150));
    let first = std::fs::read_to_string(&beat).unwrap_or_default();
    std::thread::sleep(Duration::from_millis(300));
    let second = std::fs::read_to_string(&beat).unwrap_or_default();
    assert_eq!(first, second, "a descendant outlived the run");
}

#[test]
fn heartbeat_check_fails_when_the_heartbeat_never_starts() {
    let dir = tempfile::tempdir().unwrap();
    let checked = std::panic::catch_unwind(|| assert_heartbeat_stopped(dir.path()));
    assert!(checked.is_err(), "an absent heartbeat passed the check");
}

#[test]
fn child_ignoring_term_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = sh(
        "trap '' TERM; echo ready; while :; do sleep 0.05; done",
        dir.path(),
    );
    spec.timeout = Duration::from_millis(300);
    spec.kill_grace = Duration::from_millis(200);
    let start = Instant::now();
    let r = run(&spec).unwrap();
    assert_eq!(r.outcome, Outcome::TimedOut);
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "took {:?}",
        start.elapsed()
    );
    assert_eq!(r.stdout.text, "ready\n");
}

#[test]
fn timeout_returns_captured_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = sh("echo start; echo oops >&2; sleep 30", dir.path());
    spec.timeout = Duration::from_millis(300);
    let r = run(&spec).unwrap();
    assert_eq!(r.outcome, Outcome::TimedOut);
    assert_eq!(r.stdout.text, "start\n");
    assert_eq!(r.stderr.text, "oops\n");
    assert!(r.duration_ms < 3000);
}

#[test]
fn background_grandchildren_die_with_tree() {
    for mode in [LayerMode::Required, LayerMode::Off] {
        let dir = tempfile::tempdir().unwrap();
        let mut spec = sh(
            &format!("({HEARTBEAT}) >/dev/null 2>&1 & {AWAIT_BEAT}; echo done"),
            dir.path(),
        );
        spec.layers.pid_namespace = mode;
        let r = run(&spec).unwrap();
        assert_eq!(r.outcome, Outcome::Succeeded, "{mode:?}");
        assert_heartbeat_stopped(dir.path());
    }
}

#[test]
fn setsid_grandchild_dies_in_pid_namespace() {
    let dir = tempfile::tempdir().unwrap();
    let script =
        format!("setsid sh -c '{HEARTBEAT}' >/dev/null 2>&1 </dev/null & {AWAIT_BEAT}; echo done");
    let mut spec = sh(&script, dir.path());
    spec.layers.pid_namespace = LayerMode::Required;
    let r = run(&spec).unwrap();
    assert_eq!(r.layers.state(Layer::PidNamespace), &LayerState::Active);
    assert_eq!(r.outcome, Outcome::Succeeded);
    assert_heartbeat_stopped(dir.path());
}

#[test]
fn setsid_grandchild_holding_stdout_does_not_hang_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = sh("setsid sleep 30 & echo bye", dir.path());
    spec.layers.pid_namespace = LayerMode::Required;
    let start = Instant::now();
    let r = run(&spec).unwrap();
    assert_eq!(r.stdout.text, "bye\n");
    assert!(start.elapsed() < Duration::from_secs(3));
}

#[test]
fn env_is_not_inherited() {
    // SAFETY-free in edition 2021; the variable only has to exist in this test process.
    std::env::set_var("TOOLGATE_TEST_SECRET", "leak");
    let dir = tempfile::tempdir().unwrap();
    let spec = sandbox::CommandSpec::new("/usr/bin/env", dir.path()).env("ONLY", "this");
    let r = run(&spec).unwrap();
    assert_eq!(r.outcome, Outcome::Succeeded);
    assert_eq!(r.stdout.text, "ONLY=this\n");
}

#[test]
fn exit_signal_is_reported_as_command_failed() {
    let dir = tempfile::tempdir().unwrap();
    let r = run(&sh("kill -9 $$", dir.path())).unwrap();
    assert_eq!(r.outcome, Outcome::CommandFailed);
    assert_eq!(r.exit.signal, Some(9));
    assert_eq!(r.exit.code, None);
}

#[test]
fn inherited_descriptors_are_closed() {
    use std::os::fd::AsRawFd;
    let dir = tempfile::tempdir().unwrap();
    // A descriptor without O_CLOEXEC, as a careless library might leave one.
    let file = std::fs::File::open("/etc/hostname")
        .or_else(|_| std::fs::File::open("/"))
        .unwrap();
    // SAFETY: duplicating a descriptor we own; the copy is closed at the end of the test.
    let raw = unsafe { libc::dup(file.as_raw_fd()) };
    assert!(raw > 2);
    let r = run(&sh(
        &format!("test -e /proc/self/fd/{raw} && echo leaked || echo closed"),
        dir.path(),
    ))
    .unwrap();
    // SAFETY: closing the duplicate made above.
    unsafe { libc::close(raw) };
    assert_eq!(r.stdout.text, "closed\n");
}
