//! Code mode's bounds end to end, through the real binary and its worker: a call a program dropped when it
//! returned is cancelled upstream, a session's saved files are deleted when it ends, and one identity's flood
//! over HTTP (2026-07-28 requests, each a session of its own) does not make another identity's trivial run
//! wait behind it. And program after program leaves no process behind: each run's worker tree is killed when
//! it ends, and the namespace init it orphans, adopted by toolgate, is reaped.

use crate::support::{toolgate, Setup};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::time::{Duration, Instant};
use test_support::{returned, run_params, StdioClient};
use tokio::io::{AsyncBufReadExt, BufReader};

fn code_setup(settings: Value) -> Setup {
    let mut extra = json!({"mode": "code", "pins": {"newTools": "accept"}});
    if let Value::Object(more) = settings {
        for (k, v) in more {
            extra[k] = v;
        }
    }
    Setup::fixture(&[], extra)
}

async fn serve_code(setup: &Setup) -> StdioClient {
    let client = setup.serve_with(HashMap::new(), &[]);
    client.initialize("2025-11-25", json!({})).await.unwrap();
    client
}

async fn run(client: &StdioClient, program: &str) -> Value {
    let r = client
        .request("tools/call", run_params(program))
        .await
        .unwrap();
    returned(&r).cloned().unwrap_or_else(|| panic!("{r}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_dropped_by_a_returning_program_is_cancelled_upstream() {
    let setup = code_setup(json!({}));
    let client = serve_code(&setup).await;
    // The first call is never awaited; the second keeps the program alive until the first surely runs.
    let program = "call(\"fx__slow\", {steps: 400, delay_ms: 25});\n\
                   await call(\"fx__slow\", {steps: 2, delay_ms: 150});\n\
                   return 1;";
    assert_eq!(run(&client, program).await, json!(1));
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let seen = run(&client, "return await call(\"fx__cancelled\", {});").await;
        if seen["cancelled"] == 1 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the upstream was never told: {seen}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut client = client;
    client.close(Duration::from_secs(10)).await;
}

/// The children of `pid` that exited and were not reaped (zombies), from every thread's `children` list.
fn zombie_children(pid: u32) -> Vec<String> {
    crate::support::children(pid)
        .into_iter()
        .filter_map(|child| {
            let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
            // The state follows the name, which ends at the last `)`.
            let state = stat.rsplit_once(") ").map(|(_, rest)| &rest[..1]);
            (state == Some("Z")).then_some(stat)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn program_after_program_fills_no_process_table_with_zombies() {
    let setup = code_setup(json!({}));
    let mut client = serve_code(&setup).await;
    let pid = client.pid().unwrap();
    const RUNS: usize = 24;
    for i in 0..RUNS {
        assert_eq!(run(&client, &format!("return {i};")).await, json!(i));
    }
    // Each run's tree was killed as it ended; what it orphaned is reaped within a second or so.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let zombies = zombie_children(pid);
        if zombies.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{} of {RUNS} runs left a zombie in toolgate's process table: {zombies:?}",
            zombies.len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // And toolgate still serves: nothing it waits for itself was taken from it.
    assert_eq!(run(&client, "return \"after\";").await, json!("after"));
    client.close(Duration::from_secs(10)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn saved_files_are_deleted_when_their_session_ends() {
    let setup = code_setup(json!({}));
    let mut client = serve_code(&setup).await;
    let path = run(
        &client,
        "return await saveFile(\"notes.txt\", \"x\".repeat(5000));",
    )
    .await;
    let path = std::path::PathBuf::from(path.as_str().unwrap());
    assert!(path.starts_with(setup.state_dir()), "{}", path.display());
    assert!(path.exists());
    // The session's later run still reads it.
    let read = format!("return (await readFile({path:?})).length;");
    assert_eq!(run(&client, &read).await, json!(5000));
    client.close(Duration::from_secs(10)).await;
    let dir = path.parent().unwrap();
    assert!(!dir.exists(), "{} outlived its session", dir.display());
}

const FLOOD_KEY: &str = "flood-key-0123456789abcdef";
const QUIET_KEY: &str = "quiet-key-0123456789abcdef";

/// `toolgate serve --http --mode code` on a free loopback port; its URL, and the process (killed when dropped).
async fn serve_http(setup: &Setup) -> (String, tokio::process::Child) {
    let mut child = tokio::process::Command::new(toolgate())
        .args(["serve", "--http", "127.0.0.1:0", "--config"])
        .arg(&setup.config)
        .env("TOOLGATE_STATE_DIR", setup.state_dir())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(rest) = line.split("http://").nth(1) {
                return rest.trim_end_matches("/mcp").to_owned();
            }
        }
        panic!("toolgate exited before serving");
    })
    .await
    .expect("toolgate serves within a minute");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (format!("http://{addr}/mcp"), child)
}

/// One 2026-07-28 `run_code` request (a session of its own) with `key`: the value the program returned, or the
/// answer that had none.
async fn run_http(
    http: &reqwest::Client,
    url: &str,
    key: &str,
    program: &str,
) -> Result<Value, String> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "run_code", "arguments": {"code": program},
        "_meta": test_support::modern_meta()}});
    let resp = http
        .post(url)
        .bearer_auth(key)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "run_code")
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let text = resp.text().await.map_err(|e| e.to_string())?;
    let answer: Value = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .chain(std::iter::once(text.as_str()))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|m| m.get("id").is_some())
        .ok_or_else(|| format!("no answer in {text:?}"))?;
    returned(&answer["result"])
        .cloned()
        .ok_or_else(|| answer.to_string())
}

