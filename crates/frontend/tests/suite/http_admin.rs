//! The admin surface under the attacks on it: reaching it where it is not configured, with an MCP key instead of
//! the admin key, and asking it to explain a call so that it hands back the call's secrets; and readiness
//! (`GET /mcp/status`), which callers and the admin read and strangers do not.

use super::http_auth::{digest, keys_http, serve, serve_with, two_profiles, ADMIN_KEY, KEY_A};
use serde_json::{json, Value};
use std::sync::Arc;

fn with_admin() -> Value {
    let mut http = keys_http();
    http["admin"] = json!({"keySha256": digest(ADMIN_KEY)});
    http
}

const ROUTES: [(&str, &str); 2] = [
    ("POST", "/mcp/policy/explain"),
    ("POST", "/mcp/profiles/a/tool-preview"),
];

#[tokio::test]
async fn admin_routes_are_absent_without_admin_key() {
    let s = serve(keys_http(), two_profiles()).await;
    let body = json!({"profile_id": "a", "tool_name": "fx__echo", "arguments": {}});
    for (method, path) in ROUTES {
        for headers in [
            vec![("X-MCP-Gateway-Admin-Key", ADMIN_KEY)],
            vec![("Authorization", "Bearer key-for-profile-a")],
            vec![],
        ] {
            let answer = s.send(method, path, &headers, Some(&body)).await;
            assert_eq!(answer.status, 404, "{method} {path}: {}", answer.body);
        }
    }
}

#[tokio::test]
async fn mcp_key_is_not_an_admin_key() {
    let s = serve(with_admin(), two_profiles()).await;
    let bearer = format!("Bearer {KEY_A}");
    let admin_bearer = format!("Bearer {ADMIN_KEY}");
    for (method, path) in ROUTES {
        for headers in [
            vec![("X-MCP-Gateway-Admin-Key", KEY_A)],
            vec![("Authorization", bearer.as_str())],
            vec![("X-MCP-Gateway-Admin-Key", "")],
            vec![
                ("X-MCP-Gateway-Admin-Key", ADMIN_KEY),
                ("X-MCP-Gateway-Admin-Key", ADMIN_KEY),
            ],
            vec![],
        ] {
            let answer = s.send(method, path, &headers, Some(&json!({}))).await;
            assert_eq!(
                answer.status, 401,
                "{method} {path} {headers:?}: {}",
                answer.body
            );
        }
        let ok = s
            .send(
                method,
                path,
                &[("Authorization", admin_bearer.as_str())],
                Some(&json!({"tool_name": "fx__add"})),
            )
            .await;
        assert_eq!(ok.status, 200, "{method} {path}: {}", ok.body);
    }
    // And the admin key is no MCP key.
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    assert_eq!(s.rpc(Some(ADMIN_KEY), None, &ping).await.status, 401);
}

