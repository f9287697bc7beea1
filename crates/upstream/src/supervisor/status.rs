//! What everyone but the supervisor sees of one upstream: its `State` and a `Status` snapshot for `doctor` and
//! the status tool. Plain data; the supervisor fills it in (`Upstream::status`).

use serde_json::{json, Value};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Starting,
    Ready,
    /// Exited or failed; waiting before the next start.
    Backoff,
    Stopped,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Starting => "starting",
            State::Ready => "ready",
            State::Backoff => "backoff",
            State::Stopped => "stopped",
        }
    }
}

/// A snapshot for `doctor` and the status tool.
#[derive(Clone, Debug)]
pub struct Status {
    pub server: String,
    pub state: State,
    pub protocol_version: Option<String>,
    pub pid: Option<u32>,
    /// How its process is contained, one `layer: state` per line (empty for HTTP).
    pub containment: Vec<String>,
    pub restarts: u32,
    pub last_error: Option<String>,
    pub tools: usize,
    pub resources: usize,
    pub prompts: usize,
    pub garbage_lines: u64,
    pub stderr_tail: Vec<String>,
    /// Lists the server declared but could not give (served as empty), with the reason.
    pub list_errors: Vec<(String, String)>,
}

impl Status {
    pub fn to_json(&self) -> Value {
        json!({
            "server": self.server, "state": self.state.as_str(), "protocolVersion": self.protocol_version,
            "pid": self.pid, "restarts": self.restarts, "lastError": self.last_error, "tools": self.tools,
            "resources": self.resources, "prompts": self.prompts, "ignoredStdoutLines": self.garbage_lines,
            "sandbox": self.containment,
            "listErrors": self.list_errors.iter().map(|(list, why)| json!({"list": list, "error": why})).collect::<Vec<_>>(),
        })
    }
}
