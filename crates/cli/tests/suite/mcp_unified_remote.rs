//! MCP Unified's `--remote`: every `mcp-unified-gateway` verb asked of a running `toolgate serve --http` through
//! its admin API, as the sheet's examples run it, compared with the local verb where both answer from the same
//! config; and each way a remote request goes wrong, said in terms of what to change.

use super::mcp_unified::{
    http_gateway_json, reporting_outside, serve_http, serve_initialized, Unified, ADMIN_KEY,
    MINIMAL,
};

#[test]
fn the_sheets_remote_examples_ask_the_running_gateway() {
    let u = Unified::new(MINIMAL);
    let state = http_gateway_json(&u);
    u.ok("mcp-unified-gateway duplicate-preset project-researcher --profile-id team-researcher");
    let served = serve_http(&u);
    let env = [
        ("MCP_UNIFIED_GATEWAY_URL", served.url.as_str()),
        ("MCP_UNIFIED_GATEWAY_ADMIN_KEY", ADMIN_KEY),
    ];
    let explain = "mcp-unified-gateway explain-policy \
                   --remote --profile team-researcher --tool fs.read --args-stdin";
    let r = u.sh_env(explain, Some("{\"path\":\"src/app.py\"}\n"), &env);
    assert_eq!(r.code, 0, "{}{}", r.out, r.err);
    assert!(r.out.contains("decision   allow"), "{}", r.out);
    assert!(r.out.contains("team-researcher.read"), "{}", r.out);
    let secret = "hunter2-remote-do-not-show";
    let r = u.sh_env(
        explain,
        Some(&format!(
            "{{\"path\":\"src/app.py\",\"note\":\"{secret}\"}}"
        )),
        &env,
    );
    assert_eq!(r.code, 0, "{}{}", r.out, r.err);
    assert!(
        r.out.contains("arguments  ") && r.out.contains("sha256"),
        "{}",
        r.out
    );
    assert!(
        !r.out.contains(secret) && !r.err.contains(secret),
        "{}{}",
        r.out,
        r.err
    );
    let preview = "mcp-unified-gateway preview-profile-tools --remote --profile team-researcher \
                   --category filesystem --session-id session-1 --exclude-denied";
    let r = u.sh_env(preview, None, &env);
    assert_eq!(r.code, 0, "{}{}", r.out, r.err);
    let names: Vec<&str> = r
        .out
        .lines()
        .skip(1)
        .filter(|l| !l.starts_with("session "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(names.contains(&"filesystem_read_file"), "{}", r.out);
    assert!(
        names.iter().all(|n| n.starts_with("filesystem_")),
        "{}",
        r.out
    );
    assert!(
        r.out
            .contains("session session-1: no tool's visibility depends on a session"),
        "{}",
        r.out
    );
    // The running gateway audited both questions (written behind the calls: waited for), never the arguments.
    let audited = |text: &str| {
        crate::support::audit_records(&state)
            .iter()
            .any(|r| r.to_string().contains(text))
    };
    for _ in 0..100 {
        if audited("admin.policy_explain") && audited("admin.tool_preview") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(audited("admin.policy_explain") && audited("admin.tool_preview"));
    assert!(!audited(secret));

    // What goes wrong is said in terms of what to change.
    let fails = |env: &[(&str, &str)], line: &str, expected: &str| {
        let r = u.sh_env(line, Some("{}"), env);
        assert_ne!(r.code, 0, "{line}: {}", r.out);
        assert!(
            r.err.contains(expected),
            "{line}: expected {expected:?} in {}",
            r.err
        );
        assert!(
            !r.err.contains(ADMIN_KEY) && !r.out.contains(ADMIN_KEY),
            "{}",
            r.err
        );
    };
    fails(&[], explain, "MCP_UNIFIED_GATEWAY_URL");
    fails(&env[..1], explain, "MCP_UNIFIED_GATEWAY_ADMIN_KEY");
    let wrong = [env[0], ("MCP_UNIFIED_GATEWAY_ADMIN_KEY", "not-the-key")];
    fails(&wrong, explain, "refused the admin key");
    let unreachable = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed = format!("http://{}/mcp", unreachable.local_addr().unwrap());
    drop(unreachable);
    fails(
        &[("MCP_UNIFIED_GATEWAY_URL", &closed), env[1]],
        explain,
        "cannot reach the gateway",
    );
    let elsewhere = served.url.replace("/mcp", "/elsewhere");
    fails(
        &[("MCP_UNIFIED_GATEWAY_URL", &elsewhere), env[1]],
        explain,
        "has no admin API there",
    );
    fails(
        &[
            ("MCP_UNIFIED_GATEWAY_URL", "http://gateway.example:8787/mcp"),
            env[1],
        ],
        explain,
        "in the clear",
    );
    let nobody = explain.replace("team-researcher", "nobody");
    fails(&env, &nobody, "no such profile is served here");
    fails(
        &env,
        &format!("{explain} --config ./gateway.json"),
        "cannot be used with",
    );
}

/// Every verb with `--remote` against `toolgate serve --http`: the read-only ones print what the local verb prints
/// on the same config, the mutating ones change the running gateway's stores as the local verb changes them.
#[tokio::test]
async fn every_verb_answers_remotely_as_the_local_verb_does() {
    let u = Unified::new(MINIMAL);
    let outside = reporting_outside(&u);
    let mut config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(u.ws.join("gateway.json")).unwrap()).unwrap();
    let digest = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(ADMIN_KEY.as_bytes()));
    config["http"] = serde_json::json!({"admin": {"keySha256": digest}});
    u.write("gateway.json", &config.to_string());
    // Reporting events with a secret in a file read and in a refused call's arguments.
    let (content, secret_arg) = ("SECRET-CONTENT-REMOTE-01", "SECRET-ARGUMENT-REMOTE-02");
    u.write("src/notes.txt", content);
    let mut client = serve_initialized(&u).await;
    for path in ["src/notes.txt".to_owned(), format!("../{secret_arg}")] {
        let args = serde_json::json!({"path": path});
        let _ = crate::support::call(&client, "filesystem_read_file", args).await;
    }
    client.close(std::time::Duration::from_secs(10)).await;
    let served = serve_http(&u);
    let env = [
        ("MCP_UNIFIED_GATEWAY_URL", served.url.as_str()),
        ("MCP_UNIFIED_GATEWAY_ADMIN_KEY", ADMIN_KEY),
    ];
    let remote = |line: &str, stdin: Option<&str>| {
        let r = u.sh_env(&format!("mcp-unified-gateway {line} --remote"), stdin, &env);
        assert_eq!(r.code, 0, "{line} --remote:\n{}{}", r.out, r.err);
        assert!(
            ![content, secret_arg, ADMIN_KEY]
                .iter()
                .any(|s| r.out.contains(s) || r.err.contains(s)),
            "{line}: {}{}",
            r.out,
            r.err
        );
        r.out
    };
    let here = "--config ./gateway.json";
    for line in [
        "list-presets",
        "list-presets --json",
        "package-info",
        "package-info --json",
        "tool-events report --group-by tool",
        "tool-events report --group-by decision --format csv --since 7d",
        "tool-events export --format json",
    ] {
        // The presets and the package are this binary's; the reporting events the config's.
        let local = if line.starts_with("tool-events") {
            u.ok(&format!("mcp-unified-gateway {line} {here}"))
        } else {
            u.ok(&format!("mcp-unified-gateway {line}"))
        };
        assert_eq!(remote(line, None), local, "{line}");
    }
    let exported = remote("tool-events export", None);
    assert_eq!(exported.lines().count(), 2, "both calls: {exported}");
    // validate-config checks the file the gateway was started on, as the local verb checks it here.
    let valid = remote("validate-config", None);
    let file = u.ws.join("gateway.json");
    let local = u.ok(&format!(
        "mcp-unified-gateway validate-config {}",
        file.display()
    ));
    assert!(valid.starts_with("valid: "), "{valid}");
    assert_eq!(valid, local);

    // The mutating verbs change the running gateway's stores, as the local ones do.
    let stored_file = outside.join("mcp-gateway.db.profiles.json");
    let stored = || -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(&stored_file).unwrap()).unwrap()
    };
    let dup = remote(
        "duplicate-preset project-researcher --profile-id remote-copy",
        None,
    );
    assert!(
        dup.starts_with("stored profile remote-copy (a copy of project-researcher)"),
        "{dup}"
    );
    assert!(dup.contains("after a restart"), "{dup}");
    u.ok(&format!(
        "mcp-unified-gateway duplicate-preset project-researcher --profile-id local-copy {here}"
    ));
    let (r, l) = (&stored()["remote-copy"], &stored()["local-copy"]);
    assert_eq!(
        r.to_string().replace("remote-copy", "X"),
        l.to_string().replace("local-copy", "X"),
        "the same copy"
    );
    u.write("made.json", r#"{"id": "remote-made", "default": "deny", "tools": {"blocked": ["toolgate__shell_run"]}}"#);
    let made = remote("create-profile --profile-file ./made.json", None);
    assert!(made.starts_with("stored profile remote-made"), "{made}");
    assert_eq!(stored()["remote-made"]["default"], "deny");
    let local = u.ok(
        "mcp-unified-gateway preview-profile-tools --profile remote-made --config ./gateway.json",
    );
    assert!(
        local.starts_with("profile remote-made"),
        "the local verbs serve it: {local}"
    );
    let refused = |line: &str, expected: &str| {
        let r = u.sh_env(&format!("mcp-unified-gateway {line} --remote"), None, &env);
        assert_ne!(r.code, 0, "{line}: {}", r.out);
        assert!(
            r.err.contains(expected),
            "{line}: expected {expected:?} in {}",
            r.err
        );
    };
    refused(
        "duplicate-preset project-researcher --profile-id local-copy",
        "exists already",
    );
    refused(
        "create-profile --profile-file ./made.json",
        "exists already",
    );
    u.write("bad.json", r#"{"id": "bad", "default": "sometimes"}"#);
    refused("create-profile --profile-file ./bad.json", "does not load");
    assert!(stored().get("bad").is_none());
    refused(
        "duplicate-preset nobody --profile-id x",
        "no preset or profile",
    );
    refused("tool-events report --group-by colour", "group_by");
    refused(&format!("list-presets {here}"), "unexpected argument");
    refused(
        &format!("tool-events cleanup {here}"),
        "cannot be used with",
    );
    let wrong = [env[0], ("MCP_UNIFIED_GATEWAY_ADMIN_KEY", "not-the-key")];
    let r = u.sh_env(
        "mcp-unified-gateway tool-events export --remote",
        None,
        &wrong,
    );
    assert!(
        r.code != 0 && r.err.contains("refused the admin key"),
        "{}",
        r.err
    );
    let cleaned = remote("tool-events cleanup --max-events 1", None);
    assert_eq!(
        cleaned.trim(),
        "removed 1 tool-use events past the retention"
    );
    let left = u.ok(&format!("mcp-unified-gateway tool-events export {here}"));
    assert_eq!(left.lines().count(), 1, "{left}");

    // Each was audited by the running gateway, without the secrets.
    let audit = || {
        crate::support::audit_records(&outside)
            .iter()
            .map(ToString::to_string)
            .collect::<String>()
    };
    let routes = [
        "admin.list_presets",
        "admin.package_info",
        "admin.validate_config",
        "admin.duplicate_preset",
        "admin.create_profile",
        "admin.tool_events_report",
        "admin.tool_events_export",
        "admin.tool_events_cleanup",
    ];
    for _ in 0..100 {
        if routes.iter().all(|r| audit().contains(r)) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let audited = audit();
    for route in routes {
        assert!(audited.contains(route), "{route}");
    }
    let admin: Vec<String> = crate::support::audit_records(&outside)
        .iter()
        .map(ToString::to_string)
        .filter(|r| r.contains("admin."))
        .collect();
    assert!(admin.len() >= routes.len(), "{admin:?}");
    for record in admin {
        assert!(
            !record.contains(secret_arg) && !record.contains(content),
            "{record}"
        );
    }
}
