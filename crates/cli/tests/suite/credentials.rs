//! Credential grants end to end. The upstream is a second toolgate serving the fixture over Streamable HTTP that
//! admits only API keys and records which key each call came with; the gateway under test holds those keys as
//! credentials: the service key for every caller, alice's key for identity `key:alice` (from a file), the team
//! key for profile `team-b` (from toolgate's environment), and, for a stdio fixture, a secret in its environment
//! granted to alice only. Each caller's call reaches the upstream with its own key, a caller not granted the
//! stdio server's secret is refused before it runs, an answer holding a secret reaches the client scrubbed, the
//! gateway's records name the credentials and hold no value, and a rotated file is used after a reload.

use crate::support::{audit_records, fixture, toolgate, ServedHttp, Setup};
use serde_json::{json, Value};
use sha2::Digest;
use std::time::Duration;

const UP_SERVICE: &str = "upstream-service-key-0123456789";
const UP_ALICE: &str = "upstream-alice-key-0123456789";
const UP_TEAM: &str = "upstream-team-key-0123456789";
const UP_ROTATED: &str = "upstream-rotated-key-0123456789";
const FX_SECRET: &str = "stdio-secret-value-0123456789";
const GW_KEYS: [(&str, &str); 3] = [
    ("alice", "gateway-alice-key-000000"),
    ("bob", "gateway-bob-key-000000"),
    ("carol", "gateway-carol-key-000000"),
];
const SECRETS: [&str; 5] = [UP_SERVICE, UP_ALICE, UP_TEAM, UP_ROTATED, FX_SECRET];

fn digest(key: &str) -> String {
    hex::encode(sha2::Sha256::digest(key.as_bytes()))
}

fn serve(setup: &Setup, env: &[(&str, &str)]) -> ServedHttp {
    let mut cmd = std::process::Command::new(toolgate());
    cmd.args(["serve", "--config"])
        .arg(&setup.config)
        .args(["--http", "127.0.0.1:0"])
        .env("TOOLGATE_STATE_DIR", setup.state_dir())
        .envs(env.iter().copied());
    ServedHttp::spawn(cmd)
}

/// The upstream: the fixture behind API keys, one per credential the gateway holds.
fn upstream() -> Setup {
    let keys: Vec<Value> = [
        ("up-service", UP_SERVICE),
        ("up-alice", UP_ALICE),
        ("up-team", UP_TEAM),
        ("up-rotated", UP_ROTATED),
    ]
    .iter()
    .map(|(name, key)| json!({"name": name, "sha256": digest(key)}))
    .collect();
    Setup::new(json!({
        "mcpServers": {"fx": fixture(&[])},
        "prefixTools": false,
        "permissions": {"default": "allow"},
        "pins": {"newTools": "accept"},
        "http": {"auth": {"apiKeys": keys}}
    }))
}

/// The gateway under test, holding the upstream's keys as credentials.
fn gateway(upstream_url: &str) -> Setup {
    Setup::with(|dir| {
        std::fs::write(dir.join("alice.token"), format!("Bearer {UP_ALICE}\n")).unwrap();
        let keys: Vec<Value> = GW_KEYS
            .iter()
            .map(|(name, key)| {
                let profile = (*name == "bob").then_some("team-b");
                json!({"name": name, "sha256": digest(key), "profile": profile})
            })
            .collect();
        json!({
            "mcpServers": {
                "remote": {"type": "http", "url": upstream_url},
                "local": fixture(&[])
            },
            "permissions": {"default": "allow"},
            "profiles": {"team-b": {}},
            "pins": {"newTools": "accept"},
            "http": {"auth": {"apiKeys": keys}},
            "credentials": {
                "service": {"server": "remote", "header": "Authorization", "value": format!("Bearer {UP_SERVICE}")},
                "alice": {"server": "remote", "header": "Authorization", "valueFile": "alice.token",
                          "grantedTo": {"identities": ["key:alice"]}},
                "team": {"server": "remote", "header": "Authorization", "value": "Bearer ${TEAM_TOKEN}",
                         "grantedTo": {"profiles": ["team-b"]}},
                "local-secret": {"server": "local", "env": "FX_SECRET", "value": FX_SECRET,
                                 "grantedTo": {"identities": ["key:alice"]}}
            }
        })
    })
}

