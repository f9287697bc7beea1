//! The six tasks of the code-mode context benchmark, run once: each `run_code` program must give the answer the
//! direct tool calls give, and code mode must keep at least 90 % of those results out of the context.

use crate::support::{fixture, Setup};
use serde_json::json;
use std::collections::HashMap;
use test_support::{context_tasks, measure, StdioClient};

async fn start(setup: &Setup, extra: &[&str]) -> StdioClient {
    let config = setup.config.to_str().unwrap();
    let mut args = vec!["serve", "--config", config];
    args.extend_from_slice(extra);
    let state = setup.state_dir();
    let env = [("TOOLGATE_STATE_DIR", state.to_str().unwrap())];
    let client =
        StdioClient::spawn(&crate::support::toolgate(), &args, &env, HashMap::new()).unwrap();
    client.initialize("2025-11-25", json!({})).await.unwrap();
    client
}

#[tokio::test]
async fn codemode_programs_answer_the_six_context_tasks_as_direct_calls_do() {
    let setup = Setup::with(|dir| {
        std::fs::create_dir_all(dir.join("ws")).unwrap();
        json!({
            "mcpServers": {"fx": fixture(&["--datasets"])},
            "permissions": {"default": "allow"},
            "workspace": dir.join("ws"),
        })
    });
    let mut direct = start(&setup, &[]).await;
    let mut code = start(&setup, &["--mode", "code"]).await;
    let (mut direct_chars, mut code_chars) = (0, 0);
    for task in context_tasks("fx") {
        let m = measure(&direct, &code, &task)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        direct_chars += m.direct;
        code_chars += m.code();
    }
    // Both servers end before the test does, leaving nothing running behind it.
    for client in [&mut direct, &mut code] {
        client.close(std::time::Duration::from_secs(30)).await;
    }
    assert!(
        code_chars * 10 <= direct_chars,
        "code mode put {code_chars} characters in the context, direct calls {direct_chars}"
    );
}
