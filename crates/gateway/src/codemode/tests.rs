//! Code mode in the gateway without a worker: the mode in force, the surface a client lists, refusals of direct
//! calls, search, the pre-run check, and a held run (its snapshot, elicitation, resume). The host is tested in
//! `host_tests`; programs themselves run in the binary's suite (the binary is the worker).

use super::host_tests::under_run;
use super::prerun::{self, PreRun};
use super::*;
use crate::outcome::CallOutcome;
use crate::testkit::{Client, Harness};
use config::Mode;
use config::Setting;
use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use test_support::FixtureOptions;

/// Allows by default, asks for `fx__echo`, denies every call of `fx__env_keys`; held calls answer at once.
fn policy() -> Value {
    json!({
        "permissions": {"default": "allow", "ask": ["mcp__fx__echo"], "deny": ["mcp__fx__env_keys"]},
        "approvals": {"wait_seconds": 0, "elicitation": false},
        "pins": {"newTools": "accept"},
    })
}

pub(super) async fn harness() -> Harness {
    Harness::start_with(policy(), FixtureOptions::default(), |c| {
        c.mode = Setting::default(Mode::Code)
    })
    .await
}

async fn legacy_client(h: &Harness) -> Client {
    let mut client = h.client();
    client.initialize(json!({})).await;
    client
}

#[tokio::test]
async fn code_mode_lists_only_the_code_tools_and_toolgate_control_tools() {
    let h = harness().await;
    let mut client = h.client();
    let init = client.initialize(json!({})).await;
    let instructions = init["result"]["instructions"].as_str().unwrap_or_default();
    assert!(
        instructions.starts_with("toolgate is in code mode"),
        "{init}"
    );
    let listed = client.request("tools/list", json!({})).await;
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "toolgate_status",
            "toolgate_request_status",
            "toolgate_resume",
            "toolgate_capabilities",
            SEARCH_TOOL,
            RUN_TOOL
        ]
    );
    h.stop(&[&client]).await;
}

#[tokio::test]
async fn direct_call_of_an_upstream_tool_in_code_mode_is_refused_and_says_to_use_run_code() {
    let h = harness().await;
    let mut client = legacy_client(&h).await;
    let before = h.audit().len();
    let answer = client.call("fx__add", json!({"a": 1, "b": 2})).await;
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("in code mode, call it from run_code"),
        "{text}"
    );
    let (_, records) = h.one_trace_since(before).await;
    assert_eq!(records.1, ["REFUSED"]);
    h.stop(&[&client]).await;
}

#[tokio::test]
async fn search_tools_finds_upstream_tools_and_never_a_tool_denied_for_every_call() {
    let h = harness().await;
    let mut client = legacy_client(&h).await;
    let answer = client
        .call(SEARCH_TOOL, json!({"query": "add numbers", "limit": 5}))
        .await;
    let tools = answer["result"]["structuredContent"]["tools"].clone();
    assert_eq!(tools[0]["name"], "fx__add", "{answer}");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("fx__add("), "{text}");
    let index = h.gateway.stages.search_index(&h.gateway.stages.guard());
    let names: Vec<String> = index
        .search("env keys", 50)
        .into_iter()
        .map(|h| h.name)
        .collect();
    assert!(!names.iter().any(|n| n == "fx__env_keys"), "{names:?}");
    assert!(
        !names
            .iter()
            .any(|n| n == RUN_TOOL || n == "toolgate_resume"),
        "{names:?}"
    );
    h.stop(&[&client]).await;
}

