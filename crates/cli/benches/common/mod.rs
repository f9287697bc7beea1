//! What the bench binaries share: their command-line options, the runtime they drive toolgate from, the
//! percentile they report, the CPU time a measured process used, and a toolgate serving HTTP. Each bench uses a
//! subset.

#![allow(dead_code)]

pub mod mcp_http;

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

/// CPU time (user + system, all threads) process `pid` has used so far, in µs; with `children`, also that of its
/// children it has waited for (code mode's workers). Read from `/proc/<pid>/stat`, in clock ticks (10 ms): a bench
/// reads it around thousands of calls, not one. This is the figure a noisy machine leaves honest: wall latency
/// there is dominated by how fast an idle vCPU wakes, CPU time by the work done.
pub fn cpu_us(pid: u32, children: bool) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat_cpu_us(&stat, children)
}

/// The CPU time in a `stat` line of `/proc` (a process's or one thread's), in µs.
fn stat_cpu_us(stat: &str, children: bool) -> f64 {
    // Fields after the command name, which is in parentheses and may hold spaces: state is field 3, utime 14,
    // stime 15, cutime 16, cstime 17.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<f64> = rest
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0.0))
        .collect();
    let field = |n: usize| fields.get(n - 3).copied().unwrap_or(0.0);
    let mut ticks = field(14) + field(15);
    if children {
        ticks += field(16) + field(17);
    }
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    ticks * 1e6 / hz
}

/// CPU time (user + system) each live thread of process `pid` has used so far, in µs, summed by thread name
/// (`toolgate-gw`, `toolgate-audit`, ...). Threads that have exited are missing: `cpu_us` still counts them.
pub fn thread_cpu_us(pid: u32) -> std::collections::BTreeMap<String, f64> {
    let mut by_name = std::collections::BTreeMap::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return by_name;
    };
    for task in tasks.flatten() {
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
            continue;
        };
        let name = stat
            .split_once('(')
            .and_then(|(_, r)| r.rsplit_once(')'))
            .map_or("?", |(n, _)| n)
            .to_owned();
        *by_name.entry(name).or_insert(0.0) += stat_cpu_us(&stat, false);
    }
    by_name
}

/// Sums the CPU time a process spends over the parts of a run that are its arm's, so alternating arms each count
/// only their own blocks. Work the process finishes after a block (the audit writer behind the calls) is caught
/// by `settle` before the last reading.
pub struct CpuMeter {
    pid: u32,
    children: bool,
    started: Option<(f64, std::collections::BTreeMap<String, f64>)>,
    pub total_us: f64,
    /// The same time, by thread name (threads that exited within a block fall under `other`).
    pub by_thread: std::collections::BTreeMap<String, f64>,
    pub calls: usize,
}

impl CpuMeter {
    pub fn new(pid: u32, children: bool) -> Self {
        Self {
            pid,
            children,
            started: None,
            total_us: 0.0,
            by_thread: std::collections::BTreeMap::new(),
            calls: 0,
        }
    }

    pub fn start(&mut self) {
        self.started = Some((cpu_us(self.pid, self.children), thread_cpu_us(self.pid)));
    }

    /// Ends a block of `calls` calls. `settle` waits first, for work still queued behind the calls.
    pub fn stop(&mut self, calls: usize, settle: std::time::Duration) {
        std::thread::sleep(settle);
        if let Some((t, threads)) = self.started.take() {
            let total = cpu_us(self.pid, self.children) - t;
            let mut named = 0.0;
            for (name, now) in thread_cpu_us(self.pid) {
                let used = now - threads.get(&name).copied().unwrap_or(0.0);
                named += used;
                *self.by_thread.entry(name).or_insert(0.0) += used;
            }
            *self.by_thread.entry("other".into()).or_insert(0.0) += (total - named).max(0.0);
            self.total_us += total;
            self.calls += calls;
        }
    }

    /// µs of CPU per call by thread name, the busiest first, as `name 12.3 · name 4.5`.
    pub fn per_call_by_thread(&self) -> String {
        let mut threads: Vec<(&String, f64)> = self
            .by_thread
            .iter()
            .map(|(n, us)| (n, us / self.calls.max(1) as f64))
            .filter(|(_, us)| *us >= 0.05)
            .collect();
        threads.sort_by(|a, b| b.1.total_cmp(&a.1));
        threads
            .iter()
            .map(|(n, us)| format!("{n} {us:.1}"))
            .collect::<Vec<_>>()
            .join(" · ")
    }

    /// µs of CPU per call over every block.
    pub fn per_call(&self) -> f64 {
        self.total_us / self.calls.max(1) as f64
    }
}

/// Two worker threads: the client side of a bench, beside the toolgate process it measures.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The `toolgate` binary to measure: `TOOLGATE_BENCH_BIN` when set (to compare two builds with one bench binary,
/// run alternately in one sitting), else the one this bench was built with.
pub fn toolgate() -> std::path::PathBuf {
    std::env::var_os("TOOLGATE_BENCH_BIN")
        .map_or_else(|| env!("CARGO_BIN_EXE_toolgate").into(), Into::into)
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
        Self::start_with(config, extra, &[])
    }

    /// `start` with environment variables for the server (a replica's state root, name and store password).
    pub fn start_with(config: &str, extra: &[&str], env: &[(&str, &str)]) -> Self {
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
            .envs(env.iter().copied())
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
