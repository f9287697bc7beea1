//! `toolgate audit tail | verify | prune` and `toolgate report` over events recorded through the libraries.

use super::Env;
use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use store::Timestamp;

fn record_audit_events(env: &Env, n: usize) {
    let log = env.audit_log();
    for i in 0..n {
        let mut e = audit::AuditEvent::new(
            audit::EventKind::Execution,
            1_796_000_000_000 + i as i64,
            "tr",
        );
        e.server = "fs".into();
        e.tool = "read_file".into();
        e.operation = "fs.read".into();
        e.decision = Some("allow".into());
        e.outcome = Some("SUCCEEDED".into());
        log.record(&e).unwrap();
    }
}

#[test]
fn audit_verify_passes_on_a_fresh_log_and_names_an_edited_line() {
    let env = Env::new();
    let empty = env.run(&["audit", "verify"]);
    assert_eq!(empty.code, 0, "{}", empty.stderr);
    assert!(
        empty.stdout.contains("ok: 0 events verified"),
        "{}",
        empty.stdout
    );
    record_audit_events(&env, 3);
    let ok = env.run(&["audit", "verify"]);
    assert_eq!(ok.code, 0);
    assert!(ok.stdout.contains("ok: 3 events verified"), "{}", ok.stdout);

    let path = env.audit_log().path().to_path_buf();
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines[1] = lines[1].replace("fs.read", "fs.wipe");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let broken = env.run(&["audit", "verify"]);
    assert_eq!(broken.code, 1);
    assert!(
        broken.stdout.contains("FAILED at line 2 (seq 2)"),
        "{}",
        broken.stdout
    );
}

#[test]
fn audit_tail_and_prune() {
    let env = Env::new();
    record_audit_events(&env, 3);
    let tail = env.run(&["audit", "tail", "-n", "2"]);
    assert_eq!(tail.code, 0, "{}", tail.stderr);
    let lines: Vec<&str> = tail.stdout.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(
        lines[0].starts_with("#2 2026-")
            && lines[0].contains(" execution allow fs/read_file fs.read SUCCEEDED "),
        "{}",
        lines[0]
    );
    let json = env.run(&["audit", "tail", "--json"]);
    let seqs: Vec<u64> = json
        .stdout
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["seq"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(seqs, [1, 2, 3]);

    let before = std::fs::read(env.audit_log().path()).unwrap();
    let dry = env.run(&["audit", "prune", "--keep-last", "1"]);
    assert!(
        dry.stdout.starts_with("would remove 2 of 3 events"),
        "{}",
        dry.stdout
    );
    assert_eq!(std::fs::read(env.audit_log().path()).unwrap(), before);
    let applied = env.run(&["audit", "prune", "--keep-last", "1", "--apply"]);
    assert_eq!(applied.stdout, "removed 2 of 3 events; kept the newest 1\n");
    assert_eq!(env.run(&["audit", "verify"]).code, 0);
    let rest = env.run(&["audit", "tail"]);
    assert!(
        rest.stdout.starts_with("#3 ") && rest.stdout.lines().count() == 1,
        "{}",
        rest.stdout
    );
}

#[test]
fn report_renders_table_json_and_csv() {
    let env = Env::new();
    let now = Timestamp::now();
    let mut store = env.store();
    // One call waited a minute for a human: 20 ms of its own, reported apart from the wait.
    for (server, outcome, ms, wait_ms, age_ms) in [
        ("fs", "SUCCEEDED", 10, None, 0),
        ("fs", "FAILED", 30, None, 0),
        ("fs", "SUCCEEDED", 60_020, Some(60_000), 0),
        ("git", "SUCCEEDED", 5, None, 0),
        ("old", "SUCCEEDED", 1, None, 3 * 86_400_000),
    ] {
        store
            .record_event(&store::ReportEvent {
                time: Timestamp::from_millis(now.as_millis() - age_ms),
                trace_id: "t".into(),
                profile: "dev".into(),
                principal: None,
                server: server.into(),
                tool: "t".into(),
                operation: "fs.read".into(),
                decision: match wait_ms {
                    Some(_) => store::Decision::Ask,
                    None => store::Decision::Allow,
                },
                reason_code: match wait_ms {
                    Some(_) => "RULE_ASK".into(),
                    None => "RULE_ALLOW".into(),
                },
                outcome: outcome.into(),
                duration_ms: Some(ms),
                wait_ms,
                rule: None,
                error_class: None,
            })
            .unwrap();
    }
    let table = env.run(&["report", "--group-by", "server", "--since", "24h"]);
    assert_eq!(table.code, 0, "{}", table.stderr);
    insta::assert_snapshot!("report_table_by_server", table.stdout);
    let json = env.run(&["report", "--group-by", "decision", "--format", "json"]);
    let v: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(
        (&v["group_by"], &v["rows"][0]["key"], &v["rows"][0]["count"]),
        (&json!("decision"), &json!("allow"), &json!(4))
    );
    let since = Timestamp::from_millis(now.as_millis() - 86_400_000).to_rfc3339();
    let csv = env.run(&[
        "report",
        "--group-by",
        "tool",
        "--format",
        "csv",
        "--since",
        &since,
    ]);
    assert_eq!(
        csv.stdout,
        "group,count,succeeded,success_rate,p50_ms,p95_ms,p99_ms,waited,wait_p50_ms,wait_p95_ms,top_reasons\r\n\
         fs/t,3,2,0.6667,20,30,30,1,60000,60000,RULE_ALLOW:2;RULE_ASK:1\r\n\
         git/t,1,1,1.0000,5,5,5,0,-,-,RULE_ALLOW:1\r\n"
    );
    let bad = env.run(&["report", "--group-by", "server", "--since", "yesterday"]);
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("neither a span"), "{}", bad.stderr);
}
