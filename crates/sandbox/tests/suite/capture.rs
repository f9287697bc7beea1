//! Output floods: bounded memory, no deadlock, exact counters.

use sandbox::{run, Outcome, MAX_CAPTURE_BYTES_PER_STREAM};

use crate::sh;

/// Peak resident set size of this process, in KiB (VmHWM).
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn one_gigabyte_of_output_stays_bounded() {
    let dir = tempfile::tempdir().unwrap();
    // Warm up threads and allocator so the measurement sees the flood, not first-use costs.
    run(&sh("echo warm", dir.path())).unwrap();
    let before = peak_rss_kib();
    let r = run(&sh("head -c 1073741824 /dev/zero", dir.path())).unwrap();
    let growth = peak_rss_kib().saturating_sub(before);
    assert_eq!(r.outcome, Outcome::Succeeded);
    assert_eq!(r.stdout.total_bytes, 1 << 30);
    assert_eq!(r.stdout.retained_bytes, MAX_CAPTURE_BYTES_PER_STREAM as u64);
    assert_eq!(
        r.stdout.dropped_bytes,
        (1 << 30) - MAX_CAPTURE_BYTES_PER_STREAM as u64
    );
    assert!(r.stdout.text.ends_with(&format!(
        "[toolgate discarded {} output bytes]",
        r.stdout.dropped_bytes
    )));
    assert!(growth < 4 * 1024, "peak RSS grew by {growth} KiB");
}

#[test]
fn stdout_and_stderr_flooded_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let script = "head -c 20000000 /dev/zero & head -c 20000000 /dev/zero >&2; wait";
    let r = run(&sh(script, dir.path())).unwrap();
    assert_eq!(r.outcome, Outcome::Succeeded);
    assert_eq!(r.stdout.total_bytes, 20_000_000);
    assert_eq!(r.stderr.total_bytes, 20_000_000);
    assert!(r.stdout.truncated() && r.stderr.truncated());
}

#[test]
fn small_output_is_kept_whole() {
    let dir = tempfile::tempdir().unwrap();
    let r = run(&sh("printf 'out'; printf 'err' >&2; exit 3", dir.path())).unwrap();
    assert_eq!(r.outcome, Outcome::CommandFailed);
    assert_eq!(r.exit.code, Some(3));
    assert_eq!(r.stdout.text, "out");
    assert_eq!(r.stderr.text, "err");
    assert_eq!(r.stdout.dropped_bytes, 0);
}

#[test]
fn invalid_utf8_output_is_lossy_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let r = run(&sh("printf 'a\\377b'", dir.path())).unwrap();
    assert_eq!(r.stdout.text, "a\u{fffd}b");
    assert_eq!(r.stdout.total_bytes, 3);
}
