//! A minimal scripted MCP client over a child process's stdio, for the demo and integration tests.
//!
//! It records every notification and every request the server sends it (answering those from a fixed table), so
//! tests can assert on progress, list changes, relayed requests and on a question asked — or not asked — twice.

use jsonrpc::{decode, encode_line, Frame, FrameReader, Id, Limits, Message};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, oneshot, Notify};

type Pending = Arc<Mutex<HashMap<Id, oneshot::Sender<Result<Value, Value>>>>>;

pub struct StdioClient {
    child: Child,
    writer: Option<mpsc::Sender<Vec<u8>>>,
    pending: Pending,
    next_id: AtomicI64,
    notifications: Arc<Mutex<Vec<Value>>>,
    /// Requests the server sent this client (method and params), in arrival order.
    requests: Arc<Mutex<Vec<Value>>>,
    notified: Arc<Notify>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl StdioClient {
    /// Spawns `program args…` with `env` added; stderr is inherited so failures show. `answers` maps a method the
    /// server may call on the client to the result it gets.
    pub fn spawn(
        program: &std::path::Path,
        args: &[&str],
        env: &[(&str, &str)],
        answers: HashMap<String, Value>,
    ) -> std::io::Result<Self> {
        Self::spawn_logging(program, args, env, answers, Stdio::inherit())
    }

    /// Like `spawn`, with the server's stderr going to `stderr` (a file a test reads, say).
    pub fn spawn_logging(
        program: &std::path::Path,
        args: &[&str],
        env: &[(&str, &str)],
        answers: HashMap<String, Value>,
        stderr: Stdio,
    ) -> std::io::Result<Self> {
        let mut child = Command::new(program)
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(false)
            .spawn()?;
        let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(std::io::Error::other("child has no stdio pipes"));
        };
        let (tx, mut rx) = mpsc::channel::<Vec<u8>>(256);
        tokio::spawn(async move {
            while let Some(line) = rx.recv().await {
                if stdin.write_all(&line).await.is_err() || stdin.flush().await.is_err() {
                    break;
                }
            }
        });
        let pending: Pending = Arc::default();
        let notifications: Arc<Mutex<Vec<Value>>> = Arc::default();
        let requests: Arc<Mutex<Vec<Value>>> = Arc::default();
        let notified = Arc::new(Notify::new());
        let (p, n, rq, nn, answer_tx) = (
            Arc::clone(&pending),
            Arc::clone(&notifications),
            Arc::clone(&requests),
            Arc::clone(&notified),
            tx.downgrade(),
        );
        tokio::spawn(async move {
            let limits = Limits {
                max_message_bytes: 256 << 20,
                max_depth: 128,
            };
            let mut frames = FrameReader::new(BufReader::new(stdout), limits.max_message_bytes);
            while let Ok(Some(Frame::Line(line))) = frames.next().await {
                let Ok(msg) = decode(&line, &limits) else {
                    continue;
                };
                match msg {
                    Message::Response {
                        id: Some(id),
                        outcome,
                    } => match lock(&p).remove(&id) {
                        Some(w) => {
                            let _ = w.send(outcome);
                        }
                        // Answers to raw sends are logged with the notifications, for hostile-input tests.
                        None => {
                            lock(&n).push(
                                Message::Response {
                                    id: Some(id),
                                    outcome,
                                }
                                .to_value(),
                            );
                            nn.notify_waiters();
                        }
                    },
                    Message::Request { id, method, params } => {
                        lock(&rq).push(json!({"method": method, "params": params}));
                        nn.notify_waiters();
                        let reply = match answers.get(&method) {
                            Some(r) => json!({"jsonrpc": "2.0", "id": id.to_value(), "result": r}),
                            None => json!({"jsonrpc": "2.0", "id": id.to_value(),
                                           "error": {"code": -32601, "message": "not supported"}}),
                        };
                        // A weak sender, so closing the client's writer really closes the child's stdin.
                        if let (Ok(line), Some(tx)) =
                            (encode_line(&reply, usize::MAX), answer_tx.upgrade())
                        {
                            let _ = tx.send(line).await;
                        }
                    }
                    other => {
                        lock(&n).push(other.to_value());
                        nn.notify_waiters();
                    }
                }
            }
            for (_, w) in lock(&p).drain() {
                let _ = w.send(Err(
                    json!({"code": -32000, "message": "server closed its output"}),
                ));
            }
        });
        Ok(Self {
            child,
            writer: Some(tx),
            pending,
            next_id: AtomicI64::new(1),
            notifications,
            requests,
            notified,
        })
    }

    /// Sends a request and waits for the answer (at most 60 s).
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, Value> {
        let id = Id::Int(self.next_id.fetch_add(1, Ordering::Relaxed));
        self.request_with_id(id, method, params).await
    }

