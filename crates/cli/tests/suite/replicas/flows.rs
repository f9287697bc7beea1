//! The flows of a team's gateway through HAProxy; see the module doc of `replicas`.

use super::team::{chain, namespace_dir, outcome, text, text_of, Affinity, Client, Team, NAMES};
use serde_json::json;
use std::time::{Duration, Instant};

fn index(replica: &str) -> usize {
    NAMES
        .iter()
        .position(|n| *n == replica)
        .unwrap_or_else(|| panic!("answered by {replica:?}, not a replica"))
}

/// A call that waits for its approval, on whichever replica HAProxy picks: it is sent in the background, and
/// its answer arrives once the approval is given.
fn held(client: Client, text: &str) -> tokio::task::JoinHandle<super::team::Answer> {
    let text = text.to_owned();
    tokio::spawn(async move { client.call("fx__echo", json!({"text": text})).await })
}

/// Calls `tool` so that it reaches replica `to`.
async fn on_replica(
    client: &Client,
    to: usize,
    tool: &str,
    args: serde_json::Value,
) -> super::team::Answer {
    let params = json!({"name": tool, "arguments": args});
    client.send_to(to, "tools/call", params, &[]).await
}

/// The replica holding the one call that asked: the one whose chain has its decision record.
async fn holder(team: &Team) -> usize {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let found = (0..NAMES.len()).find(|&i| {
            chain(&namespace_dir(&team.root(i)), NAMES[i])
                .iter()
                .any(|r| r["decision"] == "ask")
        });
        if let Some(i) = found {
            return i;
        }
        assert!(
            Instant::now() < deadline,
            "no replica recorded the held call's decision"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn modern_call_held_on_one_replica_is_released_by_an_approval_on_another_machine() {
    let team = Team::start(60, Affinity::None);
    let waiting = held(Client::modern(&team.balancer.url), "held");
    let id = team.pending_on(0);
    let a = holder(&team).await;
    let b = (a + 1) % NAMES.len();
    let started = Instant::now();
    team.approve_on(b, &id);
    let released = waiting.await.unwrap();
    assert_eq!(text_of(&released.body), "held", "{}", released.body);
    assert_eq!(released.replica, NAMES[a]);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "released by the approval (NOTIFY), not the deadline"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn modern_handle_approved_on_a_second_machine_resumes_on_a_third_and_every_chain_verifies() {
    let mut team = Team::start(0, Affinity::None);
    let client = Client::modern(&team.balancer.url);
    let first = client.call("fx__echo", json!({"text": "later"})).await;
    assert_eq!(outcome(&first.body), "APPROVAL_REQUIRED", "{}", first.body);
    let id = first.body["result"]["structuredContent"]["approval"]["request_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let a = index(&first.replica);
    let b = (a + 1) % NAMES.len();
    team.approve_on(b, &id);
    let c = (a + 2) % NAMES.len();
    let resumed = on_replica(&client, c, "toolgate_resume", json!({"request_id": id})).await;
    assert_eq!(text_of(&resumed.body), "later", "{}", resumed.body);
    assert_eq!(resumed.replica, NAMES[c]);
    let again = client
        .call("toolgate_resume", json!({"request_id": id}))
        .await;
    assert_eq!(outcome(&again.body), "APPROVAL_CONSUMED", "{}", again.body);
    // The trace's records are in the chains of the replicas that held and ran it; every chain verifies once the
    // logs are gathered on one machine.
    team.stop_replicas();
    let dir = team.gather_logs(0);
    let trace = first.body["result"]["structuredContent"]["trace_id"].clone();
    for name in [NAMES[a], resumed.replica.as_str()] {
        assert!(
            chain(&dir, name).iter().any(|r| r["trace_id"] == trace),
            "no record of {trace} in replica {name}'s chain"
        );
    }
    let verify = team.admin(0, &["audit", "verify"]);
    let said = text(&verify.stdout);
    assert!(verify.status.success(), "{said}{}", text(&verify.stderr));
    for name in [NAMES[a], NAMES[c]] {
        assert!(said.contains(&format!("audit-{name}.jsonl")), "{said}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn legacy_sessions_work_with_affinity_and_without_it_are_told_to_initialize_again() {
    // Without affinity: the session lives on one replica; a request reaching another is 404, saying what to do.
    let team = Team::start(0, Affinity::None);
    let (client, init) = Client::legacy(&team.balancer.url).await;
    let mut refused = None;
    for _ in 0..4 {
        let answer = client.call("fx__echo", json!({"text": "x"})).await;
        if answer.replica != init.replica {
            refused = Some(answer);
            break;
        }
    }
    let refused = refused.expect("round robin reaches another replica");
    assert_eq!(refused.status, 404, "{}", refused.body);
    assert!(
        refused.body.to_string().contains("initialize a new one"),
        "{}",
        refused.body
    );
    drop(team);
    // With affinity on Mcp-Session-Id: held on the session's replica, approved on another machine, resumed by
    // another session on a third replica.
    let team = Team::start(0, Affinity::SessionId);
    let (client, init) = Client::legacy(&team.balancer.url).await;
    assert_eq!(client.initialized().await, 202);
    let first = client.call("fx__echo", json!({"text": "legacy"})).await;
    assert_eq!(
        first.replica, init.replica,
        "affinity keeps the session's replica"
    );
    assert_eq!(outcome(&first.body), "APPROVAL_REQUIRED", "{}", first.body);
    let id = first.body["result"]["structuredContent"]["approval"]["request_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let a = index(&first.replica);
    team.approve_on((a + 1) % NAMES.len(), &id);
    let mut other = None;
    for _ in 0..4 {
        let (c, init) = Client::legacy(&team.balancer.url).await;
        if init.replica != first.replica {
            other = Some(c);
            break;
        }
    }
    let other = other.expect("a new session lands on another replica");
    assert_eq!(other.initialized().await, 202);
    let resumed = other
        .call("toolgate_resume", json!({"request_id": id}))
        .await;
    assert_eq!(text_of(&resumed.body), "legacy", "{}", resumed.body);
    assert_ne!(resumed.replica, first.replica);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replica_killed_mid_call_loses_no_approval_and_no_audit_record() {
    let mut team = Team::start(60, Affinity::None);
    let waiting = held(Client::modern(&team.balancer.url), "survives");
    let id = team.pending_on(0);
    let victim = holder(&team).await;
    let before = chain(&namespace_dir(&team.root(victim)), NAMES[victim]);
    team.kill(victim);
    let cut = waiting.await.unwrap();
    assert_ne!(
        text_of(&cut.body),
        "survives",
        "the killed replica cannot answer"
    );
    // The approval is in the database, pending; given on another machine, it resumes on a live replica.
    let other = (victim + 1) % NAMES.len();
    team.approve_on(other, &id);
    let client = Client::modern(&team.balancer.url);
    let resumed = client
        .call("toolgate_resume", json!({"request_id": id}))
        .await;
    assert_eq!(text_of(&resumed.body), "survives", "{}", resumed.body);
    assert_ne!(resumed.replica, NAMES[victim]);
    // The killed replica's chain holds every record it had written, and verifies with the others.
    let after = chain(&namespace_dir(&team.root(victim)), NAMES[victim]);
    assert_eq!(before, after[..before.len()]);
    team.stop_replicas();
    team.gather_logs(other);
    let verify = team.admin(other, &["audit", "verify"]);
    assert!(
        verify.status.success(),
        "{}{}",
        text(&verify.stdout),
        text(&verify.stderr)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_held_while_the_database_restarts_is_released_by_an_approval_after() {
    let team = Team::start(60, Affinity::None);
    let waiting = held(Client::modern(&team.balancer.url), "restarted");
    let id = team.pending_on(0);
    team.cluster.stop();
    tokio::time::sleep(Duration::from_millis(500)).await;
    team.cluster.resume();
    let started = Instant::now();
    team.approve_on(1, &id);
    let released = waiting.await.unwrap();
    assert_eq!(text_of(&released.body), "restarted", "{}", released.body);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "released by the approval, not the 60 s deadline"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn two_replicas_racing_to_consume_one_approval_have_exactly_one_winner() {
    let team = Team::start(0, Affinity::None);
    let client = Client::modern(&team.balancer.url);
    let first = client.call("fx__echo", json!({"text": "once"})).await;
    let id = first.body["result"]["structuredContent"]["approval"]["request_id"]
        .as_str()
        .unwrap()
        .to_owned();
    team.approve_on(0, &id);
    let racers: Vec<_> = (0..2)
        .map(|_| {
            let (url, id) = (team.balancer.url.clone(), id.clone());
            tokio::spawn(async move {
                Client::modern(&url)
                    .call("toolgate_resume", json!({"request_id": id}))
                    .await
            })
        })
        .collect();
    let mut answers = Vec::new();
    for r in racers {
        answers.push(r.await.unwrap());
    }
    assert_ne!(
        answers[0].replica, answers[1].replica,
        "round robin sends them to two replicas"
    );
    let ran = answers
        .iter()
        .filter(|a| text_of(&a.body) == "once")
        .count();
    let consumed = answers
        .iter()
        .filter(|a| outcome(&a.body) == "APPROVAL_CONSUMED")
        .count();
    assert_eq!(
        (ran, consumed),
        (1, 1),
        "{} / {}",
        answers[0].body,
        answers[1].body
    );
}
