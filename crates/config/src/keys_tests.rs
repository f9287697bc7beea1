//! A key that does not mean what it says is refused: the attack's example, a ToolFence policy given as a config,
//! sections under other names, and generated slips (one edit, a swap, case, `_`/`-`) of every key toolgate reads
//! at every level, each refused or shown harmless.

use super::*;
use crate::load::{load, parse_str, Format, Overrides};
use crate::Config;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::Path;

fn env(k: &str) -> Option<String> {
    match k {
        "PATH" => Some("/usr/bin:/bin".into()),
        _ => None,
    }
}

fn parse_in(dir: &Path, value: &Value) -> crate::Result<Config> {
    parse_str(
        &value.to_string(),
        Format::Json,
        &dir.join("config.json"),
        &env,
        &Overrides::default(),
    )
}

fn parse(value: &Value) -> crate::Result<Config> {
    parse_in(Path::new("/nonexistent"), value)
}

fn refusal(value: &Value) -> String {
    match parse(value) {
        Ok(_) => panic!("{value} was accepted"),
        Err(e) => e.to_string(),
    }
}

/// Every letter a slip may add or change to.
const EVERY_LETTER: &str = "abcdefghijklmnopqrstuvwxyz_-0";
/// A few of them, for checks that load a whole config per slip: what is refused there does not depend on which
/// letter was added or changed (serde compares whole names; the judge is checked with every letter).
const SOME_LETTERS: &str = "ex_-";

/// Every spelling one slip away from `key`: a character dropped, added, changed (to one of `letters`) or two
/// neighbours swapped, the case changed, `_` and `-` swapped or dropped.
fn slips(key: &str, letters: &str) -> BTreeSet<String> {
    let chars: Vec<char> = key.chars().collect();
    let mut out = BTreeSet::new();
    for i in 0..chars.len() {
        let mut c = chars.clone();
        c.remove(i);
        out.insert(c.into_iter().collect());
        if i + 1 < chars.len() {
            let mut c = chars.clone();
            c.swap(i, i + 1);
            out.insert(c.into_iter().collect());
        }
        for a in letters.chars() {
            let mut c = chars.clone();
            c[i] = a;
            out.insert(c.into_iter().collect());
        }
        let mut c = chars.clone();
        c[i] = if c[i].is_ascii_uppercase() {
            c[i].to_ascii_lowercase()
        } else {
            c[i].to_ascii_uppercase()
        };
        out.insert(c.into_iter().collect());
    }
    for i in 0..=chars.len() {
        for a in letters.chars() {
            let mut c = chars.clone();
            c.insert(i, a);
            out.insert(c.into_iter().collect());
        }
    }
    out.insert(key.to_ascii_lowercase());
    out.insert(key.to_ascii_uppercase());
    out.insert(key.replace('_', "-"));
    out.insert(key.replace('_', ""));
    out.insert(snake(key));
    out.remove(key);
    out.remove("");
    out
}

fn snake(key: &str) -> String {
    key.chars()
        .flat_map(|c| {
            if c.is_ascii_uppercase() {
                vec!['_', c.to_ascii_lowercase()]
            } else {
                vec![c]
            }
        })
        .collect()
}

/// A valid value of each top-level key, one that changes what toolgate does.
fn top_level_sample(key: &str) -> Value {
    match key {
        "http" => json!({"listen": "127.0.0.1:8080"}),
        "pins" => json!({"onChange": "ask"}),
        "sandbox" => json!({"require": ["no_network"]}),
        "stateDir" | "state_dir" => json!("/var/lib/toolgate"),
        "auditWitness" | "audit_witness" => json!("/var/log/toolgate/witness"),
        "approvals" => json!({"elicitation": false}),
        "permissions" => json!({"deny": ["Read(**/.env)"]}),
        "policy" => json!({"default": "deny"}),
        "profiles" => json!({"strict": {"default": "deny"}}),
        "profile" => json!("strict"),
        "mcpServers" | "mcp_servers" | "servers" => json!({"files": {"command": "x"}}),
        "inputs" => json!([]),
        "separator" => json!("-"),
        "prefixTools" | "prefix_tools" => json!(false),
        "limits" => json!({"pageSize": 10}),
        "workspace" => json!("/srv/ws"),
        "hooks" => json!({"pre": [{"command": "/bin/check"}]}),
        "mode" => json!("code"),
        "telemetry" => json!({"otlp": {"endpoint": "http://127.0.0.1:4318"}}),
        "rateLimits" | "rate_limits" => json!({"perTool": {"rate": 1, "per": "1s"}}),
        "credentials" => json!({}),
        other => panic!("no sample for top-level key {other}: add one"),
    }
}

#[test]
fn misspelt_permissions_key_does_not_drop_the_deny() {
    let message = refusal(&json!({"permisions": {"deny": ["Read(**/.env)"]}}));
    assert_eq!(
        message,
        "unknown key permisions (did you mean permissions?)"
    );
}

