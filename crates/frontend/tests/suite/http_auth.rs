//! The HTTP front end under callers who should not get in, or not that far: no or a wrong bearer, a key in the
//! query string, a key for one profile reaching for another profile's tools, another identity's session id, a
//! token naming a profile that is not served; and the admin surface under MCP keys and prying explanations. A
//! real gateway serves the in-process fixture upstream; requests are plain HTTP/1.1 on a socket.

use frontend::HttpServer;
use gateway::{Gateway, Guard, Options, State};
use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use upstream::memory::MemoryConnector;

pub const KEY_A: &str = "key-for-profile-a";
pub const KEY_B: &str = "key-for-profile-b";
pub const ADMIN_KEY: &str = "the-admin-key";
const ISS: &str = "https://idp.example";
const AUD: &str = "http://toolgate.test/mcp";
const ED_DER: &[u8] = include_bytes!("../../../test-support/keys/ed25519.der");

pub fn digest(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

pub struct Served {
    pub addr: SocketAddr,
    /// What reloads the server's API keys and JWKS.
    pub auth: frontend::AuthReload,
    state: Arc<State>,
    _dir: tempfile::TempDir,
}

/// One answer: status, headers (names lower-case), body.
pub struct Answer {
    pub status: u16,
    pub headers: HashMap<String, Vec<String>>,
    pub body: String,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name)?.first().map(String::as_str)
    }

    /// The JSON-RPC message of the body, whether sent as JSON or as one SSE event.
    pub fn json(&self) -> Value {
        let text = match self
            .body
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix("data:"))
        {
            Some(data) => data.trim(),
            None => self.body.trim(),
        };
        serde_json::from_str(text).unwrap_or_else(|_| panic!("JSON: {} {}", self.status, self.body))
    }
}

/// Serves a gateway for `http` (the config's `"http"` section) with the fixture upstream `fx` and `policy`'s
/// top-level settings.
pub async fn serve(http: Value, policy: Value) -> Served {
    serve_with(http, policy, None).await
}

/// `serve`, the product verbs' admin routes answered by `verbs`.
pub async fn serve_with(
    http: Value,
    policy: Value,
    verbs: Option<Arc<dyn frontend::AdminVerbs>>,
) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    std::fs::create_dir_all(&workspace).unwrap();
    let mut text = policy;
    // Servers the settings name besides `fx` are started as they say (a command that cannot start stays down).
    let mut servers = text["mcpServers"].take();
    if !servers.is_object() {
        servers = json!({});
    }
    servers["fx"] = json!({"command": "fixture-in-process"});
    text["mcpServers"] = servers;
    text["http"] = http;
    let config = config::parse_str(
        &text.to_string(),
        config::Format::Json,
        &dir.path().join("toolgate.json"),
        &|_| None,
        &config::Overrides::default(),
    )
    .unwrap();
    let state = Arc::new(State::open_in(&dir.path().join("state"), &workspace).unwrap());
    let guard = Arc::new(Guard::load(&config, &workspace).unwrap());
    let connector = Arc::new(MemoryConnector::new(move |end| {
        tokio::spawn(test_support::serve(
            test_support::FixtureOptions::default(),
            end.incoming,
            end.outgoing,
        ));
    }));
    let links: HashMap<String, Arc<dyn upstream::Connector>> =
        HashMap::from([("fx".to_owned(), connector as Arc<dyn upstream::Connector>)]);
    let opts = Options::from_config(&config, false);
    let gateway =
        Gateway::start_linked(&config, opts, guard, Some(Arc::clone(&state)), None, &links);
    gateway.ready().await;
    let server = HttpServer::bind(
        Arc::clone(&gateway),
        &config.http,
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .unwrap();
    let server = match verbs {
        Some(v) => server.admin_verbs(v),
        None => server,
    };
    let addr = server.local_addr();
    let auth = server.auth_reload();
    tokio::spawn(server.run(std::future::pending()));
    Served {
        addr,
        auth,
        state,
        _dir: dir,
    }
}