    pub async fn request_with_id(
        &self,
        id: Id,
        method: &str,
        params: Value,
    ) -> Result<Value, Value> {
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id.clone(), tx);
        self.send_value(&jsonrpc::request(&id, method, Some(params)))
            .await;
        match tokio::time::timeout(Duration::from_secs(60), rx).await {
            Ok(Ok(outcome)) => outcome,
            _ => Err(json!({"code": -32001, "message": format!("no answer to {method}")})),
        }
    }

    /// The next id `request` would use, to cancel a request sent from another task.
    pub fn peek_next_id(&self) -> Id {
        Id::Int(self.next_id.load(Ordering::Relaxed))
    }

    pub async fn notify(&self, method: &str, params: Value) {
        self.send_value(&jsonrpc::notification(method, Some(params)))
            .await;
    }

    pub async fn send_value(&self, v: &Value) {
        if let Ok(line) = encode_line(v, usize::MAX) {
            self.send_raw(line).await;
        }
    }

    /// Writes bytes as they are, for hostile-input tests.
    pub async fn send_raw(&self, bytes: Vec<u8>) {
        if let Some(w) = &self.writer {
            let _ = w.send(bytes).await;
        }
    }

    /// Legacy handshake: `initialize` then `notifications/initialized`.
    pub async fn initialize(&self, version: &str, capabilities: Value) -> Result<Value, Value> {
        let params = json!({"protocolVersion": version, "capabilities": capabilities,
                            "clientInfo": {"name": "toolgate-test-client", "version": "0"}});
        let r = self.request("initialize", params).await?;
        self.notify("notifications/initialized", json!({})).await;
        Ok(r)
    }

    pub fn notifications(&self) -> Vec<Value> {
        lock(&self.notifications).clone()
    }

    /// Every request the server sent this client so far, as `{"method", "params"}`.
    pub fn requests(&self) -> Vec<Value> {
        lock(&self.requests).clone()
    }

    /// The requests of `method` the server sent so far.
    pub fn requests_of(&self, method: &str) -> Vec<Value> {
        lock(&self.requests)
            .iter()
            .filter(|r| r["method"] == method)
            .cloned()
            .collect()
    }

    /// Waits until a notification satisfies `pred` (at most `within`).
    pub async fn wait_notification(
        &self,
        within: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let notified = self.notified.notified();
            if let Some(v) = lock(&self.notifications).iter().find(|v| pred(v)) {
                return Some(v.clone());
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return None;
            }
        }
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Closes stdin and waits for the process to exit (at most `within`); `None` if it did not.
    pub async fn close(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        self.writer = None;
        tokio::time::timeout(within, self.child.wait())
            .await
            .ok()
            .and_then(Result::ok)
    }

    pub fn child_mut(&mut self) -> &mut Child {
        &mut self.child
    }
}

/// Every item of a paginated list, following `nextCursor`.
pub async fn list_all(
    client: &StdioClient,
    method: &str,
    key: &str,
    meta: Option<&Value>,
) -> Result<Vec<Value>, Value> {
    let mut items = Vec::new();
    let mut cursor: Option<Value> = None;
    loop {
        let mut params = json!({});
        if let Some(c) = &cursor {
            params["cursor"] = c.clone();
        }
        if let Some(m) = meta {
            params["_meta"] = m.clone();
        }
        let page = client.request(method, params).await?;
        items.extend(page[key].as_array().cloned().unwrap_or_default());
        match page.get("nextCursor") {
            Some(c) if !c.is_null() => cursor = Some(c.clone()),
            _ => return Ok(items),
        }
    }
}

/// The `_meta` a 2026-07-28 client puts on every request.
pub fn modern_meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientCapabilities": {},
           "io.modelcontextprotocol/clientInfo": {"name": "toolgate-test-client", "version": "0"}})
}

impl Drop for StdioClient {
    /// Ends the server the way a client should: close its stdin and give it a moment to clean up (a gateway ends
    /// its upstreams then), and only then kill it. A plain kill would leave the server no chance to do so.
    fn drop(&mut self) {
        self.writer = None;
        let Some(pid) = self.child.id() else { return };
        std::thread::spawn(move || {
            let pid = nix::unistd::Pid::from_raw(pid as i32);
            for _ in 0..100 {
                if exited(pid.as_raw()) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(30));
            }
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
        });
    }
}

/// Whether process `pid` is gone: no such process, or a zombie waiting to be reaped.
pub fn exited(pid: i32) -> bool {
    // Signal 0 only asks whether the process is still there.
    let absent = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_err();
    let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(false);
    absent || zombie
}
