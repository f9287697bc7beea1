//! A legacy (2025-11-25) MCP session over Streamable HTTP, as the HTTP benches drive toolgate: `initialize`,
//! then `echo` calls of the fixture; and the HTTP/1.1 keep-alive client they share.

use serde_json::{json, Value};
use std::sync::atomic::{AtomicI64, Ordering};

const VERSION: &str = "2025-11-25";

/// One legacy MCP session over Streamable HTTP.
pub struct Session {
    client: reqwest::Client,
    url: String,
    id: String,
    next: AtomicI64,
}

/// Posts one JSON-RPC message; the answer to a request is the response body, or the message carrying its id on
/// the SSE stream the server chose to answer with.
async fn post(
    client: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: &Value,
) -> Result<(Option<String>, Option<Value>), String> {
    let mut req = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", VERSION)
        .body(body.to_string());
    if let Some(s) = session {
        req = req.header("mcp-session-id", s);
    }
    let resp = req.send().await.map_err(|e| e.to_string())?;
    let status = resp.status();
    let session = resp
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let sse = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("text/event-stream"));
    let text = resp.text().await.map_err(|e| e.to_string())?;
    if !status.is_success() {
        return Err(format!("HTTP {status}: {text}"));
    }
    let Some(id) = body.get("id") else {
        return Ok((session, None));
    };
    let answer = if sse {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|m| m.get("id") == Some(id) && m.get("method").is_none())
    } else {
        serde_json::from_str(&text).ok()
    };
    answer
        .map(|a| (session, Some(a)))
        .ok_or_else(|| format!("no answer in {text:?}"))
}

impl Session {
    pub async fn open(client: reqwest::Client, url: String) -> Result<Self, String> {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": VERSION, "capabilities": {},
            "clientInfo": {"name": "http-bench", "version": "1"}}});
        let (id, answer) = post(&client, &url, None, &init).await?;
        let id = id.ok_or("no Mcp-Session-Id")?;
        if answer.and_then(|a| a.get("result").cloned()).is_none() {
            return Err("initialize failed".into());
        }
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        post(&client, &url, Some(&id), &note).await?;
        Ok(Self {
            client,
            url,
            id,
            next: 1.into(),
        })
    }

    /// Ends the session (`DELETE` with its id), so a bench that opens sessions round after round stays within
    /// the gateway's bound on live sessions.
    pub async fn close(self) {
        let _ = self
            .client
            .delete(&self.url)
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", VERSION)
            .send()
            .await;
    }

    pub async fn echo(&self) -> Result<(), String> {
        let params = json!({"name": "fx__echo", "arguments": {"text": "x"}});
        match self.request("tools/call", params).await? {
            a if a.pointer("/result/content").is_some() => Ok(()),
            a => Err(format!("unexpected answer {a:?}")),
        }
    }

    /// One request in the session; its answer (a result or an error).
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        match post(&self.client, &self.url, Some(&self.id), &body).await? {
            (_, Some(a)) => Ok(a),
            (_, None) => Err("no answer".into()),
        }
    }
}

pub fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .http1_only()
        .pool_max_idle_per_host(1024)
        .tcp_nodelay(true)
        .build()
        .unwrap()
}
