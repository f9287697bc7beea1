//! Rug pulls and poisoned definitions: a tool whose definition changes after it was first seen is quarantined
//! (hidden and refused) until a human accepts it, across restarts; a definition that smuggles instructions is
//! flagged and blocked.

use crate::support::{call, legacy, text, toolgate, Setup};
use pretty_assertions::assert_eq;
use serde_json::json;
use std::process::Command;
use std::time::Duration;
use test_support::list_all;

fn names(tools: &[serde_json::Value]) -> Vec<String> {
    tools
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

/// Makes the fixture change `echo`'s definition and waits until toolgate has announced the change.
async fn rug_pull(client: &test_support::StdioClient) {
    call(client, "fx__rug_pull", json!({})).await.unwrap();
    client
        .wait_notification(Duration::from_secs(5), |n| {
            n["method"] == "notifications/tools/list_changed"
        })
        .await
        .expect("the change is announced");
}

fn pins(setup: &Setup, args: &[&str]) -> (bool, String) {
    let out = Command::new(toolgate())
        .arg("pins")
        .args(args)
        .args(["--config", setup.config.to_str().unwrap()])
        .env("TOOLGATE_STATE_DIR", setup.state_dir())
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[tokio::test]
async fn rug_pull_is_quarantined_until_a_human_accepts_it() {
    let setup = Setup::fixture(&[], json!({}));
    let client = legacy(&setup).await;
    assert_eq!(
        text(
            &call(&client, "fx__echo", json!({"text": "before"}))
                .await
                .unwrap()
        ),
        "before"
    );
    rug_pull(&client).await;
    let tools = list_all(&client, "tools/list", "tools", None)
        .await
        .unwrap();
    assert!(
        !names(&tools).contains(&"fx__echo".to_owned()),
        "a quarantined tool is hidden"
    );
    let refused = call(&client, "fx__echo", json!({"text": "after", "key": "x"}))
        .await
        .unwrap();
    assert_eq!(
        refused["structuredContent"]["error"]["code"], "TOOL_QUARANTINED",
        "{refused}"
    );

    let (ok, listing) = pins(&setup, &["list"]);
    assert!(
        ok && listing.contains("fx__echo") && listing.contains("QUARANTINED"),
        "{listing}"
    );
    let (ok, diff) = pins(&setup, &["diff", "fx__echo"]);
    assert!(
        ok && diff.contains("id_rsa"),
        "the diff shows what changed:\n{diff}"
    );
    let (ok, accepted) = pins(&setup, &["accept", "fx__echo"]);
    assert!(ok, "{accepted}");
    // The running gateway honours the human's acceptance at the next call.
    let after = call(&client, "fx__echo", json!({"text": "accepted"}))
        .await
        .unwrap();
    assert_eq!(text(&after), "accepted", "{after}");
}

#[tokio::test]
async fn quarantine_survives_a_restart() {
    let setup = Setup::fixture(&[], json!({}));
    let client = legacy(&setup).await;
    rug_pull(&client).await;
    drop(client);
    // The restarted fixture lists the original `echo` again: back to the pinned definition, still quarantined
    // (the pin awaits a decision), so nothing changes silently.
    let client = legacy(&setup).await;
    let refused = call(&client, "fx__echo", json!({"text": "x"}))
        .await
        .unwrap();
    assert_eq!(
        refused["structuredContent"]["error"]["code"], "TOOL_QUARANTINED",
        "{refused}"
    );
}

#[tokio::test]
async fn poisoned_definition_is_flagged_hidden_and_refused() {
    let setup = Setup::fixture(&["--poisoned"], json!({}));
    let client = legacy(&setup).await;
    let tools = list_all(&client, "tools/list", "tools", None)
        .await
        .unwrap();
    assert!(!names(&tools).contains(&"fx__helpful".to_owned()));
    let refused = call(&client, "fx__helpful", json!({})).await.unwrap();
    assert_eq!(
        refused["structuredContent"]["error"]["code"], "TOOL_FLAGGED",
        "{refused}"
    );
    let (ok, listing) = pins(&setup, &["list"]);
    assert!(
        ok && listing.contains("fx__helpful") && listing.contains("HiddenInstruction"),
        "{listing}"
    );
}

#[tokio::test]
async fn rug_pull_can_ask_instead_of_hiding() {
    let setup = Setup::fixture(
        &[],
        json!({"pins": {"onChange": "ask"}, "approvals": {"wait_seconds": 0}}),
    );
    let client = legacy(&setup).await;
    rug_pull(&client).await;
    let tools = list_all(&client, "tools/list", "tools", None)
        .await
        .unwrap();
    assert!(
        names(&tools).contains(&"fx__echo".to_owned()),
        "the changed tool stays listed"
    );
    let asked = call(&client, "fx__echo", json!({"text": "x"}))
        .await
        .unwrap();
    assert_eq!(
        asked["structuredContent"]["outcome"], "APPROVAL_REQUIRED",
        "{asked}"
    );
}

#[tokio::test]
async fn accepting_a_flagged_tool_needs_despite_flags_and_is_audited() {
    let setup = Setup::fixture(&["--poisoned"], json!({}));
    let client = legacy(&setup).await;
    let refused = call(&client, "fx__helpful", json!({})).await.unwrap();
    assert_eq!(
        refused["structuredContent"]["error"]["code"],
        "TOOL_FLAGGED"
    );

    let (ok, out) = pins(&setup, &["accept", "fx__helpful"]);
    assert!(!ok, "a plain accept of a flagged tool fails: {out}");
    assert!(
        out.contains("--despite-flags") && !out.contains("accepted fx__helpful"),
        "{out}"
    );
    let still = call(&client, "fx__helpful", json!({})).await.unwrap();
    assert_eq!(still["structuredContent"]["error"]["code"], "TOOL_FLAGGED");

    let (ok, out) = pins(&setup, &["accept", "fx__helpful", "--despite-flags"]);
    assert!(ok && out.contains("despite its flags"), "{out}");
    let ran = call(&client, "fx__helpful", json!({})).await.unwrap();
    assert_eq!(text(&ran), "formatted", "{ran}");

    let audit = Command::new(toolgate())
        .args(["audit", "tail", "--json", "-n", "50"])
        .args(["--config", setup.config.to_str().unwrap()])
        .env("TOOLGATE_STATE_DIR", setup.state_dir())
        .output()
        .unwrap();
    let audit = String::from_utf8_lossy(&audit.stdout);
    assert!(
        audit.contains("PIN_ACCEPTED_DESPITE_FLAGS") && audit.contains("fx__helpful"),
        "{audit}"
    );
}

#[tokio::test]
async fn new_tool_after_the_first_listing_is_held() {
    let setup = Setup::fixture(&[], json!({}));
    let client = legacy(&setup).await;
    call(&client, "fx__echo", json!({"text": "x"}))
        .await
        .unwrap();
    drop(client);
    // The same server now offers one more tool: a rug pull under a new name.
    let mut config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&setup.config).unwrap()).unwrap();
    config["mcpServers"]["fx"]["args"] = json!(["fixture-server", "--tools", "1"]);
    std::fs::write(&setup.config, serde_json::to_vec(&config).unwrap()).unwrap();
    let client = legacy(&setup).await;
    let tools = list_all(&client, "tools/list", "tools", None)
        .await
        .unwrap();
    assert!(
        !names(&tools).contains(&"fx__tool_0".to_owned()),
        "held, so hidden"
    );
    assert!(names(&tools).contains(&"fx__echo".to_owned()));
    let refused = call(&client, "fx__tool_0", json!({})).await.unwrap();
    assert_eq!(
        refused["structuredContent"]["error"]["code"], "TOOL_QUARANTINED",
        "{refused}"
    );
    let (ok, out) = pins(&setup, &["accept", "fx__tool_0"]);
    assert!(ok, "{out}");
    let ran = call(&client, "fx__tool_0", json!({})).await.unwrap();
    assert!(ran["structuredContent"]["error"].is_null(), "{ran}");
}

