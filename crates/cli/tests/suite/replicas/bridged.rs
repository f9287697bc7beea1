//! A 2026-07-28 client's call of a 2025-era server that asks mid-call, behind HAProxy without affinity: the call
//! waits on the replica that started it, and each retry, on whichever replica round robin picks, is sent on to it.

use super::team::{chain, namespace_dir, Affinity, Answer, Client, Team, NAMES};
use serde_json::{json, Value};
use std::net::TcpListener;
use std::time::Duration;

fn index(replica: &str) -> usize {
    NAMES
        .iter()
        .position(|n| *n == replica)
        .unwrap_or_else(|| panic!("answered by {replica:?}, not a replica"))
}

/// The one input request of an `input_required` answer (its key and method) and the request state.
fn input_required(answer: &Answer) -> (String, String, String) {
    let r = &answer.body["result"];
    assert_eq!(r["resultType"], "input_required", "{}", answer.body);
    let requests = r["inputRequests"].as_object().unwrap();
    assert_eq!(requests.len(), 1, "{}", answer.body);
    let (key, asked) = requests.iter().next().unwrap();
    let state = r["requestState"].as_str().unwrap().to_owned();
    (
        key.clone(),
        asked["method"].as_str().unwrap().to_owned(),
        state,
    )
}

fn retry(args: &Value, key: &str, answer: Value, state: &str) -> Value {
    json!({"name": "old__ask_twice", "arguments": args, "requestState": state,
           "inputResponses": {key: answer}})
}

fn accepted() -> Value {
    json!({"action": "accept", "content": {"ok": true}})
}

fn sampled() -> Value {
    json!({"role": "assistant", "content": {"type": "text", "text": "sampled"}, "model": "m"})
}

/// The error message of a refusal the front end answered with.
fn message(answer: &Answer) -> String {
    answer.body["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn bridged_retries_reach_the_replica_holding_the_call_through_round_robin() {
    let team = Team::start(0, Affinity::None);
    let client = Client::modern(&team.balancer.url);
    let args = json!({"message": "across replicas?"});
    let first = client
        .send(
            "tools/call",
            json!({"name": "old__ask_twice", "arguments": args}),
        )
        .await;
    let (key, method, state) = input_required(&first);
    assert_eq!(method, "elicitation/create");
    let a = index(&first.replica);
    // A retry marked as already sent on is not sent on again: refused where it lands, the call still waiting.
    let b = (a + 1) % NAMES.len();
    let hop = [("toolgate-forwarded", "1")];
    let refused = client
        .send_to(
            b,
            "tools/call",
            retry(&args, &key, accepted(), &state),
            &hop,
        )
        .await;
    assert_eq!(refused.replica, NAMES[b]);
    assert_eq!(refused.status, 502, "{}", refused.body);
    assert!(
        message(&refused).contains("at most once"),
        "{}",
        refused.body
    );
    // The first round's answer through another replica: sent on to the holder, whose next round comes back.
    let second = client
        .send_to(b, "tools/call", retry(&args, &key, accepted(), &state), &[])
        .await;
    assert_eq!(second.replica, NAMES[b]);
    let (key, method, state) = input_required(&second);
    assert_eq!(method, "sampling/createMessage");
    // The second round's answer through the third replica completes the call.
    let c = (a + 2) % NAMES.len();
    let done = client
        .send_to(c, "tools/call", retry(&args, &key, sampled(), &state), &[])
        .await;
    assert_eq!(done.replica, NAMES[c]);
    let result = &done.body["result"];
    assert_eq!(
        result["structuredContent"]["elicited"],
        accepted(),
        "{result}"
    );
    assert_eq!(
        result["structuredContent"]["sampled"]["content"]["text"], "sampled",
        "{result}"
    );
    // One governed call, recorded by the replica that held it: one decision and one finished record (beside the
    // decisions of what the upstream asked); the replicas that sent its retries on recorded nothing of it.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let records = |i: usize| -> Vec<Value> {
        chain(&namespace_dir(&team.root(i)), NAMES[i])
            .into_iter()
            .filter(|r| r["server"] == "old")
            .collect()
    };
    let held: Vec<Value> = records(a)
        .into_iter()
        .filter(|r| r["tool"] == "ask_twice")
        .collect();
    let kinds: Vec<&str> = held.iter().filter_map(|r| r["kind"].as_str()).collect();
    assert_eq!(kinds, ["decision", "execution"], "{held:#?}");
    assert_eq!(held[1]["outcome"], "SUCCEEDED", "{held:#?}");
    assert!(records(b).is_empty() && records(c).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_retry_whose_holder_is_gone_fails_closed_saying_the_call_is_lost() {
    let mut team = Team::start(0, Affinity::None);
    let client = Client::modern(&team.balancer.url);
    let args = json!({"message": "still there?"});
    let first = client
        .send(
            "tools/call",
            json!({"name": "old__ask_twice", "arguments": args}),
        )
        .await;
    let (key, _, state) = input_required(&first);
    let a = index(&first.replica);
    team.kill(a);
    // HAProxy notices within its check interval; the retry lands on a live replica, which cannot reach the holder.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let answer = client
        .send("tools/call", retry(&args, &key, accepted(), &state))
        .await;
    assert_ne!(answer.replica, NAMES[a]);
    assert_eq!(answer.status, 502, "{}", answer.body);
    let said = message(&answer);
    assert!(
        said.contains("lost") && said.contains("make the call again"),
        "{said}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn forged_request_state_cannot_make_a_replica_connect_to_an_address_it_names() {
    let team = Team::start(0, Affinity::None);
    // Where a forged state would send the retry: nothing may ever connect here.
    let trap = TcpListener::bind("127.0.0.1:0").unwrap();
    trap.set_nonblocking(true).unwrap();
    let target = trap.local_addr().unwrap().to_string();
    // Sealed as toolgate seals request states, but under another state root's key; and plain text.
    let elsewhere = tempfile::tempdir().unwrap();
    let foreign = store::TokenKey::for_state_root(elsewhere.path(), "request state").unwrap();
    let payload = json!({"i": "attacker", "a": target, "n": "00"}).to_string();
    let expires = store::Timestamp::now().plus_millis(60_000);
    let sealed = foreign.seal(payload.as_bytes(), expires).unwrap();
    let client = Client::modern(&team.balancer.url);
    let args = json!({"message": "x"});
    for state in [
        format!("toolgate-bridge.{sealed}"),
        format!("toolgate-bridge.{target}"),
    ] {
        for _ in 0..NAMES.len() {
            let answer = client
                .send(
                    "tools/call",
                    retry(&args, "elicitation-1", accepted(), &state),
                )
                .await;
            assert_eq!(answer.status, 200, "{}", answer.body);
            let refusal = &answer.body["result"]["structuredContent"]["error"];
            assert_eq!(refusal["code"], "REQUEST_NOT_FOUND", "{}", answer.body);
        }
    }
    assert!(
        trap.accept().is_err(),
        "a replica connected to the address a forged state named"
    );
}
