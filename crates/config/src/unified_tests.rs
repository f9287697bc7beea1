//! MCP Unified's `gateway.json` as its sheet shows it, and what toolgate refuses in one.

use super::*;
use crate::load::{parse_str, Format, Overrides};
use crate::Config;
use serde_json::json;

fn env(_: &str) -> Option<String> {
    None
}

fn parse_at(dir: &Path, value: &Value) -> crate::Result<Config> {
    parse_str(
        &value.to_string(),
        Format::Json,
        &dir.join("gateway.json"),
        &env,
        &Overrides::default(),
    )
}

#[test]
fn the_sheets_minimal_gateway_json_maps_onto_state_and_profile() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = parse_at(
        dir.path(),
        &json!({
          "store": {"kind": "sqlite", "sqlite_path": "./mcp-gateway.db"},
          "default_preset_id": "project-researcher"
        }),
    )
    .unwrap();
    let db = dir.path().join("./mcp-gateway.db");
    assert_eq!(cfg.state_dir.unwrap().value, state_root_for(&db));
    assert_eq!(cfg.profile_store, Some(profile_store_for(&db)));
    assert_eq!(cfg.profile.unwrap().value, "project-researcher");
    let profiles = cfg.policy.profiles.unwrap();
    assert!(profiles.get("project-researcher").is_some());
    // MCP Unified's default: reporting off unless the file turns it on.
    assert!(!cfg.reporting.enabled.value);
}

#[test]
fn tool_use_reporting_is_honoured_with_its_retention() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = parse_at(
        dir.path(),
        &json!({
          "store": {"kind": "sqlite", "sqlite_path": "./mcp-gateway.db"},
          "default_preset_id": "project-researcher",
          "tool_use_reporting": {
            "enabled": true,
            "store": {"kind": "sqlite", "sqlite_path": "./mcp-tool-events.db"},
            "retention_max_age_days": 30,
            "retention_max_events": 100000
          }
        }),
    )
    .unwrap();
    assert!(cfg.reporting.enabled.value);
    assert_eq!(cfg.reporting.max_age_days, Some(30));
    assert_eq!(cfg.reporting.max_events, Some(100_000));
    assert!(cfg
        .warnings
        .iter()
        .any(|w| w.starts_with("tool_use_reporting.store")));
    let short = parse_at(
        dir.path(),
        &json!({"tool_use_reporting": {"enabled": true, "retention_max_age_days": 2}}),
    )
    .unwrap();
    assert_eq!(short.reporting.max_age_days, Some(2));
    assert_eq!(short.reporting.max_events, Some(100_000));
}

#[test]
fn a_store_kind_toolgate_cannot_keep_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let e = parse_at(dir.path(), &json!({"store": {"kind": "memory"}})).unwrap_err();
    assert!(e.to_string().contains("\"memory\" is not supported"), "{e}");
    let e = parse_at(dir.path(), &json!({"store": {"kind": "sqlite"}})).unwrap_err();
    assert!(e.to_string().contains("needs sqlite_path"), "{e}");
}

#[test]
fn an_unsupported_gateway_json_key_is_refused_not_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let e = parse_at(
        dir.path(),
        &json!({"default_preset_id": "read-only", "external_servers": []}),
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("external_servers") && e.to_string().contains("not supported"),
        "{e}"
    );
    let e = parse_at(
        dir.path(),
        &json!({"store": {"kind": "sqlite", "sqlite_path": "a.db"}, "default_preset": "x"}),
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("did you mean default_preset_id"),
        "{e}"
    );
    let e = parse_at(
        dir.path(),
        &json!({"tool_use_reporting": {"enabled": true, "retention_max_event": 5}}),
    )
    .unwrap_err();
    assert!(e.to_string().contains("retention_max_events"), "{e}");
}

#[test]
fn store_and_state_dir_together_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let e = parse_at(
        dir.path(),
        &json!({"stateDir": "/var/lib/tg", "store": {"kind": "sqlite", "sqlite_path": "a.db"}}),
    )
    .unwrap_err();
    assert!(e.to_string().contains("not both"), "{e}");
}

#[test]
fn stored_profiles_join_the_presets_and_the_files_own_win() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("g.db");
    std::fs::write(
        profile_store_for(&db),
        r#"{"mine": {"default": "deny"}, "read-only": {"default": "ask"}}"#,
    )
    .unwrap();
    let cfg = parse_at(
        dir.path(),
        &json!({"store": {"kind": "sqlite", "sqlite_path": "g.db"}, "default_preset_id": "mine",
                "profiles": {"mine": {"default": "allow"}}}),
    )
    .unwrap();
    let p = cfg.policy.profiles.unwrap();
    assert_eq!(p["mine"]["default"], "allow");
    assert_eq!(p["read-only"]["default"], "ask");
    assert!(p.get("project-researcher").is_some());
}

#[test]
fn every_bundled_preset_compiles_as_a_toolgate_profile() {
    let presets = Value::Object(unified_presets());
    assert!(presets.get("project-researcher").is_some());
    let ctx = policy::Context {
        workspace: "/ws".to_owned(),
        home: None,
    };
    let loaded = policy::Policy::load(
        policy::PolicySources {
            policy: None,
            permissions: None,
            profiles: Some(&presets),
        },
        &ctx,
    )
    .unwrap();
    for name in presets.as_object().unwrap().keys() {
        loaded.with_profile(name).unwrap();
    }
}

