//! `toolgate report` on a team: the reporting events of every replica are in the database, so a report made on
//! any machine counts the calls made through all of them.

use super::team::{outcome, text, text_of, Affinity, Client, Team, NAMES};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// `toolgate report --group-by GROUP --format json` on replica `i`'s machine.
fn report(team: &Team, i: usize, group: &str) -> Value {
    let out = team.admin(i, &["report", "--group-by", group, "--format", "json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The row of `key` in a report.
fn row<'a>(report: &'a Value, key: &str) -> &'a Value {
    report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"] == key)
        .unwrap_or_else(|| panic!("no row {key}: {report:#}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn report_on_any_machine_counts_the_calls_of_every_replica() {
    let team = Team::start(0, Affinity::None);
    let client = Client::modern(&team.balancer.url);
    // Six calls round robin: two on each replica.
    let mut answered = BTreeSet::new();
    for n in 0..6 {
        let answer = client.call("fx__add", json!({"a": n, "b": 1})).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        answered.insert(answer.replica);
    }
    assert_eq!(answered.len(), NAMES.len(), "{answered:?}");
    // A call held on one replica, approved on another machine, resumed on a third.
    let first = client.call("fx__echo", json!({"text": "counted"})).await;
    assert_eq!(outcome(&first.body), "APPROVAL_REQUIRED", "{}", first.body);
    let id = first.body["result"]["structuredContent"]["approval"]["request_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let a = NAMES.iter().position(|n| *n == first.replica).unwrap();
    team.approve_on((a + 1) % NAMES.len(), &id);
    let resumed = client
        .send_to(
            (a + 2) % NAMES.len(),
            "tools/call",
            json!({"name": "toolgate_resume", "arguments": {"request_id": id}}),
            &[],
        )
        .await;
    assert_eq!(text_of(&resumed.body), "counted", "{}", resumed.body);
    // A modern call bridged to a 2025-era server, each retry sent on from another replica: one call.
    let args = json!({"message": "counted once?"});
    let mut answer = client
        .send(
            "tools/call",
            json!({"name": "old__ask_twice", "arguments": args}),
        )
        .await;
    let holder = NAMES.iter().position(|n| *n == answer.replica).unwrap();
    for round in 1..=2 {
        let r = &answer.body["result"];
        assert_eq!(r["resultType"], "input_required", "{}", answer.body);
        let (key, asked) = r["inputRequests"]
            .as_object()
            .unwrap()
            .iter()
            .next()
            .unwrap();
        let given = match asked["method"].as_str().unwrap() {
            "elicitation/create" => json!({"action": "accept", "content": {"ok": true}}),
            _ => {
                json!({"role": "assistant", "content": {"type": "text", "text": "s"}, "model": "m"})
            }
        };
        let params = json!({"name": "old__ask_twice", "arguments": args, "requestState": r["requestState"],
                            "inputResponses": {key: given}});
        let to = (holder + round) % NAMES.len();
        answer = client.send_to(to, "tools/call", params, &[]).await;
    }
    assert_eq!(
        answer.body["result"]["resultType"], "complete",
        "{}",
        answer.body
    );
    // Every replica's events reach the database behind its calls; each machine's report sees all of them.
    let deadline = Instant::now() + Duration::from_secs(10);
    while count(&report(&team, 0, "tool"), "fx/add") < 6 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for (i, name) in NAMES.iter().enumerate() {
        let by_tool = report(&team, i, "tool");
        let add = row(&by_tool, "fx/add");
        assert_eq!(
            (&add["count"], &add["succeeded"]),
            (&json!(6), &json!(6)),
            "machine {name}: {by_tool:#}"
        );
        // The held call: its hold, and its run once resumed (with its wait for the approval).
        let echo = row(&by_tool, "fx/echo");
        assert_eq!(
            (&echo["count"], &echo["succeeded"], &echo["waited"]),
            (&json!(2), &json!(1), &json!(1)),
            "machine {name}: {by_tool:#}"
        );
        assert_eq!(count(&by_tool, "old/ask_twice"), 1, "{by_tool:#}");
    }
}

/// The events counted in `key`'s row, 0 without one.
fn count(report: &Value, key: &str) -> u64 {
    report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"] == key)
        .map_or(0, |r| r["count"].as_u64().unwrap())
}