#[tokio::test]
async fn explain_never_echoes_arguments() {
    let s = serve(with_admin(), two_profiles()).await;
    let secret = "sk-live-0123456789abcdefSECRET";
    let body = json!({"profile_id": "a", "tool_name": "fx__echo", "arguments": {"text": secret}});
    let answer = s
        .send(
            "POST",
            "/mcp/policy/explain",
            &[("X-MCP-Gateway-Admin-Key", ADMIN_KEY)],
            Some(&body),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert!(!answer.body.contains("SECRET"), "{}", answer.body);
    let explained: Value = serde_json::from_str(&answer.body).unwrap();
    assert_eq!(explained["tool_name"], "fx__echo");
    assert!(
        explained["effect"].is_string() && explained["reason"].is_string(),
        "{explained}"
    );
    assert_eq!(
        explained["hidden"], true,
        "profile a blocks echo: {explained}"
    );
    assert!(explained["arguments"]["sha256"].is_string());
    let audit = s.audit();
    assert!(audit.contains("admin.policy_explain"), "{audit}");
    assert!(!audit.contains("SECRET"), "{audit}");
    let unknown = json!({"profile_id": "nobody", "tool_name": "fx__echo"});
    let answer = s
        .send(
            "POST",
            "/mcp/policy/explain",
            &[("X-MCP-Gateway-Admin-Key", ADMIN_KEY)],
            Some(&unknown),
        )
        .await;
    assert_eq!(answer.status, 404);
}

#[tokio::test]
async fn tool_preview_is_per_profile() {
    let s = serve(with_admin(), two_profiles()).await;
    let key = [("X-MCP-Gateway-Admin-Key", ADMIN_KEY)];
    let visible = |body: &str| -> Vec<String> {
        let v: Value = serde_json::from_str(body).unwrap();
        v["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["visibility"] == "visible")
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect()
    };
    let a = s
        .send("POST", "/mcp/profiles/a/tool-preview", &key, None)
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    let in_a = visible(&a.body);
    assert!(
        in_a.contains(&"fx__add".into()) && !in_a.contains(&"fx__echo".into()),
        "{in_a:?}"
    );
    assert!(
        !a.body.contains("\"blocked\""),
        "blocked tools only when asked: {}",
        a.body
    );
    let b = s
        .send(
            "POST",
            "/mcp/profiles/b/tool-preview",
            &key,
            Some(&json!({"include_denied": true})),
        )
        .await;
    let doc: Value = serde_json::from_str(&b.body).unwrap();
    let add = doc["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "fx__add")
        .cloned();
    assert_eq!(
        add.map(|t| t["visibility"].clone()),
        Some(json!("blocked")),
        "{doc}"
    );
    let missing = s
        .send("POST", "/mcp/profiles/nobody/tool-preview", &key, None)
        .await;
    assert_eq!(missing.status, 404);
    // A kind narrows by category; a session is said back with what it changes (nothing).
    let generic = s
        .send(
            "POST",
            "/mcp/profiles/a/tool-preview",
            &key,
            Some(&json!({"category": "generic", "session_id": "s-1"})),
        )
        .await;
    let doc: Value = serde_json::from_str(&generic.body).unwrap();
    let rows = doc["tools"].as_array().unwrap();
    assert!(
        !rows.is_empty() && rows.iter().all(|t| t["category"] == "generic"),
        "{doc}"
    );
    assert_eq!(doc["session"]["id"], "s-1");
    let filesystem = s
        .send(
            "POST",
            "/mcp/profiles/a/tool-preview",
            &key,
            Some(&json!({"category": "filesystem"})),
        )
        .await;
    let doc: Value = serde_json::from_str(&filesystem.body).unwrap();
    assert_eq!(
        doc["tools"],
        json!([]),
        "the fixture has no filesystem tools"
    );
    for bad in [
        json!({"category": "everything"}),
        json!({"session_id": "a\nb"}),
        json!({"session_id": "x".repeat(129)}),
    ] {
        let answer = s
            .send("POST", "/mcp/profiles/a/tool-preview", &key, Some(&bad))
            .await;
        assert_eq!(answer.status, 400, "{bad}: {}", answer.body);
    }
}

#[tokio::test]
async fn admin_routes_keep_the_origin_check() {
    let s = serve(with_admin(), two_profiles()).await;
    let headers = [
        ("X-MCP-Gateway-Admin-Key", ADMIN_KEY),
        ("Origin", "http://evil.com"),
    ];
    let answer = s.send("GET", "/mcp/status", &headers, None).await;
    assert_eq!(answer.status, 403, "{}", answer.body);
}

/// `GET /mcp/status` with `headers`: the status code and the document.
async fn status(s: &super::http_auth::Served, headers: &[(&str, &str)]) -> (u16, Value) {
    let answer = s.send("GET", "/mcp/status", headers, None).await;
    let doc = serde_json::from_str(&answer.body).unwrap_or(Value::Null);
    (answer.status, doc)
}

#[tokio::test]
async fn status_is_for_callers_and_the_admin_never_for_strangers() {
    let s = serve(keys_http(), two_profiles()).await;
    let (code, _) = status(&s, &[]).await;
    assert_eq!(
        code, 401,
        "where callers authenticate, a stranger learns nothing"
    );
    let bearer = format!("Bearer {KEY_A}");
    let (code, doc) = status(&s, &[("Authorization", bearer.as_str())]).await;
    assert_eq!(code, 200, "{doc}");
    assert_eq!(doc["status"], "ready");
    assert_eq!(doc["caller"], "client");
    assert_eq!(doc["runtime"]["name"], "toolgate");
    assert!(doc["runtime"]["version"].is_string(), "{doc}");
    assert_eq!(doc["servers"], json!({"total": 1, "up": 1, "down": 0}));
    assert_eq!(doc["admin_auth"], json!({"configured": false}));
    assert_eq!(doc["auth"], json!({"configured": true}));
    assert_eq!(
        doc["state_store"],
        json!({"kind": "sqlite", "persistent": true})
    );
    assert_eq!(
        doc["profile_store"],
        json!({"kind": "config", "persistent": true})
    );
    assert_eq!(doc["default_profile"]["state"], "loaded");
    assert!(
        doc["next_actions"][0].as_str().unwrap().contains("http"),
        "how to get the admin API: {doc}"
    );
    // An admin key where none is configured, or a wrong one, is refused, never read as a plain caller.
    for wrong in [ADMIN_KEY, KEY_A] {
        let (code, _) = status(
            &s,
            &[
                ("Authorization", bearer.as_str()),
                ("X-MCP-Gateway-Admin-Key", wrong),
            ],
        )
        .await;
        assert_eq!(code, 401);
    }
    let (code, _) = status(
        &s,
        &[
            ("Authorization", bearer.as_str()),
            ("Origin", "http://evil.com"),
        ],
    )
    .await;
    assert_eq!(code, 403, "the Host/Origin gate comes first");
}

#[tokio::test]
async fn status_names_servers_to_the_admin_alone_and_holds_no_secret() {
    let mut settings = two_profiles();
    settings["mcpServers"] = json!({"gone-server": {"command": "/nonexistent/mcp-server"}});
    let s = serve(with_admin(), settings).await;
    let bearer = format!("Bearer {KEY_A}");
    let (code, client) = status(&s, &[("Authorization", bearer.as_str())]).await;
    assert_eq!(code, 200, "{client}");
    assert_eq!(client["status"], "degraded");
    assert_eq!(client["servers"]["down"], 1, "{client}");
    assert!(
        !client.to_string().contains("gone-server"),
        "a client learns counts, not names: {client}"
    );
    let (code, admin) = status(&s, &[("X-MCP-Gateway-Admin-Key", ADMIN_KEY)]).await;
    assert_eq!(code, 200, "{admin}");
    assert_eq!(admin["caller"], "admin");
    assert_eq!(admin["admin_auth"], json!({"configured": true}));
    assert_eq!(
        admin["servers"]["not_ready"][0]["name"], "gone-server",
        "{admin}"
    );
    assert!(
        admin["next_actions"].to_string().contains("gone-server"),
        "{admin}"
    );
    let root = s.root().to_str().unwrap().to_owned();
    for doc in [&client, &admin] {
        let text = doc.to_string();
        for secret in [ADMIN_KEY, &digest(ADMIN_KEY), KEY_A, &digest(KEY_A), &root] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
    }
    // Only the admin's reads are audited: a client polling would fill the log.
    let audit = s.audit();
    assert_eq!(audit.matches("admin.status").count(), 1, "{audit}");
}

#[tokio::test]
async fn status_on_loopback_without_authentication_is_a_plain_read() {
    let s = serve(json!({}), two_profiles()).await;
    let (code, doc) = status(&s, &[]).await;
    assert_eq!(code, 200, "{doc}");
    assert_eq!(doc["auth"], json!({"configured": false}));
    assert_eq!(doc["caller"], "client");
}

/// The product verbs' routes: what `--remote` asks (`frontend::AdminVerbs`).
const VERB_ROUTES: [(&str, &str); 8] = [
    ("GET", "/mcp/presets"),
    ("GET", "/mcp/package-info"),
    ("GET", "/mcp/config/validate"),
    ("POST", "/mcp/presets/project-researcher/duplicate"),
    ("POST", "/mcp/profiles"),
    ("GET", "/mcp/tool-events/report?group_by=tool"),
    ("GET", "/mcp/tool-events/export?limit=5"),
    ("POST", "/mcp/tool-events/cleanup"),
];

/// Answers every verb with what it received, and refuses the profile id `taken`.
#[derive(Default)]
struct Recording(std::sync::Mutex<Vec<frontend::AdminVerb>>);

impl frontend::AdminVerbs for Recording {
    fn answer(&self, verb: frontend::AdminVerb) -> Result<Value, frontend::VerbRefusal> {
        self.0.lock().unwrap().push(verb.clone());
        match verb {
            frontend::AdminVerb::DuplicatePreset { profile_id, .. } if profile_id == "taken" => {
                Err(frontend::VerbRefusal::Refused(
                    "a preset or profile \"taken\" exists already".into(),
                ))
            }
            other => Ok(json!({"verb": format!("{other:?}")})),
        }
    }
}

fn verb_body(path: &str) -> Value {
    match path {
        "/mcp/profiles" => json!({"profile": {"id": "mine", "default": "deny"}}),
        "/mcp/tool-events/cleanup" => json!({"max_events": 3}),
        _ => json!({"profile_id": "copy"}),
    }
}

#[tokio::test]
async fn verb_routes_are_absent_without_admin_key() {
    let verbs: Arc<Recording> = Arc::default();
    let s = serve_with(keys_http(), two_profiles(), Some(verbs.clone())).await;
    for (method, path) in VERB_ROUTES {
        let key = [("X-MCP-Gateway-Admin-Key", ADMIN_KEY)];
        let answer = s.send(method, path, &key, Some(&verb_body(path))).await;
        assert_eq!(answer.status, 404, "{method} {path}: {}", answer.body);
    }
    assert!(verbs.0.lock().unwrap().is_empty());
}

#[tokio::test]
async fn verb_routes_refuse_a_wrong_or_missing_admin_key() {
    let verbs: Arc<Recording> = Arc::default();
    let s = serve_with(with_admin(), two_profiles(), Some(verbs.clone())).await;
    let bearer = format!("Bearer {KEY_A}");
    for (method, path) in VERB_ROUTES {
        for headers in [
            vec![("X-MCP-Gateway-Admin-Key", "not-the-admin-key")],
            vec![("X-MCP-Gateway-Admin-Key", KEY_A)],
            vec![("Authorization", bearer.as_str())],
            vec![],
        ] {
            let answer = s.send(method, path, &headers, Some(&verb_body(path))).await;
            assert_eq!(
                answer.status, 401,
                "{method} {path} {headers:?}: {}",
                answer.body
            );
        }
    }
    assert!(verbs.0.lock().unwrap().is_empty(), "nothing was asked");
    // The right key reaches each verb, with what the request said, and each is audited.
    for (method, path) in VERB_ROUTES {
        let key = [("X-MCP-Gateway-Admin-Key", ADMIN_KEY)];
        let answer = s.send(method, path, &key, Some(&verb_body(path))).await;
        assert_eq!(answer.status, 200, "{method} {path}: {}", answer.body);
    }
    let asked = format!("{:?}", verbs.0.lock().unwrap());
    for carried in [
        "ListPresets",
        "PackageInfo",
        "ValidateConfig",
        "DuplicatePreset { id: \"project-researcher\", profile_id: \"copy\" }",
        "CreateProfile",
        "\"mine\"",
        "ToolEventsReport { group_by: \"tool\", since_ms: None, format: None }",
        "ToolEventsExport { since_ms: None, limit: 5 }",
        "ToolEventsCleanup { max_age_days: None, max_events: Some(3) }",
    ] {
        assert!(asked.contains(carried), "{carried} in {asked}");
    }
    let audit = s.audit();
    for route in [
        "admin.list_presets",
        "admin.package_info",
        "admin.validate_config",
        "admin.duplicate_preset",
        "admin.create_profile",
        "admin.tool_events_report",
        "admin.tool_events_export",
        "admin.tool_events_cleanup",
    ] {
        assert!(audit.contains(route), "{route}: {audit}");
    }
}

#[tokio::test]
async fn verb_routes_refuse_bad_requests_and_say_why_a_verb_was_not_done() {
    let verbs: Arc<Recording> = Arc::default();
    let s = serve_with(with_admin(), two_profiles(), Some(verbs.clone())).await;
    let key = [("X-MCP-Gateway-Admin-Key", ADMIN_KEY)];
    for (method, path, body) in [
        ("GET", "/mcp/tool-events/report", None),
        (
            "GET",
            "/mcp/tool-events/report?group_by=tool&since_ms=soon",
            None,
        ),
        (
            "GET",
            "/mcp/tool-events/report?group_by=tool&group_by=server",
            None,
        ),
        ("GET", "/mcp/tool-events/report?group_by=%27tool%27", None),
        ("GET", "/mcp/tool-events/export?limit=5&arguments=1", None),
        ("GET", "/mcp/tool-events/export", None),
        ("POST", "/mcp/profiles", Some(json!({"profile": "mine"}))),
        ("POST", "/mcp/presets/a/duplicate", Some(json!({}))),
        (
            "POST",
            "/mcp/tool-events/cleanup",
            Some(json!({"max_events": -1})),
        ),
    ] {
        let answer = s.send(method, path, &key, body.as_ref()).await;
        assert_eq!(answer.status, 400, "{method} {path}: {}", answer.body);
    }
    assert!(verbs.0.lock().unwrap().is_empty(), "nothing was asked");
    let taken = s
        .send(
            "POST",
            "/mcp/presets/a/duplicate",
            &key,
            Some(&json!({"profile_id": "taken"})),
        )
        .await;
    assert_eq!(taken.status, 409, "{}", taken.body);
    assert!(taken.body.contains("exists already"), "{}", taken.body);
}

#[tokio::test]
async fn verb_routes_say_when_nothing_answers_them() {
    let s = serve(with_admin(), two_profiles()).await;
    let key = [("X-MCP-Gateway-Admin-Key", ADMIN_KEY)];
    let answer = s.send("GET", "/mcp/presets", &key, None).await;
    assert_eq!(answer.status, 404, "{}", answer.body);
    assert!(
        answer.body.contains("answers no product verbs"),
        "{}",
        answer.body
    );
}
