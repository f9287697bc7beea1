//! A 2026-07-28 client's tasks behind HAProxy without affinity: a task lives in the upstream of the replica whose
//! call created it; its methods, on whichever replica round robin picks, are sent on to that one.

use super::team::{Affinity, Answer, Client, Team, NAMES};
use serde_json::{json, Value};

fn index(replica: &str) -> usize {
    NAMES
        .iter()
        .position(|n| *n == replica)
        .unwrap_or_else(|| panic!("answered by {replica:?}, not a replica"))
}

/// Creates a task of `new__task_work` working for `delay_ms`: its toolgate id and the replica that made it.
async fn task(client: &Client, delay_ms: u64) -> (String, usize) {
    let made = client
        .call("new__task_work", json!({"delay_ms": delay_ms}))
        .await;
    let r = &made.body["result"];
    assert_eq!(r["resultType"], "task", "{}", made.body);
    let id = r["taskId"].as_str().unwrap().to_owned();
    assert!(id.starts_with("tgtask-"), "{id}");
    (id, index(&made.replica))
}

fn status(answer: &Answer) -> &Value {
    &answer.body["result"]["status"]
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_id_taken_to_another_replica_reaches_its_own_task_never_that_replicas_namesake() {
    let team = Team::start(0, Affinity::None);
    let client = Client::modern(&team.balancer.url);
    // A long task on one replica; then a task that completes at once on each other replica. Each replica's
    // upstream numbers its tasks alike, so the others hold tasks with the first one's upstream id.
    let (long, a) = task(&client, 60_000).await;
    for to in [(a + 1) % NAMES.len(), (a + 2) % NAMES.len()] {
        let made = client
            .send_to(
                to,
                "tools/call",
                json!({"name": "new__task_work", "arguments": {"delay_ms": 0}}),
                &[],
            )
            .await;
        assert_eq!(made.body["result"]["resultType"], "task", "{}", made.body);
    }
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    // Through every replica, the long task is the one answered: still working, under its own id.
    for (to, name) in NAMES.iter().enumerate() {
        let got = client
            .send_to(to, "tasks/get", json!({"taskId": long}), &[])
            .await;
        assert_eq!(got.replica, *name);
        assert_eq!(
            status(&got),
            "working",
            "through {}: {}",
            NAMES[to],
            got.body
        );
        assert_eq!(got.body["result"]["taskId"], long.as_str(), "{}", got.body);
    }
    // Cancelled through another replica, it is cancelled where it lives.
    let other = (a + 1) % NAMES.len();
    let cancelled = client
        .send_to(other, "tasks/cancel", json!({"taskId": long}), &[])
        .await;
    assert_eq!(status(&cancelled), "cancelled", "{}", cancelled.body);
    let got = client
        .send_to(a, "tasks/get", json!({"taskId": long}), &[])
        .await;
    assert_eq!(status(&got), "cancelled", "{}", got.body);
}
