use crate::{parse_str, Format, Overrides};

fn http(body: &str) -> crate::Result<crate::HttpConfig> {
    let text = format!(r#"{{"http": {body}}}"#);
    let path = std::path::Path::new("conf/toolgate.json");
    parse_str(
        &text,
        Format::Json,
        path,
        &|_: &str| None,
        &Overrides::default(),
    )
    .map(|c| c.http)
}

#[test]
fn full_section_loads() {
    let key = "a".repeat(64);
    let c = http(&format!(
        r#"{{"listen": "127.0.0.1:8787", "allowedOrigins": ["http://localhost:6274"],
            "auth": {{"apiKeys": [{{"name": "ci", "sha256": "{key}", "profile": "review"}}],
                     "jwt": {{"jwksFile": "jwks.json", "issuer": "https://idp", "audience": "tg"}}}},
            "admin": {{"keySha256": "{}"}}, "limits": {{"maxSessions": 3}}}}"#,
        "b".repeat(64)
    ))
    .unwrap();
    assert_eq!(c.listen, Some("127.0.0.1:8787".parse().unwrap()));
    assert_eq!(c.auth.api_keys[0].profile.as_deref(), Some("review"));
    assert!(c.auth.any() && c.admin.is_some());
    assert_eq!(c.limits.max_sessions, 3);
    assert_eq!(
        c.limits.max_sessions_per_identity, 3,
        "a default share follows a smaller ceiling"
    );
    let jwt = c.auth.jwt.unwrap();
    assert_eq!(jwt.jwks_file, std::path::Path::new("conf/jwks.json"));
}

#[test]
fn advertise_is_a_host_and_port() {
    let c = http(r#"{"advertise": "Replica-A.internal:8080"}"#).unwrap();
    assert_eq!(c.advertise.as_deref(), Some("replica-a.internal:8080"));
    assert_eq!(
        http(r#"{"advertise": "[::1]:80"}"#)
            .unwrap()
            .advertise
            .as_deref(),
        Some("[::1]:80")
    );
    for bad in [
        "10.0.0.1",
        "[::1]",
        "10.0.0.1:x",
        "http://a:1",
        "a:1/mcp",
        "user@a:1",
    ] {
        let e = http(&format!(r#"{{"advertise": "{bad}"}}"#)).unwrap_err();
        assert!(e.to_string().contains("http.advertise"), "{bad}: {e}");
    }
}

#[test]
fn plaintext_api_key_is_refused_with_how_to_hash_it() {
    let e = http(r#"{"auth": {"apiKeys": [{"name": "ci", "sha256": "hunter2"}]}}"#).unwrap_err();
    assert!(e.to_string().contains("sha256sum"), "{e}");
}

#[test]
fn unknown_keys_and_bad_values_are_refused() {
    assert!(http(r#"{"listn": "127.0.0.1:1"}"#).is_err());
    assert!(http(r#"{"listen": "localhost"}"#).is_err());
    assert!(http(r#"{"allowedOrigins": ["http://a.example/path"]}"#).is_err());
    assert!(http(r#"{"allowedOrigins": ["null"]}"#).is_err());
    assert!(http(r#"{"limits": {"maxBodyBytes": 0}}"#).is_err());
    let key = "c".repeat(64);
    let same = format!(
        r#"{{"auth": {{"apiKeys": [{{"name": "a", "sha256": "{key}"}}]}}, "admin": {{"keySha256": "{key}"}}}}"#
    );
    assert!(http(&same).is_err());
}

#[test]
fn limits_load_and_a_share_above_its_ceiling_is_refused() {
    let c = http(
        r#"{"limits": {"maxSessionsPerIdentity": 4, "maxConcurrentRequestsPerIdentity": 8,
            "headerTimeoutSeconds": 2, "keepAliveSeconds": 7, "bodyTimeoutSeconds": 3, "maxPendingConnections": 50,
            "maxConnectionsPerIdentity": 6}}"#,
    )
    .unwrap();
    assert_eq!(c.limits.max_sessions_per_identity, 4);
    assert_eq!(c.limits.max_concurrent_requests_per_identity, 8);
    assert_eq!(c.limits.header_timeout, std::time::Duration::from_secs(2));
    assert_eq!(c.limits.body_timeout, std::time::Duration::from_secs(3));
    assert_eq!(c.limits.keep_alive, std::time::Duration::from_secs(7));
    assert_eq!(c.limits.max_pending_connections, 50);
    assert_eq!(c.limits.max_connections_per_identity, 6);
    let e = http(r#"{"limits": {"maxSessions": 10, "maxSessionsPerIdentity": 11}}"#).unwrap_err();
    assert!(e.to_string().contains("maxSessionsPerIdentity"), "{e}");
    assert!(http(
        r#"{"limits": {"maxConcurrentRequests": 10, "maxConcurrentRequestsPerIdentity": 11}}"#
    )
    .is_err());
    assert!(http(r#"{"limits": {"headerTimeoutSeconds": 0}}"#).is_err());
    assert!(http(r#"{"limits": {"maxPendingConnections": 0}}"#).is_err());
}
