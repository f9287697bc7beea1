//! Evidence fails closed end to end: a gateway whose audit log was cut since it last wrote refuses every call
//! (only `toolgate_status` answers, and says why), `audit verify` names the cut, and `audit recover` lets calls
//! run again without destroying the damaged log. With a witness file outside the state root, a cut that also
//! moved the database's head back is caught the same way.

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

/// The attack of an upstream that outlived toolgate with the user's rights: the newest six records cut from the
/// log and the database's head moved back to the new end, so log and database agree. The database's witness
/// alone cannot see it; the witness file outside the state root does, in `audit verify` and at start.
#[tokio::test]
async fn cut_audit_tail_with_rolled_back_head_is_detected() {
    let setup = Setup::with(|dir| {
        std::fs::create_dir_all(dir.join("ws")).unwrap();
        std::fs::create_dir_all(dir.join("elsewhere")).unwrap();
        let config = json!({
            "mcpServers": {"fx": crate::support::fixture(&[])},
            "workspace": dir.join("ws"),
            "permissions": {"default": "allow"},
        });
        // The same gateway as the operator would check it without the witness file.
        std::fs::write(dir.join("unwitnessed.json"), config.to_string()).unwrap();
        let mut config = config;
        config["auditWitness"] = json!(dir.join("elsewhere").join("audit-witness.jsonl"));
        config
    });
    let witness_file = std::fs::canonicalize(setup.dir.path())
        .unwrap()
        .join("elsewhere/audit-witness.jsonl");
    let client = legacy(&setup).await;
    for n in 0..4 {
        let ok = call(&client, "fx__echo", json!({"text": format!("call {n}")}))
            .await
            .unwrap();
        assert_eq!(text(&ok), format!("call {n}"));
    }
    let log = lines_at_least(&setup, 8).await;
    drop(client);
    tokio::time::sleep(Duration::from_millis(500)).await;

    let all: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(all.len() >= 8, "{}", all.len());
    let kept = &all[..all.len() - 6];
    let text_of =
        |lines: &[serde_json::Value]| lines.iter().map(|l| format!("{l}\n")).collect::<String>();
    std::fs::write(&log, text_of(kept)).unwrap();
    let new_end = kept.last().unwrap();
    let ns = store::Namespace::open(&setup.state_dir(), &setup.workspace()).unwrap();
    let db = rusqlite::Connection::open(ns.db_path()).unwrap();
    let moved = db
        .execute(
            "UPDATE audit_head SET seq = ?1, hash = ?2 WHERE id = 1",
            rusqlite::params![
                new_end["seq"].as_i64().unwrap(),
                new_end["hash"].as_str().unwrap()
            ],
        )
        .unwrap();
    assert_eq!(moved, 1, "the database's head was moved back");
    drop(db);

    // Without the witness file the cut is consistent with everything kept in the state directory.
    let unwitnessed = Command::new(toolgate())
        .args(["audit", "verify", "--config"])
        .arg(setup.dir.path().join("unwitnessed.json"))
        .env("TOOLGATE_STATE_DIR", setup.state_dir())
        .output()
        .unwrap();
    assert!(
        unwitnessed.status.success(),
        "the limit the witness file removes: {}",
        String::from_utf8_lossy(&unwitnessed.stderr)
    );

    let (code, out) = audit_cli(&setup, &["verify"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("removed from the end"), "{out}");
    let witnessed = std::fs::read_to_string(&witness_file).unwrap();
    let last = all.last().unwrap();
    assert!(
        witnessed.contains(&format!("\"seq\":{}", last["seq"])),
        "the file saw the head that was cut: {witnessed}"
    );

    // And a gateway started on the cut log refuses calls from the first one.
    let client = legacy(&setup).await;
    let refused = call(&client, "fx__echo", json!({"text": "after the cut"}))
        .await
        .unwrap();
    assert_eq!(
        refused["structuredContent"]["error"]["code"], "AUDIT_UNAVAILABLE",
        "{refused}"
    );
    drop(client);
}

#[test]
fn audit_witness_inside_the_state_root_is_refused() {
    let setup = Setup::with(|dir| {
        std::fs::create_dir_all(dir.join("ws")).unwrap();
        json!({
            "workspace": dir.join("ws"),
            "auditWitness": dir.join("state").join("witness.jsonl"),
        })
    });
    let (code, out) = audit_cli(&setup, &["verify"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("lies inside the state root"), "{out}");
}