#[test]
fn every_slip_of_a_top_level_key_is_refused() {
    let mut accepted = Vec::new();
    for key in TOP_LEVEL.read {
        let value = top_level_sample(key);
        assert!(
            parse(&json!({*key: value})).is_ok(),
            "the sample for {key} must load"
        );
        for slip in slips(key, EVERY_LETTER) {
            if TOP_LEVEL.read.contains(&slip.as_str()) {
                continue;
            }
            if parse(&json!({&slip: value})).is_ok() {
                accepted.push(format!("{slip} (for {key})"));
            }
        }
    }
    assert!(accepted.is_empty(), "accepted slips: {accepted:?}");
}

/// A server entry holding `key` with a value that matters, beside what makes it valid.
fn server_sample(key: &str) -> Value {
    let value = match key {
        "command" => json!("x"),
        "args" => json!(["--read-only"]),
        "env" | "headers" | "http_headers" => json!({"A": "b"}),
        "env_vars" => json!(["PATH"]),
        "envFile" | "env_file" => json!("server.env"),
        "cwd" => json!("/srv"),
        "type" | "transport" => json!("stdio"),
        "url" => json!("https://mcp.example.com/mcp"),
        "env_http_headers" => json!({"X-Key": "PATH"}),
        "bearer_token_env_var" => json!("PATH"),
        "disabled" => json!(true),
        "enabled" => json!(false),
        "enabled_tools" | "enabledTools" | "disabled_tools" | "disabledTools" => json!(["rm"]),
        "startup_timeout_sec" | "tool_timeout_sec" => json!(5),
        "startup_timeout_ms" => json!(5000),
        "protocol" => json!("modern"),
        "kind" => json!("filesystem"),
        "requestTimeoutSeconds" | "request_timeout_seconds" => json!(5),
        "sandbox" => json!({"network": false}),
        other => panic!("no sample for server key {other}: add one"),
    };
    let http = matches!(
        key,
        "url" | "headers" | "http_headers" | "env_http_headers" | "bearer_token_env_var"
    );
    let mut entry = if http {
        json!({"url": "https://mcp.example.com/mcp"})
    } else {
        json!({"command": "x"})
    };
    entry[key] = value;
    entry
}

#[test]
fn every_slip_of_a_server_key_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("server.env"), "A=b\n").unwrap();
    let mut accepted = BTreeSet::new();
    for key in READ {
        let entry = server_sample(key);
        let config = json!({"mcpServers": {"a": entry}});
        assert!(
            parse_in(dir.path(), &config).is_ok(),
            "the sample for {key} must load: {:?}",
            parse_in(dir.path(), &config).err()
        );
        for slip in slips(key, EVERY_LETTER) {
            if READ.contains(&slip.as_str()) {
                continue;
            }
            assert!(
                matches!(SERVER.judge(&slip), Verdict::Misspelt(_)),
                "{slip} (for {key}) is not taken for a slip"
            );
        }
        // A server entry is validated whole (its command resolved, its kind recognised), so one letter stands
        // for all here; the judge above saw every letter.
        for slip in slips(key, "x") {
            if READ.contains(&slip.as_str()) {
                continue;
            }
            let mut entry = entry.clone();
            let value = entry.as_object_mut().unwrap().remove(*key).unwrap();
            if *key == "command" || *key == "url" {
                // Without its transport the entry is refused for that alone; keep one, so only the slip is judged.
                entry[if *key == "command" { "url" } else { "command" }] =
                    json!(if *key == "command" {
                        "https://mcp.example.com/mcp"
                    } else {
                        "x"
                    });
            }
            entry[&slip] = value;
            match parse_in(dir.path(), &json!({"mcpServers": {"a": entry}})) {
                Err(e) => assert!(e.to_string().contains(&slip), "{slip}: {e}"),
                Ok(_) => {
                    accepted.insert((key.to_string(), slip));
                }
            }
        }
    }
    // None lands on another client's documented key; one that did would have to be shown harmless here.
    assert!(accepted.is_empty(), "accepted slips: {accepted:?}");
}

#[test]
fn every_slip_inside_a_toolgate_section_is_refused_with_the_fix() {
    for (section, keys) in SECTIONS {
        for key in *keys {
            for slip in slips(key, SOME_LETTERS) {
                if keys.contains(&slip.as_str()) {
                    continue;
                }
                let value = json!({&slip: null});
                let config = if matches!(*section, "permissions" | "policy") {
                    // Kept as written here and compiled by the policy stage, which refuses unknown keys.
                    let sources = policy::PolicySources {
                        permissions: (*section == "permissions").then_some(&value),
                        policy: (*section == "policy").then_some(&value),
                        profiles: None,
                    };
                    let ctx = policy::Context {
                        workspace: "/ws".into(),
                        home: None,
                    };
                    let e = policy::Policy::load(sources, &ctx).unwrap_err();
                    assert!(e.to_string().contains(&slip), "{section}.{slip}: {e}");
                    continue;
                } else {
                    json!({*section: value})
                };
                let message = refusal(&config);
                assert!(
                    message.starts_with(&format!("unknown key {section}.{slip}")),
                    "{section}.{slip}: {message}"
                );
                if near_miss(key, &slip) && !keys.iter().any(|k| k != key && near_miss(k, &slip)) {
                    assert!(
                        message.ends_with(&format!("(did you mean {key}?)")),
                        "{section}.{slip}: {message}"
                    );
                }
            }
        }
    }
}

