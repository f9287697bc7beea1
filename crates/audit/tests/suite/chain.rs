//! Tamper evidence: edits, deletions and reordering are pinpointed by line; pruning
//! re-anchors the chain so the kept part still verifies.

use pretty_assertions::assert_eq;
use std::fs;

use audit::{AuditEvent, AuditLog, Error, EventKind, ProblemKind, PruneMode};
use jsonrpc::sha256_hex;
use serde_json::json;

fn log_with(n: u64) -> (tempfile::TempDir, AuditLog) {
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::new(dir.path());
    for i in 0..n {
        let mut e = AuditEvent::new(EventKind::Decision, 1_000 + i as i64, &format!("trace-{i}"));
        e.tool = "read_file".into();
        e.decision = Some("allow".into());
        assert_eq!(log.record(&e).unwrap(), i + 1);
    }
    (dir, log)
}

fn lines(log: &AuditLog) -> Vec<String> {
    fs::read_to_string(log.path())
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn write_lines(log: &AuditLog, lines: &[String]) {
    fs::write(log.path(), lines.join("\n") + "\n").unwrap();
}

#[test]
fn intact_log_verifies() {
    let (_d, log) = log_with(5);
    let r = log.verify().unwrap();
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(r.events, 5);
    assert!(!r.anchored);
}

#[test]
fn edited_event_is_pinpointed() {
    let (_d, log) = log_with(5);
    let mut l = lines(&log);
    l[2] = l[2].replace("\"allow\"", "\"deny\"");
    write_lines(&log, &l);
    let report = log.verify().unwrap();
    assert_eq!(
        report.to_string(),
        "FAILED at line 3 (seq 3): record edited (hash mismatch); 2 events verified before it"
    );
    let p = report.problem.unwrap();
    assert_eq!(
        (p.line, p.seq, p.kind),
        (3, Some(3), ProblemKind::HashMismatch)
    );
}

#[test]
fn edited_and_rehashed_event_breaks_the_next_link() {
    let (_d, log) = log_with(5);
    let mut l = lines(&log);
    let mut v: serde_json::Value = serde_json::from_str(&l[1]).unwrap();
    v["decision"] = json!("deny");
    let obj = v.as_object_mut().unwrap();
    obj.remove("hash");
    let hash = sha256_hex(audit::canonical_json(&v).as_bytes());
    v["hash"] = json!(hash);
    l[1] = audit::canonical_json(&v);
    write_lines(&log, &l);
    let p = log.verify().unwrap().problem.unwrap();
    assert_eq!((p.line, p.kind), (3, ProblemKind::BrokenLink));
}

#[test]
fn deleted_event_is_pinpointed() {
    let (_d, log) = log_with(5);
    let mut l = lines(&log);
    l.remove(1);
    write_lines(&log, &l);
    let p = log.verify().unwrap().problem.unwrap();
    assert_eq!(p.line, 2);
    assert_eq!(
        p.kind,
        ProblemKind::SequenceMismatch {
            expected: 2,
            found: 3
        }
    );
}

#[test]
fn reordered_events_are_pinpointed() {
    let (_d, log) = log_with(5);
    let mut l = lines(&log);
    l.swap(3, 4);
    write_lines(&log, &l);
    let p = log.verify().unwrap().problem.unwrap();
    assert_eq!(p.line, 4);
    assert_eq!(
        p.kind,
        ProblemKind::SequenceMismatch {
            expected: 4,
            found: 5
        }
    );
}

#[test]
fn garbage_line_is_malformed() {
    let (_d, log) = log_with(3);
    let mut l = lines(&log);
    l.insert(1, "not json".into());
    write_lines(&log, &l);
    let p = log.verify().unwrap().problem.unwrap();
    assert_eq!((p.line, p.kind), (2, ProblemKind::Malformed));
}

#[test]
fn prune_is_dry_run_by_default_then_reanchors() {
    let (_d, log) = log_with(10);
    let before = fs::read(log.path()).unwrap();
    let plan = log.prune_keep_last(3, PruneMode::DryRun, 5_000).unwrap();
    assert_eq!((plan.total_events, plan.removed, plan.kept), (10, 7, 3));
    assert_eq!(
        fs::read(log.path()).unwrap(),
        before,
        "dry run changed the log"
    );

    log.prune_keep_last(3, PruneMode::Apply, 5_000).unwrap();
    let l = lines(&log);
    assert_eq!(l.len(), 4);
    assert!(l[0].contains("\"kind\":\"anchor\""));
    assert!(l[0].contains("\"pruned_events\":7"));
    let r = log.verify().unwrap();
    assert!(r.is_ok(), "{r:?}");
    assert!(r.anchored);
    assert_eq!(r.events, 3);
    assert_eq!(
        r.to_string(),
        "ok: 3 events verified (from a pruning anchor)"
    );

    // The chain continues after pruning, and a second prune accumulates the count.
    assert_eq!(
        log.record(&AuditEvent::new(EventKind::Execution, 6_000, "t"))
            .unwrap(),
        11
    );
    assert!(log.verify().unwrap().is_ok());
    log.prune_keep_last(2, PruneMode::Apply, 7_000).unwrap();
    assert!(lines(&log)[0].contains("\"pruned_events\":9"));
    assert!(log.verify().unwrap().is_ok());
    let tail = log.tail(10).unwrap();
    let seqs: Vec<u64> = tail.iter().map(|v| v["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, vec![10, 11]);
}

#[test]
fn prune_keep_zero_leaves_an_anchor_that_appends_continue_from() {
    let (_d, log) = log_with(4);
    log.prune_keep_last(0, PruneMode::Apply, 9_000).unwrap();
    assert_eq!(lines(&log).len(), 1);
    assert!(log.tail(5).unwrap().is_empty());
    assert_eq!(
        log.record(&AuditEvent::new(EventKind::Decision, 9_001, "t"))
            .unwrap(),
        5
    );
    let r = log.verify().unwrap();
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(r.events, 1);
}

#[test]
fn deleting_the_anchor_is_detected() {
    let (_d, log) = log_with(6);
    log.prune_keep_last(2, PruneMode::Apply, 1).unwrap();
    let mut l = lines(&log);
    l.remove(0);
    write_lines(&log, &l);
    let p = log.verify().unwrap().problem.unwrap();
    assert_eq!(p.line, 1);
    assert!(matches!(
        p.kind,
        ProblemKind::SequenceMismatch {
            expected: 1,
            found: 5
        }
    ));
}

#[test]
fn prune_refuses_a_tampered_log() {
    let (_d, log) = log_with(5);
    let mut l = lines(&log);
    l.remove(2);
    write_lines(&log, &l);
    let before = fs::read(log.path()).unwrap();
    let err = log.prune_keep_last(1, PruneMode::Apply, 1).unwrap_err();
    assert!(matches!(err, Error::Tampered { line: 3, .. }), "{err:?}");
    assert_eq!(fs::read(log.path()).unwrap(), before);
}

#[test]
fn tail_returns_newest_in_order() {
    let (_d, log) = log_with(5);
    let t = log.tail(2).unwrap();
    let traces: Vec<&str> = t.iter().map(|v| v["trace_id"].as_str().unwrap()).collect();
    assert_eq!(traces, vec!["trace-3", "trace-4"]);
    assert_eq!(log.tail(50).unwrap().len(), 5);
}

#[test]
fn missing_log_verifies_empty() {
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::new(dir.path());
    let r = log.verify().unwrap();
    assert!(r.is_ok());
    assert_eq!(r.events, 0);
    assert!(log.tail(3).unwrap().is_empty());
}

#[test]
fn tail_across_read_chunks_and_malformed_line_is_located() {
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::new(dir.path());
    // Records of ~4 KiB each, so 40 of them span several 64 KiB chunks.
    for i in 0..40 {
        let mut e = AuditEvent::new(EventKind::Decision, i, &format!("t{i}"));
        e.resources = (0..8)
            .map(|r| format!("/ws/{r}/{}", "p".repeat(500)))
            .collect();
        log.record(&e).unwrap();
    }
    let t = log.tail(25).unwrap();
    assert_eq!(t.len(), 25);
    assert_eq!(t[0]["trace_id"], "t15");
    assert_eq!(t[24]["trace_id"], "t39");

    let mut l = lines(&log);
    l[37] = "garbage".into();
    write_lines(&log, &l);
    assert!(
        log.tail(2).is_ok(),
        "damage outside the tail does not matter"
    );
    let err = log.tail(3).unwrap_err();
    assert!(matches!(err, Error::Tampered { line: 38, .. }), "{err:?}");
}

#[test]
fn a_batch_chains_like_single_appends() {
    let (_d, log) = log_with(2);
    let batch: Vec<AuditEvent> = (0..3)
        .map(|i| AuditEvent::new(EventKind::Execution, 2_000 + i, &format!("batch-{i}")))
        .collect();
    assert_eq!(log.record_all(&batch).unwrap(), 5);
    let r = log.verify().unwrap();
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(r.events, 5);
    assert_eq!(
        log.record(&AuditEvent::new(EventKind::Decision, 3_000, "after"))
            .unwrap(),
        6
    );
}
