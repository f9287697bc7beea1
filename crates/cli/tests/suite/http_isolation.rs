//! Two HTTP clients with keys for two profiles call, at the same time, a tool of one legacy stdio upstream that
//! asks the user something mid-call (`elicitation/create`). Each question must reach only the client whose call
//! caused it: a client that gets a question gets its own, never the other's. When both calls wait on the one
//! upstream at once, toolgate cannot tell whose call a question belongs to and refuses it upstream; that refusal
//! is the correct answer, and neither client may see a question then.

use crate::support::{toolgate, Setup};
use futures_util::StreamExt;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};

const KEY_A: &str = "isolation-key-a";
const KEY_B: &str = "isolation-key-b";
const ROUNDS: usize = 4;

fn digest(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

/// `toolgate serve --http` on a free loopback port; its address, and the process (killed when dropped).
async fn serve_http(setup: &Setup) -> (String, tokio::process::Child) {
    let state = setup.state_dir();
    let mut child = tokio::process::Command::new(toolgate())
        .args(["serve", "--http", "127.0.0.1:0", "--config"])
        .arg(&setup.config)
        .env("TOOLGATE_STATE_DIR", &state)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(rest) = line.split("http://").nth(1) {
                return rest.trim_end_matches("/mcp").to_owned();
            }
        }
        panic!("toolgate exited before serving");
    })
    .await
    .expect("toolgate serves within a minute");
    // Keep draining stderr so toolgate never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (addr, child)
}

/// One legacy HTTP client: its key and session.
struct Client {
    http: reqwest::Client,
    url: String,
    key: &'static str,
    session: Option<String>,
}

impl Client {
    fn request(&self, body: &Value) -> reqwest::RequestBuilder {
        let mut r = self
            .http
            .post(&self.url)
            .header("Authorization", format!("Bearer {}", self.key))
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .body(body.to_string());
        if let Some(s) = &self.session {
            r = r
                .header("Mcp-Session-Id", s)
                .header("MCP-Protocol-Version", "2025-11-25");
        }
        r
    }

    async fn initialize(&mut self) {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                          "params": {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
                                     "clientInfo": {"name": "isolation", "version": "1"}}});
        let answer = self.request(&init).send().await.unwrap();
        assert_eq!(answer.status(), 200);
        self.session = answer
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(self.request(&done).send().await.unwrap().status(), 202);
    }

    /// Calls `fx__elicit` asking `mine`; answers every question that arrives on the call's stream, and returns
    /// the questions' messages with the call's response.
    async fn call_elicit(&self, id: u64, mine: &str) -> (Vec<String>, Value) {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                          "params": {"name": "fx__elicit", "arguments": {"message": mine}}});
        let answer = self.request(&call).send().await.unwrap();
        assert_eq!(answer.status(), 200);
        let mut asked = Vec::new();
        let mut stream = answer.bytes_stream();
        let mut buffer = String::new();
        loop {
            let chunk = tokio::time::timeout(Duration::from_secs(60), stream.next())
                .await
                .expect("the call answers within a minute");
            let Some(chunk) = chunk else {
                // A body that was plain JSON: the response alone.
                let response: Value = serde_json::from_str(buffer.trim()).unwrap();
                return (asked, response);
            };
            buffer.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
            while let Some(end) = buffer.find("\n\n") {
                let event: String = buffer.drain(..end + 2).collect();
                let Some(data) = event.lines().find_map(|l| l.strip_prefix("data:")) else {
                    continue;
                };
                let message: Value = serde_json::from_str(data.trim()).unwrap();
                if message["method"] == "elicitation/create" {
                    // The label toolgate adds is checked here, so the questions compare as the upstream asked them.
                    let words = message["params"]["message"].as_str().unwrap_or("");
                    let label = crate::support::relayed("fx", "");
                    asked.push(words.strip_prefix(&label).unwrap_or(words).to_owned());
                    let reply = json!({"jsonrpc": "2.0", "id": message["id"],
                                       "result": {"action": "accept", "content": {}}});
                    let sent = self.request(&reply).send().await.unwrap();
                    assert_eq!(sent.status(), 202);
                } else if message.get("id") == Some(&json!(id)) {
                    return (asked, message);
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elicitation_reaches_only_the_client_whose_call_asked() {
    // reqwest is built without a TLS provider of its own; plain HTTP needs none, building a client does.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let setup = Setup::fixture(
        &["--era", "legacy"],
        json!({
            "http": {"auth": {"apiKeys": [
                {"name": "a", "sha256": digest(KEY_A), "profile": "a"},
                {"name": "b", "sha256": digest(KEY_B), "profile": "b"},
            ]}},
            "profiles": {"a": {}, "b": {}},
            "pins": {"newTools": "accept"},
        }),
    );
    let (addr, _served) = serve_http(&setup).await;
    let url = format!("http://{addr}/mcp");
    let client = |key| Client {
        http: reqwest::Client::new(),
        url: url.clone(),
        key,
        session: None,
    };
    let (mut a, mut b) = (client(KEY_A), client(KEY_B));
    a.initialize().await;
    b.initialize().await;
    let (mut asked_a, mut asked_b) = (0, 0);
    for round in 0..ROUNDS as u64 {
        let ((qa, ra), (qb, rb)) = tokio::join!(
            a.call_elicit(10 + round, "question-for-a"),
            b.call_elicit(10 + round, "question-for-b"),
        );
        assert!(qa.iter().all(|q| q == "question-for-a"), "a got {qa:?}");
        assert!(qb.iter().all(|q| q == "question-for-b"), "b got {qb:?}");
        // Each call is answered: with the answer it was given when its client was asked, else with the
        // refusal of a question that could not be attributed.
        for (questions, response) in [(&qa, &ra), (&qb, &rb)] {
            assert!(
                response.get("result").is_some() || response.get("error").is_some(),
                "{response}"
            );
            let text = response.to_string();
            if !questions.is_empty() {
                assert!(text.contains("accept"), "{response}");
            }
        }
        asked_a += qa.len();
        asked_b += qb.len();
    }
    // One at a time, each client is asked its own question.
    let (qa, ra) = a.call_elicit(100, "question-for-a").await;
    assert_eq!(qa, vec!["question-for-a".to_owned()], "{ra}");
    let (qb, rb) = b.call_elicit(100, "question-for-b").await;
    assert_eq!(qb, vec!["question-for-b".to_owned()], "{rb}");
    eprintln!("concurrent rounds: a was asked {asked_a} times, b {asked_b} times");
}
