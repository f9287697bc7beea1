//! HTTP API keys by reload, against a real `toolgate serve --http`: a key removed from the config file is
//! refused (401) on its very next request, on its open legacy session as on a new one, while another key's
//! session carries on; a key added is let in.

use crate::reload::config;
use crate::support::{toolgate, Setup};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::Duration;

const KEY_A: &str = "reload-key-a";
const KEY_B: &str = "reload-key-b";
const KEY_C: &str = "reload-key-c";

fn digest(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

fn keyed(dir: &Path, keys: &[(&str, &str)]) -> Value {
    let mut c = config(dir, json!({"default": "allow"}));
    let keys: Vec<Value> = keys
        .iter()
        .map(|(name, key)| json!({"name": name, "sha256": digest(key)}))
        .collect();
    c["http"] = json!({"auth": {"apiKeys": keys}});
    c
}

/// `toolgate serve --http` on a free loopback port, its stderr in a file.
struct ServedHttp {
    setup: Setup,
    log: PathBuf,
    child: std::process::Child,
    url: String,
}

impl ServedHttp {
    async fn start(keys: &[(&str, &str)]) -> Self {
        let setup = Setup::with(|dir| {
            std::fs::create_dir_all(dir.join("ws")).unwrap();
            keyed(dir, keys)
        });
        let log = setup.dir.path().join("stderr.log");
        let child = std::process::Command::new(toolgate())
            .args(["serve", "--http", "127.0.0.1:0", "--config"])
            .arg(&setup.config)
            .env("TOOLGATE_STATE_DIR", setup.state_dir())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let mut s = Self {
            setup,
            log,
            child,
            url: String::new(),
        };
        let line = s.wait_for("serving MCP over HTTP at ", 0).await;
        s.url = line.split("at ").nth(1).unwrap().trim().to_owned();
        s
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    async fn wait_for(&self, line: &str, before: usize) -> String {
        for _ in 0..400 {
            let err = self.stderr();
            if err.matches(line).count() > before {
                return err.lines().rfind(|l| l.contains(line)).unwrap().to_owned();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("no {line:?} on stderr: {}", self.stderr());
    }

    async fn reload(&self, keys: &[(&str, &str)]) {
        let root = std::fs::canonicalize(self.setup.dir.path()).unwrap();
        let text = serde_json::to_string_pretty(&keyed(&root, keys)).unwrap();
        let before = self.stderr().matches("config reloaded").count();
        std::fs::write(&self.setup.config, text).unwrap();
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP).unwrap();
        self.wait_for("config reloaded", before).await;
    }

    /// POSTs `body` with `key` (and `session`); the status and the session id it answers with.
    async fn post(&self, key: &str, session: Option<&str>, body: Value) -> (u16, Option<String>) {
        let mut r = reqwest::Client::new()
            .post(&self.url)
            .header("Authorization", format!("Bearer {key}"))
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .body(body.to_string());
        if let Some(s) = session {
            r = r
                .header("Mcp-Session-Id", s)
                .header("MCP-Protocol-Version", "2025-11-25");
        }
        let answer = r.send().await.unwrap();
        let id = answer
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        (answer.status().as_u16(), id)
    }

    async fn initialize(&self, key: &str) -> (u16, Option<String>) {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                          "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                     "clientInfo": {"name": "reload", "version": "1"}}});
        self.post(key, None, init).await
    }

    async fn list(&self, key: &str, session: &str) -> u16 {
        let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
        self.post(key, Some(session), list).await.0
    }
}

impl Drop for ServedHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_api_key_is_refused_on_its_next_request() {
    // reqwest is built without a TLS provider of its own; plain HTTP needs none, building a client does.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let s = ServedHttp::start(&[("a", KEY_A), ("b", KEY_B)]).await;
    let (status, a_session) = s.initialize(KEY_A).await;
    assert_eq!(status, 200);
    let (status, b_session) = s.initialize(KEY_B).await;
    assert_eq!(status, 200);
    let (a_session, b_session) = (a_session.unwrap(), b_session.unwrap());
    assert_eq!(s.list(KEY_A, &a_session).await, 200);
    assert_eq!(s.initialize(KEY_C).await.0, 401, "c is not a key yet");

    s.reload(&[("b", KEY_B), ("c", KEY_C)]).await;
    // The file's change may be seen before the signal: whichever reload came first ended the session.
    s.wait_for("; 1 HTTP session(s) of revoked callers ended", 0)
        .await;
    assert_eq!(
        s.list(KEY_A, &a_session).await,
        401,
        "the revoked key's session is refused on its next request"
    );
    assert_eq!(s.initialize(KEY_A).await.0, 401, "and so is a new session");
    assert_eq!(
        s.list(KEY_B, &b_session).await,
        200,
        "the kept key's session carries on"
    );
    assert_eq!(s.initialize(KEY_C).await.0, 200, "the added key is let in");
}
