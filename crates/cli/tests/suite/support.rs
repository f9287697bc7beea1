//! Shared helpers: the binary under test, temporary configs around the bundled fixture server, clients.

use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use test_support::StdioClient;

pub fn toolgate() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_toolgate"))
}

/// An `mcpServers` entry that runs the bundled fixture server with `args`.
pub fn fixture(args: &[&str]) -> Value {
    let mut all = vec!["fixture-server"];
    all.extend_from_slice(args);
    json!({"command": toolgate(), "args": all})
}

/// A config file in a fresh temporary directory; the directory lives as long as the returned guard.
pub struct Setup {
    pub dir: tempfile::TempDir,
    pub config: PathBuf,
}

impl Setup {
    /// A directory for upstreams to work in, inside the temporary directory.
    pub fn workspace(&self) -> PathBuf {
        let ws = std::fs::canonicalize(self.dir.path())
            .expect("canonical")
            .join("ws");
        std::fs::create_dir_all(&ws).expect("workspace");
        ws
    }
}

impl Setup {
    pub fn new(config: Value) -> Self {
        Self::with(|_| config)
    }

    /// A config built knowing the temporary directory (for workspaces that live beside it).
    pub fn with(build: impl FnOnce(&Path) -> Value) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = std::fs::canonicalize(dir.path()).expect("canonical temp dir");
        let config = build(&root);
        let path = root.join("toolgate.json");
        std::fs::write(&path, serde_json::to_vec_pretty(&config).expect("json"))
            .expect("write config");
        Self { dir, config: path }
    }

    /// One fixture upstream named `fx` with extra fixture args, and optional top-level settings merged in.
    /// The policy allows everything unless `settings` says otherwise: these tests are about the gateway.
    pub fn fixture(args: &[&str], settings: Value) -> Self {
        let mut config =
            json!({"mcpServers": {"fx": fixture(args)}, "permissions": {"default": "allow"}});
        if let Value::Object(extra) = settings {
            for (k, v) in extra {
                config[k] = v;
            }
        }
        Self::new(config)
    }

    pub fn serve(&self) -> StdioClient {
        self.serve_with(HashMap::new(), &[])
    }

    /// Runs `toolgate serve` with `env` added. Unless `env` names one, the state directory is this setup's own
    /// (`<tmp>/state`), so tests never touch the user's state.
    pub fn serve_with(&self, answers: HashMap<String, Value>, env: &[(&str, &str)]) -> StdioClient {
        let config = self.config.to_str().expect("utf-8 path");
        let state = self.state_dir();
        let mut all: Vec<(&str, &str)> =
            vec![("TOOLGATE_STATE_DIR", state.to_str().expect("utf-8 path"))];
        all.extend_from_slice(env);
        StdioClient::spawn(&toolgate(), &["serve", "--config", config], &all, answers)
            .expect("spawn toolgate")
    }

    pub fn state_dir(&self) -> PathBuf {
        std::fs::canonicalize(self.dir.path())
            .expect("canonical")
            .join("state")
    }
}

/// A legacy client, initialized.
pub async fn legacy(setup: &Setup) -> StdioClient {
    let client = setup.serve();
    client
        .initialize("2025-11-25", json!({}))
        .await
        .expect("initialize");
    client
}

pub async fn call(client: &StdioClient, name: &str, args: Value) -> Result<Value, Value> {
    client
        .request("tools/call", json!({"name": name, "arguments": args}))
        .await
}

/// An upstream's elicitation message as toolgate relays it: labelled with the server that asks.
pub fn relayed(server: &str, message: &str) -> String {
    format!(
        "Server {server:?} asks (relayed by toolgate; not a toolgate approval question): {message}"
    )
}

