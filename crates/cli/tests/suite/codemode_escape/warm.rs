//! The spare workers a runner keeps ready: a run on one answers as a run on a worker started for it, a spare is
//! replaced after a run, a spare killed from outside is not used, dropping the runner kills them (and a spare
//! still starting), runs at the same time each get a worker, a pool of two serves runs back to back and fills
//! again to two, never more, and every missing spare is started at once.
//!
//! Which worker a run used is seen from the host: during a call it lists the worker processes of the test's tag,
//! and a spare the run did not take was killed before the program was sent.

use std::collections::BTreeSet;

use super::*;

/// Echoes its arguments and, on each call, notes the worker processes alive at that moment.
struct Watch {
    tag: String,
    during: Mutex<Vec<BTreeSet<u32>>>,
}

impl Watch {
    fn new(tag: &str) -> Self {
        Self {
            tag: tag.to_owned(),
            during: Mutex::new(Vec::new()),
        }
    }

    /// The processes seen during the first call.
    fn first(&self) -> BTreeSet<u32> {
        self.during.lock().unwrap()[0].clone()
    }
}

impl ToolHost for Watch {
    fn call(&self, call: NestedCall) -> HostFuture<'_> {
        self.during
            .lock()
            .unwrap()
            .push(workers(&self.tag).into_iter().collect());
        Box::pin(async move { Ok(json!({"content": [], "structuredContent": call.arguments})) })
    }
}

const PROGRAM: &str = r#"
    console.log("go");
    const a = await call("echo", {n: 1});
    return {n: a.n, also: await recall(1)};
"#;

fn alive(tag: &str) -> BTreeSet<u32> {
    workers(tag).into_iter().collect()
}

