//! Generated-corpus property: for every spelling of a path or a file URI, the file toolgate decides on is the file
//! the real server-filesystem reads, or toolgate refuses the call.
//!
//! The server runs in a tree where every file holds its own canonical path: what the server read is in the answer,
//! what toolgate decided on is in the audit log. The corpus is deterministic and runs in seconds; a missing peer
//! fails the test.

use crate::support::{call, legacy, peers, Setup};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

fn server_filesystem() -> std::path::PathBuf {
    let path = peers().join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    assert!(
        path.is_file(),
        "{} is missing: run scripts/test",
        path.display()
    );
    path
}

/// Files of the tree, relative to the workspace; each holds its canonical path. The NFC and NFD spellings of
/// `é` and the two cases of `a.txt` are different files on Linux.
const FILES: [&str; 9] = [
    "a.txt",
    "A.txt",
    "dir/b.txt",
    "dir/sub/c.txt",
    "\u{e9}.txt",
    "e\u{301}.txt",
    "sp ace.txt",
    "pct%41.txt",
    "dir/.hidden",
];

/// Spellings of one file `rel` of the workspace `ws`: relative, absolute, `./`, `//`, `..` detours, trailing
/// slash and whitespace, case, Unicode normal forms, percent-encoding and `file:` URIs. Generated paths follow.
fn path_spellings(ws: &str, rel: &str) -> Vec<String> {
    let abs = format!("{ws}/{rel}");
    let mut out = vec![
        rel.to_owned(),
        abs.clone(),
        format!("./{rel}"),
        format!("{ws}//{rel}"),
        format!("{ws}/./{rel}"),
        rel.replace('/', "//"),
        format!("dir/../{rel}"),
        format!("dir/sub/../../{rel}"),
        format!("{ws}/dir/../{rel}"),
        format!("../ws/{rel}"),
        format!("{ws}/../ws/{rel}"),
        format!("{abs}/"),
        format!("{rel}/."),
        format!("{rel} "),
        format!("\"{abs}\""),
        rel.to_uppercase(),
        abs.to_uppercase(),
        rel.to_lowercase(),
        rel.replace('\u{e9}', "e\u{301}"),
        rel.replace("e\u{301}", "\u{e9}"),
        rel.replace('a', "%61"),
        rel.replace('.', "%2e"),
        rel.replace(' ', "%20"),
        rel.replace("%41", "A"),
        format!("file://{abs}"),
        format!("file:{abs}"),
        format!("file://localhost{abs}"),
        format!("FILE://{abs}"),
        format!("file://{}", abs.replace(' ', "%20")),
        format!("file://{}", abs.replace('a', "%61")),
        format!("~/../..{abs}"),
    ];
    out.sort();
    out.dedup();
    out
}

/// Path segments that resolvers read differently: dots, empty segments, `~`, `file:`, case, NFC and NFD,
/// percent-encoding, invisible characters, look-alike slashes and dots, trailing space and quotes, symlinks.
const SEGMENTS: [&str; 35] = [
    "a.txt",
    "A.txt",
    "dir",
    "sub",
    "..",
    ".",
    "",
    "\u{e9}.txt",
    "e\u{301}.txt",
    "%2e",
    "%2f",
    "~",
    "file:",
    "A.TXT",
    "link.txt",
    "dirlink",
    " ",
    "\\",
    "b.txt",
    "c.txt",
    ".hidden",
    "ws",
    "DIR",
    "\u{ff0f}",
    "\u{2024}",
    "..\u{200b}",
    "a.txt ",
    "\"",
    "'",
    "\u{feff}",
    "\t",
    "localhost",
    "%61.txt",
    "pct%41.txt",
    "sp ace.txt",
];

