//! What the bench binaries share: their command-line options, the runtime they drive toolgate from, the
//! percentile they report, and a toolgate serving HTTP. Each bench uses a subset.

#![allow(dead_code)]

/// The value after `name` on the bench's command line.
pub fn arg(name: &str) -> Option<String> {
    std::env::args().skip_while(|a| a != name).nth(1)
}

/// The value after `name`, as a number, or `default`.
pub fn number(name: &str, default: usize) -> usize {
    arg(name).and_then(|n| n.parse().ok()).unwrap_or(default)
}

/// The nearest-rank percentile `p` of `sorted`.
pub fn pct(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Two worker threads: the client side of a bench, beside the toolgate process it measures.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The `toolgate` binary this bench was built with.
pub fn toolgate() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_BIN_EXE_toolgate"))
}

/// `toolgate serve --config <config> <extra…>`, initialised as a 2025-11-25 client.
pub async fn serve(config: &str, extra: &[&str]) -> test_support::StdioClient {
    let mut args = vec!["serve", "--config", config];
    args.extend_from_slice(extra);
    let client =
        test_support::StdioClient::spawn(&toolgate(), &args, &[], std::collections::HashMap::new())
            .unwrap();
    client
        .initialize("2025-11-25", serde_json::json!({}))
        .await
        .unwrap();
    client
}

/// `toolgate serve --config <config> --http <free loopback port> <extra…>`; killed when dropped.
pub struct Front {
    pub child: std::process::Child,
    pub url: String,
}

impl Drop for Front {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Front {
    pub fn start(config: &str, extra: &[&str]) -> Self {
        use std::time::{Duration, Instant};
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr: std::net::SocketAddr = ([127, 0, 0, 1], port).into();
        let child = std::process::Command::new(toolgate())
            .args(["serve", "--config", config])
            .args(extra)
            .args(["--http", &addr.to_string()])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(addr).is_err() {
            assert!(Instant::now() < deadline, "toolgate did not listen");
            std::thread::sleep(Duration::from_millis(20));
        }
        Self {
            child,
            url: format!("http://{addr}/mcp"),
        }
    }

    /// A field of `/proc/<pid>/status` in kB (`VmHWM`, `VmRSS`).
    pub fn memory_kb(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }
}
