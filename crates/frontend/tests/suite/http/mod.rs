//! The Streamable HTTP front end over real sockets, against an in-process gateway with the fixture server as
//! its upstream: a raw HTTP/1.1 client sends exactly the bytes each attack needs (duplicate headers, bytes
//! above ASCII, bodies that never end), which no well-behaved client library would.

mod attacks;
mod limits;
mod modern;
mod sessions;

use frontend::HttpServer;
use gateway::{Gateway, Guard, Options};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use upstream::memory::MemoryConnector;

/// A gateway with the fixture upstream `fx`, served over HTTP on a free loopback port.
pub struct Served {
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    _dir: tempfile::TempDir,
}

impl Served {
    pub async fn start() -> Self {
        Self::with(|_| {}).await
    }

    /// Started with the config `adjust` leaves.
    pub async fn with(adjust: impl FnOnce(&mut config::Config)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().join("ws");
        std::fs::create_dir_all(&workspace).unwrap();
        let text = json!({"mcpServers": {"fx": {"command": "fixture-in-process"}},
                          "permissions": {"default": "allow"}});
        let mut config = config::parse_str(
            &text.to_string(),
            config::Format::Json,
            &dir.path().join("toolgate.json"),
            &|_| None,
            &config::Overrides::default(),
        )
        .unwrap();
        adjust(&mut config);
        let guard = Arc::new(Guard::load(&config, &workspace).unwrap());
        let connector = Arc::new(MemoryConnector::new(|end| {
            tokio::spawn(test_support::serve(
                test_support::FixtureOptions::default(),
                end.incoming,
                end.outgoing,
            ));
        }));
        let links: HashMap<String, Arc<dyn upstream::Connector>> =
            HashMap::from([("fx".to_owned(), connector as Arc<dyn upstream::Connector>)]);
        let opts = Options::from_config(&config, false);
        let gateway = Gateway::start_linked(&config, opts, guard, None, None, &links);
        gateway.ready().await;
        let server = HttpServer::bind(
            Arc::clone(&gateway),
            &config.http,
            "127.0.0.1:0".parse().unwrap(),
        )
        .await
        .unwrap();
        let addr = server.local_addr();
        let (stop, stopped) = tokio::sync::oneshot::channel();
        tokio::spawn(server.run(async {
            let _ = stopped.await;
        }));
        Self {
            addr,
            stop: Some(stop),
            _dir: dir,
        }
    }

    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.addr.port())
    }

    /// Sends `head` (request line and headers, without the blank line) and `body`; reads the whole answer.
    pub async fn raw(&self, head: &str, body: &[u8]) -> Answer {
        let mut conn = Conn::open(self.addr).await;
        conn.send(head, body).await;
        conn.answer().await
    }

    /// A POST of `body` to `/mcp` with the usual headers plus `extra` (`name: value` lines).
    pub async fn post(&self, extra: &[&str], body: &Value) -> Answer {
        let body = body.to_string();
        self.raw(&self.post_head(extra, body.len()), body.as_bytes())
            .await
    }

    pub fn post_head(&self, extra: &[&str], len: usize) -> String {
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {len}",
            self.host()
        );
        for h in extra {
            head.push_str("\r\n");
            head.push_str(h);
        }
        head
    }

    /// An `initialize` POST with `extra` headers, as answered (a session is opened only on 200).
    pub async fn initialize_as(&self, extra: &[&str]) -> Answer {
        self.post(
            extra,
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                           "clientInfo": {"name": "t", "version": "1"}}}),
        )
        .await
    }

    /// A legacy session, initialized: its id.
    pub async fn initialize(&self) -> String {
        self.initialize_with(json!({})).await
    }

    /// A legacy session declaring `capabilities`, initialized: its id.
    pub async fn initialize_with(&self, capabilities: Value) -> String {
        let answer = self
            .post(
                &[],
                &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": capabilities,
                           "clientInfo": {"name": "t", "version": "1"}}}),
            )
            .await;
        assert_eq!(answer.status, 200, "{}", answer.text());
        let id = answer
            .header("mcp-session-id")
            .expect("a session id")
            .to_owned();
        let sid = format!("Mcp-Session-Id: {id}");
        let note = self
            .post(
                &[&sid],
                &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            )
            .await;
        assert_eq!(note.status, 202);
        id
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// One HTTP response, read whole.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The JSON body, or the last `data:` of an event stream.
    pub fn json(&self) -> Value {
        let text = self.text();
        let data = text
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix("data: "))
            .unwrap_or(&text);
        serde_json::from_str(data).unwrap_or_else(|e| panic!("{e}: {text}"))
    }

    pub fn error_code(&self) -> Option<i64> {
        self.json()["error"]["code"].as_i64()
    }
}

