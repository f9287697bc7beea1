//! The state's audit path: a flood past the queue, a writer that stalls, and logs cut, torn or pruned.

use super::*;
use audit::{EventKind, ProblemKind};
use std::time::{Duration, Instant};

fn open(dir: &tempfile::TempDir, capacity: usize) -> State {
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    State::open_with_queue(
        &dir.path().join("state"),
        &ws,
        capacity,
        Duration::from_secs(30),
    )
    .unwrap()
}

fn event(i: usize) -> AuditEvent {
    AuditEvent::new(EventKind::Decision, i as i64, &format!("t{i}"))
}

fn lines(state: &State) -> Vec<String> {
    std::fs::read_to_string(state.audit_log().path())
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn cut_to(state: &State, keep: usize) {
    let text: String = lines(state)[..keep]
        .iter()
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(state.audit_log().path(), text).unwrap();
}

/// The writer clears or sets the problem on its own schedule; wait for it, boundedly.
fn eventually(state: &State, want_problem: bool) -> Option<String> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let p = state.audit_problem();
        if p.is_some() == want_problem || Instant::now() > deadline {
            return p;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn audit_flood_past_the_queue_waits_instead_of_dropping() {
    let dir = tempfile::tempdir().unwrap();
    let state = open(&dir, 4);
    for i in 0..2_000 {
        state.audit(event(i));
    }
    state.flush();
    assert_eq!(lines(&state).len(), 2_000, "every record is written");
    assert_eq!(state.audit_failures(), 0);
    assert!(state.verify_audit().unwrap().is_ok());
}

#[test]
fn truncated_audit_log_is_caught_at_start_and_by_verify() {
    let dir = tempfile::tempdir().unwrap();
    let state = open(&dir, 16);
    for i in 0..3 {
        state.audit(event(i));
    }
    state.flush();
    assert_eq!(state.audit_problem(), None);
    cut_to(&state, 1);
    drop(state);
    let state = open(&dir, 16);
    let problem = state.audit_problem().expect("refused from the start");
    assert!(problem.contains("sequence 3 was written"), "{problem}");
    let report = state.verify_audit().unwrap();
    assert_eq!(
        report.problem.unwrap().kind,
        ProblemKind::Truncated {
            witnessed: 3,
            last: 1
        }
    );
}

#[test]
fn torn_audit_tail_refuses_calls_until_recovered() {
    let dir = tempfile::tempdir().unwrap();
    let state = open(&dir, 16);
    state.audit(event(0));
    state.flush();
    let log_path = state.audit_log().path().to_path_buf();
    drop(state);
    let mut text = std::fs::read_to_string(&log_path).unwrap();
    text.push_str("{\"kind\":\"exec"); // a crash mid-write
    std::fs::write(&log_path, text).unwrap();
    let state = open(&dir, 16);
    assert!(state.audit_problem().is_some(), "a torn tail stops calls");
    let recovery = state.recover_audit().unwrap().expect("recovered");
    assert_eq!(recovery.anchor.next_seq, 2);
    assert_eq!(eventually(&state, false), None, "calls resume");
    state.audit(event(1));
    state.flush();
    assert!(state.verify_audit().unwrap().is_ok());
}

#[test]
fn audit_write_failure_while_running_holds_the_record_and_refuses_until_repaired() {
    let dir = tempfile::tempdir().unwrap();
    let state = open(&dir, 16);
    for i in 0..3 {
        state.audit(event(i));
    }
    state.flush();
    cut_to(&state, 2);
    state.audit(event(3));
    let problem = eventually(&state, true).expect("the failed write is published");
    assert!(problem.contains("audit write failed"), "{problem}");
    state.recover_audit().unwrap().expect("recovered");
    assert_eq!(eventually(&state, false), None);
    state.flush();
    // The record that could not be written at first is down now, after the recovery anchor.
    let all = lines(&state);
    assert_eq!(all.len(), 2, "{all:?}");
    assert!(all[1].contains("\"trace_id\":\"t3\""), "{all:?}");
    assert!(state.verify_audit().unwrap().is_ok());
}

#[test]
fn log_pruned_before_the_witness_existed_is_adopted_not_reported_as_forged() {
    let dir = tempfile::tempdir().unwrap();
    let log_path = {
        let state = open(&dir, 16);
        state.audit_log().path().to_path_buf()
    };
    // Written and pruned by the library alone, as an older version did: no witness recorded.
    let log = AuditLog::new(log_path.parent().unwrap());
    for i in 0..4 {
        log.record(&event(i)).unwrap();
    }
    log.prune_keep_last(2, PruneMode::Apply, 1).unwrap();
    // A state database that never saw a head adopts the verified log, anchor included; without that, the
    // first new record would make the old anchor look forged.
    let state = open(&dir, 16);
    let report = state.verify_audit().unwrap();
    assert!(report.is_ok(), "{report}");
    state.audit(event(9));
    state.flush();
    let report = state.verify_audit().unwrap();
    assert!(
        report.is_ok() && report.anchored && report.events == 3,
        "{report}"
    );
}

/// A writer that hangs (a disk that stops answering) makes callers wait for room, but only for the bound: then
/// calls are refused with a clear reason, and every record, including the ones queued past the bound, is
/// written once the writer resumes.
#[test]
fn stalled_audit_writer_bounds_the_wait_refuses_calls_and_loses_nothing() {
    const RECORDS: usize = 200;
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let wait = Duration::from_millis(300);
    let state = State::open_with_queue(&dir.path().join("state"), &ws, 4, wait).unwrap();
    state.stall_writer(true);
    let started = Instant::now();
    for i in 0..RECORDS {
        state.audit(event(i));
    }
    let took = started.elapsed();
    let problem = state
        .audit_problem()
        .expect("a stalled writer refuses calls");
    assert!(problem.contains("stalled"), "{problem}");
    assert!(
        took >= wait,
        "the queue was full, so a caller waited ({took:?})"
    );
    // Once the stall is known, the records of calls already running are queued without a wait each.
    assert!(took < wait * 10, "{took:?} for {RECORDS} records");
    assert!(state.audit_waits() >= 1);
    state.stall_writer(false);
    assert_eq!(eventually(&state, false), None, "calls resume");
    state.flush();
    assert_eq!(lines(&state).len(), RECORDS, "no record lost");
    assert!(state.verify_audit().unwrap().is_ok());
}

/// The wait for room works on both runtime flavours, from inside a task.
async fn flood_from_a_task() {
    let dir = tempfile::tempdir().unwrap();
    let state = Arc::new(open(&dir, 2));
    let s = Arc::clone(&state);
    tokio::spawn(async move {
        for i in 0..300 {
            s.audit(event(i));
        }
    })
    .await
    .unwrap();
    state.flush();
    assert_eq!(lines(&state).len(), 300);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_flood_waits_on_a_multi_threaded_runtime() {
    flood_from_a_task().await;
}

#[tokio::test(flavor = "current_thread")]
async fn audit_flood_waits_on_a_current_thread_runtime() {
    flood_from_a_task().await;
}

#[test]
fn a_state_opened_on_another_backend_keeps_all_its_state_there() {
    use store::{ApprovalStore, WitnessStore};
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    // The backend: a database in a namespace of its own, so whatever lands in the state's namespace is a leak.
    let elsewhere = Namespace::open(&dir.path().join("backend"), &ws).unwrap();
    let opened = std::sync::atomic::AtomicUsize::new(0);
    let open = |_: &Namespace| -> Result<Arc<dyn StateStore>, store::Error> {
        opened.fetch_add(1, Ordering::SeqCst);
        Ok(Arc::new(SqliteStore::open(&elsewhere)?))
    };
    let state = State::open_on(&dir.path().join("state"), &ws, None, &open).unwrap();
    assert_eq!(
        opened.load(Ordering::SeqCst),
        2,
        "one handle for calls, one for the writer"
    );
    let now = Timestamp::now();
    let id = state
        .store(|s| s.create_request("t", &serde_json::json!({}), now, now.plus_millis(60_000)))
        .unwrap()
        .id;
    state.audit(event(1));
    state.flush();
    let backend = SqliteStore::open(&elsewhere).unwrap();
    assert!(backend.get_request(&id, now).is_ok());
    assert!(
        backend.audit_head().unwrap().is_some(),
        "the witness is kept there too"
    );
    let own = SqliteStore::open(state.namespace()).unwrap();
    assert!(own.list_requests(None, now).unwrap().is_empty());
    assert_eq!(own.audit_head().unwrap(), None);
}

fn report_event(i: usize) -> ReportEvent {
    ReportEvent {
        time: store::Timestamp::now(),
        trace_id: format!("t{i}"),
        profile: "default".into(),
        principal: None,
        server: "fx".into(),
        tool: "echo".into(),
        operation: "mcp.call".into(),
        decision: store::Decision::Allow,
        reason_code: "ALLOW_RULE".into(),
        outcome: store::OUTCOME_SUCCEEDED.into(),
        duration_ms: Some(1),
        wait_ms: None,
        rule: None,
        error_class: None,
    }
}

/// MCP Unified's `tool_use_reporting.enabled: false`: no reporting events, and the audit log as complete as ever.
#[test]
fn reporting_switched_off_by_the_config_keeps_no_report_events_and_every_audit_record() {
    let dir = tempfile::tempdir().unwrap();
    let state = open(&dir, 64);
    state.report(report_event(0));
    state.flush();
    assert_eq!(state.store(|s| s.event_count()).unwrap(), 1);
    state.set_reporting(false, store::Retention::DEFAULT);
    for i in 1..4 {
        state.report(report_event(i));
        state.audit(event(i));
    }
    state.flush();
    assert_eq!(
        state.store(|s| s.event_count()).unwrap(),
        1,
        "none after it was switched off"
    );
    assert_eq!(lines(&state).len(), 3, "every audit record is written");
}

/// The config's retention is applied, not only the default's.
#[test]
fn the_configs_reporting_retention_prunes_to_its_own_limit() {
    let dir = tempfile::tempdir().unwrap();
    let state = open(&dir, 64);
    for i in 0..5 {
        state.report(report_event(i));
    }
    state.flush();
    assert_eq!(state.store(|s| s.event_count()).unwrap(), 5);
    let retention = store::Retention {
        max_age_days: None,
        max_events: Some(2),
    };
    state.set_reporting(true, retention);
    assert_eq!(state.store(|s| s.event_count()).unwrap(), 2);
}
