//! The admin surface under the attacks on it: reaching it where it is not configured, with an MCP key instead of
//! the admin key, and asking it to explain a call so that it hands back the call's secrets.

use super::http_auth::{digest, keys_http, serve, two_profiles, ADMIN_KEY, KEY_A};
use serde_json::{json, Value};

fn with_admin() -> Value {
    let mut http = keys_http();
    http["admin"] = json!({"keySha256": digest(ADMIN_KEY)});
    http
}

const ROUTES: [(&str, &str); 3] = [
    ("POST", "/mcp/policy/explain"),
    ("POST", "/mcp/profiles/a/tool-preview"),
    ("GET", "/mcp/status"),
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
    let status = s.send("GET", "/mcp/status", &key, None).await;
    let status: Value = serde_json::from_str(&status.body).unwrap();
    assert_eq!(status["servers"]["up"], 1, "{status}");
    assert_eq!(status["admin"], true);
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