pub fn text(result: &Value) -> &str {
    result
        .pointer("/content/0/text")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Waits until `pid` is gone (at most `secs`).
pub async fn gone(pid: i32, secs: u64) -> bool {
    for _ in 0..secs * 20 {
        if test_support::exited(pid) {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    false
}

/// Where the npm and PyPI test peers are installed (`scripts/test` installs them).
pub fn peers() -> PathBuf {
    let dir = std::env::var_os("TOOLGATE_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/peers"));
    let ready = dir.join("node_modules/@modelcontextprotocol/sdk").is_dir()
        && dir.join(".venv/bin/python").is_file();
    assert!(
        ready,
        "the interop test peers are not installed in {}: run scripts/test (it installs them with npm and pip)",
        dir.display()
    );
    dir
}

/// The Node.js 22 the Inspector and Node's own WebSocket client need, installed as a pinned test peer (npm
/// package `node`).
pub fn node22() -> PathBuf {
    let node = peers().join("node_modules/.bin/node");
    assert!(
        node.is_file(),
        "Node.js 22 is not installed in the test peers: run scripts/test"
    );
    node
}

/// The operator key of a state root, as a script of the operator presents it (`--operator-key`).
pub fn operator_key(state_root: &Path) -> PathBuf {
    state_root.join("operator.key")
}

/// What a command run on a terminal did: its exit code, stdout, stderr and what it wrote to the terminal.
pub struct TerminalRun {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub terminal: String,
}

/// Runs `cmd` in a session of its own whose controlling terminal is a fresh pseudo-terminal, as an operator's
/// shell would, and types `typed` on it once the command has written `prompt` there (or never, if it exits
/// first). Stdin is empty, so an answer can only come from the terminal.
pub fn run_on_terminal(mut cmd: std::process::Command, prompt: &str, typed: &[u8]) -> TerminalRun {
    use std::io::{Read, Write};
    let (mut master, slave) = open_terminal();
    on_terminal(&mut cmd, &slave);
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn on a terminal");
    drop(slave);
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<u8>::new()));
    let mut reader = master.try_clone().expect("clone the terminal");
    let sink = std::sync::Arc::clone(&seen);
    let reading = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        // Ends with EIO once the command (the terminal's last user) has exited.
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let shown = String::from_utf8_lossy(&seen.lock().unwrap()).contains(prompt);
        if shown {
            master.write_all(typed).expect("type on the terminal");
            break;
        }
        if child.try_wait().expect("wait").is_some() || std::time::Instant::now() > deadline {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("wait for the command");
    drop(master);
    let _ = reading.join();
    let terminal = String::from_utf8_lossy(&seen.lock().unwrap()).into_owned();
    TerminalRun {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        terminal,
    }
}

/// A fresh pseudo-terminal: its master and slave ends.
pub fn open_terminal() -> (std::fs::File, std::fs::File) {
    use std::os::fd::FromRawFd;
    let (mut m, mut s) = (-1, -1);
    // SAFETY: openpty writes two descriptors into the given integers; the other arguments may be null.
    let rc = unsafe {
        libc::openpty(
            &mut m,
            &mut s,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened and are owned here alone.
    unsafe { (std::fs::File::from_raw_fd(m), std::fs::File::from_raw_fd(s)) }
}

/// Makes `cmd` start in a session of its own whose controlling terminal is `slave` (kept open by the caller
/// until the command has started).
pub fn on_terminal(cmd: &mut std::process::Command, slave: &std::fs::File) {
    use std::os::unix::process::CommandExt;
    let slave_fd = std::os::fd::AsRawFd::as_raw_fd(slave);
    // SAFETY: setsid and ioctl are async-signal-safe; the child makes the inherited slave its terminal.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setsid() < 0 || libc::ioctl(slave_fd, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// The pids of `pid`'s children, from every one of its threads' `children` list (a child belongs to the thread
/// that started it).
pub fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let list = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        out.extend(
            list.split_whitespace()
                .filter_map(|p| p.parse::<u32>().ok()),
        );
    }
    out
}

/// The host pids of every process in the PID namespace of a contained upstream whose tree handle (the `pid`
/// its status shows) is `leader`: the namespace's init, the server, and whatever they started, `setsid` or not.
pub fn contained_tree(leader: i32) -> Vec<i32> {
    let children = std::fs::read_to_string(format!("/proc/{leader}/task/{leader}/children"))
        .unwrap_or_default();
    let Some(init) = children.split_whitespace().next() else {
        return Vec::new();
    };
    let Ok(ns) = std::fs::read_link(format!("/proc/{init}/ns/pid")) else {
        return Vec::new();
    };
    let mut tree: Vec<i32> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| std::fs::read_link(format!("/proc/{pid}/ns/pid")).is_ok_and(|l| l == ns))
        .collect();
    tree.sort_unstable();
    tree
}

/// The products' command names linked to the binary under test in `dir/bin` (`toolgate install-links`), so tests
/// start toolgate as a switching user's client entries do. Returns the directory of the links.
pub fn product_links(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).expect("bin dir");
    let out = std::process::Command::new(toolgate())
        .arg("install-links")
        .arg(&bin)
        .output()
        .expect("run install-links");
    assert!(
        out.status.success(),
        "install-links: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    bin
}

/// `toolgate serve --http` as `cmd` starts it, once it says where it serves: the endpoint URL, and the process,
/// killed when dropped.
pub struct ServedHttp {
    pub child: std::process::Child,
    /// `http://ADDR/mcp`.
    pub url: String,
}

impl ServedHttp {
    /// Runs `cmd` (a `serve --http` command line) with its stderr read here for the URL it logs.
    pub fn spawn(mut cmd: std::process::Command) -> Self {
        use std::io::BufRead;
        let mut child = cmd
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn toolgate serve --http");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                if let Some(url) = line
                    .split(" at ")
                    .nth(1)
                    .filter(|u| u.starts_with("http://"))
                {
                    let _ = tx.send(url.trim().to_owned());
                }
            }
        });
        let url = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("toolgate logs the URL it serves");
        Self { child, url }
    }
}

impl Drop for ServedHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every audit record under a state directory (one workspace there, so one log), read after toolgate stopped.
pub fn audit_records(state: &Path) -> Vec<Value> {
    let mut out = Vec::new();
    let mut dirs = vec![state.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.file_name().is_some_and(|n| n == "audit.jsonl") {
                let text = std::fs::read_to_string(&path).expect("audit log");
                out.extend(
                    text.lines()
                        .map(|l| serde_json::from_str::<Value>(l).expect("a record")),
                );
            }
        }
    }
    out
}

/// The JSON-RPC answer in a Streamable HTTP response body, whether plain JSON or an event stream.
pub fn answer_in(text: &str) -> Value {
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .chain(std::iter::once(text))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|m| m.get("id").is_some())
        .unwrap_or_else(|| panic!("no answer in {text:?}"))
}
