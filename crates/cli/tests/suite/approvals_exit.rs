//! toolgate exiting while a call is held for approval: its client goes away (stdin ends) or a signal arrives. It
//! exits promptly, and the held call's approval request is cancelled and recorded, so nobody approves what no one
//! waits for and the audit log says how the call ended.
//!
//! The client here is a raw process driver rather than `StdioClient`, which answers every request toolgate sends:
//! these tests need a question left unanswered.

use crate::support::{fixture, toolgate, Setup};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// How long toolgate may take to exit once its client is gone; it needs well under a second.
const EXIT_WITHIN: Duration = Duration::from_secs(3);

/// A running `toolgate serve` whose one call of `fx__echo` is held for approval.
struct Held {
    setup: Setup,
    state_dir: PathBuf,
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
}

impl Held {
    /// Starts toolgate, initializes (declaring elicitation when `elicitation`), and calls `fx__echo`, which the
    /// policy asks about and holds for 30 s. Returns once the approval request is pending and, with elicitation,
    /// once toolgate has asked the client about it.
    async fn start(elicitation: bool) -> Self {
        let setup = Setup::with(|dir| {
            std::fs::create_dir_all(dir.join("ws")).unwrap();
            json!({
                "workspace": dir.join("ws"),
                "mcpServers": {"fx": fixture(&[])},
                "permissions": {"default": "allow", "ask": ["mcp__fx__echo"]},
                "approvals": {"wait_seconds": 30, "elicitation": elicitation},
            })
        });
        let state_dir = setup.state_dir();
        let mut child = tokio::process::Command::new(toolgate())
            .args(["serve", "--config", setup.config.to_str().unwrap()])
            .env("TOOLGATE_STATE_DIR", &state_dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut held = Self {
            setup,
            state_dir,
            child,
            stdin,
            stdout,
        };
        let caps = if elicitation {
            json!({"elicitation": {}})
        } else {
            json!({})
        };
        held.send(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": caps,
            "clientInfo": {"name": "raw", "version": "1"}}}),
        )
        .await;
        held.read_until(|m| m["id"] == 1).await;
        held.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        held.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                         "params": {"name": "fx__echo", "arguments": {"text": "held"}}}))
            .await;
        if elicitation {
            held.read_until(|m| m["method"] == "elicitation/create")
                .await;
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        while held.requests(store::ApprovalStatus::Pending).is_empty() {
            assert!(Instant::now() < deadline, "the call was never held");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        held
    }

    async fn send(&mut self, msg: Value) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin
            .write_all(format!("{msg}\n").as_bytes())
            .await
            .unwrap();
        stdin.flush().await.unwrap();
    }

    /// Reads toolgate's output until a message `pred` accepts (20 s at most).
    async fn read_until(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        let read = async {
            loop {
                let line = self
                    .stdout
                    .next_line()
                    .await
                    .unwrap()
                    .expect("toolgate ended");
                let msg: Value = serde_json::from_str(&line).unwrap();
                if pred(&msg) {
                    return msg;
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(20), read)
            .await
            .expect("the expected message never came")
    }

    fn requests(&self, status: store::ApprovalStatus) -> Vec<String> {
        let ns = store::Namespace::open(&self.state_dir, &self.setup.workspace()).unwrap();
        let store = store::Store::open(&ns).unwrap();
        let list = store
            .list_requests(Some(status), store::Timestamp::now())
            .unwrap();
        list.into_iter().map(|a| a.id).collect()
    }

    /// Outcomes of the audit log's approval records, in order.
    fn approval_records(&self) -> Vec<String> {
        let ns = store::Namespace::open(&self.state_dir, &self.setup.workspace()).unwrap();
        let log = std::fs::read_to_string(ns.dir().join("audit.jsonl")).unwrap();
        log.lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|r| r["kind"] == "approval")
            .map(|r| r["outcome"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    /// Waits for toolgate to exit, at most `EXIT_WITHIN`; how long it took.
    async fn exit_time(&mut self) -> Duration {
        let started = Instant::now();
        let status = tokio::time::timeout(EXIT_WITHIN, self.child.wait())
            .await
            .unwrap_or_else(|_| panic!("toolgate still running after {EXIT_WITHIN:?}"))
            .unwrap();
        assert!(status.success(), "{status}");
        started.elapsed()
    }

    /// Checks that the held call's approval ended cancelled, in the store and in the audit log.
    fn assert_cancelled(&self) {
        assert!(self.requests(store::ApprovalStatus::Pending).is_empty());
        assert_eq!(self.requests(store::ApprovalStatus::Cancelled).len(), 1);
        assert_eq!(self.approval_records(), ["PENDING", "CANCELLED"]);
    }
}

/// The client ends its input while toolgate's elicitation question about its held call is unanswered. The
/// question once kept the session alive, so toolgate waited out its output flush (2 s) before exiting.
#[tokio::test]
async fn client_gone_during_an_unanswered_elicitation_exits_at_once_and_cancels_the_approval() {
    let mut held = Held::start(true).await;
    held.stdin = None;
    let took = held.exit_time().await;
    assert!(took < Duration::from_millis(1500), "exit took {took:?}");
    held.assert_cancelled();
}

/// A signal while a call is held: the front end's loop is dropped without closing its session, and the held
/// call was once left pending, with no cancellation recorded, when toolgate exited.
#[tokio::test]
async fn sigterm_while_a_call_is_held_cancels_and_records_its_approval() {
    let mut held = Held::start(false).await;
    let pid = nix::unistd::Pid::from_raw(held.child.id().unwrap() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    held.exit_time().await;
    held.assert_cancelled();
}