/// Waits until some worker of `tag` other than `old` is alive, and returns the processes of `tag`.
fn wait_for_new(tag: &str, old: &BTreeSet<u32>) -> BTreeSet<u32> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let now = alive(tag);
        if !now.is_empty() && now.is_disjoint(old) {
            return now;
        }
        assert!(Instant::now() < deadline, "no new spare; alive: {now:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

async fn run_on(runner: &Runner, host: &dyn ToolHost) -> RunReport {
    runner.run(PROGRAM, host, &CodeSession::new(None)).await
}

#[tokio::test]
async fn run_on_a_spare_reports_as_a_cold_run_layers_included() {
    let tag = tag("warm-same");
    let cold = run_on(&runner(&tag, SHORT), &Watch::new(&tag)).await;
    assert_gone(&tag);

    let warm = runner(&tag, SHORT).with_spares(1);
    warm.warm_up().await;
    let spare = alive(&tag);
    assert!(!spare.is_empty(), "no spare after warm_up");
    let host = Watch::new(&tag);
    let report = run_on(&warm, &host).await;
    // The spare's processes were alive during the call: the program ran in it, not in a worker started for it.
    assert!(
        host.first().is_superset(&spare),
        "{:?} ⊉ {spare:?}",
        host.first()
    );

    assert_eq!(
        report.end,
        RunEnd::Returned(json!({"n": 1, "also": {"n": 1}}))
    );
    assert_eq!(report.end, cold.end);
    assert_eq!(report.calls, cold.calls);
    assert_eq!(report.log, cold.log);
    assert_eq!(report.log_truncated, cold.log_truncated);
    assert_eq!(report.layers, cold.layers);
    drop(warm);
    settle().await;
    assert_gone(&tag);
}

#[tokio::test]
async fn spare_is_replaced_after_a_run_and_the_next_run_uses_the_replacement() {
    let tag = tag("warm-replaced");
    let runner = runner(&tag, SHORT).with_spares(1);
    runner.warm_up().await;
    let first = alive(&tag);
    let report = run_on(&runner, &Watch::new(&tag)).await;
    assert!(matches!(report.end, RunEnd::Returned(_)), "{report:?}");
    // The used worker is killed after its run; a new one is started without another warm_up.
    let second = tokio::task::spawn_blocking({
        let tag = tag.clone();
        move || wait_for_new(&tag, &first)
    })
    .await
    .unwrap();
    runner.warm_up().await;
    let host = Watch::new(&tag);
    let report = run_on(&runner, &host).await;
    assert!(matches!(report.end, RunEnd::Returned(_)), "{report:?}");
    assert!(
        host.first().is_superset(&second),
        "{:?} ⊉ {second:?}",
        host.first()
    );
    drop(runner);
    settle().await;
    assert_gone(&tag);
}

#[tokio::test]
async fn spare_killed_from_outside_is_not_used_and_the_run_still_succeeds() {
    let tag = tag("warm-killed");
    let runner = runner(&tag, SHORT).with_spares(1);
    runner.warm_up().await;
    let spare = alive(&tag);
    assert!(!spare.is_empty(), "no spare after warm_up");
    for pid in &spare {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(*pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    assert_gone(&tag);
    let host = Watch::new(&tag);
    let report = run_on(&runner, &host).await;
    assert_eq!(
        report.end,
        RunEnd::Returned(json!({"n": 1, "also": {"n": 1}}))
    );
    assert!(host.first().is_disjoint(&spare));
    drop(runner);
    settle().await;
    assert_gone(&tag);
}

#[tokio::test]
async fn dropping_the_runner_kills_its_spare() {
    let tag = tag("warm-drop");
    let runner = runner(&tag, SHORT).with_spares(1);
    runner.warm_up().await;
    assert!(!workers(&tag).is_empty(), "no spare after warm_up");
    drop(runner);
    assert_gone(&tag);
}

#[tokio::test]
async fn dropping_the_runner_while_its_spare_starts_leaves_no_process() {
    let tag = tag("warm-drop-starting");
    let runner = runner(&tag, SHORT).with_spares(1);
    // The run starts the first spare in the background; the runner is dropped before it can be ready.
    let report = run_on(&runner, &Watch::new(&tag)).await;
    assert!(matches!(report.end, RunEnd::Returned(_)), "{report:?}");
    drop(runner);
    settle().await;
    assert_gone(&tag);
    // Nothing arrives later either.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(workers(&tag).is_empty(), "{:?}", workers(&tag));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_concurrent_runs_both_succeed() {
    let tag = tag("warm-concurrent");
    let runner = runner(&tag, SHORT).with_spares(1);
    runner.warm_up().await;
    let (a, b) = (Watch::new(&tag), Watch::new(&tag));
    let (one, two) = tokio::join!(run_on(&runner, &a), run_on(&runner, &b));
    for report in [one, two] {
        assert_eq!(
            report.end,
            RunEnd::Returned(json!({"n": 1, "also": {"n": 1}}))
        );
    }
    drop(runner);
    settle().await;
    assert_gone(&tag);
}

/// Waits until `n` workers of `tag` are alive, none of them in `old`, and returns them.
fn wait_for_pool(tag: &str, n: usize, old: &BTreeSet<u32>) -> BTreeSet<u32> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let now = alive(tag);
        if now.len() == n && now.is_disjoint(old) {
            return now;
        }
        assert!(
            Instant::now() < deadline,
            "pool not refilled; alive: {now:?}, before: {old:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_of_two_serves_back_to_back_runs_on_spares_and_fills_again_to_two() {
    let tag = tag("warm-pool");
    let runner = runner(&tag, SHORT).with_spares(2);
    runner.warm_up().await;
    let pool = alive(&tag);
    assert_eq!(pool.len(), 2, "{pool:?}");
    for _ in 0..2 {
        let report = run_on(&runner, &Watch::new(&tag)).await;
        assert_eq!(
            report.end,
            RunEnd::Returned(json!({"n": 1, "also": {"n": 1}}))
        );
    }
    // Both spares were used (a spare is killed only once a run took it) and two new ones wait, without a warm_up.
    let refilled = tokio::task::spawn_blocking({
        let tag = tag.clone();
        move || wait_for_pool(&tag, 2, &pool)
    })
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        alive(&tag),
        refilled,
        "the pool grew past two or lost a spare"
    );
    drop(runner);
    settle().await;
    assert_gone(&tag);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_starts_every_missing_spare_at_once_and_never_more_than_it_keeps() {
    let tag = tag("warm-side-by-side");
    let runner = runner(&tag, SHORT).with_spares(3);
    let counts = |waiting, starting| Some(Spares { waiting, starting });
    runner.prepare();
    // All three are on their way before any of them is ready: none waits for another's start.
    assert_eq!(runner.spares(), counts(0, 3));
    // Asked again while they start, it starts nothing more.
    runner.prepare();
    assert_eq!(runner.spares(), counts(0, 3));
    runner.warm_up().await;
    assert_eq!(runner.spares(), counts(3, 0));
    let pool = alive(&tag);
    assert_eq!(pool.len(), 3, "{pool:?}");

    // Two runs take two spares; each run's replacement is on its way once it is over, so waiting and starting
    // spares together make three again.
    for _ in 0..2 {
        let report = run_on(&runner, &Watch::new(&tag)).await;
        assert!(matches!(report.end, RunEnd::Returned(_)), "{report:?}");
    }
    let after = runner.spares().unwrap();
    assert_eq!(after.waiting + after.starting, 3, "{after:?}");
    runner.warm_up().await;
    assert_eq!(runner.spares(), counts(3, 0));
    assert_eq!(alive(&tag).len(), 3, "{:?}", alive(&tag));
    drop(runner);
    settle().await;
    assert_gone(&tag);
}
