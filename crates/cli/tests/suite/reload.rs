//! `toolgate serve` reloads its policy on SIGHUP and when the config file changes: open sessions see the new
//! policy on their next call, a file that does not load keeps the old policy (and stderr says why), and a call
//! held for approval survives the reload. Upstreams by reload: `reload_upstreams`; API keys: `reload_keys`.

use crate::support::{call, fixture, text, toolgate, Setup};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use test_support::StdioClient;

/// A config around the fixture upstream with `permissions`, and a served toolgate whose stderr is kept.
pub(crate) struct Served {
    pub(crate) setup: Setup,
    log: PathBuf,
    pub(crate) client: StdioClient,
}

pub(crate) fn config(dir: &std::path::Path, permissions: Value) -> Value {
    json!({
        "workspace": dir.join("ws"),
        "mcpServers": {"fx": fixture(&[])},
        "permissions": permissions,
        "approvals": {"wait_seconds": 30, "elicitation": false},
        "stateDir": dir.join("state")
    })
}

impl Served {
    async fn start(permissions: Value) -> Self {
        Self::start_with(|dir| config(dir, permissions)).await
    }

    /// Serves the config `build` makes for the temporary directory (which has a `ws` workspace in it).
    pub(crate) async fn start_with(build: impl FnOnce(&std::path::Path) -> Value) -> Self {
        let setup = Setup::with(|dir| {
            std::fs::create_dir_all(dir.join("ws")).unwrap();
            build(dir)
        });
        let log = setup.dir.path().join("stderr.log");
        let state = setup.state_dir();
        let env = [("TOOLGATE_STATE_DIR", state.to_str().unwrap())];
        let config = setup.config.to_str().unwrap().to_owned();
        let client = StdioClient::spawn_logging(
            &toolgate(),
            &["serve", "--config", &config],
            &env,
            HashMap::new(),
            std::fs::File::create(&log).unwrap().into(),
        )
        .unwrap();
        client.initialize("2025-11-25", json!({})).await.unwrap();
        Self { setup, log, client }
    }

    pub(crate) fn rewrite(&self, text: &str) {
        std::fs::write(&self.setup.config, text).unwrap();
    }

    fn rewrite_permissions(&self, permissions: Value) {
        let root = std::fs::canonicalize(self.setup.dir.path()).unwrap();
        self.rewrite(&serde_json::to_string_pretty(&config(&root, permissions)).unwrap());
    }

    /// Writes `build`'s config for the temporary directory to the config file.
    pub(crate) fn rewrite_with(&self, build: impl FnOnce(&std::path::Path) -> Value) {
        let root = std::fs::canonicalize(self.setup.dir.path()).unwrap();
        self.rewrite(&serde_json::to_string_pretty(&build(&root)).unwrap());
    }

