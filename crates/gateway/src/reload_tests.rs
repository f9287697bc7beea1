//! A reload of a running gateway: an equal server entry keeps its very upstream, a changed one runs again under
//! the new entry, a removed one stops and its tools leave the catalog, and a reload the gateway cannot apply
//! (another workspace) changes nothing.

use crate::guard::Guard;
use crate::reload::Applied;
use crate::testkit::Harness;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use test_support::FixtureOptions;

fn policy() -> Value {
    json!({"permissions": {"default": "allow"}, "pins": {"newTools": "accept"}})
}

/// The harness's config with these `mcpServers`, and its served guard for `workspace` (the harness's own by
/// default).
fn next(
    h: &Harness,
    servers: Value,
    workspace: Option<&std::path::Path>,
) -> (config::Config, Arc<Guard>) {
    let mut text = policy();
    text["mcpServers"] = servers;
    let config = config::parse_str(
        &text.to_string(),
        config::Format::Json,
        &h.root().join("toolgate.json"),
        &|_| None,
        &config::Overrides::default(),
    )
    .unwrap();
    let own = h.root().join("ws");
    let guard = Guard::load(&config, workspace.unwrap_or(&own)).unwrap();
    (config, Arc::new(guard))
}

/// Waits (at most 10 s) until the merged catalog's tool names satisfy `done`.
async fn catalog_until(h: &Harness, done: impl Fn(&[String]) -> bool) -> Vec<String> {
    let mut names = Vec::new();
    for _ in 0..200 {
        names = h
            .gateway
            .aggregate()
            .tools
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect();
        if done(&names) {
            return names;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the catalog never got there: {names:?}");
}

fn has(names: &[String], name: &str) -> bool {
    names.iter().any(|n| n == name)
}

#[tokio::test]
async fn an_equal_entry_keeps_its_very_upstream() {
    let h = Harness::start(policy(), FixtureOptions::default()).await;
    let before = h.gateway.upstream("fx").unwrap();
    let (config, guard) = next(&h, json!({"fx": {"command": "fixture-in-process"}}), None);
    let applied = h.gateway.reload(&config, guard).await.unwrap();
    assert_eq!(applied, Applied::default());
    assert!(Arc::ptr_eq(&before, &h.gateway.upstream("fx").unwrap()));
    assert!(
        before.connection().is_ok(),
        "its connection is the one it had"
    );
}

#[tokio::test]
async fn a_changed_entry_runs_again_under_it_and_a_removed_one_leaves_the_catalog() {
    let h = Harness::start(policy(), FixtureOptions::default()).await;
    catalog_until(&h, |n| has(n, "fx__echo")).await;
    let before = h.gateway.upstream("fx").unwrap();
    let filtered = json!({"fx": {"command": "fixture-in-process", "disabled_tools": ["echo"]}});
    let (config, guard) = next(&h, filtered, None);
    let applied = h.gateway.reload(&config, guard).await.unwrap();
    assert_eq!(applied.restarted, vec!["fx".to_owned()]);
    let after = h.gateway.upstream("fx").unwrap();
    assert!(
        !Arc::ptr_eq(&before, &after),
        "a new upstream for the new entry"
    );
    assert_eq!(before.status().state, upstream::State::Stopped);
    catalog_until(&h, |n| has(n, "fx__add") && !has(n, "fx__echo")).await;

    let (config, guard) = next(&h, json!({}), None);
    let applied = h.gateway.reload(&config, guard).await.unwrap();
    assert_eq!(applied.removed, vec!["fx".to_owned()]);
    assert!(h.gateway.upstream("fx").is_none());
    assert_eq!(after.status().state, upstream::State::Stopped);
    catalog_until(&h, |n| !n.iter().any(|t| t.starts_with("fx__"))).await;
}

#[tokio::test]
async fn a_reload_for_another_workspace_is_refused_and_changes_nothing() {
    let h = Harness::start(policy(), FixtureOptions::default()).await;
    let before = h.gateway.upstream("fx").unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let (config, guard) = next(&h, json!({}), Some(elsewhere.path()));
    let refused = h.gateway.reload(&config, guard).await.unwrap_err();
    assert!(refused.to_string().contains("workspace"), "{refused}");
    assert!(Arc::ptr_eq(&before, &h.gateway.upstream("fx").unwrap()));
}
