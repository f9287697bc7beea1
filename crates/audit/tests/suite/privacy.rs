//! Raw arguments and results never reach the log; resources and labels are redacted.

use pretty_assertions::assert_eq;
use std::fs;

use audit::{AuditEvent, AuditLog, Digest, EventKind};
use serde_json::json;

#[test]
fn raw_arguments_and_results_never_reach_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::new(dir.path());
    let args = json!({
        "path": "deploy.sh",
        "content": "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "note": "patient record 4711"
    });
    let result = json!({"content": [{"type": "text", "text": "salary: 123456"}]});
    let mut e = AuditEvent::new(EventKind::Execution, 0, "trace-9")
        .with_arguments(&args)
        .with_result(&result);
    e.server = "toolgate".into();
    e.tool = "write_file".into();
    e.operation = "fs.write".into();
    e.resources = vec!["/ws/deploy.sh".into()];
    e.outcome = Some("SUCCEEDED".into());
    e.duration_ms = Some(12);
    log.record(&e).unwrap();

    let text = fs::read_to_string(log.path()).unwrap();
    for leaked in ["wJalrXUtnFEMI", "patient record", "salary", "123456"] {
        assert!(!text.contains(leaked), "{leaked} reached the log");
    }
    let rec = &log.tail(1).unwrap()[0];
    assert_eq!(rec["arguments"]["sha256"], Digest::of_json(&args).sha256);
    assert_eq!(rec["arguments"]["bytes"], Digest::of_json(&args).bytes);
    assert_eq!(rec["result"]["sha256"], Digest::of_json(&result).sha256);
    assert_eq!(rec["resources"], json!(["/ws/deploy.sh"]));
    assert_eq!(rec["duration_ms"], 12);
}

#[test]
fn secrets_in_resources_and_labels_are_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::new(dir.path());
    let mut e = AuditEvent::new(EventKind::Decision, 0, "t");
    e.resources = vec![
        "https://api.example.com/v1/items?api_key=AIzaSyA1234567890abcdefghijklmnopqrstu&page=2"
            .into(),
        "git push https://x:ghp_0123456789abcdefghijABCDEFGHIJ0123@github.com/o/r".into(),
    ];
    e.reason_code = Some("token sk-proj-abcdefghijklmnop1234567890 rejected".into());
    log.record(&e).unwrap();
    let text = fs::read_to_string(log.path()).unwrap();
    for leaked in ["AIzaSyA1234567890", "ghp_0123456789", "sk-proj-abcdef"] {
        assert!(!text.contains(leaked), "{leaked} reached the log");
    }
    assert!(text.contains("page=[REDACTED]"));
    assert!(log.verify().unwrap().is_ok());
}
