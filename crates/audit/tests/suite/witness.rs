//! What the chain cannot show by itself, caught against a witness kept outside the log: a cut end, an emptied or
//! deleted log, a rewritten end, and a forged pruning anchor at the start. Recovery sets a damaged log aside and
//! continues the chain from the witnessed head.

use pretty_assertions::assert_eq;
use std::fs;

use audit::{
    Anchor, AuditEvent, AuditLog, Error, EventKind, Head, ProblemKind, PruneMode, Witness,
};
use serde_json::{json, Value};

/// A log of `n` events written the way the gateway writes them, with the witness it keeps.
fn witnessed(n: u64) -> (tempfile::TempDir, AuditLog, Witness) {
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::new(dir.path());
    let mut witness = Witness::default();
    for i in 0..n {
        let e = AuditEvent::new(EventKind::Decision, 1_000 + i as i64, &format!("trace-{i}"));
        let head = log.append_checked(&[e], witness.head.as_ref()).unwrap();
        witness.head = Some(head);
    }
    (dir, log, witness)
}

fn lines(log: &AuditLog) -> Vec<String> {
    fs::read_to_string(log.path())
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn write_lines(log: &AuditLog, lines: &[String]) {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    fs::write(log.path(), text).unwrap();
}

fn problem(log: &AuditLog, witness: &Witness) -> ProblemKind {
    log.verify_with(witness).unwrap().problem.unwrap().kind
}

#[test]
fn deleting_the_last_lines_fails_verification() {
    let (_d, log, witness) = witnessed(5);
    assert!(log.verify_with(&witness).unwrap().is_ok());
    let kept = lines(&log)[..3].to_vec();
    write_lines(&log, &kept);
    // The chain alone still verifies: that is the hole the witness closes.
    assert!(log.verify().unwrap().is_ok());
    let p = log.verify_with(&witness).unwrap().problem.unwrap();
    assert_eq!(
        (p.line, p.kind),
        (
            4,
            ProblemKind::Truncated {
                witnessed: 5,
                last: 3
            }
        )
    );
}

#[test]
fn emptying_or_deleting_the_log_fails_verification() {
    let (_d, log, witness) = witnessed(2);
    fs::write(log.path(), "").unwrap();
    assert_eq!(
        problem(&log, &witness),
        ProblemKind::Truncated {
            witnessed: 2,
            last: 0
        }
    );
    fs::remove_file(log.path()).unwrap();
    assert_eq!(
        problem(&log, &witness),
        ProblemKind::Truncated {
            witnessed: 2,
            last: 0
        }
    );
}

#[test]
fn rewritten_end_with_recomputed_hashes_fails_verification() {
    let (_d, log, witness) = witnessed(3);
    // Cut the last event and append a different one: a consistent chain of the same length.
    let kept = lines(&log)[..2].to_vec();
    write_lines(&log, &kept);
    log.record(&AuditEvent::new(EventKind::Decision, 9, "forged"))
        .unwrap();
    assert!(log.verify().unwrap().is_ok());
    let p = log.verify_with(&witness).unwrap().problem.unwrap();
    assert_eq!(
        (p.line, p.seq, p.kind),
        (3, Some(3), ProblemKind::HeadMismatch)
    );
}

#[test]
fn forged_pruning_anchor_is_refused() {
    let (_d, log, witness) = witnessed(4);
    let all = lines(&log);
    // Cut the first two events and put an anchor in front that the chain accepts.
    let third: Value = serde_json::from_str(&all[2]).unwrap();
    let mut anchor = json!({"v": 1, "kind": "anchor", "time": "2026-01-01T00:00:00.000Z", "time_ms": 0,
                            "next_seq": 3, "prev": third["prev"], "pruned_events": 2});
    let hash = jsonrpc::sha256_hex(audit::canonical_json(&anchor).as_bytes());
    anchor["hash"] = hash.into();
    let mut forged = vec![audit::canonical_json(&anchor)];
    forged.extend(all[2..].iter().cloned());
    write_lines(&log, &forged);
    assert!(log.verify().unwrap().is_ok(), "the chain alone accepts it");
    let p = log.verify_with(&witness).unwrap().problem.unwrap();
    assert_eq!((p.line, p.kind), (1, ProblemKind::UnknownAnchor));
}

#[test]
fn a_genuine_prune_verifies_against_the_witness() {
    let (_d, log, mut witness) = witnessed(5);
    let mut recorded: Vec<Anchor> = Vec::new();
    let plan = log
        .prune_witnessed(2, PruneMode::Apply, 5_000, &witness, |a| {
            recorded.push(a.clone());
            Ok(())
        })
        .unwrap();
    assert_eq!(plan.anchor.as_ref(), recorded.first());
    witness.anchors = recorded.iter().map(|a| a.hash.clone()).collect();
    let r = log.verify_with(&witness).unwrap();
    assert!(r.is_ok() && r.anchored && r.events == 2, "{r:?}");
    // Pruning everything keeps the head provable through the anchor alone.
    let plan = log
        .prune_witnessed(0, PruneMode::Apply, 6_000, &witness, |a| {
            recorded.push(a.clone());
            Ok(())
        })
        .unwrap();
    assert_eq!(plan.removed, 2);
    witness.anchors = recorded.iter().map(|a| a.hash.clone()).collect();
    assert!(log.verify_with(&witness).unwrap().is_ok());
}

#[test]
fn prune_whose_anchor_cannot_be_recorded_changes_nothing() {
    let (_d, log, witness) = witnessed(3);
    let before = lines(&log);
    let err = log
        .prune_witnessed(1, PruneMode::Apply, 1, &witness, |_| {
            Err(Error::Io(std::io::Error::other(
                "state database unavailable",
            )))
        })
        .unwrap_err();
    assert!(matches!(err, Error::Io(_)));
    assert_eq!(lines(&log), before);
}

#[test]
fn append_after_truncation_is_refused() {
    let (_d, log, witness) = witnessed(3);
    let kept = lines(&log)[..1].to_vec();
    write_lines(&log, &kept);
    let err = log
        .append_checked(
            &[AuditEvent::new(EventKind::Decision, 1, "after")],
            witness.head.as_ref(),
        )
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Witness(ProblemKind::Truncated {
                witnessed: 3,
                last: 1
            })
        ),
        "{err}"
    );
    assert!(log.check_head(witness.head.as_ref()).is_err());
    assert_eq!(lines(&log).len(), 1, "nothing was appended after the cut");
}

