//! Evidence fails closed end to end: a gateway whose audit log was cut since it last wrote refuses every call
//! (only `toolgate_status` answers, and says why), `audit verify` names the cut, and `audit recover` lets calls
//! run again without destroying the damaged log.

use crate::support::{call, legacy, text, toolgate, Setup};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

fn audit_cli(setup: &Setup, args: &[&str]) -> (i32, String) {
    let out = Command::new(toolgate())
        .arg("audit")
        .args(args)
        .args(["--config", setup.config.to_str().unwrap()])
        .env("TOOLGATE_STATE_DIR", setup.state_dir())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

/// The one audit log under the state directory.
fn find_log(dir: &Path) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()? {
        let path = entry.ok()?.path();
        if path.is_dir() {
            if let Some(found) = find_log(&path) {
                return Some(found);
            }
        } else if path.file_name().is_some_and(|n| n == "audit.jsonl") {
            return Some(path);
        }
    }
    None
}

async fn lines_at_least(setup: &Setup, n: usize) -> PathBuf {
    for _ in 0..100 {
        if let Some(log) = find_log(&setup.state_dir()) {
            if std::fs::read_to_string(&log)
                .unwrap_or_default()
                .lines()
                .count()
                >= n
            {
                // The witness is committed right after the append (one fsync); leave it ample time on a busy machine.
                tokio::time::sleep(Duration::from_secs(1)).await;
                return log;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the audit log never reached {n} lines");
}

#[tokio::test]
async fn truncated_audit_log_refuses_calls_until_recovered() {
    let setup = Setup::fixture(&[], json!({}));
    let client = legacy(&setup).await;
    let ok = call(&client, "fx__echo", json!({"text": "one"}))
        .await
        .unwrap();
    assert_eq!(text(&ok), "one");
    // A decision and an execution record.
    let log = lines_at_least(&setup, 2).await;
    drop(client);

    // Cut the newest record: the chain alone would still verify.
    let all: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    std::fs::write(&log, format!("{}\n", all[0])).unwrap();
    let (code, out) = audit_cli(&setup, &["verify"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("removed from the end"), "{out}");

    let client = legacy(&setup).await;
    let refused = call(&client, "fx__echo", json!({"text": "two"}))
        .await
        .unwrap();
    assert_eq!(
        refused["structuredContent"]["error"]["code"], "AUDIT_UNAVAILABLE",
        "{refused}"
    );
    let status = call(&client, "toolgate_status", json!({})).await.unwrap();
    assert_eq!(
        status["structuredContent"]["audit"]["state"], "failing",
        "{status}"
    );
    assert!(text(&status).contains("audit: FAILING"), "{status}");

    let (code, out) = audit_cli(&setup, &["recover"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("set the damaged log aside"), "{out}");
    let mut answer = None;
    for _ in 0..50 {
        let r = call(&client, "fx__echo", json!({"text": "three"}))
            .await
            .unwrap();
        if r["structuredContent"]["error"]["code"] != "AUDIT_UNAVAILABLE" {
            answer = Some(r);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let answer = answer.expect("calls resume after recovery");
    assert_eq!(text(&answer), "three", "{answer}");
    drop(client);
    let (code, out) = audit_cli(&setup, &["verify"]);
    assert_eq!(code, 0, "{out}");
}
