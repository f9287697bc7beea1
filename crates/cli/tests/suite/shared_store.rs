//! A team's store: `"store": {"kind": "postgres", "url": …}` against a real PostgreSQL server (a private cluster
//! of the test process). `serve` refuses a schema that is behind, naming the command that moves it on;
//! `toolgate store migrate` moves it, once; then the gateway keeps its state there.

use crate::support::{call, fixture, toolgate, Setup};
use serde_json::json;
use std::process::{Command, Stdio};
use store::{Namespace, PostgresStore, WitnessStore};
use test_support::postgres::Cluster;

fn setup(db: &str) -> (Setup, String) {
    let cluster = Cluster::shared();
    let db = format!("{db}_{}", std::process::id());
    cluster.create_database(&db);
    let url = format!(
        "postgres://toolgate:${{TG_STORE_PASSWORD}}@127.0.0.1:{}/{db}",
        cluster.port()
    );
    let setup = Setup::with(|dir| {
        std::fs::create_dir_all(dir.join("ws")).unwrap();
        json!({
            "workspace": dir.join("ws"),
            "mcpServers": {"fx": fixture(&[])},
            "permissions": {"default": "allow"},
            "store": {"kind": "postgres", "url": url, "pool_size": 3, "statement_timeout_seconds": 20},
        })
    });
    (setup, cluster.url(&db))
}

fn run(setup: &Setup, args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(toolgate())
        .args(args)
        .args(["--config", setup.config.to_str().unwrap()])
        .env("TOOLGATE_STATE_DIR", setup.state_dir())
        .env("TG_STORE_PASSWORD", Cluster::shared().password())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn serve_refuses_a_schema_behind_and_store_migrate_moves_it_once() {
    let (setup, _) = setup("behind");
    let password = Cluster::shared().password();
    let (code, _, err) = run(&setup, &["serve"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("toolgate store migrate"), "{err}");
    assert!(!err.contains(password), "{err}");
    let (code, out, err) = run(&setup, &["store", "migrate"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("migrated from schema version 0 to"), "{out}");
    assert!(out.contains("toolgate:***@"), "{out}");
    assert!(!out.contains(password), "{out}");
    let (code, out, _) = run(&setup, &["store", "migrate"]);
    assert_eq!(code, Some(0));
    assert!(out.contains("already"), "{out}");
}

#[test]
fn doctor_shows_the_store_its_pool_reachability_and_schema_version() {
    let (setup, _) = setup("doctor");
    let password = Cluster::shared().password();
    let (code, out, err) = run(&setup, &["doctor", "--no-start"]);
    assert_ne!(code, Some(0), "a schema behind fails the check: {out}{err}");
    assert!(
        out.contains("store: postgres postgres://toolgate:***@127.0.0.1:"),
        "{out}"
    );
    assert!(
        out.contains("pool 3 connections, connect timeout 5 s, statement timeout 20 s"),
        "{out}"
    );
    assert!(out.contains("schema version 0: BEHIND"), "{out}");
    assert!(out.contains("toolgate store migrate"), "{out}");
    let (code, _, err) = run(&setup, &["store", "migrate"]);
    assert_eq!(code, Some(0), "{err}");
    let (_, out, _) = run(&setup, &["doctor", "--no-start"]);
    let current = format!(
        "reachable, schema version {} (the one this build needs)",
        store::POSTGRES_SCHEMA_VERSION
    );
    assert!(out.contains(&current), "{out}");
    assert!(!out.contains(password), "{out}");
    // A server that does not answer: said, and the check fails (as serve would refuse to start).
    let nobody = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = nobody.local_addr().unwrap().port();
    drop(nobody);
    let gone = Setup::with(|dir| {
        std::fs::create_dir_all(dir.join("ws")).unwrap();
        json!({
            "workspace": dir.join("ws"),
            "store": {"kind": "postgres", "url": format!("postgres://toolgate:${{TG_STORE_PASSWORD}}@127.0.0.1:{port}/x"),
                      "connect_timeout_seconds": 1},
        })
    });
    let (code, out, err) = run(&gone, &["doctor", "--no-start"]);
    assert_ne!(code, Some(0), "{out}{err}");
    assert!(out.contains("UNREACHABLE"), "{out}");
    assert!(
        !out.contains(password) && !err.contains(password),
        "{out}{err}"
    );
}

#[tokio::test]
async fn the_gateway_keeps_its_state_in_the_configured_postgres_store() {
    let (setup, url) = setup("served");
    let (code, _, err) = run(&setup, &["store", "migrate"]);
    assert_eq!(code, Some(0), "{err}");
    let client = setup.serve_with(
        Default::default(),
        &[("TG_STORE_PASSWORD", Cluster::shared().password())],
    );
    client
        .initialize("2025-11-25", json!({}))
        .await
        .expect("initialize");
    call(&client, "fx__echo", json!({"text": "hi"}))
        .await
        .expect("an allowed call");
    drop(client);
    // The audit head the gateway witnessed is in the database, under this workspace's namespace and the chain
    // of this replica (named in the state root's replica file, made at its first start).
    let namespace = Namespace::open(&setup.state_dir(), &setup.workspace()).unwrap();
    let replica = std::fs::read_to_string(setup.state_dir().join("replica")).unwrap();
    let shared = PostgresStore::open_chain(&url, &namespace, replica.trim()).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while shared.audit_head().unwrap().is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "no audit head in the shared store"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}
