//! Reporting events: aggregation, percentiles, rendering, retention, and the absence of
//! any place to store payloads.

use pretty_assertions::assert_eq;
use rusqlite::Connection;
use store::{Decision, GroupBy, ReportEvent, ReportFormat, Retention, Timestamp};

use crate::support::{Env, DAY, T0};

fn event(
    server: &str,
    tool: &str,
    decision: Decision,
    outcome: &str,
    ms: Option<u64>,
) -> ReportEvent {
    ReportEvent {
        time: T0,
        trace_id: "t".into(),
        profile: "dev".into(),
        principal: None,
        server: server.into(),
        tool: tool.into(),
        operation: "fs.read".into(),
        decision,
        reason_code: match decision {
            Decision::Allow => "RULE_ALLOW".into(),
            Decision::Ask => "RULE_ASK".into(),
            Decision::Deny => "DEFAULT_DENY".into(),
        },
        outcome: outcome.into(),
        duration_ms: ms,
        wait_ms: None,
        rule: None,
        error_class: None,
    }
}

/// `ask` latency used to include the human's wait: a call held a minute for a human read as a minute-long call.
/// The wait is reported apart, with percentiles of its own over the calls that waited, and the latency is the
/// rest; an event written before waits were recorded counts whole as latency.
#[test]
fn a_human_wait_is_reported_apart_from_the_calls_own_time() {
    let env = Env::new();
    let mut s = env.store();
    let asked = |total: u64, wait: u64| ReportEvent {
        wait_ms: Some(wait),
        ..event("fs", "write_file", Decision::Ask, "SUCCEEDED", Some(total))
    };
    for (total, wait) in [(60_012, 60_000), (5_020, 5_000), (90_011, 90_000)] {
        s.record_event(&asked(total, wait)).unwrap();
    }
    // Allowed calls never waited; an older event has no wait recorded.
    s.record_event(&event(
        "fs",
        "write_file",
        Decision::Allow,
        "SUCCEEDED",
        Some(9),
    ))
    .unwrap();
    s.record_event(&event(
        "fs",
        "write_file",
        Decision::Ask,
        "SUCCEEDED",
        Some(14),
    ))
    .unwrap();
    let r = s.report(GroupBy::Tool, None).unwrap();
    let row = &r.rows[0];
    assert_eq!(
        (row.count, row.p50_ms, row.p95_ms, row.p99_ms),
        (5, Some(12), Some(20), Some(20))
    );
    assert_eq!(
        (row.waited, row.wait_p50_ms, row.wait_p95_ms),
        (3, Some(60_000), Some(90_000))
    );
    let table = r.render(ReportFormat::Table).unwrap();
    insta::assert_snapshot!("report_with_human_waits", table);
}

/// A report names rules as refusals do, with where they are written; calls no rule decided are `-`.
#[test]
fn a_report_groups_by_the_rule_that_decided() {
    let env = Env::new();
    let mut s = env.store();
    let by = |rule: Option<&str>| ReportEvent {
        rule: rule.map(str::to_owned),
        ..event("fs", "read_file", Decision::Deny, "DENIED", None)
    };
    for rule in [
        Some("Read(**/.env) at toolgate.json:6"),
        Some("Read(**/.env) at toolgate.json:6"),
        None,
    ] {
        s.record_event(&by(rule)).unwrap();
    }
    let r = s.report(GroupBy::Rule, None).unwrap();
    let rows: Vec<(&str, u64)> = r.rows.iter().map(|r| (r.key.as_str(), r.count)).collect();
    assert_eq!(rows, [("Read(**/.env) at toolgate.json:6", 2), ("-", 1)]);
}

#[test]
fn report_groups_counts_rates_and_percentiles() {
    let env = Env::new();
    let mut s = env.store();
    for ms in 1..=20 {
        s.record_event(&event(
            "fs",
            "read_file",
            Decision::Allow,
            "SUCCEEDED",
            Some(ms * 10),
        ))
        .unwrap();
    }
    s.record_event(&event("fs", "write_file", Decision::Deny, "DENIED", None))
        .unwrap();
    s.record_event(&event("git", "status", Decision::Allow, "FAILED", Some(7)))
        .unwrap();

    let r = s.report(GroupBy::Server, None).unwrap();
    assert_eq!(r.rows.len(), 2);
    let fs_row = &r.rows[0];
    assert_eq!(fs_row.key, "fs");
    assert_eq!(fs_row.count, 21);
    assert_eq!(fs_row.succeeded, 20);
    assert!((fs_row.success_rate - 20.0 / 21.0).abs() < 1e-9);
    // Nearest rank over 20 durations 10..=200: p50 → rank 10, p95 → rank 19, p99 → rank 20.
    assert_eq!(fs_row.p50_ms, Some(100));
    assert_eq!(fs_row.p95_ms, Some(190));
    assert_eq!(fs_row.p99_ms, Some(200));
    assert_eq!(fs_row.top_reasons[0].reason_code, "RULE_ALLOW");
    assert_eq!(fs_row.top_reasons[0].count, 20);
    assert_eq!(fs_row.top_reasons[1].reason_code, "DEFAULT_DENY");

    let by_tool = s.report(GroupBy::Tool, None).unwrap();
    let keys: Vec<&str> = by_tool.rows.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(keys, vec!["fs/read_file", "fs/write_file", "git/status"]);

    let by_decision = s.report(GroupBy::Decision, None).unwrap();
    let keys: Vec<&str> = by_decision.rows.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(keys, vec!["allow", "deny"]);

    for f in [ReportFormat::Table, ReportFormat::Json, ReportFormat::Csv] {
        assert!(r.render(f).unwrap().contains("fs"));
    }
}

