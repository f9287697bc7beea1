//! The `credentials` section: what is accepted, merged into a server's launch spec, and refused — with messages
//! that never hold a secret.

use crate::load::{parse_str, Format, Overrides};
use crate::{Config, CredentialTarget, Grant, SecretSource, Transport};
use serde_json::{json, Value};
use std::path::Path;

const SECRET: &str = "s3cr3t-token-value";

fn env(k: &str) -> Option<String> {
    match k {
        "GH_TOKEN" => Some(SECRET.into()),
        _ => None,
    }
}

fn parse_in(dir: &Path, credentials: Value) -> crate::Result<Config> {
    let config = json!({
        "mcpServers": {
            "github": {"type": "http", "url": "https://api.example.com/mcp"},
            "files": {"command": "/bin/files", "env": {"ROOT": "/srv"}},
            "off": {"command": "/bin/off", "disabled": true}
        },
        "profiles": {"dev": {"default": "allow"}, "ops": {"default": "allow"}},
        "credentials": credentials
    });
    parse_str(
        &config.to_string(),
        Format::Json,
        &dir.join("config.json"),
        &env,
        &Overrides::default(),
    )
}

fn parse(credentials: Value) -> crate::Result<Config> {
    parse_in(Path::new("/nonexistent"), credentials)
}

fn refusal(credentials: Value) -> String {
    let message = match parse(credentials.clone()) {
        Ok(_) => panic!("{credentials} was accepted"),
        Err(e) => e.to_string(),
    };
    assert!(!message.contains(SECRET), "the secret is in {message:?}");
    message
}

fn server<'a>(config: &'a Config, name: &str) -> &'a Transport {
    &config
        .servers
        .iter()
        .find(|s| s.name == name)
        .unwrap()
        .transport
}

#[test]
fn a_granted_header_stays_out_of_the_servers_own_headers() {
    let config = parse(json!({
        "gh-alice": {"server": "github", "header": "Authorization", "value": "Bearer ${GH_TOKEN}",
                     "grantedTo": {"identities": ["key:alice"], "profiles": ["dev"]}}
    }))
    .unwrap();
    let c = &config.credentials[0];
    assert_eq!(c.target, CredentialTarget::Header("authorization".into()));
    assert_eq!(c.secret.expose(), format!("Bearer {SECRET}"));
    assert_eq!(c.source, SecretSource::Value);
    assert_eq!(c.grant.rank("key:alice", None), Some(2));
    assert_eq!(c.grant.rank("key:bob", Some("dev")), Some(1));
    assert_eq!(c.grant.rank("key:bob", Some("ops")), None);
    assert_eq!(c.grant.rank("local", None), None);
    let Transport::Http { headers, .. } = server(&config, "github") else {
        panic!("not http")
    };
    assert!(headers.is_empty(), "a granted header went to every caller");
    assert!(
        !format!("{config:?}").contains(SECRET),
        "Debug shows the secret"
    );
}

#[test]
fn an_everyone_header_and_env_credentials_join_the_launch_spec() {
    let config = parse(json!({
        "gh": {"server": "github", "header": "X-Api-Key", "value": "${GH_TOKEN}"},
        "files-key": {"server": "files", "env": "FILES_KEY", "value": "plain",
                      "grantedTo": {"identities": ["local"]}}
    }))
    .unwrap();
    let Transport::Http { headers, .. } = server(&config, "github") else {
        panic!("not http")
    };
    assert_eq!(headers.get("x-api-key").map(String::as_str), Some(SECRET));
    let Transport::Stdio { env, .. } = server(&config, "files") else {
        panic!("not stdio")
    };
    assert_eq!(env.get("FILES_KEY").map(String::as_str), Some("plain"));
    assert_eq!(env.get("ROOT").map(String::as_str), Some("/srv"));
    assert_eq!(config.credentials[0].grant, Grant::Everyone);
}

#[test]
fn a_value_file_is_read_less_its_line_break_relative_to_the_config() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("token"), format!("{SECRET}\n")).unwrap();
    let config = parse_in(
        dir.path(),
        json!({"gh": {"server": "github", "header": "Authorization", "valueFile": "token"}}),
    )
    .unwrap();
    assert_eq!(config.credentials[0].secret.expose(), SECRET);
    assert_eq!(
        config.credentials[0].source,
        SecretSource::File(dir.path().join("token"))
    );
}

#[test]
fn a_missing_value_file_is_refused_by_its_path() {
    let message =
        refusal(json!({"gh": {"server": "github", "header": "A", "valueFile": "/nonexistent/t"}}));
    assert!(
        message.starts_with("credentials.gh.valueFile: /nonexistent/t:"),
        "{message}"
    );
}

#[test]
fn a_header_on_a_stdio_server_and_env_on_an_http_server_are_refused() {
    let m = refusal(json!({"x": {"server": "files", "header": "A", "value": "v"}}));
    assert!(m.contains("is a stdio server"), "{m}");
    let m = refusal(json!({"x": {"server": "github", "env": "A", "value": "v"}}));
    assert!(m.contains("is an HTTP server"), "{m}");
    let m = refusal(json!({"x": {"server": "github", "header": "A", "env": "B", "value": "v"}}));
    assert!(m.contains("exactly one of"), "{m}");
    let m =
        refusal(json!({"x": {"server": "github", "header": "A", "value": "v", "valueFile": "/f"}}));
    assert!(m.contains("exactly one of \"value\""), "{m}");
}