impl Served {
    /// One request on a connection of its own; `headers` besides Host, Content-Type, Accept, Content-Length.
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&Value>,
    ) -> Answer {
        let body = body.map(Value::to_string).unwrap_or_default();
        let mut request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            self.addr,
            body.len()
        );
        for (k, v) in headers {
            request.push_str(&format!("{k}: {v}\r\n"));
        }
        request.push_str("\r\n");
        request.push_str(&body);
        let mut stream = tokio::net::TcpStream::connect(self.addr).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut raw = Vec::new();
        tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut raw))
            .await
            .expect("an answer")
            .unwrap();
        parse(&String::from_utf8_lossy(&raw))
    }

    /// A JSON-RPC request to `/mcp` with `bearer` (if any) and the legacy session `session` (if any).
    pub async fn rpc(
        &self,
        bearer: Option<&str>,
        session: Option<&str>,
        message: &Value,
    ) -> Answer {
        let auth = bearer.map(|b| format!("Bearer {b}"));
        let mut headers = Vec::new();
        if let Some(a) = &auth {
            headers.push(("Authorization", a.as_str()));
        }
        if let Some(s) = session {
            headers.push(("Mcp-Session-Id", s));
            headers.push(("MCP-Protocol-Version", "2025-11-25"));
        }
        self.send("POST", "/mcp", &headers, Some(message)).await
    }

    /// `initialize` as a legacy client; returns the session id.
    pub async fn initialize(&self, bearer: Option<&str>) -> String {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                          "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                     "clientInfo": {"name": "t", "version": "1"}}});
        let answer = self.rpc(bearer, None, &init).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        let session = answer
            .header("mcp-session-id")
            .expect("a session id")
            .to_owned();
        let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(self.rpc(bearer, Some(&session), &done).await.status, 202);
        session
    }

    /// The tool names a session lists.
    pub async fn tools(&self, bearer: Option<&str>, session: &str) -> Vec<String> {
        let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        let answer = self.rpc(bearer, Some(session), &list).await.json();
        answer["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("a list: {answer}"))
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect()
    }

    pub async fn call(
        &self,
        bearer: Option<&str>,
        session: &str,
        name: &str,
        args: Value,
    ) -> Value {
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                          "params": {"name": name, "arguments": args}});
        self.rpc(bearer, Some(session), &call).await.json()
    }

    /// The directory holding the config, the state and the workspace.
    pub fn root(&self) -> &std::path::Path {
        self._dir.path()
    }

    pub fn audit(&self) -> String {
        self.state.flush();
        std::fs::read_to_string(self.state.audit_log().path()).unwrap_or_default()
    }
}

fn parse(raw: &str) -> Answer {
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((raw, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mut headers: HashMap<String, Vec<String>> = HashMap::new();
    for line in lines {
        if let Some((k, v)) = line.split_once(':') {
            headers
                .entry(k.trim().to_ascii_lowercase())
                .or_default()
                .push(v.trim().to_owned());
        }
    }
    let body = match headers.get("transfer-encoding").and_then(|v| v.first()) {
        Some(te) if te.eq_ignore_ascii_case("chunked") => dechunk(body),
        _ => body.to_owned(),
    };
    Answer {
        status,
        headers,
        body,
    }
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}

pub fn two_profiles() -> Value {
    json!({
        "permissions": {"default": "allow"},
        "profiles": {
            "a": {"tools": {"blocked": ["fx__echo"]}},
            "b": {"tools": {"blocked": ["fx__add"]}},
        },
        "pins": {"newTools": "accept"},
    })
}

/// The `"http"` section `http` as the config loads it.
pub fn http_config(http: Value) -> config::HttpConfig {
    let dir = tempfile::tempdir().unwrap();
    let text = json!({"http": http}).to_string();
    config::parse_str(
        &text,
        config::Format::Json,
        &dir.path().join("toolgate.json"),
        &|_| None,
        &config::Overrides::default(),
    )
    .unwrap()
    .http
}

pub fn keys_http() -> Value {
    json!({"auth": {"apiKeys": [
        {"name": "a", "sha256": digest(KEY_A), "profile": "a"},
        {"name": "b", "sha256": digest(KEY_B), "profile": "b"},
    ]}})
}

fn ran(answer: &Value) -> bool {
    answer["result"]["isError"] != json!(true) && answer.get("error").is_none()
}

#[tokio::test]
async fn missing_bearer_is_401_with_resource_metadata() {
    let s = serve(keys_http(), two_profiles()).await;
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let answer = s.rpc(None, None, &ping).await;
    assert_eq!(answer.status, 401, "{}", answer.body);
    let challenge = answer.header("www-authenticate").expect("a challenge");
    let url = format!("http://{}/.well-known/oauth-protected-resource/mcp", s.addr);
    assert_eq!(challenge, format!("Bearer resource_metadata=\"{url}\""));
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let doc = s.send("GET", path, &[], None).await;
        assert_eq!(doc.status, 200, "{path}: {}", doc.body);
        let doc: Value = serde_json::from_str(&doc.body).unwrap();
        assert_eq!(doc["resource"], format!("http://{}/mcp", s.addr));
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]));
    }
}