#[tokio::test]
async fn tool_added_at_run_time_is_held_by_default() {
    let setup = Setup::fixture(&[], json!({}));
    let client = legacy(&setup).await;
    call(&client, "fx__add_tool", json!({"name": "fresh"}))
        .await
        .unwrap();
    client
        .wait_notification(Duration::from_secs(5), |n| {
            n["method"] == "notifications/tools/list_changed"
        })
        .await
        .expect("the change is announced");
    let tools = list_all(&client, "tools/list", "tools", None)
        .await
        .unwrap();
    assert!(
        !names(&tools).contains(&"fx__fresh".to_owned()),
        "held, so hidden"
    );
    assert!(names(&tools).contains(&"fx__echo".to_owned()));
    let refused = call(&client, "fx__fresh", json!({})).await.unwrap();
    assert_eq!(
        refused["structuredContent"]["error"]["code"], "TOOL_QUARANTINED",
        "{refused}"
    );
}

/// After an upgrade, a server's held tools are accepted by naming the server: each diff is shown once as it is
/// accepted, `--sha256` is refused for a server, and the tool runs again.
#[tokio::test]
async fn pins_accept_server_accepts_each_held_tool_of_it_showing_its_diff() {
    let setup = Setup::fixture(&[], json!({}));
    let client = legacy(&setup).await;
    call(&client, "fx__echo", json!({"text": "before"}))
        .await
        .unwrap();
    rug_pull(&client).await;
    let (ok, refused) = pins(&setup, &["accept", "fx", "--sha256", "0123456789ab"]);
    assert!(!ok && refused.contains("one by one"), "{refused}");
    let (ok, accepted) = pins(&setup, &["accept", "fx"]);
    assert!(ok, "{accepted}");
    insta::assert_snapshot!("pins_accept_server", accepted);
    assert_eq!(
        accepted.matches("fx__echo: accepted").count(),
        1,
        "{accepted}"
    );
    assert!(
        accepted.contains("id_rsa"),
        "the diff is shown:\n{accepted}"
    );
    let after = call(&client, "fx__echo", json!({"text": "accepted"}))
        .await
        .unwrap();
    assert_eq!(text(&after), "accepted", "{after}");
    let (ok, again) = pins(&setup, &["accept", "fx"]);
    assert!(ok && again.contains("no held tools"), "{again}");
}