#[test]
fn a_credential_cannot_replace_the_protocols_headers() {
    for header in [
        "Mcp-Session-Id",
        "mcp-protocol-version",
        "Host",
        "traceparent",
        "Content-Type",
    ] {
        let m = refusal(json!({"x": {"server": "github", "header": header, "value": "v"}}));
        assert!(
            m.contains("set by toolgate or the protocol"),
            "{header}: {m}"
        );
    }
}

#[test]
fn a_header_split_attack_in_the_secret_is_refused_without_echoing_it() {
    let m = refusal(json!({"x": {"server": "github", "header": "Authorization",
                                  "value": format!("{SECRET}\r\nX-Admin: 1")}}));
    assert_eq!(
        m,
        "credentials.x: the secret is not a valid header value (visible ASCII, spaces and tabs only)"
    );
}

#[test]
fn unknown_servers_keys_and_names_are_refused() {
    let m = refusal(json!({"x": {"server": "nope", "header": "A", "value": "v"}}));
    assert_eq!(
        m,
        "credentials.x.server: \"nope\" is not a server of this config"
    );
    let m = refusal(json!({"x": {"server": "github", "header": "A", "value": "v", "grantTo": {}}}));
    assert!(m.starts_with("unknown key credentials.x.grantTo"), "{m}");
    let m = refusal(
        json!({"x": {"server": "github", "header": "A", "value": "v",
                                  "grantedTo": {"identity": ["key:a"]}}}),
    );
    assert!(
        m.starts_with("unknown key credentials.x.grantedTo.identity"),
        "{m}"
    );
    let m = refusal(json!({"bad name": {"server": "github", "header": "A", "value": "v"}}));
    assert!(m.contains("1 to 64 letters"), "{m}");
    let m = refusal(
        json!({"x": {"server": "github", "header": "A", "value": "v",
                                  "grantedTo": {"profiles": ["devv"]}}}),
    );
    assert_eq!(
        m,
        "credentials.x.grantedTo.profiles: \"devv\" is not a profile of this config"
    );
    let m =
        refusal(json!({"x": {"server": "github", "header": "A", "value": "v", "grantedTo": {}}}));
    assert!(m.contains("grants to no one"), "{m}");
}

#[test]
fn a_disabled_servers_credential_is_a_warning_not_a_secret_in_use() {
    let config = parse(json!({"x": {"server": "off", "env": "A", "value": "v"}})).unwrap();
    assert!(config.credentials.is_empty());
    assert!(config.warnings.iter().any(|w| w.contains("credentials.x")));
}

#[test]
fn overlapping_grants_are_refused_naming_both() {
    let m = refusal(json!({
        "a": {"server": "github", "header": "Authorization", "value": "v1", "grantedTo": {"identities": ["key:a"]}},
        "b": {"server": "github", "header": "authorization", "value": "v2", "grantedTo": {"identities": ["key:a", "key:b"]}}
    }));
    assert!(
        m.contains("credentials.a") && m.contains("credentials.b"),
        "{m}"
    );
    assert!(m.contains("identity \"key:a\""), "{m}");
    let m = refusal(json!({
        "a": {"server": "github", "header": "Authorization", "value": "v1"},
        "b": {"server": "github", "header": "Authorization", "value": "v2"}
    }));
    assert!(m.contains("both are granted to everyone"), "{m}");
    let m = refusal(json!({
        "a": {"server": "files", "env": "K", "value": "v1", "grantedTo": {"identities": ["key:a"]}},
        "b": {"server": "files", "env": "K", "value": "v2", "grantedTo": {"identities": ["key:b"]}}
    }));
    assert!(m.contains("one environment"), "{m}");
    // Different callers on one header: allowed.
    parse(json!({
        "a": {"server": "github", "header": "Authorization", "value": "v1", "grantedTo": {"identities": ["key:a"]}},
        "b": {"server": "github", "header": "Authorization", "value": "v2", "grantedTo": {"profiles": ["dev"]}},
        "c": {"server": "github", "header": "Authorization", "value": "v3"}
    }))
    .unwrap();
}

#[test]
fn a_name_the_server_entry_sets_itself_is_refused() {
    let m = refusal(json!({"x": {"server": "files", "env": "ROOT", "value": "v"}}));
    assert!(m.contains("already sets env \"ROOT\""), "{m}");
}

#[test]
fn a_header_credential_over_plain_http_off_this_machine_is_warned_about() {
    let config = parse(json!({"x": {"server": "github", "header": "A", "value": "v"}})).unwrap();
    assert!(
        !config.warnings.iter().any(|w| w.contains("unencrypted")),
        "{:?}",
        config.warnings
    );
    for (url, warned) in [
        ("http://api.example.com/mcp", true),
        ("http://10.0.0.5:8080/mcp", true),
        ("http://user@127.0.0.1:9/mcp", false),
        ("http://localhost:9/mcp", false),
        ("http://[::1]:9/mcp", false),
    ] {
        let config = parse_str(
            &json!({"mcpServers": {"h": {"type": "http", "url": url}},
                    "credentials": {"x": {"server": "h", "header": "A", "value": "v"}}})
            .to_string(),
            Format::Json,
            Path::new("/nonexistent/config.json"),
            &env,
            &Overrides::default(),
        )
        .unwrap();
        let got = config.warnings.iter().any(|w| w.contains("unencrypted"));
        assert_eq!(got, warned, "{url}: {:?}", config.warnings);
    }
}