#[test]
fn a_toolgate_config_without_gateway_json_keys_keeps_toolgates_reporting() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = parse_at(dir.path(), &json!({"mcpServers": {}})).unwrap();
    assert_eq!(cfg.reporting, Reporting::default());
    assert!(cfg.policy.profiles.is_none());
}

fn parse_with_env(
    dir: &Path,
    value: &Value,
    env: &dyn Fn(&str) -> Option<String>,
) -> crate::Result<Config> {
    parse_str(
        &value.to_string(),
        Format::Json,
        &dir.join("gateway.json"),
        env,
        &Overrides::default(),
    )
}

#[test]
fn a_postgres_store_takes_its_url_with_the_password_from_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let env = |k: &str| (k == "PGPASSWORD_TG").then(|| "s3cret".to_owned());
    let cfg = parse_with_env(
        dir.path(),
        &json!({"store": {"kind": "postgres", "url": "postgres://tg:${PGPASSWORD_TG}@db:5432/toolgate"},
                "stateDir": "/var/lib/toolgate"}),
        &env,
    )
    .unwrap();
    let crate::Store::Postgres(url, pool) = &cfg.store else {
        panic!("{:?}", cfg.store)
    };
    assert_eq!(url.value.expose(), "postgres://tg:s3cret@db:5432/toolgate");
    assert_eq!(url.value.redacted(), "postgres://tg:***@db:5432/toolgate");
    assert_eq!(*pool, crate::model::StorePool::default());
    assert!(!format!("{cfg:?}").contains("s3cret"));
    // Each replica keeps its keys and audit log in its own state root.
    assert_eq!(
        cfg.state_dir.map(|s| s.value),
        Some(PathBuf::from("/var/lib/toolgate"))
    );
    assert_eq!(cfg.profile_store, None);
    assert!(
        cfg.reporting.enabled.value,
        "a toolgate config on a shared store keeps reporting on"
    );
    // In a gateway.json (MCP Unified's keys beside it), MCP Unified's default stands: off unless turned on.
    let unified = parse_with_env(
        dir.path(),
        &json!({"store": {"kind": "postgres", "url": "postgres://tg:x@db:5432/toolgate"},
                "default_preset_id": "project-researcher", "stateDir": "/var/lib/toolgate"}),
        &env,
    )
    .unwrap();
    assert!(!unified.reporting.enabled.value);
}

#[test]
fn a_postgres_store_refuses_typos_and_the_other_kinds_keys() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (json!({"kind": "postgres", "uri": "postgres://db/x"}), "uri"),
        (json!({"kind": "postgres"}), "needs url"),
        (
            json!({"kind": "postgres", "url": "postgres://db/x", "sqlite_path": "a.db"}),
            "sqlite_path is for",
        ),
        (
            json!({"kind": "postgres", "url": "mysql://db/x"}),
            "postgres://",
        ),
        (
            json!({"kind": "sqlite", "sqlite_path": "a.db", "url": "postgres://db/x"}),
            "url is for",
        ),
        (
            json!({"kind": "postgres", "url": "postgres://${MISSING_TG}@db/x"}),
            "MISSING_TG",
        ),
    ];
    for (store, says) in cases {
        let e = parse_at(dir.path(), &json!({ "store": store })).unwrap_err();
        assert!(e.to_string().contains(says), "{store}: {e}");
    }
}

#[test]
fn a_postgres_stores_pool_and_deadlines_are_configured_within_their_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let store = |extra: Value| {
        let mut store = json!({"kind": "postgres", "url": "postgres://tg:x@db:5432/toolgate"});
        store
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        parse_at(
            dir.path(),
            &json!({"store": store, "stateDir": "/var/lib/toolgate"}),
        )
    };
    let cfg = store(
        json!({"pool_size": 3, "connect_timeout_seconds": 2, "statement_timeout_seconds": 40}),
    )
    .unwrap();
    let crate::Store::Postgres(_, pool) = cfg.store else {
        panic!("{:?}", cfg.store)
    };
    assert_eq!(
        pool,
        crate::model::StorePool {
            size: 3,
            connect_timeout: std::time::Duration::from_secs(2),
            statement_timeout: std::time::Duration::from_secs(40),
        }
    );
    for (bad, key) in [
        (json!({"pool_size": 0}), "store.pool_size"),
        (json!({"pool_size": 100000}), "store.pool_size"),
        (
            json!({"connect_timeout_seconds": 0}),
            "store.connect_timeout_seconds",
        ),
        (
            json!({"statement_timeout_seconds": 86400}),
            "store.statement_timeout_seconds",
        ),
        (json!({"pool_size": "8"}), "store"),
        (json!({"poolSize": 8}), "poolSize"),
    ] {
        let e = store(bad.clone()).unwrap_err().to_string();
        assert!(e.contains(key), "{bad}: {e}");
    }
    // A SQLite store has no pool to size.
    let e = parse_at(
        dir.path(),
        &json!({"store": {"kind": "sqlite", "sqlite_path": "a.db", "pool_size": 4}}),
    )
    .unwrap_err();
    assert!(e.to_string().contains("store.pool_size"), "{e}");
}