/// A raw HTTP/1.1 connection.
pub struct Conn {
    reader: BufReader<TcpStream>,
}

impl Conn {
    pub async fn open(addr: SocketAddr) -> Self {
        Self {
            reader: BufReader::new(TcpStream::connect(addr).await.unwrap()),
        }
    }

    /// A connection whose receive buffer is tiny, so a client that does not read fills it at once.
    pub async fn open_small(addr: SocketAddr) -> Self {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        Self {
            reader: BufReader::new(socket.connect(addr).await.unwrap()),
        }
    }

    pub async fn send(&mut self, head: &str, body: &[u8]) {
        let stream = self.reader.get_mut();
        stream.write_all(head.as_bytes()).await.unwrap();
        stream.write_all(b"\r\n\r\n").await.unwrap();
        stream.write_all(body).await.unwrap();
    }

    /// `send`, telling a closed connection instead of failing.
    pub async fn try_send(&mut self, head: &str, body: &[u8]) -> std::io::Result<()> {
        let stream = self.reader.get_mut();
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(b"\r\n\r\n").await?;
        stream.write_all(body).await
    }

    /// A whole response with a `Content-Length` body; `None` when the connection closed first.
    pub async fn try_answer(&mut self) -> Option<Answer> {
        let mut line = String::new();
        if self.reader.read_line(&mut line).await.ok()? == 0 {
            return None;
        }
        let status = line.split(' ').nth(1)?.parse().ok()?;
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            if self.reader.read_line(&mut line).await.ok()? == 0 {
                return None;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((n, v)) = line.split_once(':') {
                headers.push((n.trim().to_owned(), v.trim().to_owned()));
            }
        }
        let answer = Answer {
            status,
            headers,
            body: Vec::new(),
        };
        let len: usize = answer.header("content-length")?.parse().ok()?;
        let mut body = vec![0; len];
        self.reader.read_exact(&mut body).await.ok()?;
        Some(Answer { body, ..answer })
    }

    /// The socket, for reads of its own.
    pub fn reader_mut(&mut self) -> &mut BufReader<TcpStream> {
        &mut self.reader
    }

    pub async fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.reader.get_mut().write_all(bytes).await
    }

    /// The status line and headers.
    pub async fn head(&mut self) -> (u16, Vec<(String, String)>) {
        let mut line = String::new();
        self.reader.read_line(&mut line).await.unwrap();
        let status = line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line).await.unwrap();
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((n, v)) = line.split_once(':') {
                headers.push((n.trim().to_owned(), v.trim().to_owned()));
            }
        }
        (status, headers)
    }

    /// A whole response (content-length or chunked), within 30 s.
    pub async fn answer(&mut self) -> Answer {
        tokio::time::timeout(Duration::from_secs(30), async {
            let (status, headers) = self.head().await;
            let answer = Answer {
                status,
                headers,
                body: Vec::new(),
            };
            let body = if answer.header("transfer-encoding") == Some("chunked") {
                let mut body = Vec::new();
                while let Some(chunk) = self.chunk().await {
                    body.extend_from_slice(&chunk);
                }
                body
            } else {
                let len: usize = answer
                    .header("content-length")
                    .and_then(|l| l.parse().ok())
                    .unwrap_or(0);
                let mut body = vec![0; len];
                self.reader.read_exact(&mut body).await.unwrap();
                body
            };
            Answer { body, ..answer }
        })
        .await
        .expect("an answer within 30 s")
    }

    /// The next chunk of a chunked body; `None` at its end.
    pub async fn chunk(&mut self) -> Option<Vec<u8>> {
        let mut size = String::new();
        if self.reader.read_line(&mut size).await.ok()? == 0 {
            return None;
        }
        let size = usize::from_str_radix(size.trim(), 16).ok()?;
        let mut chunk = vec![0; size + 2];
        self.reader.read_exact(&mut chunk).await.ok()?;
        chunk.truncate(size);
        (size > 0).then_some(chunk)
    }
}

/// Adds an API key per name, identity `key:<name>`; `bearer(name)` is its header.
pub fn keys(config: &mut config::Config, names: &[&str]) {
    use sha2::{Digest, Sha256};
    for name in names {
        let mut sha256 = [0u8; 32];
        sha256.copy_from_slice(&Sha256::digest(format!("secret-{name}").as_bytes()));
        config.http.auth.api_keys.push(config::ApiKey {
            name: (*name).to_owned(),
            sha256,
            profile: None,
        });
    }
}

/// The `Authorization` header line of the key `keys` made for `name`.
pub fn bearer(name: &str) -> String {
    format!("Authorization: Bearer secret-{name}")
}

/// A tools/call request.
pub fn call(id: i64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": name, "arguments": arguments}})
}
