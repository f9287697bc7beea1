//! Throughput of the audit writer behind the calls, and what a call pays when its queue is full. One producer
//! thread queues what a governed call records (a decision and an execution audit event and a reporting event) as
//! fast as it can, through `State`, into a real audit log and a real SQLite store (the witness is advanced once
//! per batch); it measures how long each `audit` and `report` call took and how long until everything is down.
//!
//! Run: `cargo bench -p gateway --bench audit_writer` (optional: `-- --calls 100000`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use audit::{AuditEvent, EventKind};
use gateway::State;
use serde_json::json;
use std::time::Instant;
use store::{ReportEvent, Timestamp};

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn event(kind: EventKind, i: usize) -> AuditEvent {
    let mut e = AuditEvent::new(kind, Timestamp::now().as_millis(), &format!("trace-{i:08}"))
        .with_arguments(&json!({"text": format!("call {i}")}));
    e.profile = "default".into();
    e.server = "fx".into();
    e.tool = "echo".into();
    e.operation = "tool.call".into();
    e.decision = Some("allow".into());
    e.reason_code = Some("ALLOW_RULE".into());
    if kind == EventKind::Execution {
        e = e.with_result(&json!({"content": [{"type": "text", "text": format!("call {i}")}]}));
        e.outcome = Some("SUCCEEDED".into());
        e.duration_ms = Some(1);
    }
    e
}

fn report(i: usize) -> ReportEvent {
    ReportEvent {
        time: Timestamp::now(),
        trace_id: format!("trace-{i:08}"),
        profile: "default".into(),
        principal: None,
        server: "fx".into(),
        tool: "echo".into(),
        operation: "tool.call".into(),
        decision: store::Decision::Allow,
        reason_code: "ALLOW_RULE".into(),
        outcome: store::OUTCOME_SUCCEEDED.into(),
        duration_ms: Some(1),
        wait_ms: None,
        rule: None,
        error_class: None,
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let calls: usize = args
        .iter()
        .position(|a| a == "--calls")
        .and_then(|i| args.get(i + 1))
        .map(|v| v.parse().unwrap())
        .unwrap_or(100_000);
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let state = State::open_in(&dir.path().join("state"), &ws).unwrap();

    // The events are built before the clock starts: what is measured is queuing and writing them.
    let work: Vec<(AuditEvent, AuditEvent, ReportEvent)> = (0..calls)
        .map(|i| {
            (
                event(EventKind::Decision, i),
                event(EventKind::Execution, i),
                report(i),
            )
        })
        .collect();
    let mut waits = Vec::with_capacity(calls * 3);
    let started = Instant::now();
    for (decided, finished, reported) in work {
        let t = Instant::now();
        state.audit(decided);
        waits.push(t.elapsed());
        let t = Instant::now();
        state.audit(finished);
        waits.push(t.elapsed());
        let t = Instant::now();
        state.report(reported);
        waits.push(t.elapsed());
    }
    let queued = started.elapsed();
    state.flush();
    let written = started.elapsed();
    let t = Instant::now();
    let report = state.verify_audit().unwrap();
    let verified = t.elapsed();
    assert!(report.is_ok(), "{report}");
    assert_eq!(report.events, calls as u64 * 2);

    let records = calls * 3;
    let mut us: Vec<f64> = waits.iter().map(|d| d.as_secs_f64() * 1e6).collect();
    us.sort_by(f64::total_cmp);
    let waited = state.audit_waits();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "calls: {calls} (records: {records}: {} audit events, {calls} reporting events)",
        calls * 2
    );
    println!(
        "load average: {}",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!();
    println!("| what | value |");
    println!("|---|---:|");
    println!(
        "| everything written (audit log + SQLite) | {:.2} s |",
        written.as_secs_f64()
    );
    println!(
        "| records/s through the writer | {:.0} |",
        records as f64 / written.as_secs_f64()
    );
    println!(
        "| audit events/s | {:.0} |",
        (calls * 2) as f64 / written.as_secs_f64()
    );
    println!(
        "| producer done queuing after | {:.2} s |",
        queued.as_secs_f64()
    );
    println!("| records that waited for room | {waited} of {records} |");
    println!(
        "| the whole log verified ({} events) | {:.2} s |",
        report.events,
        verified.as_secs_f64()
    );
    println!(
        "| time in `audit`/`report`, p50 | {:.1} µs |",
        percentile(&us, 0.5)
    );
    println!(
        "| time in `audit`/`report`, p99 | {:.1} µs |",
        percentile(&us, 0.99)
    );
    println!(
        "| time in `audit`/`report`, p99.9 | {:.1} µs |",
        percentile(&us, 0.999)
    );
    println!(
        "| time in `audit`/`report`, max | {:.1} µs |",
        us[us.len() - 1]
    );
    let waiting: Vec<f64> = us.iter().copied().filter(|u| *u > 50.0).collect();
    if !waiting.is_empty() {
        println!(
            "| calls over 50 µs (waiting for room): count, mean | {}, {:.0} µs |",
            waiting.len(),
            waiting.iter().sum::<f64>() / waiting.len() as f64
        );
    }
}
