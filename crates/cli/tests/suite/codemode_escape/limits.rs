//! Programs that exhaust the worker: endless loops, a ReDoS regex, native loops, memory, output, calls, and
//! promises or calls that never settle. Each ends within its limit with a clear answer.

use super::*;

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
    // Fifty megabytes are built and copied once before they are measured: the wall clock leaves room for a busy
    // machine, so the test stays about the output limit.
    let mut runner = runner(&tag, Duration::from_secs(10));
    runner.limits.memory_bytes = 192 << 20;
    let (report, _) = run_with("bigreturn", runner, "return 'x'.repeat(50 << 20)").await;
    assert_eq!(limit(&report), LimitKind::Output, "{report:?}");
}

/// A tool result larger than a program may receive is refused with an error the program can catch.
#[tokio::test]
async fn tool_result_too_large_for_the_worker_is_a_catchable_error() {
    // Twelve megabytes are built, copied and encoded by the host and the parent: a generous wall clock keeps this
    // about the size check, not about a busy machine.
    let (report, _) = run(
        "bigresult",
        Duration::from_secs(10),
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