/// `count` paths joined from [`SEGMENTS`] by a fixed linear congruential sequence (so every run tries the same
/// ones), under the workspace, relative, or after `/`, `./`, `../`, `~/` or a `file:` prefix.
fn generated_paths(ws: &str, count: usize) -> Vec<String> {
    let prefixes = ["", "/", "./", "../", "~/", "file://", "file:"];
    let mut state: u64 = 0x1234_5678_9abc_def1;
    let mut next = |n: usize| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) as usize % n
    };
    (0..count)
        .map(|_| {
            let segments = 1 + next(5);
            let body: Vec<&str> = (0..segments)
                .map(|_| SEGMENTS[next(SEGMENTS.len())])
                .collect();
            match next(3) {
                0 => format!("{ws}/{}", body.join("/")),
                _ => format!("{}{}", prefixes[next(prefixes.len())], body.join("/")),
            }
        })
        .collect()
}

/// The decision events of `read_text_file` calls in the audit log, in order, once there are `count` of them.
fn audited_reads(setup: &Setup, ws: &Path, count: usize) -> Vec<Value> {
    let ns = store::Namespace::open(&setup.state_dir(), ws).unwrap();
    let log = ns.dir().join("audit.jsonl");
    // The log is written behind the calls: wait for the last one.
    for _ in 0..200 {
        let events: Vec<Value> = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|e| e["kind"] == "decision" && e["tool"] == "read_text_file")
            .collect();
        if events.len() >= count {
            return events;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the audit log never held {count} decisions on read_text_file");
}

#[tokio::test]
async fn paths_resolve_as_server_filesystem_reads_them_or_are_refused() {
    let setup = Setup::with(|root| {
        let ws = root.join("ws");
        std::fs::create_dir_all(ws.join("dir/sub")).unwrap();
        let real = std::fs::canonicalize(&ws).unwrap();
        for rel in FILES {
            std::fs::write(ws.join(rel), real.join(rel).to_str().unwrap()).unwrap();
        }
        std::os::unix::fs::symlink("dir/b.txt", ws.join("link.txt")).unwrap();
        std::os::unix::fs::symlink("dir", ws.join("dirlink")).unwrap();
        // Two allowed directories: a relative path resolves against the first one it stays within, else the first.
        let args = json!([server_filesystem(), ws.join("dir"), ws]);
        json!({"workspace": ws, "permissions": {"default": "allow"},
               "mcpServers": {"files": {"command": "node", "args": args}}})
    });
    let ws = setup.workspace();
    let ws_str = ws.to_str().unwrap().to_owned();
    let mut client = legacy(&setup).await;
    let mut targets: Vec<String> = FILES.iter().map(|f| f.to_string()).collect();
    targets.extend(["link.txt".into(), "dirlink/b.txt".into()]);
    let mut sent = Vec::new();
    for rel in &targets {
        for spelling in path_spellings(&ws_str, rel) {
            let result = call(&client, "files__read_text_file", json!({"path": spelling}))
                .await
                .unwrap_or_else(|e| e);
            sent.push((spelling, result));
        }
    }
    for spelling in generated_paths(&ws_str, 400) {
        let result = call(&client, "files__read_text_file", json!({"path": spelling}))
            .await
            .unwrap_or_else(|e| e);
        sent.push((spelling, result));
    }
    // server-filesystem does not exit when its stdin closes: toolgate ends its process group after a grace period.
    assert!(client.close(Duration::from_secs(10)).await.is_some());
    let events = audited_reads(&setup, &ws, sent.len());
    let (mut agreed, mut refused) = (0, 0);
    for ((spelling, result), event) in sent.iter().zip(&events) {
        let read = result["isError"] != true;
        let allowed = event["decision"] == "allow";
        if !allowed {
            refused += 1;
            assert!(
                !read,
                "{spelling:?} was refused by toolgate yet read: {result}"
            );
            continue;
        }
        if !read {
            // The server refused or found nothing: nothing was disclosed, there is nothing to compare.
            continue;
        }
        let server = crate::support::text(result);
        assert_eq!(
            event["resources"],
            json!([server]),
            "{spelling:?}: toolgate decided on {} but the server read {server}",
            event["resources"]
        );
        agreed += 1;
    }
    // The corpus must exercise both outcomes, or the property says nothing.
    assert!(
        agreed >= targets.len() && refused > 0,
        "agreed {agreed}, refused {refused}"
    );
}