/// The median of how long `n` quiet runs took, one after another.
async fn quiet_median(http: &reqwest::Client, url: &str, n: usize) -> Duration {
    let mut took = Vec::new();
    for _ in 0..n {
        let t = Instant::now();
        let sum = run_http(
            http,
            url,
            QUIET_KEY,
            "return (await call(\"fx__add\", {a: 1, b: 2})).sum;",
        )
        .await;
        assert_eq!(sum, Ok(json!(3)));
        took.push(t.elapsed());
    }
    took.sort();
    took[n / 2]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quiet_identity_keeps_its_latency_while_another_floods() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let digest = |k: &str| hex::encode(Sha256::digest(k.as_bytes()));
    let setup = code_setup(json!({"http": {"auth": {"apiKeys": [
        {"name": "flood", "sha256": digest(FLOOD_KEY)},
        {"name": "quiet", "sha256": digest(QUIET_KEY)},
    ]}}}));
    let (url, _served) = serve_http(&setup).await;
    let http = reqwest::Client::new();
    let idle = quiet_median(&http, &url, 5).await;
    // The flood: 16 requests of another identity at once, each a program of 300 concurrent calls, sent again
    // as each ends, until the quiet caller is done.
    let flood = "const r = await Promise.all(Array.from({length: 300}, (_, i) => \
                 call(\"fx__echo\", {text: String(i)}))); return r.length;";
    let stop = tokio_util::sync::CancellationToken::new();
    let mut flooders = tokio::task::JoinSet::new();
    for _ in 0..16 {
        let (http, url, stop) = (http.clone(), url.clone(), stop.clone());
        flooders.spawn(async move {
            let mut runs = 0;
            while !stop.is_cancelled() {
                // A request over the front end's own limits may be turned away; the flood goes on regardless.
                if run_http(&http, &url, FLOOD_KEY, flood).await == Ok(json!(300)) {
                    runs += 1;
                }
            }
            runs
        });
    }
    // Saturated: the flood holds its share of workers before the quiet caller measures.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let flooded = quiet_median(&http, &url, 5).await;
    stop.cancel();
    let runs: u32 = flooders.join_all().await.into_iter().sum();
    assert!(runs >= 1, "the flood ran");
    // Generous, for a loaded machine: within ten times idle (plus a second of scheduling noise), where one
    // queue over everything made it wait for the whole flood ahead of it.
    assert!(
        flooded <= idle * 10 + Duration::from_secs(1),
        "the quiet identity's run took {flooded:?} during the flood, {idle:?} idle"
    );
}
