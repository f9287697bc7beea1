//! `"mode"`, `sandbox.timeoutSeconds`, `sandbox.node` and a toolscript-mcp `"policy"` list, in JSON and TOML.

use super::*;
use crate::load::{parse_str, Format, Overrides};
use crate::model::{Config, Transport};
use pretty_assertions::assert_eq;
use serde_json::json;
use std::path::Path;

fn env(k: &str) -> Option<String> {
    match k {
        "NOTES_DIR" => Some("/home/u/notes".into()),
        "TRACKER_TOKEN" => Some("tok-123".into()),
        _ => None,
    }
}

fn parse(text: &str, format: Format, overrides: &Overrides) -> Result<Config> {
    parse_str(text, format, Path::new("toolgate.json"), &env, overrides)
}

fn json_config(text: &str) -> Result<Config> {
    parse(text, Format::Json, &Overrides::default())
}

fn from_file(key: &str) -> Provenance {
    Provenance::File {
        path: "toolgate.json".into(),
        key: key.to_owned(),
    }
}

#[test]
fn mode_is_read_from_json_and_toml_and_the_flag_wins() {
    let cfg = json_config(r#"{"mode": "code"}"#).unwrap();
    assert_eq!(
        cfg.mode,
        Setting {
            value: Mode::Code,
            from: from_file("mode")
        }
    );
    let cfg = parse("mode = \"direct\"", Format::Toml, &Overrides::default()).unwrap();
    assert_eq!(cfg.mode.value, Mode::Direct);
    assert_eq!(
        json_config("{}").unwrap().mode,
        Setting::default(Mode::Direct)
    );
    let flag = Overrides {
        mode: Some(Mode::Direct),
        ..Overrides::default()
    };
    let cfg = parse(r#"{"mode": "code"}"#, Format::Json, &flag).unwrap();
    assert_eq!(
        cfg.mode,
        Setting {
            value: Mode::Direct,
            from: Provenance::Flag("--mode")
        }
    );
}

#[test]
fn an_unknown_mode_is_refused() {
    for bad in [
        r#""Code""#,
        r#""javascript""#,
        "true",
        "null",
        r#"["code"]"#,
        r#""""#,
    ] {
        let err = json_config(&format!(r#"{{"mode": {bad}}}"#)).unwrap_err();
        assert!(
            err.to_string().starts_with("mode: ")
                && err.to_string().contains("\"code\", \"direct\""),
            "{bad}: {err}"
        );
    }
    let err = json_config(r#"{"Mode": "code"}"#).unwrap_err();
    assert!(err.to_string().contains("did you mean mode"), "{err}");
}

#[test]
fn timeout_seconds_is_bounded_and_honoured() {
    let cfg = json_config(r#"{"sandbox": {"timeoutSeconds": 30}}"#).unwrap();
    assert_eq!(
        cfg.code.timeout,
        Setting {
            value: Duration::from_secs(30),
            from: from_file("sandbox.timeoutSeconds")
        }
    );
    let cfg = parse(
        "[sandbox]\ntimeout_seconds = 86400",
        Format::Toml,
        &Overrides::default(),
    )
    .unwrap();
    assert_eq!(cfg.code.timeout.value, Duration::from_secs(86_400));
    assert_eq!(
        json_config("{}").unwrap().code.timeout.value,
        Duration::from_secs(120)
    );
    for bad in ["4", "0", "86401", "-1", "1.5", "\"60\""] {
        let err =
            json_config(&format!(r#"{{"sandbox": {{"timeoutSeconds": {bad}}}}}"#)).unwrap_err();
        assert!(err.to_string().starts_with("sandbox"), "{bad}: {err}");
    }
}

#[test]
fn sandbox_node_is_accepted_with_a_warning() {
    let cfg =
        json_config(r#"{"sandbox": {"node": "/usr/bin/node", "timeoutSeconds": 5}}"#).unwrap();
    assert!(
        cfg.warnings
            .iter()
            .any(|w| w.starts_with("sandbox.node does not apply")),
        "{:?}",
        cfg.warnings
    );
}

#[test]
fn a_toolscript_policy_list_becomes_toolgate_rules_over_the_servers() {
    let cfg = json_config(
        r#"{"policy": [{"match": "mcp__tracker__delete_*", "action": "deny"}, {"match": "*", "action": "allow"}],
            "mcpServers": {"tracker": {"command": "tracker-mcp"}}}"#,
    )
    .unwrap();
    assert_eq!(
        cfg.policy.toolscript,
        Some(
            json!([{"match": "mcp__tracker__delete_*", "action": "deny"}, {"match": "*", "action": "allow"}])
        )
    );
    assert_eq!(
        cfg.policy.policy,
        Some(json!({"default": "ask", "rules": [
            {"id": "policy[0]", "effect": "deny", "tools": ["tracker__delete_*"],
             "description": "toolscript-mcp policy[0]: mcp__tracker__delete_* → deny"},
            {"id": "policy[1]", "effect": "allow", "tools": ["tracker__*"],
             "description": "toolscript-mcp policy[1]: * → allow"},
        ]}))
    );
}

#[test]
fn a_malformed_toolscript_policy_is_refused_with_its_index() {
    let err = json_config(
        r#"{"policy": [{"match": "x", "action": "allow"}, {"match": "y", "action": "permit"}]}"#,
    )
    .unwrap_err();
    assert!(err.to_string().starts_with("policy[1].action: "), "{err}");
    let err = json_config(r#"{"policy": "deny everything"}"#).unwrap_err();
    assert!(err.to_string().starts_with("policy: "), "{err}");
}

#[test]
fn the_toolscript_readme_config_loads_unchanged() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/toolscript.json");
    let cfg = crate::load::load(&path, &env, &Overrides::default()).unwrap();
    let names: Vec<&str> = cfg.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["files", "tracker"]);
    assert!(
        matches!(&cfg.servers[1].transport, Transport::Http { url, .. } if url == "https://mcp.example.com/mcp")
    );
    let rules = cfg.policy.policy.as_ref().unwrap()["rules"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(rules, 3);
    assert_eq!(cfg.code.timeout.value, Duration::from_secs(120));
}

#[test]
fn a_toolscript_policy_list_is_read_from_toml_too() {
    let text = "mode = \"code\"\n\
                [mcp_servers.tracker]\ncommand = \"tracker-mcp\"\n\
                [[policy]]\nmatch = \"mcp__tracker__delete_*\"\naction = \"deny\"\n";
    let cfg = parse(text, Format::Toml, &Overrides::default()).unwrap();
    assert_eq!(cfg.mode.value, Mode::Code);
    assert_eq!(
        cfg.policy.policy.unwrap()["rules"][0]["tools"],
        json!(["tracker__delete_*"])
    );
}
