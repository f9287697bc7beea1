//! A run from start to end: calls and their answers, the reported layers, a required layer missing, calls
//! after `return`, a dropped run, and a worker outliving idle runtime threads.

use super::*;

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

/// A returned value JSON cannot hold ends the run with a clear error, not a guessed value; `undefined` is null.
#[tokio::test]
async fn returned_values_json_cannot_hold_are_a_clear_error() {
    let (report, _) = run("bigint", SHORT, "return 10n").await;
    assert!(
        threw(&report).contains("cannot be serialised as JSON"),
        "{report:?}"
    );
    let (report, _) = run("cycle", SHORT, "const a = {}; a.self = a; return a").await;
    assert!(
        threw(&report).contains("cannot be serialised as JSON"),
        "{report:?}"
    );
    let (report, _) = run("undefined", SHORT, "return undefined").await;
    assert_eq!(report.end, RunEnd::Returned(Value::Null));
}