/// One 2026-07-28 `tools/call` as the caller whose gateway key is `key`; the JSON-RPC answer.
async fn call(http: &reqwest::Client, url: &str, key: &str, tool: &str, args: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": tool, "arguments": args, "_meta": test_support::modern_meta()}});
    let text = http
        .post(url)
        .header("authorization", format!("Bearer {key}"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .body(body.to_string())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for secret in SECRETS {
        assert!(
            !text.contains(secret),
            "a secret reached the client: {text}"
        );
    }
    crate::support::answer_in(&text)
}

fn key(name: &str) -> &'static str {
    GW_KEYS.iter().find(|(n, _)| *n == name).unwrap().1
}

/// Writes a new secret into `file` and has the gateway reload.
fn rotate(file: &std::path::Path, secret: &str, gateway: nix::unistd::Pid) {
    std::fs::write(file, format!("{secret}\n")).unwrap();
    nix::sys::signal::kill(gateway, nix::sys::signal::Signal::SIGHUP).unwrap();
}

/// Calls `call` until its answer satisfies `done` (true), or ten seconds pass (false).
async fn until<F: std::future::Future<Output = Value>>(
    call: impl Fn() -> F,
    done: impl Fn(&Value) -> bool,
) -> bool {
    for _ in 0..40 {
        if done(&call().await) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    false
}

/// Stops a served toolgate with SIGTERM, so its audit log holds every record, and waits for it.
fn stop(mut served: ServedHttp) {
    let pid = nix::unistd::Pid::from_raw(served.child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let _ = served.child.wait();
}

/// The principals the upstream recorded for its `echo` calls, in order.
fn upstream_principals(records: &[Value]) -> Vec<String> {
    records
        .iter()
        .filter(|r| r["kind"] == "execution" && r["tool"] == "echo")
        .map(|r| r["principal"].as_str().unwrap_or("none").to_owned())
        .collect()
}

/// Every file under `dir`, read as bytes, must hold none of the secrets.
fn assert_no_secret_under(dir: &std::path::Path) {
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let bytes = std::fs::read(&path).unwrap_or_default();
            for secret in SECRETS {
                let found = bytes.windows(secret.len()).any(|w| w == secret.as_bytes());
                assert!(!found, "{} holds a credential's value", path.display());
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_caller_reaches_the_upstream_with_its_own_granted_credential() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let up_setup = upstream();
    let up = serve(&up_setup, &[]);
    let gw_setup = gateway(&up.url);
    let gw = serve(&gw_setup, &[("TEAM_TOKEN", UP_TEAM)]);
    let http = reqwest::Client::new();

    for who in ["alice", "bob", "carol"] {
        let answer = call(
            &http,
            &gw.url,
            key(who),
            "remote__echo",
            json!({"text": who}),
        )
        .await;
        assert_eq!(answer["result"]["content"][0]["text"], who, "{answer}");
    }

    // The stdio server's secret is alice's: carol is refused before anything runs, alice's answer is scrubbed.
    let refused = call(
        &http,
        &gw.url,
        key("carol"),
        "local__echo",
        json!({"text": "x"}),
    )
    .await;
    assert!(
        refused.to_string().contains("CREDENTIAL_NOT_GRANTED"),
        "{refused}"
    );
    let echoed = call(
        &http,
        &gw.url,
        key("alice"),
        "local__echo",
        json!({"text": format!("FX_SECRET={FX_SECRET}")}),
    )
    .await;
    assert_eq!(
        echoed["result"]["content"][0]["text"], "FX_SECRET=[credential]",
        "{echoed}"
    );

    // Rotation: alice's file now holds a key the upstream refuses; after a reload her calls carry it (and fail
    // upstream), then the right key again, and every other caller is unaffected meanwhile.
    let token = gw_setup
        .dir
        .path()
        .canonicalize()
        .unwrap()
        .join("alice.token");
    let gw_pid = nix::unistd::Pid::from_raw(gw.child.id() as i32);
    let alice = |text: &'static str| {
        call(
            &http,
            &gw.url,
            key("alice"),
            "remote__echo",
            json!({"text": text}),
        )
    };
    let refused = |a: &Value| a.get("error").is_some() || a["result"]["isError"] == true;
    rotate(&token, "Bearer upstream-unknown-key-0000000", gw_pid);
    assert!(
        until(|| alice("after"), refused).await,
        "alice's rotated credential was never used"
    );
    let bob = call(
        &http,
        &gw.url,
        key("bob"),
        "remote__echo",
        json!({"text": "bob"}),
    )
    .await;
    assert_eq!(bob["result"]["content"][0]["text"], "bob", "{bob}");
    rotate(&token, &format!("Bearer {UP_ROTATED}"), gw_pid);
    let worked = |a: &Value| a["result"]["content"][0]["text"] == "rotated";
    assert!(
        until(|| alice("rotated"), worked).await,
        "alice's calls never worked with the rotated key"
    );

    stop(gw);
    stop(up);
    let seen = upstream_principals(&audit_records(&up_setup.state_dir()));
    assert_eq!(
        &seen[..3],
        ["key:up-alice", "key:up-team", "key:up-service"],
        "the upstream saw {seen:?}"
    );
    assert_eq!(
        seen.last().map(String::as_str),
        Some("key:up-rotated"),
        "{seen:?}"
    );

    // The gateway's records name the credentials each call went with; nothing it keeps holds a value.
    let records = audit_records(&gw_setup.state_dir());
    let named = |server: &str, principal: &str| -> Vec<Value> {
        records
            .iter()
            .filter(|r| {
                r["kind"] == "execution" && r["server"] == server && r["principal"] == principal
            })
            .map(|r| r["credentials"].clone())
            .collect()
    };
    assert_eq!(named("remote", "key:alice")[0], json!(["alice"]));
    assert_eq!(named("remote", "key:bob")[0], json!(["team"]));
    assert_eq!(named("remote", "key:carol")[0], json!(["service"]));
    assert_eq!(named("local", "key:alice")[0], json!(["local-secret"]));
    let carol_local: Vec<&Value> = records
        .iter()
        .filter(|r| {
            r["kind"] == "execution" && r["server"] == "local" && r["principal"] == "key:carol"
        })
        .collect();
    assert_eq!(carol_local.len(), 1, "{carol_local:?}");
    assert_eq!(
        carol_local[0]["outcome"], "CREDENTIAL_NOT_GRANTED",
        "{carol_local:?}"
    );
    assert_no_secret_under(&gw_setup.state_dir());
}

#[test]
fn doctor_names_each_credential_and_whom_it_is_granted_to_but_no_value() {
    let setup = gateway("http://127.0.0.1:9/mcp");
    let out = std::process::Command::new(toolgate())
        .args(["doctor", "--no-start", "--config"])
        .arg(&setup.config)
        .env("TOOLGATE_STATE_DIR", setup.state_dir())
        .env("TEAM_TOKEN", UP_TEAM)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    for secret in SECRETS {
        assert!(
            !stdout.contains(secret) && !stderr.contains(secret),
            "{stdout}{stderr}"
        );
    }
    let token = setup.dir.path().canonicalize().unwrap().join("alice.token");
    for line in [
        "  service          header \"authorization\" of remote, granted to every caller, from the config".to_owned(),
        format!("  alice            header \"authorization\" of remote, granted to key:alice, from {}", token.display()),
        "  team             header \"authorization\" of remote, granted to profile team-b, from the config".to_owned(),
        "  local-secret     env \"FX_SECRET\" of local, granted to key:alice, from the config".to_owned(),
    ] {
        assert!(stdout.lines().any(|l| l == line), "missing {line:?} in:\n{stdout}");
    }
}

/// An env credential is part of its server's launch: rewriting its value file (no signal) reloads, restarts that
/// server with the new value, and answers are scrubbed of the new value from then on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewriting_an_env_credentials_file_restarts_its_server_with_the_new_value() {
    let setup = Setup::with(|dir| {
        std::fs::write(dir.join("fx.secret"), format!("{FX_SECRET}\n")).unwrap();
        json!({
            "mcpServers": {"local": fixture(&[])},
            "permissions": {"default": "allow"},
            "pins": {"newTools": "accept"},
            "credentials": {"fx": {"server": "local", "env": "FX_SECRET", "valueFile": "fx.secret"}}
        })
    });
    let client = crate::support::legacy(&setup).await;
    // A tool the running process adds: a new process does not have it.
    crate::support::call(&client, "local__add_tool", json!({"name": "marker"}))
        .await
        .unwrap();
    let added = until(
        || async { json!(marker(&client).await) },
        |answered| answered == &json!(true),
    )
    .await;
    assert!(added, "the added tool never answered");
    let file = setup.dir.path().canonicalize().unwrap().join("fx.secret");
    std::fs::write(&file, format!("{UP_ROTATED}\n")).unwrap();
    let restarted = until(
        || async { json!(marker(&client).await) },
        |answered| answered == &json!(false),
    )
    .await;
    assert!(
        restarted,
        "the server was not restarted with the rotated value"
    );
    let echoed = crate::support::call(&client, "local__echo", json!({"text": UP_ROTATED}))
        .await
        .unwrap();
    assert_eq!(crate::support::text(&echoed), "[credential]", "{echoed}");
}

/// Whether the tool `marker` the fixture was told to add answers (only the process that added it has it).
async fn marker(client: &test_support::StdioClient) -> bool {
    crate::support::call(client, "local__marker", json!({}))
        .await
        .is_ok_and(|answer| answer.get("isError").is_none() && answer.get("error").is_none())
}
