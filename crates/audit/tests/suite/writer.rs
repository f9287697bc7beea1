//! The writer never blocks or panics on failure, counts failures, and keeps the chain
//! intact under concurrent appenders.

use std::fs;
use std::sync::{Arc, Barrier};
use std::thread;

use audit::{AuditEvent, AuditLog, Error, EventKind, ProblemKind};

#[test]
fn write_failure_is_returned_and_counted_not_raised() {
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::new(&dir.path().join("does-not-exist"));
    let e = AuditEvent::new(EventKind::Decision, 0, "t");
    assert!(log.record(&e).is_err());
    assert!(log.record(&e).is_err());
    assert_eq!(log.failures(), 2);
}

#[test]
fn torn_tail_refuses_appends_and_verify_points_at_it() {
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::new(dir.path());
    log.record(&AuditEvent::new(EventKind::Decision, 0, "a"))
        .unwrap();
    let mut text = fs::read_to_string(log.path()).unwrap();
    text.push_str("{\"kind\":\"deci"); // a crash mid-write
    fs::write(log.path(), text).unwrap();
    let err = log
        .record(&AuditEvent::new(EventKind::Decision, 1, "b"))
        .unwrap_err();
    assert!(matches!(err, Error::CorruptTail));
    assert_eq!(log.failures(), 1);
    let p = log.verify().unwrap().problem.unwrap();
    assert_eq!((p.line, p.kind), (2, ProblemKind::Malformed));
}

#[test]
fn concurrent_appenders_keep_one_valid_chain() {
    let dir = tempfile::tempdir().unwrap();
    let threads = 8;
    let per_thread = 25;
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let path = dir.path().to_path_buf();
            let barrier = Arc::clone(&barrier);
            thread::spawn(move || {
                // A handle per thread: separate descriptors, like separate processes.
                let log = AuditLog::new(&path);
                barrier.wait();
                for i in 0..per_thread {
                    log.record(&AuditEvent::new(
                        EventKind::Execution,
                        i,
                        &format!("{t}-{i}"),
                    ))
                    .unwrap();
                }
                log.failures()
            })
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), 0);
    }
    let r = AuditLog::new(dir.path()).verify().unwrap();
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(r.events, threads as u64 * per_thread as u64);
}

#[cfg(unix)]
#[test]
fn log_file_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::new(dir.path());
    log.record(&AuditEvent::new(EventKind::Decision, 0, "t"))
        .unwrap();
    let mode = fs::metadata(log.path()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}
