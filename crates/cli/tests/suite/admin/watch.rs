//! `toolgate approvals watch` driven through stdin by a script that holds the operator key: a request arriving
//! while it runs, and typed-ahead input.

use super::Env;
use serde_json::json;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use store::ApprovalStatus;

/// A running `approvals watch` whose stdout lines arrive on a channel.
struct Watch {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Watch {
    fn start(env: &Env) -> Self {
        let key = crate::support::operator_key(&env.state);
        let mut child = env
            .command(&[
                "approvals",
                "watch",
                "--operator-key",
                key.to_str().unwrap(),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let mut watch = Self { child, lines };
        watch.wait_for(|l| l.starts_with("watching approval requests"));
        watch
    }

    fn wait_for(&mut self, want: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if want(&line) => return line,
                Ok(_) => {}
                Err(e) => {
                    let _ = self.child.kill();
                    panic!("watch did not print the expected line: {e}");
                }
            }
        }
    }

    fn type_and_close(&mut self, input: &[u8]) {
        let mut stdin = self.child.stdin.take().unwrap();
        stdin.write_all(input).unwrap();
    }

    fn exits(mut self) -> i32 {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code().unwrap_or(-1);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        panic!("watch did not exit at end of input");
    }
}

#[test]
fn watch_approves_a_request_that_arrives_while_it_runs() {
    let env = Env::new();
    let mut watch = Watch::start(&env);
    let a = env.request(json!({"path": "late.txt"}));
    watch.wait_for(|l| l == format!("request     {}", a.id));
    watch.wait_for(|l| l == r#"  path = "late.txt""#);
    watch.type_and_close(b"a\nAPPROVE\n");
    watch.wait_for(|l| l == format!("APPROVED {} by alice", a.id));
    assert_eq!(watch.exits(), 0);
    assert_eq!(env.status(&a.id), ApprovalStatus::Approved);
}

#[test]
fn watch_ignores_answers_typed_before_the_request_was_shown() {
    let env = Env::new();
    let mut watch = Watch::start(&env);
    let mut stdin = watch.child.stdin.take().unwrap();
    stdin.write_all(b"a\nAPPROVE\n").unwrap();
    stdin.flush().unwrap();
    // Let the typed-ahead lines reach the watcher before the request exists.
    std::thread::sleep(Duration::from_millis(300));
    let a = env.request(json!({}));
    watch.wait_for(|l| l == format!("request     {}", a.id));
    drop(stdin);
    assert_eq!(watch.exits(), 0);
    assert_eq!(env.status(&a.id), ApprovalStatus::Pending);
}

#[test]
fn watch_shows_the_live_request_before_a_stale_backlog() {
    let env = Env::new();
    // An old request whose call is gone, then one whose call is held waiting right now.
    let stale = env.request(json!({"path": "old.txt"}));
    let now = store::Timestamp::now();
    let args = super::snapshot(json!({"path": "live.txt"}));
    let live = env
        .store()
        .create_held_request(&store::NewRequest {
            trace_id: "trace-live",
            snapshot: &args,
            session_id: Some("session-1"),
            owner: None,
            now,
            held_until: now.plus_millis(120_000),
            expires_at: now.plus_millis(600_000),
        })
        .unwrap();
    let mut watch = Watch::start(&env);
    let first = watch.wait_for(|l| l.starts_with("LIVE:") || l.starts_with("STALE:"));
    assert!(first.starts_with("LIVE: a call is waiting"), "{first}");
    watch.wait_for(|l| l == format!("request     {}", live.id));
    let mut stdin = watch.child.stdin.take().unwrap();
    stdin.write_all(b"s\n").unwrap();
    stdin.flush().unwrap();
    let second = watch.wait_for(|l| l.starts_with("LIVE:") || l.starts_with("STALE:"));
    assert!(second.starts_with("STALE: no call is waiting"), "{second}");
    assert!(second.contains(" ago"), "the age is shown: {second}");
    watch.wait_for(|l| l == format!("request     {}", stale.id));
    drop(stdin);
    assert_eq!(watch.exits(), 0);
}
