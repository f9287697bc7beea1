//! Programs that try to leave the code-mode worker, exhaust it or outlive their run, against the real worker
//! (`toolgate-codemode-worker`, built with this package) and a small host. Each test checks that the run ends with a clear answer
//! within its limit and that no process of the worker is left. The attacks are grouped as escapes from the
//! engine (`escapes`), its limits (`limits`) and the run's life from start to end (`lifecycle`); this module
//! holds the host and the helpers. Every attack through `run`/`run_with` runs on a spare worker (started and
//! locked down before the program was sent), the way the gateway runs programs; `warm` checks the spare itself.

mod escapes;
mod lifecycle;
mod limits;
mod warm;

use std::sync::Mutex;
use std::time::{Duration, Instant};

use codemode::{
    CallFailure, CodeSession, HostFuture, LimitKind, NestedCall, RunEnd, RunLimits, RunReport,
    Runner, Spares, ToolHost, WorkerCommand,
};
use serde_json::{json, Value};

/// Answers `echo` with its arguments (as structured content), `big` with 12 MiB of text, `slow` after 600 ms, refuses `denied`, never
/// answers `hang`, fails anything else, and remembers every call it was asked to run.
#[derive(Default)]
pub(super) struct Host {
    seen: Mutex<Vec<NestedCall>>,
}

impl Host {
    pub(super) fn seen(&self) -> Vec<NestedCall> {
        self.seen.lock().unwrap().clone()
    }
}

impl ToolHost for Host {
    fn call(&self, call: NestedCall) -> HostFuture<'_> {
        self.seen.lock().unwrap().push(call.clone());
        Box::pin(async move {
            match call.name.as_str() {
                "echo" => Ok(json!({
                    "content": [{"type": "text", "text": call.arguments.to_string()}],
                    "structuredContent": call.arguments,
                })),
                "denied" => Err(CallFailure::Refused {
                    code: "POLICY_DENIED".into(),
                    message: "denied by rule deny-all".into(),
                }),
                "hang" => std::future::pending().await,
                "big" => Ok(json!({"content": [{"type": "text", "text": "x".repeat(12 << 20)}]})),
                "slow" => {
                    tokio::time::sleep(Duration::from_millis(600)).await;
                    Ok(json!({"content": [{"type": "text", "text": "slow"}]}))
                }
                _ => Err(CallFailure::Failed {
                    message: format!("no tool {}", call.name),
                }),
            }
        })
    }
}

/// A label no other test's worker carries, to find this test's workers in the process list.
pub(super) fn tag(name: &str) -> String {
    format!("escape-{name}-{}", std::process::id())
}

pub(super) fn runner(tag: &str, wall: Duration) -> Runner {
    let command = WorkerCommand {
        program: env!("CARGO_BIN_EXE_toolgate-codemode-worker").into(),
        args: vec!["--run".into(), tag.into()],
    };
    Runner::new(
        command,
        RunLimits {
            wall,
            memory_bytes: 32 << 20,
            max_calls: 20,
            result_bytes: 64 << 10,
            log_bytes: 4 << 10,
            require: Vec::new(),
        },
    )
}

/// Processes whose command line carries `tag` (a zombie has an empty command line and does not count).
pub(super) fn workers(tag: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if String::from_utf8_lossy(&cmdline).contains(tag) {
            found.push(pid);
        }
    }
    found
}

/// Lets the runtime drop a spare's start that a dropped runner ended.
pub(super) async fn settle() {
    tokio::time::sleep(Duration::from_millis(20)).await;
}

/// The worker's processes are gone (SIGKILL lands at once, but the kernel may take a moment to tear down).
pub(super) fn assert_gone(tag: &str) {
    let deadline = Instant::now() + Duration::from_secs(2);
    while !workers(tag).is_empty() {
        assert!(
            Instant::now() < deadline,
            "worker processes left behind: {:?}",
            workers(tag)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Runs `program` with a fresh host and session under `wall`, and checks the worker is gone afterwards.
pub(super) async fn run(name: &str, wall: Duration, program: &str) -> (RunReport, Vec<NestedCall>) {
    run_with(name, runner(&tag(name), wall), program).await
}

pub(super) async fn run_with(
    name: &str,
    runner: Runner,
    program: &str,
) -> (RunReport, Vec<NestedCall>) {
    let host = Host::default();
    let session = CodeSession::new(None);
    let runner = runner.with_spares(1);
    runner.warm_up().await;
    let report = runner.run(program, &host, &session).await;
    // The runner takes its spare and the one started after the run with it.
    drop(runner);
    settle().await;
    assert_gone(&tag(name));
    (report, host.seen())
}

pub(super) fn threw(report: &RunReport) -> &str {
    match &report.end {
        RunEnd::Threw { message } => message,
        other => panic!("expected the program to throw, got {other:?}"),
    }
}

pub(super) fn limit(report: &RunReport) -> LimitKind {
    match &report.end {
        RunEnd::Limit { kind, .. } => *kind,
        other => panic!("expected a limit, got {other:?}"),
    }
}

pub(super) const SHORT: Duration = Duration::from_secs(2);
