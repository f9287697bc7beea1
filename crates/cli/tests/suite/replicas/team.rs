//! The fixture of the replica tests: a private cluster, replicas with their own state roots, HAProxy in front,
//! an HTTP client of either era that says which replica answered, and the admin CLI run on a replica's machine.

use crate::support::{fixture, toolgate, ServedHttp, Setup};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use test_support::free_port;
use test_support::postgres::Cluster;

/// The replicas' names, as `TOOLGATE_REPLICA` gives them.
pub const NAMES: [&str; 3] = ["a", "b", "c"];

/// HAProxy's choice of replica.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Affinity {
    /// Round robin for every request.
    None,
    /// A legacy session's requests go where it was initialized (`Mcp-Session-Id`).
    SessionId,
}

/// A running team; everything in it stops when it is dropped (the balancer first, the cluster last).
pub struct Team {
    pub balancer: Balancer,
    pub replicas: Vec<Option<ServedHttp>>,
    pub setup: Setup,
    pub cluster: Cluster,
}

/// HAProxy as a child process with its config.
pub struct Balancer {
    child: Child,
    pub url: String,
}

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Team {
    /// A cluster, the schema migrated, three replicas holding a call of `fx__echo` up to `wait_seconds`, and
    /// HAProxy in front with `affinity`.
    pub fn start(wait_seconds: u64, affinity: Affinity) -> Self {
        let cluster = Cluster::start();
        cluster.create_database("team");
        let url = format!(
            "postgres://toolgate:${{TG_STORE_PASSWORD}}@127.0.0.1:{}/team",
            cluster.port()
        );
        // The Host clients send is the balancer's, which each replica must accept.
        let port = free_port();
        let setup = Setup::with(|dir| {
            std::fs::create_dir_all(dir.join("ws")).unwrap();
            json!({
                "workspace": dir.join("ws"),
                // `old` is a 2025-era server that asks mid-call: a modern client's call of it is bridged.
                // `new` is a 2026-07-28 server whose `task_work` makes a task.
                "mcpServers": {"fx": fixture(&[]), "old": fixture(&["--era", "legacy", "--bridging"]),
                               "new": fixture(&["--era", "modern", "--bridging"])},
                "permissions": {"default": "allow", "ask": ["mcp__fx__echo"]},
                "approvals": {"wait_seconds": wait_seconds, "elicitation": false},
                "store": {"kind": "postgres", "url": url},
                "http": {"allowedHosts": [format!("127.0.0.1:{port}")]},
            })
        });
        let mut team = Self {
            balancer: Balancer {
                child: Command::new("true").spawn().unwrap(),
                url: String::new(),
            },
            replicas: Vec::new(),
            setup,
            cluster,
        };
        let out = team.admin(0, &["store", "migrate"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        // As on separate machines: a state root each, with the first one's row-sealing key copied.
        for (i, name) in NAMES.iter().enumerate() {
            let root = team.root(i);
            if i > 0 {
                std::fs::create_dir_all(&root).unwrap();
                std::fs::copy(team.root(0).join("approval.key"), root.join("approval.key"))
                    .unwrap();
            }
            let replica = team.spawn(name);
            team.replicas.push(Some(replica));
        }
        team.balancer = team.balance(port, affinity);
        team
    }

    /// Replica `i`'s state root (its machine's).
    pub fn root(&self, i: usize) -> PathBuf {
        self.setup.dir.path().join(format!("state-{}", NAMES[i]))
    }

    fn spawn(&self, name: &str) -> ServedHttp {
        let i = NAMES.iter().position(|n| *n == name).unwrap();
        let mut cmd = Command::new(toolgate());
        cmd.args(["serve", "--http", "127.0.0.1:0", "--config"])
            .arg(&self.setup.config)
            .env("TOOLGATE_STATE_DIR", self.root(i))
            .env("TOOLGATE_REPLICA", name)
            .env("TG_STORE_PASSWORD", self.cluster.password());
        ServedHttp::spawn(cmd)
    }

    fn balance(&self, port: u16, affinity: Affinity) -> Balancer {
        let mut servers = String::new();
        for (name, replica) in NAMES.iter().zip(&self.replicas) {
            let addr = replica.as_ref().unwrap().url.trim_start_matches("http://");
            let addr = addr.trim_end_matches("/mcp");
            servers.push_str(&format!(
                "  server {name} {addr} check inter 200ms fall 1 rise 2\n"
            ));
        }
        let stick = match affinity {
            Affinity::None => "",
            Affinity::SessionId => {
                "  stick-table type string len 128 size 10k expire 30m\n  stick on req.hdr(Mcp-Session-Id)\n  \
                 stick store-response res.hdr(Mcp-Session-Id)\n"
            }
        };
        let config = format!(
            "global\n  maxconn 256\ndefaults\n  mode http\n  timeout connect 2s\n  timeout client 120s\n  \
             timeout server 120s\n  retries 3\n  option redispatch\nfrontend mcp\n  bind 127.0.0.1:{port}\n  \
             default_backend replicas\nbackend replicas\n  balance roundrobin\n  \
             http-response set-header X-Replica %s\n{stick}{servers}"
        );
        let path = self.setup.dir.path().join("haproxy.cfg");
        std::fs::write(&path, config).unwrap();
        let child = Command::new(haproxy())
            .arg("-db")
            .arg("-f")
            .arg(&path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("start haproxy");
        let balancer = Balancer {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "haproxy does not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        balancer
    }

    /// `toolgate ARGS --config …` on replica `i`'s machine (its state root), as its operator.
    pub fn admin(&self, i: usize, args: &[&str]) -> std::process::Output {
        Command::new(toolgate())
            .args(args)
            .arg("--config")
            .arg(&self.setup.config)
            .env("TOOLGATE_STATE_DIR", self.root(i))
            .env("TG_STORE_PASSWORD", self.cluster.password())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// Approves request `id` with the admin CLI on replica `i`'s machine.
    pub fn approve_on(&self, i: usize, id: &str) {
        let key = self.root(i).join("operator.key");
        let out = self.admin(
            i,
            &[
                "approvals",
                "approve",
                id,
                "--operator-key",
                key.to_str().unwrap(),
            ],
        );
        assert!(out.status.success(), "approve: {}", text(&out.stderr));
    }

    /// The first pending request, once there is one, as `toolgate approvals list` shows it on replica `i`'s
    /// machine.
    pub fn pending_on(&self, i: usize) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let out = self.admin(i, &["approvals", "list", "--status", "pending"]);
            let listed = text(&out.stdout);
            if let Some(id) = listed.split_whitespace().find(|w| w.starts_with("apr_")) {
                return id.to_owned();
            }
            assert!(
                Instant::now() < deadline,
                "no pending request: {listed}{}",
                text(&out.stderr)
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Kills replica `i` with SIGKILL.
    pub fn kill(&mut self, i: usize) {
        let mut replica = self.replicas[i].take().unwrap();
        let pid = nix::unistd::Pid::from_raw(replica.child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).unwrap();
        let _ = replica.child.wait();
    }

    /// Stops every replica with SIGTERM, as an operator would before gathering their logs, and waits for each.
    pub fn stop_replicas(&mut self) {
        for replica in self.replicas.iter_mut().filter_map(Option::take) {
            let mut replica = replica;
            let pid = nix::unistd::Pid::from_raw(replica.child.id() as i32);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            let _ = replica.child.wait();
        }
    }

    /// Copies every replica's audit logs into replica `i`'s namespace, as an operator gathers them to verify.
    pub fn gather_logs(&self, i: usize) -> PathBuf {
        let target = namespace_dir(&self.root(i));
        for j in 0..NAMES.len() {
            if j == i {
                continue;
            }
            for entry in std::fs::read_dir(namespace_dir(&self.root(j))).unwrap() {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                if name.starts_with("audit-") && name.ends_with(".jsonl") {
                    std::fs::copy(&path, target.join(&name)).unwrap();
                }
            }
        }
        target
    }
}

/// The one namespace directory under a state root.
pub fn namespace_dir(root: &Path) -> PathBuf {
    let mut dirs = std::fs::read_dir(root.join("workspaces"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir());
    dirs.next().expect("a namespace")
}

/// The records of replica `name`'s audit chain in `dir`.
pub fn chain(dir: &Path, name: &str) -> Vec<Value> {
    std::fs::read_to_string(dir.join(format!("audit-{name}.jsonl")))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// HAProxy from the distribution's packages (`scripts/test` installs it).
fn haproxy() -> PathBuf {
    for dir in ["/usr/sbin", "/usr/bin", "/usr/local/sbin"] {
        let path = Path::new(dir).join("haproxy");
        if path.exists() {
            return path;
        }
    }
    panic!("HAProxy is not installed: scripts/test installs it from the distribution's packages (apt-get install haproxy)")
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// What one HTTP request got: the status, the replica that answered (HAProxy's `X-Replica`), the session id it
/// named, and the JSON-RPC response to the request (from a JSON body or an event stream).
pub struct Answer {
    pub status: u16,
    pub replica: String,
    pub session: Option<String>,
    pub body: Value,
}

/// An MCP client over HTTP of either era; each request on a connection of its own, as a stateless client's are.
pub struct Client {
    url: String,
    modern: bool,
    pub session: Option<String>,
}

impl Client {
    pub fn modern(url: &str) -> Self {
        Self {
            url: url.to_owned(),
            modern: true,
            session: None,
        }
    }

    /// A 2025-11-25 client, initialized (its session on whichever replica answered, named in the answer).
    pub async fn legacy(url: &str) -> (Self, Answer) {
        let mut client = Self {
            url: url.to_owned(),
            modern: false,
            session: None,
        };
        let init = client
            .send(
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "replicas", "version": "1"}}),
            )
            .await;
        assert_eq!(init.status, 200, "{}", init.body);
        client.session = init.session.clone();
        (client, init)
    }

    /// Sends `method` with `params` (the era's `_meta` added for a modern client).
    pub async fn send(&self, method: &str, params: Value) -> Answer {
        self.send_with(method, params, &[]).await
    }

    /// Sends `method` with `params` and the extra `headers`; a modern client declares elicitation, sampling and
    /// the tasks extension.
    pub async fn send_with(
        &self,
        method: &str,
        mut params: Value,
        headers: &[(&str, &str)],
    ) -> Answer {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(120))
            .pool_max_idle_per_host(0)
            .build()
            .unwrap();
        let mut request = http
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream");
        if self.modern {
            params["_meta"] = test_support::modern_meta();
            params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({"elicitation": {},
                "sampling": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}});
            request = request
                .header("MCP-Protocol-Version", "2026-07-28")
                .header("Mcp-Method", method);
            if let Some(name) = params["name"].as_str() {
                request = request.header("Mcp-Name", name);
            }
        } else if let Some(session) = &self.session {
            request = request
                .header("Mcp-Session-Id", session)
                .header("MCP-Protocol-Version", "2025-11-25");
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let answer = request.body(body.to_string()).send().await.unwrap();
        let status = answer.status().as_u16();
        let header = |name: &str| {
            answer
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let replica = header("x-replica").unwrap_or_default();
        let session = header("mcp-session-id");
        let raw = answer.text().await.unwrap();
        Answer {
            status,
            replica,
            session,
            body: response_of(&raw),
        }
    }

    /// Sends `method` so that it reaches replica `to` (round robin, no affinity): round robin moves on with each
    /// request, so `tools/list` probes advance it until the replica before `to` has answered.
    pub async fn send_to(
        &self,
        to: usize,
        method: &str,
        params: Value,
        headers: &[(&str, &str)],
    ) -> Answer {
        let before = NAMES[(to + NAMES.len() - 1) % NAMES.len()];
        for _ in 0..12 {
            if self.send("tools/list", json!({})).await.replica == before {
                return self.send_with(method, params, headers).await;
            }
        }
        panic!("HAProxy never sent a request to {before}")
    }

    /// Calls `tool` with `arguments`.
    pub async fn call(&self, tool: &str, arguments: Value) -> Answer {
        self.send("tools/call", json!({"name": tool, "arguments": arguments}))
            .await
    }

    /// Sends `notifications/initialized` after `initialize`.
    pub async fn initialized(&self) -> u16 {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::new();
        let body = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let mut request = http
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2025-11-25");
        if let Some(session) = &self.session {
            request = request.header("Mcp-Session-Id", session);
        }
        let answer = request.body(body.to_string()).send().await.unwrap();
        answer.status().as_u16()
    }
}

/// The JSON-RPC response in a body: the body itself, or the event of an event stream that answers.
fn response_of(raw: &str) -> Value {
    if let Ok(v) = serde_json::from_str::<Value>(raw.trim()) {
        return v;
    }
    raw.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|m| m.get("result").is_some() || m.get("error").is_some())
        .unwrap_or_else(|| Value::String(raw.to_owned()))
}

/// The outcome Contract V1 names in a result (`APPROVAL_REQUIRED`, …), or "" for an upstream's result.
pub fn outcome(body: &Value) -> &str {
    body["result"]["structuredContent"]["outcome"]
        .as_str()
        .unwrap_or("")
}

/// The text of a result's first content item.
pub fn text_of(body: &Value) -> &str {
    body["result"]["content"][0]["text"].as_str().unwrap_or("")
}
