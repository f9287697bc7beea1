//! Programs that try to leave the code-mode worker, exhaust it or outlive their run, against the real worker
//! (this binary's `codemode-worker`) and a small host. Each test checks that the run ends with a clear answer
//! within its limit and that no process of the worker is left.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use codemode::{
    CallFailure, CodeSession, HostFuture, LimitKind, NestedCall, RunEnd, RunLimits, RunReport,
    Runner, ToolHost, WorkerCommand,
};
use serde_json::{json, Value};

/// Answers `echo` with its arguments (as structured content), `big` with 12 MiB of text, `slow` after 600 ms, refuses `denied`, never
/// answers `hang`, fails anything else, and remembers every call it was asked to run.
#[derive(Default)]
struct Host {
    seen: Mutex<Vec<NestedCall>>,
}

impl Host {
    fn seen(&self) -> Vec<NestedCall> {
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
fn tag(name: &str) -> String {
    format!("escape-{name}-{}", std::process::id())
}

fn runner(tag: &str, wall: Duration) -> Runner {
    let command = WorkerCommand {
        program: env!("CARGO_BIN_EXE_toolgate").into(),
        args: vec!["codemode-worker".into(), "--run".into(), tag.into()],
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
fn workers(tag: &str) -> Vec<u32> {
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

/// The worker's processes are gone (SIGKILL lands at once, but the kernel may take a moment to tear down).
fn assert_gone(tag: &str) {
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
async fn run(name: &str, wall: Duration, program: &str) -> (RunReport, Vec<NestedCall>) {
    run_with(name, runner(&tag(name), wall), program).await
}

async fn run_with(name: &str, runner: Runner, program: &str) -> (RunReport, Vec<NestedCall>) {
    let host = Host::default();
    let session = CodeSession::new(None);
    let report = runner.run(program, &host, &session).await;
    assert_gone(&tag(name));
    (report, host.seen())
}

fn threw(report: &RunReport) -> &str {
    match &report.end {
        RunEnd::Threw { message } => message,
        other => panic!("expected the program to throw, got {other:?}"),
    }
}

fn limit(report: &RunReport) -> LimitKind {
    match &report.end {
        RunEnd::Limit { kind, .. } => *kind,
        other => panic!("expected a limit, got {other:?}"),
    }
}

const SHORT: Duration = Duration::from_secs(2);

#[tokio::test]
async fn program_calls_tools_and_returns_its_answer() {
    let (report, seen) = run(
        "basic",
        SHORT,
        r#"
        console.log("start", {step: 1});
        const a = await call("echo", {n: 1});
        const [b, c] = await Promise.all([call("echo", {n: 2}), call("echo", {n: 3})]);
        let refused;
        try { await call("denied", {}); } catch (e) { refused = [e.code, e.message, e instanceof Error]; }
        return {sum: a.n + b.n + c.n, refused, again: await recall(1)};
        "#,
    )
    .await;
    assert_eq!(
        report.end,
        RunEnd::Returned(json!({
            "sum": 6,
            "refused": ["POLICY_DENIED", "denied by rule deny-all", true],
            "again": {"n": 1},
        }))
    );
    assert_eq!(report.log, "start {\"step\":1}\n");
    let names: Vec<_> = seen.iter().map(|c| (c.seq, c.name.as_str())).collect();
    assert_eq!(
        names,
        [(1, "echo"), (2, "echo"), (3, "echo"), (4, "denied")]
    );
    let denied = report.calls.iter().find(|c| c.seq == 4).unwrap();
    assert_eq!(
        denied.error.as_deref(),
        Some("POLICY_DENIED: denied by rule deny-all")
    );
}

#[tokio::test]
async fn worker_reports_its_lockdown_layers() {
    let (report, _) = run("layers", SHORT, "return 1").await;
    assert_eq!(report.end, RunEnd::Returned(json!(1)));
    let state = |name: &str| {
        report
            .layers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, s)| s.clone())
            .unwrap_or_else(|| panic!("no layer {name} in {:?}", report.layers))
    };
    assert_eq!(state("empty_env"), "active");
    assert_eq!(state("syscall_allowlist"), "active");
    assert_eq!(state("open_files"), "active");
    for name in [
        "pid_namespace",
        "no_network",
        "rlimits",
        "no_new_privs",
        "ipc_namespace",
        "landlock",
    ] {
        let s = state(name);
        assert!(s == "active" || s.starts_with("unavailable"), "{name}: {s}");
    }
}

#[tokio::test]
async fn required_layer_that_is_missing_stops_the_run_before_the_program() {
    let tag = tag("required");
    let mut runner = runner(&tag, SHORT);
    runner.limits.require = vec!["no_such_layer".into()];
    let (report, seen) = run_with("required", runner, r#"await call("echo", {}); return 1"#).await;
    match &report.end {
        RunEnd::WorkerFailed { message } => assert!(message.contains("no_such_layer"), "{message}"),
        other => panic!("expected the run refused, got {other:?}"),
    }
    assert!(seen.is_empty());
}

/// The engine's standard library still works once the worker is locked down (time zone, clock, randomness).
#[tokio::test]
async fn built_ins_work_under_the_lockdown() {
    let (report, _) = run(
        "builtins",
        SHORT,
        r#"
        const d = new Date(0);
        return [typeof d.toString(), d.getTimezoneOffset() === d.getTimezoneOffset(),
                Math.random() < 1, /a+/.test("aa"), [3, 1, 2].sort().join(), typeof performance];
        "#,
    )
    .await;
    assert_eq!(
        report.end,
        RunEnd::Returned(json!(["string", true, true, true, "1,2,3", "object"]))
    );
}

#[tokio::test]
async fn unbounded_recursion_throws_a_range_error() {
    let (report, _) = run(
        "recursion",
        SHORT,
        "function f() { return f() + 1; } return f();",
    )
    .await;
    assert!(threw(&report).starts_with("RangeError"), "{report:?}");
}

#[tokio::test]
async fn require_fs_is_not_defined() {
    let (report, _) = run(
        "require",
        SHORT,
        "return require('fs').readFileSync('/etc/passwd')",
    )
    .await;
    assert_eq!(
        threw(&report),
        "ReferenceError: require is not defined (line 1)"
    );
}

#[tokio::test]
async fn process_env_is_not_defined() {
    let (report, _) = run("process", SHORT, "return process.env").await;
    assert_eq!(
        threw(&report),
        "ReferenceError: process is not defined (line 1)"
    );
}

#[tokio::test]
async fn global_fetch_is_not_a_function() {
    let (report, _) = run(
        "fetch",
        SHORT,
        "return await globalThis.fetch('http://example.com')",
    )
    .await;
    assert!(threw(&report).starts_with("TypeError"), "{report:?}");
}

#[tokio::test]
async fn dynamic_import_of_os_rejects() {
    let (report, _) = run(
        "import",
        SHORT,
        "const os = await import('os'); return os.getenv('HOME')",
    )
    .await;
    let message = threw(&report);
    assert!(message.contains("os"), "{message}");
}

/// The global object a program reaches through `Function('return this')()` or any constructor chain off the
/// bridge's functions is its own sandbox global: standard built-ins and the bridge, nothing of the host.
#[tokio::test]
async fn function_constructor_and_bridge_constructor_chains_reach_only_the_sandbox_global() {
    let (report, _) = run(
        "constructor",
        SHORT,
        r#"
        const viaFunction = Function('return this')();
        const viaCall = call.constructor('return this')();
        const viaChain = call.__proto__.constructor.constructor('return this')();
        const viaResult = (await call("echo", {a: 1})).constructor.constructor('return this')();
        const hostish = ['require', 'process', 'std', 'os', 'fetch', 'setTimeout', 'setInterval', 'Deno',
                         'Bun', 'XMLHttpRequest', 'WebSocket', 'importScripts', 'scriptArgs', 'print'];
        return {
            same: [viaCall, viaChain, viaResult].every(g => g === viaFunction && g === globalThis),
            hostish: hostish.filter(k => typeof viaFunction[k] !== 'undefined'),
            callOwn: Object.getOwnPropertyNames(call).sort(),
            callProto: Object.getPrototypeOf(call) === Function.prototype,
            source: call.toString().includes('native code') || call.toString().length < 100,
        };
        "#,
    )
    .await;
    assert_eq!(
        report.end,
        RunEnd::Returned(json!({
            "same": true,
            "hostish": [],
            "callOwn": ["length", "name"],
            "callProto": true,
            "source": true,
        }))
    );
}

/// Polluting `Object.prototype` and the values the bridge returns changes only the program's own view: the host
/// receives exactly the JSON of the arguments' own properties.
#[tokio::test]
async fn prototype_pollution_of_bridge_values_does_not_reach_the_host() {
    let (report, seen) = run(
        "pollution",
        SHORT,
        r#"
        Object.prototype.injected = "evil";
        Object.defineProperty(Object.prototype, 'getter', {get() { return "evil"; }, enumerable: true});
        Array.prototype.extra = "evil";
        const r = await call("echo", {a: 1, list: [1, 2]});
        r.__proto__.polluted = true;
        r.constructor.prototype.more = "evil";
        JSON.stringify = () => '{"name":"denied"}';
        globalThis.JSON = {stringify: () => '"x"', parse: () => ({})};
        const again = await call("echo", {b: r.a});
        return {a: r.a, b: again.b, own: Object.keys(again)};
        "#,
    )
    .await;
    let args: Vec<Value> = seen.iter().map(|c| c.arguments.clone()).collect();
    assert_eq!(args, [json!({"a": 1, "list": [1, 2]}), json!({"b": 1})]);
    assert!(seen.iter().all(|c| c.name == "echo"));
    assert!(matches!(report.end, RunEnd::Returned(_)), "{report:?}");
}

#[tokio::test]
async fn while_true_is_stopped_at_the_wall_clock() {
    let started = Instant::now();
    let (report, _) = run("while", Duration::from_secs(1), "while (true) {}").await;
    assert_eq!(limit(&report), LimitKind::WallClock);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn loop_that_swallows_exceptions_is_stopped_at_the_wall_clock() {
    let started = Instant::now();
    let (report, _) = run(
        "swallow",
        Duration::from_secs(1),
        "for (;;) { try { while (true) {} } catch (e) {} }",
    )
    .await;
    assert_eq!(limit(&report), LimitKind::WallClock);
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn redos_regex_is_stopped_at_the_wall_clock() {
    let started = Instant::now();
    let (report, _) = run(
        "redos",
        Duration::from_secs(1),
        "return /^(a+)+$/.test('a'.repeat(64) + 'b')",
    )
    .await;
    assert_eq!(limit(&report), LimitKind::WallClock);
    assert!(started.elapsed() < Duration::from_secs(3));
}

/// Joining a huge sparse array runs in a native loop; it ends at the memory limit or, when the engine never
/// checks in, at the parent's deadline, which kills the worker.
#[tokio::test]
async fn huge_array_join_ends_within_its_limits() {
    let started = Instant::now();
    let (report, _) = run("join", Duration::from_secs(2), "return new Array(1e8) + ''").await;
    let kind = limit(&report);
    assert!(
        matches!(kind, LimitKind::Memory | LimitKind::WallClock),
        "{report:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(4));
}

#[tokio::test]
async fn memory_bomb_ends_at_the_memory_limit() {
    let (report, _) = run(
        "membomb",
        SHORT,
        "const keep = []; for (;;) keep.push('x'.repeat(1 << 20) + keep.length);",
    )
    .await;
    assert_eq!(limit(&report), LimitKind::Memory, "{report:?}");
}

#[tokio::test]
async fn never_settling_promise_ends_at_once() {
    let started = Instant::now();
    let (report, _) = run("never", SHORT, "await new Promise(() => {}); return 1").await;
    assert!(threw(&report).contains("never settles"), "{report:?}");
    assert!(started.elapsed() < SHORT);
}

#[tokio::test]
async fn fifty_megabytes_of_log_are_cut_with_a_note() {
    let (report, _) = run(
        "biglog",
        SHORT,
        "const line = 'x'.repeat(1 << 20); for (let i = 0; i < 50; i++) console.log(line); return 'done'",
    )
    .await;
    assert_eq!(report.end, RunEnd::Returned(json!("done")));
    assert!(report.log_truncated);
    assert!(report.log.len() <= 4 << 10, "{}", report.log.len());
}

#[tokio::test]
async fn fifty_megabyte_return_value_is_an_output_limit() {
    let tag = tag("bigreturn");
    let mut runner = runner(&tag, Duration::from_secs(3));
    runner.limits.memory_bytes = 192 << 20;
    let (report, _) = run_with("bigreturn", runner, "return 'x'.repeat(50 << 20)").await;
    assert_eq!(limit(&report), LimitKind::Output, "{report:?}");
}

/// A callback a program queues before `return` runs no call once the program has returned, and a call it
/// started and never awaited is reported as cancelled unless it was answered first.
#[tokio::test]
async fn calls_from_a_promise_that_settles_after_return_never_run() {
    let (report, seen) = run(
        "afterreturn",
        SHORT,
        r#"
        call("echo", {first: true}).then(() => call("echo", {late: true}));
        Promise.resolve().then(() => call("echo", {late: true}));
        return "returned";
        "#,
    )
    .await;
    assert_eq!(report.end, RunEnd::Returned(json!("returned")));
    assert!(
        seen.iter().all(|c| c.arguments.get("late").is_none()),
        "{seen:?}"
    );
    assert!(report.calls.len() <= 1, "{:?}", report.calls);
}

/// Serialising the returned value or the thrown error runs the program's own code (`toJSON`, getters); a call
/// made from there, after the end, is refused in the worker and never reaches the host.
#[tokio::test]
async fn calls_from_serialising_the_answer_never_run() {
    let (report, seen) = run(
        "tojson",
        SHORT,
        r#"return {toJSON() { call("echo", {late: true}); return 1; }};"#,
    )
    .await;
    assert!(seen.is_empty(), "{seen:?}");
    assert!(threw(&report).contains("already ended"), "{report:?}");
    let (report, seen) = run(
        "errorname",
        SHORT,
        r#"const e = new Error("x"); Object.defineProperty(e, "name", {get() { call("echo", {late: true}); return "E"; }}); throw e;"#,
    )
    .await;
    assert!(seen.is_empty(), "{seen:?}");
    assert!(matches!(report.end, RunEnd::Threw { .. }), "{report:?}");
}

/// A tool result larger than a program may receive is refused with an error the program can catch.
#[tokio::test]
async fn tool_result_too_large_for_the_worker_is_a_catchable_error() {
    let (report, _) = run(
        "bigresult",
        SHORT,
        r#"try { await call("big", {}); return "received"; } catch (e) { return e.code; }"#,
    )
    .await;
    assert_eq!(report.end, RunEnd::Returned(json!("RESULT_TOO_LARGE")));
}

/// A host that never answers does not keep the run past its wall clock.
#[tokio::test]
async fn a_call_that_never_answers_ends_at_the_wall_clock() {
    let started = Instant::now();
    let (report, _) = run(
        "hang",
        Duration::from_secs(1),
        r#"await call("hang", {}); return 1"#,
    )
    .await;
    assert_eq!(limit(&report), LimitKind::WallClock);
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn calls_over_the_limit_end_the_run() {
    let tag = tag("calls");
    let mut runner = runner(&tag, SHORT);
    runner.limits.max_calls = 3;
    let (report, seen) = run_with(
        "calls",
        runner,
        r#"for (let i = 0; i < 10; i++) await call("echo", {i}); return 1"#,
    )
    .await;
    assert_eq!(limit(&report), LimitKind::Calls);
    assert_eq!(seen.len(), 3);
}

/// A client cancelling `run_code` drops the run's future: the worker goes with it.
#[tokio::test]
async fn dropping_the_run_kills_the_worker() {
    let tag = tag("dropped");
    let runner = runner(&tag, Duration::from_secs(30));
    let host = Host::default();
    let session = CodeSession::new(None);
    let run = runner.run("while (true) {}", &host, &session);
    assert!(tokio::time::timeout(Duration::from_millis(500), run)
        .await
        .is_err());
    assert_gone(&tag);
}

/// A worker dies with the thread that started it (so it never outlives toolgate); a pooled blocking thread that
/// exits when idle must not be that thread, or a run longer than its idle time is killed mid-way.
#[test]
fn worker_outlives_idle_threads_of_the_runtime() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_keep_alive(Duration::from_millis(50))
        .enable_all()
        .build()
        .unwrap();
    let (report, _) = runtime.block_on(run(
        "keepalive",
        Duration::from_secs(3),
        r#"await call("slow", {}); return await call("slow", {});"#,
    ));
    assert_eq!(report.end, RunEnd::Returned(json!("slow")));
}