#[test]
fn append_after_another_writer_is_accepted() {
    // Another process (the admin CLI recording an approval) may append past this writer's head.
    let (_d, log, witness) = witnessed(2);
    log.record(&AuditEvent::new(EventKind::Approval, 5, "cli"))
        .unwrap();
    let head = log
        .append_checked(
            &[AuditEvent::new(EventKind::Decision, 6, "gw")],
            witness.head.as_ref(),
        )
        .unwrap();
    assert_eq!(head.seq, 4);
    assert!(log
        .verify_with(&Witness {
            head: Some(head),
            anchors: vec![]
        })
        .unwrap()
        .is_ok());
}

#[test]
fn torn_tail_is_recovered_by_setting_the_log_aside() {
    let (dir, log, mut witness) = witnessed(3);
    let mut text = fs::read_to_string(log.path()).unwrap();
    text.push_str("{\"kind\":\"exec"); // a crash mid-write
    fs::write(log.path(), &text).unwrap();
    let mut anchors = Vec::new();
    let recovery = log
        .recover(&witness, 7_000, |a| {
            anchors.push(a.hash.clone());
            Ok(())
        })
        .unwrap()
        .expect("a damaged log is recovered");
    assert_eq!(
        fs::read_to_string(&recovery.set_aside).unwrap(),
        text,
        "nothing is destroyed"
    );
    assert!(recovery.set_aside.starts_with(dir.path()));
    assert_eq!(
        recovery.anchor.next_seq, 4,
        "the new log continues from the witnessed head"
    );
    witness.anchors = anchors;
    assert!(log.verify_with(&witness).unwrap().is_ok());
    let head = log
        .append_checked(
            &[AuditEvent::new(EventKind::Decision, 8, "next")],
            witness.head.as_ref(),
        )
        .unwrap();
    assert_eq!(head.seq, 4);
    witness.head = Some(head);
    assert!(log.verify_with(&witness).unwrap().is_ok());
    // A log that verifies has nothing to recover.
    assert!(log.recover(&witness, 9_000, |_| Ok(())).unwrap().is_none());
}

#[test]
fn head_is_reported_after_a_batch() {
    let (_d, log, _) = witnessed(0);
    let batch: Vec<_> = (0..3)
        .map(|i| AuditEvent::new(EventKind::Decision, i, "b"))
        .collect();
    let head: Head = log.append_checked(&batch, None).unwrap();
    let last: Value = serde_json::from_str(lines(&log).last().unwrap()).unwrap();
    assert_eq!((head.seq, json!(head.hash)), (3, last["hash"].clone()));
}