/// After a server's upgrade, the tools its old version never had are new, not changed: their refusal, `pins
/// list` and `toolgate_status` say so, and only the tool whose accepted definition differs is "changed".
/// `toolgate_status` lists every held tool and says how many of the server's tools its client does not see,
/// instead of an empty `held` beside a count of tools the client never gets.
#[tokio::test]
async fn after_an_upgrade_new_tools_are_new_and_only_a_changed_one_is_changed() {
    let setup = Setup::fixture(&["--tools", "1"], json!({}));
    let client = legacy(&setup).await;
    call(&client, "fx__tool_0", json!({})).await.unwrap();
    drop(client);
    // The upgrade: tool_0's description grows, tool_1 and tool_2 appear.
    let mut config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&setup.config).unwrap()).unwrap();
    config["mcpServers"]["fx"]["args"] = json!([
        "fixture-server",
        "--tools",
        "3",
        "--description-bytes",
        "40"
    ]);
    std::fs::write(&setup.config, serde_json::to_vec(&config).unwrap()).unwrap();
    let client = legacy(&setup).await;
    let new = call(&client, "fx__tool_1", json!({})).await.unwrap();
    let changed = call(&client, "fx__tool_0", json!({})).await.unwrap();
    for refused in [&new, &changed] {
        assert_eq!(
            refused["structuredContent"]["error"]["code"], "TOOL_QUARANTINED",
            "{refused}"
        );
    }
    insta::assert_snapshot!("upgrade_refusal_of_a_new_tool", text(&new));
    insta::assert_snapshot!("upgrade_refusal_of_a_changed_tool", text(&changed));
    let status = call(&client, "toolgate_status", json!({})).await.unwrap();
    insta::assert_snapshot!("upgrade_status", text(&status));
    let held: Vec<(&str, &str)> = status["structuredContent"]["held"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h["kind"].as_str().unwrap(), h["name"].as_str().unwrap()))
        .collect();
    assert_eq!(
        held,
        [("tool", "tool_0"), ("tool", "tool_1"), ("tool", "tool_2")],
        "{status}"
    );
    let (ok, listed) = pins(&setup, &["list"]);
    assert!(ok, "{listed}");
    let state_of = |name: &str| {
        listed
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .unwrap_or_else(|| panic!("{name} in {listed}"))
            .to_owned()
    };
    assert_eq!(
        [
            state_of("fx__tool_0 "),
            state_of("fx__tool_1 "),
            state_of("fx__echo ")
        ],
        ["QUARANTINED", "NEW", "ACCEPTED"]
    );
    let (ok, diff) = pins(&setup, &["diff", "fx__tool_1"]);
    assert!(
        ok && diff.starts_with("fx__tool_1: new, never accepted")
            && diff.contains("+  \"name\": \"tool_1\""),
        "the whole new definition is shown:\n{diff}"
    );
}
