//! How much less enters a model's context in code mode: six tasks (filter, join, count, top-k, diff, aggregate)
//! over the fixture's dataset tools, each done with direct tool calls through `toolgate serve` and with one
//! `search_tools` and one `run_code` through `toolgate serve --mode code`. Deterministic and with no model: the
//! calls are the ones a model would need, the counts are characters of the results the client receives, and a
//! task whose two answers differ fails the bench.
//!
//! Run: `cargo bench -p toolgate --bench codemode_context`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use serde_json::json;
use std::time::Duration;
use test_support::{context_tasks, list_all, measure};

fn pct(part: usize, whole: usize) -> f64 {
    100.0 * (1.0 - part as f64 / whole as f64)
}

fn main() {
    let rt = common::runtime();
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let config = dir.path().join("bench.json");
        let body = json!({
            "mcpServers": {"fx": {"command": common::toolgate(), "args": ["fixture-server", "--datasets"]}},
            "permissions": {"default": "allow"},
            "stateDir": dir.path().join("state"),
            "workspace": ws,
        });
        std::fs::write(&config, body.to_string()).unwrap();
        let config = config.to_str().unwrap().to_owned();
        let mut direct = common::serve(&config, &[]).await;
        let mut code = common::serve(&config, &["--mode", "code"]).await;

        let listed = |tools: &Vec<serde_json::Value>| json!({ "tools": tools }).to_string().len();
        let direct_list = list_all(&direct, "tools/list", "tools", None).await.unwrap();
        let code_list = list_all(&code, "tools/list", "tools", None).await.unwrap();

        println!("Six tasks over the fixture's dataset tools, characters that enter the context:");
        println!("(whole results, content and structuredContent and all, on both sides; \"text only\": text items alone, both sides)");
        println!(
            "{:<10} {:>10} {:>10} {:>8} {:>8} {:>8} {:>10} {:>10} {:>12}",
            "task", "direct", "text only", "search", "run", "code", "code text", "reduction", "text only"
        );
        let (mut direct_sum, mut text_sum, mut code_sum, mut program_sum) = (0, 0, 0, 0);
        let mut code_text_sum = 0;
        let mut failed = Vec::new();
        for task in context_tasks("fx") {
            match measure(&direct, &code, &task).await {
                Ok(m) => {
                    println!(
                        "{:<10} {:>10} {:>10} {:>8} {:>8} {:>8} {:>10} {:>9.1}% {:>11.1}%",
                        task.name,
                        m.direct,
                        m.direct_text,
                        m.search,
                        m.run,
                        m.code(),
                        m.code_text,
                        pct(m.code(), m.direct),
                        pct(m.code_text, m.direct_text)
                    );
                    code_text_sum += m.code_text;
                    direct_sum += m.direct;
                    text_sum += m.direct_text;
                    code_sum += m.code();
                    program_sum += m.program;
                }
                Err(e) => failed.push(e),
            }
        }
        println!(
            "{:<10} {:>10} {:>10} {:>8} {:>8} {:>8} {:>10} {:>9.1}% {:>11.1}%",
            "overall",
            direct_sum,
            text_sum,
            "",
            "",
            code_sum,
            code_text_sum,
            pct(code_sum, direct_sum),
            pct(code_text_sum, text_sum)
        );
        println!(
            "Counting the programs too (the model writes them: {program_sum} characters): {:.1}% overall.",
            pct(code_sum + program_sum, direct_sum)
        );
        println!(
            "tools/list: {} tools, {} characters in direct mode; {} tools, {} characters in code mode.",
            direct_list.len(),
            listed(&direct_list),
            code_list.len(),
            listed(&code_list)
        );
        println!("Goal: overall reduction ≥ 90 %.");
        for client in [&mut direct, &mut code] {
            client.close(Duration::from_secs(30)).await;
        }
        assert!(failed.is_empty(), "tasks failed:\n{}", failed.join("\n"));
    });
}
