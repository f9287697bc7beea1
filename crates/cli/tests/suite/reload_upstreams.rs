//! Upstreams by reload, with real processes: a server entry added to the config file starts and its tools can
//! be called; one removed is shut down while a call of another server finishes undisturbed; one whose env
//! changed runs again with the new env; a bad new entry keeps the whole old configuration; and a broken profile
//! nobody uses is judged alike at start and by a reload.

use crate::reload::{config, refused, Served};
use crate::support::{call, fixture, text, toolgate};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

fn allow() -> Value {
    json!({"default": "allow"})
}

/// The reload test config with these servers besides `fx`.
fn with_servers(dir: &Path, servers: &[(&str, Value)]) -> Value {
    let mut c = config(dir, allow());
    for (name, entry) in servers {
        c["mcpServers"][*name] = entry.clone();
    }
    c
}

/// Every reload line on stderr: a reload the file's change caused may come before the signal's, and only the
/// first of the two finds anything changed.
fn reloads(s: &Served) -> String {
    let all = s.stderr();
    let lines: Vec<&str> = all
        .lines()
        .filter(|l| l.contains("config reloaded"))
        .collect();
    lines.join("\n")
}

/// Calls `name` until it runs (a server just started by a reload needs a moment to come up), at most 20 s.
async fn call_when_up(s: &Served, name: &str, args: Value) -> Value {
    let mut last = Value::Null;
    for _ in 0..200 {
        match call(&s.client, name, args.clone()).await {
            Ok(r) if r["isError"] != true => return r,
            Ok(r) => last = r,
            Err(e) => last = e,
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{name} never ran: {last}");
}

#[tokio::test]
async fn an_upstream_added_by_a_reload_starts_and_its_tool_is_called() {
    let s = Served::start_with(|dir| config(dir, allow())).await;
    assert_eq!(
        text(
            &call(&s.client, "fx__echo", json!({"text": "one"}))
                .await
                .unwrap()
        ),
        "one"
    );
    s.rewrite_with(|dir| with_servers(dir, &[("fx2", fixture(&[]))]));
    s.hangup_and_wait("config reloaded (SIGHUP)").await;
    let line = s.wait_for("servers started: fx2", 0).await;
    assert!(
        !line.contains("restart of toolgate"),
        "nothing waits for a restart: {line}"
    );
    let echo = call_when_up(&s, "fx2__echo", json!({"text": "from fx2"})).await;
    assert_eq!(text(&echo), "from fx2");
    let changed = s
        .client
        .wait_notification(Duration::from_secs(5), |n| {
            n["method"] == "notifications/tools/list_changed"
        })
        .await;
    assert!(changed.is_some(), "the session heard its tools changed");
}

#[tokio::test]
async fn removing_a_server_lets_a_call_of_another_finish_and_ends_its_own() {
    let s = Arc::new(Served::start_with(|dir| with_servers(dir, &[("fx2", fixture(&[]))])).await);
    // Both servers are up before the calls start.
    call_when_up(&s, "fx2__echo", json!({"text": "up"})).await;
    let slow = {
        let s = Arc::clone(&s);
        tokio::spawn(async move {
            call(&s.client, "fx__slow", json!({"steps": 20, "delay_ms": 100})).await
        })
    };
    let hung = {
        let s = Arc::clone(&s);
        tokio::spawn(async move { call(&s.client, "fx2__hang", json!({})).await })
    };
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(
        !slow.is_finished() && !hung.is_finished(),
        "both calls are in flight"
    );
    s.rewrite_with(|dir| config(dir, allow()));
    s.hangup_and_wait("config reloaded (SIGHUP)").await;
    s.wait_for("servers stopped: fx2", 0).await;
    let lines = reloads(&s);
    assert!(!lines.contains("restarted"), "fx is untouched: {lines}");
    let hung = tokio::time::timeout(Duration::from_secs(10), hung)
        .await
        .expect("the call on the removed server ends")
        .unwrap();
    let hung = match hung {
        Ok(r) => r,
        Err(e) => e,
    };
    assert!(
        hung["isError"] == true || hung.get("code").is_some(),
        "the call on the removed server ends with an error: {hung}"
    );
    assert!(
        hung.to_string()
            .contains("upstream fx2 is unavailable: toolgate stopped it"),
        "the error names the server and why: {hung}"
    );
    let slow = tokio::time::timeout(Duration::from_secs(10), slow)
        .await
        .expect("the call on the kept server finishes")
        .unwrap()
        .unwrap();
    assert_eq!(text(&slow), "done after 20 steps", "{slow}");
    let gone = call(&s.client, "fx2__echo", json!({"text": "x"})).await;
    let gone = gone.unwrap_or_else(|e| e);
    assert!(
        gone["isError"] == true || gone.get("code").is_some(),
        "the removed server's tool is gone: {gone}"
    );
    assert_eq!(
        text(
            &call(&s.client, "fx__echo", json!({"text": "still"}))
                .await
                .unwrap()
        ),
        "still"
    );
}

/// The env variable names `fx__env_keys` reports.
async fn env_keys(s: &Served) -> Vec<String> {
    let r = call_when_up(s, "fx__env_keys", json!({})).await;
    serde_json::from_value(r["structuredContent"]["keys"].clone()).unwrap()
}

#[tokio::test]
async fn a_changed_env_restarts_the_server_with_the_new_env() {
    let s = Served::start_with(|dir| with_servers(dir, &[("fx2", fixture(&[]))])).await;
    assert!(!env_keys(&s).await.contains(&"RELOAD_MARK".to_owned()));
    let marked = |dir: &Path| {
        let mut c = with_servers(dir, &[("fx2", fixture(&[]))]);
        c["mcpServers"]["fx"]["env"] = json!({"RELOAD_MARK": "1"});
        c
    };
    s.rewrite_with(marked);
    s.hangup_and_wait("config reloaded (SIGHUP)").await;
    s.wait_for("servers restarted: fx", 0).await;
    let lines = reloads(&s);
    assert!(
        !lines.contains("fx2"),
        "the unchanged server is left alone: {lines}"
    );
    let mut keys = Vec::new();
    for _ in 0..100 {
        keys = env_keys(&s).await;
        if keys.contains(&"RELOAD_MARK".to_owned()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        keys.contains(&"RELOAD_MARK".to_owned()),
        "the server runs with its new env: {keys:?}"
    );
}

#[tokio::test]
async fn a_bad_new_upstream_entry_keeps_the_old_configuration() {
    let s = Served::start_with(|dir| config(dir, allow())).await;
    // The new file also denies echo: validated whole, none of it is applied.
    s.rewrite_with(|dir| {
        let mut c = with_servers(dir, &[("bad", json!({"args": ["no command"]}))]);
        c["permissions"] = json!({"default": "allow", "deny": ["mcp__fx__echo"]});
        c
    });
    let line = s.hangup_and_wait("config not reloaded (SIGHUP)").await;
    assert!(line.contains("previous one stays in force"), "{line}");
    assert!(line.contains("bad"), "the bad entry is named: {line}");
    let echo = call(&s.client, "fx__echo", json!({"text": "kept"}))
        .await
        .unwrap();
    assert!(!refused(&echo), "the old policy is in force: {echo}");
    assert_eq!(text(&echo), "kept");
}

/// A profile nobody uses yet whose tool list cannot be compiled.
fn broken_profile(dir: &Path) -> Value {
    let mut c = config(dir, allow());
    c["profiles"] = json!({"unused": {"tools": {"default": "unavailable"}}});
    c
}

#[tokio::test]
async fn a_broken_unused_profile_is_refused_at_start_and_by_a_reload_alike() {
    let s = Served::start_with(|dir| config(dir, allow())).await;
    s.rewrite_with(broken_profile);
    let line = s.hangup_and_wait("config not reloaded (SIGHUP)").await;
    let why = "`default` cannot be `unavailable`";
    assert!(line.contains(why), "{line}");
    // The same file at start: refused, with the same reason.
    let out = std::process::Command::new(toolgate())
        .args(["serve", "--config"])
        .arg(&s.setup.config)
        .env("TOOLGATE_STATE_DIR", s.setup.state_dir())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "start-up refuses it: {err}");
    assert!(err.contains(why), "{err}");
}

#[tokio::test]
async fn a_section_read_only_at_start_is_named_and_the_rest_is_applied() {
    let s = Served::start_with(|dir| config(dir, allow())).await;
    s.rewrite_with(|dir| {
        let mut c = config(dir, json!({"default": "allow", "deny": ["mcp__fx__echo"]}));
        c["stateDir"] = json!(dir.join("elsewhere"));
        c["http"] = json!({"listen": "127.0.0.1:9"});
        c
    });
    let line = s.hangup_and_wait("config reloaded (SIGHUP)").await;
    assert!(
        line.contains("what changed in http.listen, stateDir takes a restart of toolgate"),
        "{line}"
    );
    let echo = call(&s.client, "fx__echo", json!({"text": "x"}))
        .await
        .unwrap();
    assert!(refused(&echo), "the policy was applied: {echo}");
}

#[tokio::test]
async fn a_held_call_survives_the_restart_of_its_server_and_runs_on_the_new_one() {
    let asks = |dir: &Path| {
        config(
            dir,
            json!({"default": "allow", "ask": ["mcp__fx__env_keys"]}),
        )
    };
    let s = Arc::new(Served::start_with(asks).await);
    let held = {
        let s = Arc::clone(&s);
        tokio::spawn(async move { call(&s.client, "fx__env_keys", json!({})).await })
    };
    let (mut store, id) = s.held().await;
    s.rewrite_with(|dir| {
        let mut c = asks(dir);
        c["mcpServers"]["fx"]["env"] = json!({"RELOAD_MARK": "1"});
        c
    });
    s.hangup_and_wait("config reloaded (SIGHUP)").await;
    s.wait_for("servers restarted: fx", 0).await;
    // Approved once the new server is up, the held call runs there.
    call_when_up(&s, "fx__echo", json!({"text": "up"})).await;
    store
        .approve(&id, "test operator", store::Timestamp::now())
        .unwrap();
    let result = tokio::time::timeout(Duration::from_secs(10), held)
        .await
        .expect("the held call ends")
        .unwrap()
        .unwrap();
    let keys: Vec<String> =
        serde_json::from_value(result["structuredContent"]["keys"].clone()).unwrap();
    assert!(
        keys.contains(&"RELOAD_MARK".to_owned()),
        "the held call ran on the restarted server: {result}"
    );
}
