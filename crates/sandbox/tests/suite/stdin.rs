//! Standard input handed to the command: it arrives whole, and a command that does not read it can neither
//! stretch the deadline nor keep the run waiting.

use std::time::{Duration, Instant};

use sandbox::{run, Outcome};

use crate::sh;

#[test]
fn stdin_bytes_reach_the_command_whole_then_end_of_file() {
    let dir = tempfile::tempdir().unwrap();
    // Larger than a pipe's buffer, so the writer has to wait for the reader.
    let input: String = (0..40_000).map(|i| format!("{i}\n")).collect();
    let r = run(&sh("wc -c; echo done", dir.path()).stdin(input.clone())).unwrap();
    assert_eq!(r.outcome, Outcome::Succeeded);
    assert_eq!(r.stdout.text, format!("{}\ndone\n", input.len()));
}

#[test]
fn no_stdin_reads_end_of_file_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let r = run(&sh("cat; echo eof", dir.path())).unwrap();
    assert_eq!(r.stdout.text, "eof\n");
}

#[test]
fn a_command_that_never_reads_its_input_does_not_hold_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let exits = run(&sh("echo ignored", dir.path()).stdin(vec![b'x'; 4 << 20])).unwrap();
    assert_eq!(
        (exits.outcome, exits.stdout.text.as_str()),
        (Outcome::Succeeded, "ignored\n")
    );
    let mut sleeps = sh("sleep 30", dir.path()).stdin(vec![b'x'; 4 << 20]);
    sleeps.timeout = Duration::from_millis(500);
    sleeps.kill_grace = Duration::from_millis(100);
    let started = Instant::now();
    let r = run(&sleeps).unwrap();
    assert_eq!(r.outcome, Outcome::TimedOut);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "took {:?}",
        started.elapsed()
    );
}

#[test]
fn a_setsid_escapee_holding_stdin_does_not_keep_the_writer() {
    let dir = tempfile::tempdir().unwrap();
    // Without a PID namespace the escapee survives the tree; it keeps stdin open and never reads it.
    let mut spec = sh("setsid sleep 5 & echo started", dir.path()).stdin(vec![b'x'; 4 << 20]);
    spec.layers.pid_namespace = sandbox::LayerMode::Off;
    let started = Instant::now();
    let r = run(&spec).unwrap();
    assert_eq!(r.stdout.text, "started\n");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "took {:?}",
        started.elapsed()
    );
}
