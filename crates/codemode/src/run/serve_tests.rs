//! The parent against workers that misbehave: a shell script stands in for the worker, so each breach of the
//! protocol can be staged exactly.

use super::*;
use crate::host::HostFuture;
use std::time::Duration;

struct NoHost;

impl ToolHost for NoHost {
    fn call(&self, _call: NestedCall) -> HostFuture<'_> {
        Box::pin(async {
            Err(CallFailure::Failed {
                message: "no tools here".into(),
            })
        })
    }
}

/// A "worker" that runs `script` in the sandbox's piped mode.
fn shell(script: &str, require: &[&str]) -> crate::Runner {
    crate::Runner::new(
        WorkerCommand {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
        },
        RunLimits {
            wall: Duration::from_secs(2),
            require: require.iter().map(|s| s.to_string()).collect(),
            ..RunLimits::default()
        },
    )
}

async fn end_of(runner: crate::Runner) -> RunEnd {
    runner
        .run("return 1", &NoHost, &CodeSession::new(None))
        .await
        .end
}

const READY: &str = r#"echo '{"t":"ready","layers":[["syscall_allowlist","active"]]}'"#;

#[tokio::test]
async fn worker_that_prints_garbage_breaks_the_protocol() {
    let end = end_of(shell("read start; echo 'hello there'; sleep 5", &[])).await;
    assert!(
        matches!(&end, RunEnd::WorkerFailed { message } if message.contains("protocol")),
        "{end:?}"
    );
}

#[tokio::test]
async fn worker_that_exits_without_an_answer_fails_with_its_stderr() {
    let script =
        format!("read start; {READY}; read program; echo 'engine broke' >&2; sleep 0.2; exit 3");
    let end = end_of(shell(&script, &[])).await;
    assert!(
        matches!(&end, RunEnd::WorkerFailed { message }
            if message.contains("without an answer") && message.contains("engine broke")),
        "{end:?}"
    );
}

#[tokio::test]
async fn worker_line_over_the_cap_is_an_output_limit() {
    let script = format!(
        "read start; {READY}; read program; head -c 40000000 /dev/zero | tr '\\0' x; echo; sleep 5"
    );
    let end = end_of(shell(&script, &[])).await;
    assert!(
        matches!(
            end,
            RunEnd::Limit {
                kind: LimitKind::Output,
                ..
            }
        ),
        "{end:?}"
    );
}

#[tokio::test]
async fn worker_without_a_required_layer_never_gets_the_program() {
    let script = r#"read start; echo '{"t":"ready","layers":[["syscall_allowlist","unavailable: no seccomp"]]}'; read program && echo '{"t":"call","id":1,"name":"x","arguments":{}}'; sleep 5"#;
    let end = end_of(shell(script, &["syscall_allowlist"])).await;
    assert!(
        matches!(&end, RunEnd::WorkerFailed { message }
            if message.contains("syscall_allowlist is unavailable: no seccomp")),
        "{end:?}"
    );
}

#[tokio::test]
async fn reply_to_a_worker_that_never_reads_does_not_outlive_the_wall_clock() {
    let script = format!(
        r#"read start; {READY}; read program; echo '{{"t":"call","id":1,"name":"x","arguments":{{}}}}'; sleep 30"#
    );
    let started = std::time::Instant::now();
    let end = end_of(shell(&script, &[])).await;
    assert!(
        matches!(
            end,
            RunEnd::Limit {
                kind: LimitKind::WallClock,
                ..
            }
        ),
        "{end:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(4));
}

#[test]
fn unmet_names_the_first_required_layer_that_is_not_active() {
    let layers = vec![
        ("landlock".to_owned(), "active".to_owned()),
        ("ipc_namespace".to_owned(), "unavailable: EPERM".to_owned()),
    ];
    assert_eq!(unmet(&["landlock".to_owned()], &layers), None);
    assert_eq!(
        unmet(
            &["landlock".to_owned(), "ipc_namespace".to_owned()],
            &layers
        )
        .as_deref(),
        Some("the required sandbox layer ipc_namespace is unavailable: EPERM")
    );
    assert!(unmet(&["made_up".to_owned()], &layers)
        .unwrap()
        .contains("not a layer of the worker"));
}

/// QuickJS reads a heap limit of 0 as no limit; a run configured so still gets a bounded heap.
#[test]
fn a_zero_memory_limit_is_not_an_unlimited_engine() {
    let limits = RunLimits {
        memory_bytes: 0,
        ..RunLimits::default()
    };
    assert_eq!(worker_limits(&limits).memory_bytes, MIN_MEMORY_BYTES);
}

#[tokio::test]
async fn a_missing_worker_executable_is_named_with_how_to_get_it() {
    let dir = tempfile::tempdir().unwrap();
    let runner = crate::Runner::new(
        WorkerCommand::beside(&dir.path().join("toolgate")),
        RunLimits {
            wall: Duration::from_secs(5),
            ..RunLimits::default()
        },
    );
    let end = end_of(runner).await;
    let expected = format!(
        "the code-mode worker {} is missing",
        dir.path().join(crate::WORKER_EXE).display()
    );
    assert!(
        matches!(&end, RunEnd::WorkerFailed { message }
            if message.starts_with(&expected) && message.contains("cargo build -p toolgate")),
        "{end:?}"
    );
}
