//! A team's gateway under load: one `toolgate serve --http` on SQLite beside one and two replicas sharing one
//! PostgreSQL server, measured in one sitting with their rounds alternating, so machine noise hits every arm alike.
//! Each round opens `--sessions` legacy sessions spread over the arm's replicas (session i on replica i mod n),
//! each calling the fixture's `echo` `--per-session` times, the whole pipeline on every call (pins, policy, audit,
//! reporting). Reported per arm: calls/s, wall p50 and p99, and the CPU time (user + system, all threads) of the
//! arm's replicas per call. The PostgreSQL server is a private cluster in a temporary directory with its own
//! defaults for syncing commits, as SQLite's commits are synced; each replica has its own state root (only
//! `approval.key` copied), as on separate machines.
//!
//! Run: `scripts/test` first on a fresh machine (it installs PostgreSQL and the user the cluster runs as under
//! root), then `cargo bench -p toolgate --bench replicas` (options: `-- --sessions 100 --per-session 50
//! --rounds 3`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;
use common::mcp_http::{client, Session};
use common::Front;

use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use test_support::postgres::Cluster;

const PASSWORD_VAR: &str = "TG_STORE_PASSWORD";

/// One arm: its replicas and what its rounds measured.
struct Arm {
    name: &'static str,
    replicas: Vec<Front>,
    latencies: Vec<f64>,
    calls: usize,
    secs: f64,
    cpu: Vec<common::CpuMeter>,
    errors: usize,
}

impl Arm {
    fn new(name: &'static str, replicas: Vec<Front>) -> Self {
        let cpu = replicas
            .iter()
            .map(|r| common::CpuMeter::new(r.child.id(), false))
            .collect();
        Self {
            name,
            replicas,
            latencies: Vec::new(),
            calls: 0,
            secs: 0.0,
            cpu,
            errors: 0,
        }
    }

    /// One round: `sessions` sessions over the replicas, `per_session` calls each, all at once.
    async fn round(&mut self, sessions: usize, per_session: usize) {
        let client = client();
        for meter in &mut self.cpu {
            meter.start();
        }
        let started = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..sessions {
            let (client, url) = (
                client.clone(),
                self.replicas[i % self.replicas.len()].url.clone(),
            );
            tasks.spawn(async move {
                let mut us = Vec::with_capacity(per_session);
                let Ok(session) = Session::open(client, url).await else {
                    return (us, per_session);
                };
                let mut errors = 0;
                for _ in 0..per_session {
                    let t = Instant::now();
                    match session.echo().await {
                        Ok(()) => us.push(t.elapsed().as_secs_f64() * 1e6),
                        Err(_) => errors += 1,
                    }
                }
                session.close().await;
                (us, errors)
            });
        }
        let mut done = 0;
        while let Some(joined) = tasks.join_next().await {
            let (us, errors) = joined.unwrap();
            done += us.len();
            self.latencies.extend(us);
            self.errors += errors;
        }
        self.secs += started.elapsed().as_secs_f64();
        self.calls += done;
        for meter in &mut self.cpu {
            meter.stop(done, Duration::from_millis(200));
        }
    }

    fn report(&mut self) {
        self.latencies.sort_by(f64::total_cmp);
        let cpu: f64 = self.cpu.iter().map(common::CpuMeter::per_call).sum();
        println!(
            "{:<22} {:>9.0} {:>9.0} {:>9.0} {:>9.1} {:>7}",
            self.name,
            self.calls as f64 / self.secs,
            common::pct(&self.latencies, 50.0),
            common::pct(&self.latencies, 99.0),
            cpu,
            self.errors
        );
    }
}

/// The config every arm serves: the fixture's `echo` allowed, everything else denied; `store` for the
/// PostgreSQL arms.
fn write_config(dir: &Path, name: &str, store: Option<&str>) -> String {
    let mut body = json!({
        "mcpServers": {"fx": {"command": common::toolgate(), "args": ["fixture-server", "--era", "legacy"]}},
        "permissions": {"default": "deny", "allow": ["mcp__fx__echo"]},
        "workspace": dir.join("ws"),
    });
    if let Some(url) = store {
        body["store"] = json!({"kind": "postgres", "url": url});
    }
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, body.to_string()).unwrap();
    path.to_str().unwrap().to_owned()
}

/// `n` replicas of `config` on one database: the schema migrated, a state root each with the first one's
/// `approval.key`.
fn replicas(dir: &Path, cluster: &Cluster, db: &str, n: usize) -> Vec<Front> {
    cluster.create_database(db);
    let url = format!(
        "postgres://toolgate:${{{PASSWORD_VAR}}}@127.0.0.1:{}/{db}",
        cluster.port()
    );
    let config = write_config(dir, db, Some(&url));
    let root = |i: usize| -> PathBuf { dir.join(format!("state-{db}-{i}")) };
    let migrate = std::process::Command::new(common::toolgate())
        .args(["store", "migrate", "--config", &config])
        .env("TOOLGATE_STATE_DIR", root(0))
        .env(PASSWORD_VAR, cluster.password())
        .output()
        .unwrap();
    assert!(
        migrate.status.success(),
        "{}",
        String::from_utf8_lossy(&migrate.stderr)
    );
    (0..n)
        .map(|i| {
            if i > 0 {
                std::fs::create_dir_all(root(i)).unwrap();
                std::fs::copy(root(0).join("approval.key"), root(i).join("approval.key")).unwrap();
            }
            let state = root(i);
            let name = format!("{db}-{i}");
            Front::start_with(
                &config,
                &[],
                &[
                    ("TOOLGATE_STATE_DIR", state.to_str().unwrap()),
                    ("TOOLGATE_REPLICA", &name),
                    (PASSWORD_VAR, cluster.password()),
                ],
            )
        })
        .collect()
}

fn main() {
    let sessions = common::number("--sessions", 100);
    let per_session = common::number("--per-session", 50);
    let rounds = common::number("--rounds", 3);
    let rt = common::runtime();
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ws")).unwrap();
        let cluster = Cluster::start_with(true);
        let sqlite = write_config(dir.path(), "sqlite", None);
        let state = dir.path().join("state-sqlite");
        let mut arms = vec![
            Arm::new(
                "1 replica, SQLite",
                vec![Front::start_with(
                    &sqlite,
                    &[],
                    &[("TOOLGATE_STATE_DIR", state.to_str().unwrap())],
                )],
            ),
            Arm::new(
                "1 replica, PostgreSQL",
                replicas(dir.path(), &cluster, "one", 1),
            ),
            Arm::new(
                "2 replicas, PostgreSQL",
                replicas(dir.path(), &cluster, "two", 2),
            ),
        ];
        // Warm-up: every replica's upstream started and its catalog pinned before anything is timed.
        for arm in &mut arms {
            arm.round(arm.replicas.len(), 20).await;
            *arm = Arm::new(arm.name, std::mem::take(&mut arm.replicas));
        }
        for _ in 0..rounds {
            for arm in &mut arms {
                arm.round(sessions, per_session).await;
            }
        }
        println!(
            "{rounds} alternating rounds of {sessions} concurrent legacy sessions × {per_session} tools/call, per arm \
             (µs; cpu: all the arm's replicas, per call):"
        );
        println!(
            "{:<22} {:>9} {:>9} {:>9} {:>9} {:>7}",
            "arm", "calls/s", "p50", "p99", "cpu", "errors"
        );
        for arm in &mut arms {
            arm.report();
        }
        // The replicas end before the cluster and the state directories go.
        drop(arms);
    });
}