#[tokio::test]
async fn pre_run_check_stops_a_denied_literal_and_asks_for_an_ask_literal() {
    let h = harness().await;
    let check = |program: &str| {
        prerun::check(
            &h.gateway.stages,
            &h.gateway.stages.guard(),
            &codemode::scan(program),
        )
    };
    match check(r#"call("fx__add", {a: 1, b: 2}); call("mcp__fx__env_keys", {})"#) {
        PreRun::Stop(r) => {
            assert!(r.message.contains("\"mcp__fx__env_keys\""), "{}", r.message);
            assert!(r.message.contains("DENY_RULE"), "{}", r.message);
        }
        other => panic!("stopped: {other:?}"),
    }
    match check(r#"call("fx__nope")"#) {
        PreRun::Stop(r) => assert_eq!(r.code.as_str(), "UNKNOWN_TARGET"),
        other => panic!("stopped: {other:?}"),
    }
    match check(r#"call("fx__add", {a: 1, b: 2}); call("mcp__fx__echo", {text: "hi"})"#) {
        PreRun::Start(plan) => {
            assert_eq!(plan.ask.map(|d| d.reason.as_str()), Some("ASK_RULE"));
            // Approved: exactly the call that asked, with the arguments written.
            assert!(plan.approval.covers("fx__echo", &json!({"text": "hi"})));
            assert!(!plan.approval.covers("fx__echo", &json!({"text": "other"})));
            assert!(!plan.approval.covers("fx__add", &json!({"a": 1, "b": 2})));
            assert_eq!(plan.needs.len(), 1, "{:?}", plan.needs);
            assert!(
                plan.needs[0].starts_with("fx__echo {\"text\":\"hi\"}: mcp.call (mcp__fx__echo"),
                "{:?}",
                plan.needs
            );
            assert!(plan.in_band && plan.grantable);
        }
        other => panic!("started: {other:?}"),
    }
    match check(r#"call("mcp__fx__echo", {text: t})"#) {
        PreRun::Start(plan) => {
            // Computed arguments of a tool decided by name: approved for any call of it, once.
            assert!(plan
                .approval
                .covers("fx__echo", &json!({"text": "anything"})));
            assert!(!plan.grantable);
        }
        other => panic!("started: {other:?}"),
    }
    match check(r#"call("fx__add", {a: 1, b: 2})"#) {
        PreRun::Start(plan) => assert!(plan.ask.is_none()),
        other => panic!("started: {other:?}"),
    }
    h.stop(&[]).await;
}

#[tokio::test]
async fn deny_on_a_literal_name_stops_run_code_before_it_starts_and_names_the_rule() {
    let h = harness().await;
    let mut client = legacy_client(&h).await;
    let before = h.audit().len();
    let code = "const a = await call(\"fx__add\", {a: 1, b: 2});\nreturn await call(\"fx__env_keys\", {});";
    let answer = client.call(RUN_TOOL, json!({"code": code})).await;
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("did not start this program"), "{text}");
    assert!(text.contains("DENY_RULE"), "{text}");
    // One trace, the run_code call's own: nothing the program names ran.
    let (_, records) = h.one_trace_since(before).await;
    assert_eq!(records.1, ["REFUSED"]);
    assert!(under_run(&h).is_empty());
    h.stop(&[&client]).await;
}

