//! The README's quick start, run as written on a fresh home and state directory: its shell lines (the install
//! replaced by the binary under test, `/path/to/project` by a temporary project, the pinned `npx` package by
//! the same package installed in the test peers, and the second terminal's `approvals watch` by `approvals
//! list`, which needs no terminal), then the client entry `doctor` prints, driven by a client that reads a file, is
//! refused a `.env` with the rule that refused it, and finds toolgate's approval tools listed.

use crate::support::toolgate;
use serde_json::json;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use test_support::{list_all, StdioClient};

fn peers() -> PathBuf {
    std::env::var_os("TOOLGATE_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/peers"))
}

/// The quick start's shell block, from the README.
fn quick_start() -> String {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .unwrap();
    let start = readme
        .find("## Quick start")
        .expect("a quick start section");
    let block = &readme[start..];
    let open = block.find("```sh\n").expect("a sh block") + "```sh\n".len();
    let close = block[open..].find("\n```").expect("the block's end");
    block[open..open + close].to_owned()
}

#[tokio::test]
async fn the_readme_quick_start_works_as_written_on_a_fresh_state_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let (home, project, bin) = (root.join("home"), root.join("project"), root.join("bin"));
    for d in [&home, &project.join("src"), &bin] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(project.join(".env"), "TOKEN=hunter2\n").unwrap();
    std::fs::write(project.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::os::unix::fs::symlink(toolgate(), bin.join("toolgate")).unwrap();
    let server = peers().join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    assert!(
        server.is_file(),
        "{} is missing: run scripts/test",
        server.display()
    );

    let text = quick_start();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines.len() <= 10,
        "the quick start is {} lines",
        lines.len()
    );
    assert!(
        lines[0].starts_with("cargo install --locked --path crates/cli"),
        "{}",
        lines[0]
    );
    let watch = lines.last().unwrap();
    assert!(watch.starts_with("toolgate approvals watch"), "{watch}");
    let script = lines[1..lines.len() - 1]
        .join("\n")
        .replace("/path/to/project", &project.to_string_lossy())
        .replace("command = \"npx\"", "command = \"node\"")
        .replace(
            "\"-y\", \"@modelcontextprotocol/server-filesystem@2026.8.31\"",
            &format!("{:?}", server.to_string_lossy()),
        );
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = |script: &str| {
        Command::new("bash")
            .args(["-euo", "pipefail", "-c", script])
            .current_dir(&root)
            .env("HOME", &home)
            .env("PATH", &path)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("TOOLGATE_STATE_DIR")
            .output()
            .unwrap()
    };
    let out = run(&script);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("files"),
        "doctor names the server: {stdout}"
    );
    let config = home.join(".config/toolgate/config.toml");
    let entry = format!(
        "\"args\":[\"serve\",\"--config\",{:?},\"--workspace\",{:?}]",
        config.to_string_lossy(),
        project.to_string_lossy()
    );
    assert!(
        stdout.contains("client entry") && stdout.contains(&entry),
        "doctor shows the client entry with absolute paths: {stdout}"
    );
    let list = watch.replacen("approvals watch", "approvals list", 1);
    let listed = run(&list.replace("/path/to/project", &project.to_string_lossy()));
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );

    // The client entry doctor printed.
    let client = StdioClient::spawn(
        &toolgate(),
        &[
            "serve",
            "--config",
            &config.to_string_lossy(),
            "--workspace",
            &project.to_string_lossy(),
        ],
        &[("HOME", &home.to_string_lossy()), ("PATH", &path)],
        HashMap::new(),
    )
    .unwrap();
    client.initialize("2025-11-25", json!({})).await.unwrap();
    let tools = list_all(&client, "tools/list", "tools", None)
        .await
        .unwrap();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"toolgate_resume"), "{names:?}");
    let read = *names
        .iter()
        .find(|n| n.starts_with("files") && n.ends_with("read_text_file"))
        .unwrap_or_else(|| panic!("{names:?}"));
    let call = |path: PathBuf| {
        client.request(
            "tools/call",
            json!({"name": read, "arguments": {"path": path}}),
        )
    };
    let main = call(project.join("src/main.rs")).await.unwrap();
    assert!(main.to_string().contains("fn main"), "{main}");
    let env = call(project.join(".env")).await;
    let text = match env {
        Ok(v) => v.to_string(),
        Err(e) => e.to_string(),
    };
    assert!(
        text.contains("deny-dotenv") && !text.contains("hunter2"),
        "{text}"
    );
}