#[test]
fn report_since_excludes_older_events() {
    let env = Env::new();
    let mut s = env.store();
    let mut old = event("fs", "read_file", Decision::Allow, "SUCCEEDED", Some(1));
    old.time = T0.plus_millis(-DAY);
    s.record_event(&old).unwrap();
    s.record_event(&event(
        "git",
        "status",
        Decision::Allow,
        "SUCCEEDED",
        Some(1),
    ))
    .unwrap();
    let r = s.report(GroupBy::Profile, Some(T0)).unwrap();
    assert_eq!(r.rows.len(), 1);
    assert_eq!(r.rows[0].count, 1);
}

#[test]
fn reporting_schema_has_no_payload_columns() {
    let env = Env::new();
    let ns = env.namespace();
    drop(store::Store::open(&ns).unwrap());
    let conn = Connection::open(ns.db_path()).unwrap();
    let mut stmt = conn
        .prepare("SELECT name FROM pragma_table_info('report_events')")
        .unwrap();
    let cols: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        cols,
        vec![
            "id",
            "time_ms",
            "trace_id",
            "profile",
            "server",
            "tool",
            "operation",
            "decision",
            "reason_code",
            "outcome",
            "duration_ms",
            "error_class",
            "principal",
            "wait_ms",
            "rule"
        ]
    );
}

#[test]
fn secret_text_in_reason_or_error_class_is_not_stored() {
    let env = Env::new();
    let ns = env.namespace();
    let mut s = store::Store::open(&ns).unwrap();
    let mut e = event("fs", "read_file", Decision::Deny, "FAILED", None);
    e.reason_code = "token=ghp_abcdefghijklmnopqrstuvwxyz0123456789".into();
    e.error_class = Some("IOError: cannot open /home/alice/.aws/credentials".into());
    s.record_event(&e).unwrap();
    let conn = Connection::open(ns.db_path()).unwrap();
    let (reason, class): (String, String) = conn
        .query_row(
            "SELECT reason_code, error_class FROM report_events",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((reason.as_str(), class.as_str()), ("INVALID", "INVALID"));
}

#[test]
fn retention_by_age_and_count() {
    let env = Env::new();
    let mut s = env.store();
    for i in 0..10 {
        let mut e = event("fs", "read_file", Decision::Allow, "SUCCEEDED", Some(1));
        e.time = Timestamp::from_millis(T0.as_millis() - i * DAY);
        s.record_event(&e).unwrap();
    }
    let by_age = Retention {
        max_age_days: Some(5),
        max_events: None,
    };
    // Events at 0..=5 days old are kept (strictly older than the cutoff go).
    assert_eq!(s.apply_retention(&by_age, T0).unwrap(), 4);
    assert_eq!(s.event_count().unwrap(), 6);
    let by_count = Retention {
        max_age_days: None,
        max_events: Some(2),
    };
    assert_eq!(s.apply_retention(&by_count, T0).unwrap(), 4);
    let r = s
        .report(GroupBy::Server, Some(T0.plus_millis(-DAY)))
        .unwrap();
    assert_eq!(r.rows[0].count, 2, "the newest events are the ones kept");
}

/// An HTTP caller's calls are reported under its identity; stdio's under none.
#[test]
fn report_events_name_the_caller() {
    let env = Env::new();
    let ns = env.namespace();
    let mut s = env.store();
    let mut by_key = event("fs", "read", Decision::Allow, "SUCCEEDED", Some(3));
    by_key.principal = Some("key:ci".into());
    s.record_event(&by_key).unwrap();
    s.record_event(&event("fs", "read", Decision::Allow, "SUCCEEDED", Some(3)))
        .unwrap();
    drop(s);
    let conn = Connection::open(ns.db_path()).unwrap();
    let mut stmt = conn
        .prepare("SELECT principal FROM report_events ORDER BY id")
        .unwrap();
    let principals: Vec<Option<String>> = stmt
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(principals, vec![Some("key:ci".to_owned()), None]);
}

/// A written batch goes in rows of several per statement and the rest one by one: every event of both shapes is
/// stored, in order, with the same sanitising (free text in a token field replaced, a long name cut).
#[test]
fn a_batch_of_events_is_stored_whole_in_order_and_sanitised_in_both_statement_shapes() {
    let env = Env::new();
    let mut s = env.store();
    let events: Vec<ReportEvent> = (0..37u64)
        .map(|i| {
            let mut e = event(
                "fs",
                &format!("tool_{i:02}"),
                Decision::Allow,
                "SUCCEEDED",
                Some(i),
            );
            if i % 5 == 0 {
                e.reason_code = "the secret is hunter2".into();
                e.trace_id = "x".repeat(300);
                e.error_class = Some("not a token either".into());
                e.rule = Some("r".repeat(200));
            }
            e
        })
        .collect();
    s.record_events(&events).unwrap();
    let stored = s.export_events(None, 1_000).unwrap();
    assert_eq!(stored.len(), 37);
    for (i, e) in stored.iter().enumerate() {
        assert_eq!(e.tool, format!("tool_{i:02}"));
        assert_eq!(e.duration_ms, Some(i as u64));
        if i % 5 == 0 {
            assert_eq!(e.reason_code, "INVALID");
            assert_eq!(e.trace_id, "x".repeat(128));
            assert_eq!(e.error_class.as_deref(), Some("INVALID"));
            assert_eq!(e.rule.as_deref(), Some("r".repeat(128).as_str()));
        } else {
            assert_eq!(e.reason_code, "RULE_ALLOW");
            assert_eq!(e.trace_id, "t");
        }
    }
}
