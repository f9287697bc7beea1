//! Times runs of a 6-call program on workers started for each run (no spare), one after the other with a pause
//! between them, and prints the wall percentiles and this process's CPU time per run: what a cold start costs,
//! without a gateway around it, for tracing (`strace -f --seccomp-bpf -ttt -e trace=clone,execve,unshare,mount,
//! read,write`) or comparing two worker executables. It only measures; the limits are the tests'.
//!
//! Run: `cargo run --release -p codemode --example cold_start -- RUNS WORKER [ARGS…]`, e.g. with
//! `target/release/toolgate-codemode-worker`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use codemode::{
    CodeSession, HostFuture, NestedCall, RunEnd, RunLimits, Runner, ToolHost, WorkerCommand,
};
use std::time::{Duration, Instant};

/// Answers each call at once with its `text`.
struct Echo;

impl ToolHost for Echo {
    fn call(&self, call: NestedCall) -> HostFuture<'_> {
        Box::pin(async move {
            Ok(serde_json::json!({"structuredContent": {"text": call.arguments["text"].clone()}}))
        })
    }
}

/// This process's CPU time so far (user + system), in ms.
fn cpu_ms() -> f64 {
    // SAFETY: getrusage writes one struct we own.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let seconds = (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) as f64;
    let micros = (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) as f64;
    seconds * 1e3 + micros / 1e3
}

fn main() {
    let mut args = std::env::args().skip(1);
    let runs: usize = args
        .next()
        .expect("RUNS")
        .parse()
        .expect("RUNS is a number");
    let program = args.next().expect("WORKER");
    let command = WorkerCommand {
        program: program.into(),
        args: args.collect(),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let runner = Runner::new(command, RunLimits::default());
        let session = CodeSession::new(None);
        let code = "let t = '0'; for (let i = 0; i < 6; i++) t = (await call('e', {text: t + '+'})).text; return t;";
        let (mut ms, started) = (Vec::new(), cpu_ms());
        for _ in 0..runs.max(1) {
            let t = Instant::now();
            let report = runner.run(code, &Echo, &session).await;
            ms.push(t.elapsed().as_secs_f64() * 1e3);
            assert!(matches!(report.end, RunEnd::Returned(_)), "{report:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let cpu = (cpu_ms() - started) / ms.len() as f64;
        ms.sort_by(f64::total_cmp);
        let at = |p: usize| ms[(ms.len() * p / 100).min(ms.len() - 1)];
        println!("cold runs: p10 {:.2} p50 {:.2} p90 {:.2} ms; this process's CPU per run {cpu:.2} ms", at(10), at(50), at(90));
    });
}
