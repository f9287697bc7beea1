//! The audit writer's part in the state database: batches of reporting events written with the witnessed head
//! (`record_written`), as a gateway writes them behind its calls. Prints the process's CPU time per event.
//!
//! Run: `cargo run --release -p store --example report_batches -- 40000 64` (events, events per batch).

#![allow(clippy::unwrap_used, clippy::print_stdout)]

mod common;

use std::time::Instant;
use store::{AuditHead, Decision, Namespace, ReportEvent, Store, Timestamp};

fn event(i: usize) -> ReportEvent {
    ReportEvent {
        time: Timestamp::now(),
        trace_id: format!("{i:024x}"),
        profile: "default".into(),
        principal: None,
        server: "fixture".into(),
        tool: "echo".into(),
        operation: "unknown".into(),
        decision: Decision::Allow,
        reason_code: "RULE_ALLOW".into(),
        rule: Some("allow echo at toolgate.json:3".into()),
        outcome: "SUCCEEDED".into(),
        duration_ms: Some(1),
        wait_ms: None,
        error_class: None,
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(40_000, |a| a.parse().unwrap());
    let batch: usize = args.next().map_or(64, |a| a.parse().unwrap()).max(1);
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let ns = Namespace::open(&dir.path().join("state"), &ws).unwrap();
    let mut store = Store::open(&ns).unwrap();
    let events: Vec<ReportEvent> = (0..n).map(event).collect();
    let (c0, t0) = (common::cpu(), Instant::now());
    for (seq, chunk) in events.chunks(batch).enumerate() {
        let head = AuditHead {
            seq: seq as u64 + 1,
            hash: format!("{seq:064x}"),
        };
        store
            .record_written(chunk, &head, Timestamp::now())
            .unwrap();
    }
    let (c1, t1) = (common::cpu(), t0.elapsed());
    println!(
        "{n} events in batches of {batch}: cpu {:.2} µs per event, wall {:.2} µs per event",
        (c1 - c0) * 1e6 / n as f64,
        t1.as_secs_f64() * 1e6 / n as f64
    );
}