#[tokio::test]
async fn protected_resource_metadata_is_absent_without_auth() {
    let s = serve(json!({}), two_profiles()).await;
    let doc = s
        .send("GET", "/.well-known/oauth-protected-resource", &[], None)
        .await;
    assert_eq!(doc.status, 404);
}

#[tokio::test]
async fn wrong_api_key_is_401() {
    let s = serve(keys_http(), two_profiles()).await;
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    for key in ["key-for-profile-c", "", ADMIN_KEY, &KEY_A[1..]] {
        let answer = s.rpc(Some(key), None, &ping).await;
        assert_eq!(answer.status, 401, "{key:?}: {}", answer.body);
        assert!(answer.header("www-authenticate").is_some());
    }
    // The right key passes the gate (the transport then wants a session: 400, not 401).
    let right = s.rpc(Some(KEY_A), None, &ping).await;
    assert_eq!(right.status, 400, "{}", right.body);
}

#[tokio::test]
async fn api_key_in_query_string_is_not_accepted() {
    let s = serve(keys_http(), two_profiles()).await;
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    for path in [
        format!("/mcp?api_key={KEY_A}"),
        format!("/mcp?access_token={KEY_A}"),
        format!("/mcp?token={KEY_A}"),
    ] {
        let answer = s.send("POST", &path, &[], Some(&ping)).await;
        assert_eq!(answer.status, 401, "{path}: {}", answer.body);
    }
    let cookie = format!("access_token={KEY_A}");
    let answer = s
        .send("POST", "/mcp", &[("Cookie", &cookie)], Some(&ping))
        .await;
    assert_eq!(answer.status, 401);
    let basic = format!("Basic {KEY_A}");
    let answer = s
        .send("POST", "/mcp", &[("Authorization", &basic)], Some(&ping))
        .await;
    assert_eq!(answer.status, 401);
}

#[tokio::test]
async fn key_for_profile_a_cannot_list_or_call_profile_b_tools() {
    let s = serve(keys_http(), two_profiles()).await;
    let (sa, sb) = (
        s.initialize(Some(KEY_A)).await,
        s.initialize(Some(KEY_B)).await,
    );
    let (in_a, in_b) = (
        s.tools(Some(KEY_A), &sa).await,
        s.tools(Some(KEY_B), &sb).await,
    );
    assert!(
        in_a.contains(&"fx__add".into()) && !in_a.contains(&"fx__echo".into()),
        "{in_a:?}"
    );
    assert!(
        in_b.contains(&"fx__echo".into()) && !in_b.contains(&"fx__add".into()),
        "{in_b:?}"
    );
    let echo = s
        .call(Some(KEY_A), &sa, "fx__echo", json!({"text": "x"}))
        .await;
    assert!(!ran(&echo), "{echo}");
    let add = s
        .call(Some(KEY_B), &sb, "fx__add", json!({"a": 1, "b": 2}))
        .await;
    assert!(!ran(&add), "{add}");
    assert!(ran(&s
        .call(Some(KEY_A), &sa, "fx__add", json!({"a": 1, "b": 2}))
        .await));
    let audit = s.audit();
    assert!(audit.contains("\"principal\":\"key:a\""), "{audit}");
    assert!(audit.contains("\"principal\":\"key:b\""), "{audit}");
}

