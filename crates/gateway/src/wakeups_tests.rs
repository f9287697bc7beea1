//! Held calls wake on changes, from this process or another, and nothing runs while nothing is held.

use super::*;
use crate::approval::{hold, Held};
use crate::gateway::{Gateway, Options};
use crate::guard::Guard;
use crate::pipeline::{CallContext, GrantScope, HoldPolicy, Origin};
use crate::snapshot::{Kind, Snapshot};
use policy::{Decision, Effect, Operation, ReasonCode};
use serde_json::json;
use std::time::Instant;
use store::{ApprovalStatus, Namespace, Store, Timestamp};
use tokio_util::sync::CancellationToken;

/// What the held call looked like before wake-ups: one row read per 200 ms for as long as it waited.
const OLD_POLL: Duration = Duration::from_millis(200);

struct Fixture {
    dir: tempfile::TempDir,
    state: Arc<State>,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ws")).unwrap();
        let state = State::open_in(&dir.path().join("state"), &dir.path().join("ws")).unwrap();
        Self {
            dir,
            state: Arc::new(state),
        }
    }

    /// Another connection to the same database, as the admin CLI opens it.
    fn admin(&self) -> Store {
        let ns =
            Namespace::open(&self.dir.path().join("state"), &self.dir.path().join("ws")).unwrap();
        Store::open(&ns).unwrap()
    }

    fn request(&self) -> String {
        let now = Timestamp::now();
        self.state
            .store(|s| s.create_request("t", &json!({}), now, now.plus_millis(60_000)))
            .unwrap()
            .id
    }

    /// A gateway with no upstream over this state.
    fn gateway(&self, approvals: impl FnOnce(&mut config::Approvals)) -> Arc<Gateway> {
        let config = config::Config::empty();
        let guard = Guard::load(&config, &self.dir.path().join("ws")).unwrap();
        let mut opts = Options::from_config(&config, false);
        approvals(&mut opts.approvals);
        Gateway::start(
            &config,
            opts,
            Arc::new(guard),
            Some(Arc::clone(&self.state)),
        )
    }

    async fn pending(&self) -> String {
        let started = Instant::now();
        loop {
            let list = self
                .admin()
                .list_requests(Some(ApprovalStatus::Pending), Timestamp::now())
                .unwrap();
            if let Some(a) = list.into_iter().next() {
                return a.id;
            }
            assert!(started.elapsed() < Duration::from_secs(10), "never held");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// A client's call that waits while held, in one session's grants.
fn waiting(gw: &Gateway, cancel: &CancellationToken) -> CallContext {
    let origin = Origin::Client {
        session_id: "s-wakeups".into(),
    };
    let mut ctx = CallContext::new(origin, HoldPolicy::Wait, cancel.clone(), gw.stages.guard());
    ctx.trace_id = "trace-wakeups".into();
    ctx.grants = GrantScope::Session("s-wakeups".into());
    ctx
}

fn ask() -> (Snapshot, Decision) {
    let snapshot = Snapshot {
        kind: Kind::ToolCall,
        server: "fx".into(),
        tool: "echo".into(),
        exposed: "fx__echo".into(),
        arguments: json!({"text": "hi"}),
        definition_sha256: String::new(),
        command: None,
        note: None,
    };
    let decision = Decision {
        effect: Effect::Ask,
        reason: ReasonCode::AskRule,
        rule_id: None,
        rule_at: None,
        operation: Operation::McpCall,
        unknown: None,
    };
    (snapshot, decision)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_call_is_released_by_an_approval_from_another_process_without_polling_its_row() {
    let f = Fixture::new();
    let gw = f.gateway(|_| {});
    let (snapshot, decision) = ask();
    let held = tokio::spawn({
        let gw = Arc::clone(&gw);
        async move {
            let ctx = waiting(&gw, &CancellationToken::new());
            hold(&gw.stages, &ctx, snapshot, decision).await
        }
    });
    let id = f.pending().await;
    // Long enough that the old loop would have read the row ten times.
    let waited = OLD_POLL * 10;
    tokio::time::sleep(waited).await;
    let approved = Instant::now();
    f.admin()
        .approve(&id, "operator", Timestamp::now())
        .unwrap();
    let released = tokio::time::timeout(Duration::from_secs(2), held)
        .await
        .expect("released soon after the approval")
        .unwrap();
    let latency = approved.elapsed();
    assert!(
        matches!(released, Held::Approved(_)),
        "the approved call is handed back to run"
    );
    let row = f.admin().get_request(&id, Timestamp::now()).unwrap();
    assert_eq!(row.status, ApprovalStatus::Consumed);
    // The first read, the one after the approval, and at most a few after the audit writer's own commits.
    let reads = f.state.wakeups().reads();
    assert!(
        reads <= 4,
        "{reads} row reads in {waited:?}; polling read it {} times",
        waited.as_millis() / OLD_POLL.as_millis()
    );
    assert!(
        latency < Duration::from_secs(1),
        "released {latency:?} after the approval"
    );
    gw.shutdown().await;
}

/// Expiry is not a write, so no wake-up announces it: the held call looks at its row when it expires instead of
/// waiting out `wait_seconds` for a request nobody can approve any more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_call_whose_request_expires_before_its_wait_ends_is_answered_at_expiry() {
    let f = Fixture::new();
    let gw = f.gateway(|a| {
        a.wait.value = Duration::from_secs(30);
        a.expire.value = Duration::from_millis(300);
    });
    let (snapshot, decision) = ask();
    let ctx = waiting(&gw, &CancellationToken::new());
    let held = tokio::time::timeout(
        Duration::from_secs(10),
        hold(&gw.stages, &ctx, snapshot, decision),
    )
    .await
    .expect("answered long before the 30 s wait ends");
    let Held::Answer(answer) = held else {
        panic!("an expired request does not run");
    };
    assert_eq!(answer.name(), "APPROVAL_EXPIRED", "{answer:?}");
    assert!(f.state.wakeups().reads() <= 4);
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_held_means_no_watcher_and_no_reads() {
    let f = Fixture::new();
    let wakeups = f.state.wakeups();
    tokio::time::sleep(TICK * 4).await;
    assert!(!wakeups.watcher_running());
    assert_eq!((wakeups.looks(), wakeups.reads()), (0, 0));
    let waiter = Waiter::subscribe(&f.state);
    tokio::time::sleep(TICK * 4).await;
    assert!(wakeups.watcher_running());
    assert!(
        wakeups.looks() > 0,
        "the watcher looks while a call is held"
    );
    drop(waiter);
    let started = Instant::now();
    while wakeups.watcher_running() {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "watcher kept running"
        );
        tokio::time::sleep(TICK).await;
    }
    let looks = wakeups.looks();
    tokio::time::sleep(TICK * 6).await;
    assert_eq!(
        wakeups.looks(),
        looks,
        "no look after the last held call left"
    );
    assert_eq!(wakeups.reads(), 0);
}

#[tokio::test(flavor = "current_thread")]
async fn in_process_decision_wakes_held_calls_at_once() {
    let f = Fixture::new();
    let id = f.request();
    let waiter = Waiter::subscribe(&f.state);
    assert!(!waiter.woken.has_changed().unwrap());
    // As an elicitation answer does: through this process's own handle, which `data_version` does not show.
    f.state
        .store(|s| s.approve(&id, "elicitation", Timestamp::now()))
        .unwrap();
    assert!(
        waiter.woken.has_changed().unwrap(),
        "woken without waiting for the watcher"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approval_landing_before_the_watchers_first_look_still_wakes() {
    let f = Fixture::new();
    let id = f.request();
    let mut waiter = Waiter::subscribe(&f.state);
    // Committed elsewhere right after the subscription, before the watcher ever looked.
    f.admin()
        .approve(&id, "operator", Timestamp::now())
        .unwrap();
    tokio::time::timeout(Duration::from_secs(2), waiter.changed())
        .await
        .expect("woken");
    // A second call held while the watcher runs is woken by a later change too.
    let other = f.request();
    let mut second = Waiter::subscribe(&f.state);
    f.admin()
        .reject(&other, "operator", Timestamp::now())
        .unwrap();
    tokio::time::timeout(Duration::from_secs(2), second.changed())
        .await
        .expect("woken");
}