    /// The store, and the id of the first call held for approval (waited for, at most 10 s).
    pub(crate) async fn held(&self) -> (store::Store, String) {
        let ns = store::Namespace::open(&self.setup.state_dir(), &self.setup.workspace()).unwrap();
        let store = store::Store::open(&ns).unwrap();
        for _ in 0..200 {
            let now = store::Timestamp::now();
            let pending = store
                .list_requests(Some(store::ApprovalStatus::Pending), now)
                .unwrap();
            if let Some(a) = pending.into_iter().next() {
                return (store, a.id);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("no call was held");
    }

    pub(crate) fn stderr(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Sends SIGHUP and waits until stderr reports the reload it caused, as `line` (returned in full).
    pub(crate) async fn hangup_and_wait(&self, line: &str) -> String {
        let before = self.stderr().matches(line).count();
        let pid = nix::unistd::Pid::from_raw(self.client.pid().unwrap() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP).unwrap();
        self.wait_for(line, before).await
    }

    /// Waits until stderr holds `line` more than `before` times; returns the last such line.
    pub(crate) async fn wait_for(&self, line: &str, before: usize) -> String {
        for _ in 0..200 {
            let err = self.stderr();
            if err.matches(line).count() > before {
                return err.lines().rfind(|l| l.contains(line)).unwrap().to_owned();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("no {line:?} on stderr: {}", self.stderr());
    }
}

pub(crate) fn refused(result: &Value) -> bool {
    result["isError"] == true && result["_meta"]["toolgate/contract"]["outcome"] == "REFUSED"
}

#[tokio::test]
async fn sighup_applies_a_new_policy_to_the_open_session() {
    let s = Served::start(json!({"default": "allow"})).await;
    let echo = call(&s.client, "fx__echo", json!({"text": "before"}))
        .await
        .unwrap();
    assert_eq!(text(&echo), "before");
    s.rewrite_permissions(json!({"default": "allow", "deny": ["mcp__fx__echo"]}));
    let line = s.hangup_and_wait("config reloaded (SIGHUP)").await;
    assert!(!line.contains("restart"), "only the policy changed: {line}");
    let after = call(&s.client, "fx__echo", json!({"text": "after"}))
        .await
        .unwrap();
    assert!(refused(&after), "the same session is now refused: {after}");
    let changed = s
        .client
        .wait_notification(Duration::from_secs(5), |n| {
            n["method"] == "notifications/tools/list_changed"
        })
        .await;
    assert!(
        changed.is_some(),
        "the session was told its tools may have changed"
    );
}

#[tokio::test]
async fn a_broken_file_keeps_the_old_policy_and_says_why() {
    let s = Served::start(json!({"default": "allow"})).await;
    s.rewrite("{ \"permissions\": {\"default\": \"deny\"");
    let line = s.hangup_and_wait("config not reloaded (SIGHUP)").await;
    assert!(line.contains("previous one stays in force"), "{line}");
    assert!(line.contains("toolgate.json"), "the file is named: {line}");
    let echo = call(&s.client, "fx__echo", json!({"text": "still"}))
        .await
        .unwrap();
    assert_eq!(text(&echo), "still", "the old policy is in force");
    // A policy that does not compile is refused the same way.
    s.rewrite_permissions(json!({"default": "sometimes"}));
    let line = s.hangup_and_wait("config not reloaded (SIGHUP)").await;
    assert!(line.contains("sometimes"), "the bad value is named: {line}");
    let echo = call(&s.client, "fx__echo", json!({"text": "again"}))
        .await
        .unwrap();
    assert_eq!(text(&echo), "again");
}

#[tokio::test]
async fn a_changed_file_is_reloaded_without_a_signal() {
    let s = Served::start(json!({"default": "allow"})).await;
    assert_eq!(
        text(
            &call(&s.client, "fx__echo", json!({"text": "x"}))
                .await
                .unwrap()
        ),
        "x"
    );
    s.rewrite_permissions(json!({"default": "allow", "deny": ["mcp__fx__echo"]}));
    s.wait_for("config reloaded (the config file changed)", 0)
        .await;
    let after = call(&s.client, "fx__echo", json!({"text": "y"}))
        .await
        .unwrap();
    assert!(refused(&after), "{after}");
}

#[tokio::test]
async fn a_call_held_for_approval_survives_a_reload() {
    let s = Arc::new(Served::start(json!({"default": "allow", "ask": ["mcp__fx__echo"]})).await);
    let held = {
        let s = Arc::clone(&s);
        tokio::spawn(async move { call(&s.client, "fx__echo", json!({"text": "held"})).await })
    };
    let (mut store, id) = s.held().await;
    s.rewrite_permissions(json!({"default": "allow", "deny": ["mcp__fx__echo"]}));
    s.hangup_and_wait("config reloaded (SIGHUP)").await;
    store
        .approve(&id, "test operator", store::Timestamp::now())
        .unwrap();
    let result = tokio::time::timeout(Duration::from_secs(10), held)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(
        text(&result),
        "held",
        "the held call finished under the policy it was held by"
    );
    let after = call(&s.client, "fx__echo", json!({"text": "new"}))
        .await
        .unwrap();
    assert!(
        refused(&after),
        "a new call is decided by the new policy: {after}"
    );
}