#[tokio::test]
async fn session_id_with_another_identitys_key_is_not_found() {
    let s = serve(keys_http(), two_profiles()).await;
    let sa = s.initialize(Some(KEY_A)).await;
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let stolen = s.rpc(Some(KEY_B), Some(&sa), &list).await;
    assert_eq!(stolen.status, 404, "{}", stolen.body);
    assert!(!stolen.body.contains("fx__"), "{}", stolen.body);
    let auth = format!("Bearer {KEY_B}");
    let headers = [
        ("Authorization", auth.as_str()),
        ("Mcp-Session-Id", sa.as_str()),
    ];
    assert_eq!(s.send("DELETE", "/mcp", &headers, None).await.status, 404);
    // The session still serves its owner.
    assert!(!s.tools(Some(KEY_A), &sa).await.is_empty());
}

fn jwt_http(jwks: &std::path::Path) -> Value {
    json!({"auth": {"jwt": {"jwksFile": jwks, "issuer": ISS, "audience": AUD,
                            "profileClaim": "toolgate_profile", "profile": "a"},
                    "resource": AUD}})
}

fn token(claims: Value) -> String {
    let mut header = Header::new(Algorithm::EdDSA);
    header.kid = Some("ed-1".into());
    encode(&header, &claims, &EncodingKey::from_ed_der(ED_DER)).unwrap()
}

fn claims(extra: Value) -> Value {
    let exp = jsonwebtoken::get_current_timestamp() + 300;
    let mut c = json!({"iss": ISS, "aud": AUD, "sub": "alice", "exp": exp});
    if let (Some(c), Value::Object(extra)) = (c.as_object_mut(), extra) {
        c.extend(extra);
    }
    c
}

#[tokio::test]
async fn jwt_caller_runs_under_its_claimed_profile_and_an_unserved_profile_is_403() {
    let jwks =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../test-support/keys/jwks.json");
    let s = serve(jwt_http(&jwks), two_profiles()).await;
    let default = token(claims(json!({})));
    let sa = s.initialize(Some(&default)).await;
    assert!(!s
        .tools(Some(&default), &sa)
        .await
        .contains(&"fx__echo".into()));
    let b = token(claims(json!({"toolgate_profile": "b"})));
    let sb = s.initialize(Some(&b)).await;
    assert!(!s.tools(Some(&b), &sb).await.contains(&"fx__add".into()));
    let unknown = token(claims(json!({"toolgate_profile": "root"})));
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                      "params": {"protocolVersion": "2025-11-25", "capabilities": {}}});
    assert_eq!(s.rpc(Some(&unknown), None, &init).await.status, 403);
    let other_audience = token(claims(json!({"aud": "http://elsewhere/mcp"})));
    let refused = s.rpc(Some(&other_audience), None, &init).await;
    assert_eq!(refused.status, 401);
    assert!(refused
        .header("www-authenticate")
        .unwrap()
        .contains("invalid_token"));
    assert!(ran(&s
        .call(Some(&default), &sa, "fx__add", json!({"a": 1, "b": 2}))
        .await));
    let audit = s.audit();
    assert!(
        audit.contains("\"principal\":\"jwt:https://idp.example#alice\""),
        "{audit}"
    );
}

#[tokio::test]
async fn key_naming_an_unknown_profile_stops_the_server_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let config = config::parse_str(
        &json!({"http": {"auth": {"apiKeys": [{"name": "x", "sha256": digest("x"), "profile": "missing"}]}}})
            .to_string(),
        config::Format::Json,
        &dir.path().join("toolgate.json"),
        &|_| None,
        &config::Overrides::default(),
    )
    .unwrap();
    let guard = Arc::new(Guard::load(&config, dir.path()).unwrap());
    let gateway = Gateway::start(&config, Options::from_config(&config, false), guard, None);
    let err = HttpServer::bind(gateway, &config.http, "127.0.0.1:0".parse().unwrap())
        .await
        .err()
        .expect("refused");
    assert!(err.to_string().contains("\"missing\""), "{err}");
}