#[test]
fn section_key_lists_match_their_serde_shapes() {
    // serde names the fields a shape expects when it refuses one it does not; aliases are not named there, so
    // each listed key must be an expected field or accepted as one.
    for (section, keys) in SECTIONS {
        if matches!(*section, "permissions" | "policy") {
            continue;
        }
        let message = refusal(&json!({*section: {"\u{1}": null}}));
        let expected: BTreeSet<&str> = message
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|k| *k != "\u{1}")
            .collect();
        for field in &expected {
            assert!(
                keys.contains(field),
                "{section}: {field} is missing from SECTIONS"
            );
        }
        for key in *keys {
            let value = json!({*section: {*key: "\u{1}"}});
            let message = parse(&value)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(
                !message.starts_with("unknown key"),
                "{section}.{key} is not a key of the section: {message}"
            );
        }
    }
}

#[test]
fn a_section_under_a_name_no_slip_explains_is_refused_by_its_keys() {
    for (key, value, section) in [
        (
            "security",
            json!({"deny": ["Read(**/.env)"]}),
            "permissions",
        ),
        (
            "rules_v2",
            json!({"default": "deny", "rules": []}),
            "policy",
        ),
        ("contain", json!({"require": ["no_network"]}), "sandbox"),
        (
            "checks",
            json!({"pre": [{"command": "/bin/check"}]}),
            "hooks",
        ),
        ("ask_human", json!({"elicitation": false}), "approvals"),
    ] {
        let message = refusal(&json!({key: value}));
        assert!(
            message.contains(&format!("did you mean {section}?")),
            "{key}: {message}"
        );
    }
}

#[test]
fn toolfence_policy_given_as_the_config_is_read_as_toolfence_reads_it() {
    let policy = json!({
        "version": 1,
        "default": "ask",
        "rules": [{"id": "deny-dotenv", "effect": "deny", "operations": ["fs.read"], "resources": ["**/.env"]}]
    });
    let config = parse(&policy).unwrap();
    let structured = config.policy.policy.unwrap();
    assert_eq!(structured["precedence"], "first_match");
    assert_eq!(structured["rules"][0]["paths"], json!(["**/.env"]));
    assert!(config.servers.is_empty());
    // Beside a toolgate config's own keys, a policy's keys are a slip, refused with the fix.
    let message = refusal(&json!({"version": 1, "rules": [], "mcpServers": {}}));
    assert!(
        message.contains("A ToolFence policy") && message.contains("\"policy\" section"),
        "{message}"
    );
    for key in ["allow", "deny", "ask"] {
        let message = refusal(&json!({key: ["Read(**/.env)"]}));
        assert!(
            message.contains(&format!("did you mean permissions.{key}?")),
            "{message}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let yaml = "version: 1\ndefault: ask\n\nrules:\n  - id: deny-dotenv\n    effect: deny\n";
    for name in ["toolfence.yaml", "policy.yml"] {
        let path = dir.path().join(name);
        std::fs::write(&path, yaml).unwrap();
        let config = load(&path, &env, &Overrides::default()).unwrap();
        assert_eq!(config.policy.policy.unwrap()["default"], "ask", "{name}");
    }
    // YAML under a JSON name is neither JSON nor TOML: refused, saying what it looks like.
    let path = dir.path().join("policy.json");
    std::fs::write(&path, yaml).unwrap();
    let message = load(&path, &env, &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(message.contains("reads as YAML"), "{message}");
    // A ToolFence file ToolFence itself would refuse is refused, naming the key.
    let path = dir.path().join("bad.yaml");
    std::fs::write(
        &path,
        "version: 1\ndefault: ask\nrules:\n  - id: x\n    effect: allow\n    tools: [a]\n",
    )
    .unwrap();
    let message = load(&path, &env, &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(message.contains("unknown key `tools`"), "{message}");
}

#[test]
fn codex_model_is_codex_setting_unless_its_value_is_a_mode() {
    let config = parse(&json!({"model": "gpt-5-codex"})).unwrap();
    assert_eq!(
        config.warnings,
        ["ignoring top-level key \"model\": Codex's model: not used by toolgate"]
    );
    let message = refusal(&json!({"model": "code"}));
    assert!(message.contains("did you mean mode?"), "{message}");
}

#[test]
fn slips_of_one_edit_and_swaps_are_near_misses() {
    assert!(near_miss("env", "evn"));
    assert!(near_miss("url", "ulr"));
    assert!(near_miss("permissions", "permisions"));
    assert!(near_miss("permissions", "premissions"));
    assert!(!near_miss("env", "foo"));
    assert!(!near_miss("mode", "theme"));
}

#[test]
fn no_documented_client_key_is_taken_for_a_slip() {
    for level in [&TOP_LEVEL, &SERVER] {
        for (key, _) in level.foreign {
            assert!(matches!(level.judge(key), Verdict::Foreign { .. }), "{key}");
        }
    }
}