#[tokio::test]
async fn ask_on_a_literal_name_holds_the_program_as_a_code_run_snapshot_until_resumed() {
    let h = harness().await;
    let mut client = legacy_client(&h).await;
    let code = "return await call(\"mcp__fx__echo\", {text: \"hi\"});";
    let answer = client.call(RUN_TOOL, json!({"code": code})).await;
    let contract = &answer["result"]["structuredContent"];
    assert_eq!(contract["outcome"], "APPROVAL_REQUIRED", "{answer}");
    let request_id = contract["approval"]["request_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let held = h.pending_request().await;
    assert_eq!(held.id, request_id);
    assert_eq!(held.snapshot["kind"], "code_run");
    assert_eq!(held.snapshot["arguments"]["code"], code);
    assert_eq!(held.snapshot["names"], json!(["mcp__fx__echo"]));
    assert_eq!(held.snapshot["dynamic"], false);
    // Before a human decides, resuming only reports the status.
    let early = client
        .call(
            crate::contract::RESUME_TOOL,
            json!({"request_id": request_id}),
        )
        .await;
    assert_eq!(
        early["result"]["structuredContent"]["outcome"], "APPROVAL_PENDING",
        "{early}"
    );
    h.state
        .store(|s| s.approve(&request_id, "admin", store::Timestamp::now()))
        .unwrap();
    let resumed = client
        .call(
            crate::contract::RESUME_TOOL,
            json!({"request_id": request_id}),
        )
        .await;
    // The approved program ran (or tried to: the worker is the binary's) under the held call's trace.
    let run_records: Vec<Value> = h
        .audit()
        .into_iter()
        .filter(|r| r["trace_id"] == held.trace_id && r["kind"] == "execution")
        .collect();
    let outcomes: Vec<&str> = run_records
        .iter()
        .map(|r| r["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes.len(), 2, "{run_records:#?} {resumed}");
    assert_eq!(outcomes[0], "APPROVAL_REQUIRED");
    assert!(!outcomes[1].starts_with("APPROVAL"), "{outcomes:?}");
    assert_eq!(run_records[1]["tool"], RUN_TOOL);
    assert_eq!(run_records[1]["request_id"], request_id.as_str());
    // It runs once.
    let again = client
        .call(
            crate::contract::RESUME_TOOL,
            json!({"request_id": request_id}),
        )
        .await;
    assert_eq!(
        again["result"]["structuredContent"]["outcome"], "APPROVAL_CONSUMED",
        "{again}"
    );
    h.stop(&[&client]).await;
}

#[tokio::test]
async fn ask_on_a_literal_name_approved_by_elicitation_runs_the_program_in_the_same_call() {
    let mut policy = policy();
    policy["approvals"] = json!({"wait_seconds": 20, "elicitation": true});
    let h = Harness::start_with(policy, FixtureOptions::default(), |c| {
        c.mode = Setting::default(Mode::Code)
    })
    .await;
    let mut client = h.client();
    client.initialize(json!({"elicitation": {}})).await;
    let code = "return await call(\"fx__echo\", {text: \"hi\"});";
    let id = client
        .send_request(
            "tools/call",
            json!({"name": RUN_TOOL, "arguments": {"code": code}}),
        )
        .await;
    let question = client
        .wait_for(|m| m["method"] == "elicitation/create")
        .await;
    let message = question["params"]["message"].as_str().unwrap();
    assert!(
        message.contains("allow this run_code program to run, calling \"fx__echo\""),
        "{message}"
    );
    assert!(message.contains("Program: {\"code\":"), "{message}");
    client
        .respond(
            &question["id"],
            json!({"action": "accept", "content": {"decision": "allow_once"}}),
        )
        .await;
    let answer = client.response(&id).await;
    // Approved while it waited: the program ran in this call (the worker is the binary's, so here it cannot
    // start), not a handle.
    assert!(
        answer["result"]["structuredContent"]["outcome"].is_null()
            || !answer["result"]["structuredContent"]["outcome"]
                .as_str()
                .unwrap_or_default()
                .starts_with("APPROVAL"),
        "{answer}"
    );
    let approved = h
        .state
        .store(|s| {
            s.list_requests(
                Some(store::ApprovalStatus::Consumed),
                store::Timestamp::now(),
            )
        })
        .unwrap();
    assert_eq!(approved.len(), 1);
    assert_eq!(approved[0].snapshot["kind"], "code_run");
    h.stop(&[&client]).await;
}

#[test]
fn layers_required_of_commands_are_required_of_the_worker_with_its_allowlist_for_the_socket_filter()
{
    let required = ["no_network", "socket_filter", "landlock"].map(String::from);
    assert_eq!(
        worker_require(&required),
        ["no_network", "syscall_allowlist", "landlock"]
    );
}

/// The names a legacy client lists on a gateway started from `config` (top level without servers).
async fn listed_under(config: Value) -> Vec<String> {
    let h = Harness::start(config, FixtureOptions::default()).await;
    let mut client = legacy_client(&h).await;
    let listed = client.request("tools/list", json!({})).await;
    h.stop(&[&client]).await;
    listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn mode_comes_from_the_config_or_the_active_profile_which_overrides_it() {
    let code_tools = |names: &[String]| names.iter().any(|n| n == RUN_TOOL);
    let direct_tools = |names: &[String]| names.iter().any(|n| n == "fx__add");
    let file = listed_under(json!({"mode": "code", "permissions": {"default": "allow"}})).await;
    assert!(code_tools(&file) && !direct_tools(&file), "{file:?}");
    let profile = listed_under(json!({
        "mode": "direct",
        "profiles": {"review": {"mode": "code", "default": "allow"}},
        "profile": "review",
    }))
    .await;
    assert!(
        code_tools(&profile) && !direct_tools(&profile),
        "{profile:?}"
    );
    let back = listed_under(json!({
        "mode": "code",
        "profiles": {"plain": {"mode": "direct", "default": "allow"}},
        "profile": "plain",
    }))
    .await;
    assert!(!code_tools(&back) && direct_tools(&back), "{back:?}");
}

#[tokio::test]
async fn search_tools_lists_servers_that_failed_to_start_with_why() {
    let dir = tempfile::tempdir().unwrap();
    let text = json!({
        "mode": "code",
        "mcpServers": {"broken": {"command": dir.path().join("no-such-server")}},
    });
    let config = config::parse_str(
        &text.to_string(),
        config::Format::Json,
        &dir.path().join("toolgate.json"),
        &|_| None,
        &config::Overrides::default(),
    )
    .unwrap();
    let gw = crate::testkit::gateway(&config, dir.path(), None);
    gw.ready().await;
    let CallOutcome::Complete(result, _) = tools::search(
        &gw.stages,
        &gw.stages.guard(),
        &json!({"query": "anything"}),
    ) else {
        panic!("search answers");
    };
    let unavailable = &result["structuredContent"]["unavailable"];
    assert_eq!(unavailable[0]["server"], "broken", "{result}");
    assert!(
        !unavailable[0]["reason"].as_str().unwrap().is_empty(),
        "{result}"
    );
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("server broken is not connected"), "{text}");
    gw.shutdown().await;
}

#[tokio::test]
async fn pre_run_check_does_not_ask_for_a_call_the_policy_will_refuse() {
    let policy = json!({
        "permissions": {"default": "deny", "allow": ["mcp__fx__add"]},
        "approvals": {"wait_seconds": 0, "elicitation": false},
        "pins": {"newTools": "accept"},
    });
    let h = Harness::start(policy, FixtureOptions::default()).await;
    let check = |program: &str| {
        prerun::check(
            &h.gateway.stages,
            &h.gateway.stages.guard(),
            &codemode::scan(program),
        )
    };
    // Refused by default with these arguments: the program may start, and the call is refused when made.
    match check(r#"call("fx__echo", {text: "hi"})"#) {
        PreRun::Start(plan) => assert!(plan.ask.is_none(), "{plan:?}"),
        other => panic!("starts: {other:?}"),
    }
    match check(r#"call("fx__add", {a: 1, b: 2})"#) {
        PreRun::Start(plan) => assert!(plan.ask.is_none(), "{plan:?}"),
        other => panic!("starts unasked: {other:?}"),
    }
    h.stop(&[]).await;
}

#[tokio::test]
async fn concurrent_workers_are_bounded_overall() {
    let h = harness().await;
    let gate = h.gateway.stages.code_sessions.bounds.workers.clone();
    // Other identities hold every worker slot, each its share.
    let mut held = Vec::new();
    for i in 0..gate.capacity().div_ceil(gate.share()) {
        while held.len() < gate.capacity() && gate.running(&format!("key:{i}")) < gate.share() {
            held.push(gate.acquire(&format!("key:{i}")).await.unwrap());
        }
    }
    assert_eq!(gate.in_use(), gate.capacity());
    let mut client = legacy_client(&h).await;
    let run = json!({"name": RUN_TOOL, "arguments": {"code": "return 1"}});
    let id = client.send_request("tools/call", run).await;
    // The run waits for a slot: no worker is started past the ceiling.
    let deadline = tokio::time::Instant::now() + crate::testkit::WAIT;
    while gate.waiting(bounds::LOCAL) == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the run did not wait"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(gate.in_use(), gate.capacity());
    // One slot freed: the run is admitted and answered.
    drop(held.pop());
    let answer = client.response(&id).await;
    assert!(answer.get("result").is_some(), "{answer}");
    assert_eq!(gate.waiting(bounds::LOCAL), 0);
    drop(held);
    h.stop(&[&client]).await;
}
