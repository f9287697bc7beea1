//! `search_tools` over a catalog of 10,000 tools: the index build once, then queries of one to four words
//! (names, description words, prefixes, no match), each timed alone, reported as percentiles. Deterministic: the
//! catalog and the queries come from a fixed seed, so two runs measure the same work.
//!
//! Run with `cargo bench -p codemode --bench search`.

#![allow(clippy::print_stdout)]

use codemode::{SearchIndex, ToolDoc};
use serde_json::json;
use std::hint::black_box;
use std::time::{Duration, Instant};

const TOOLS: usize = 10_000;
const ROUNDS: usize = 20_000;
const LIMIT: usize = 10;

const SERVERS: [&str; 25] = [
    "files", "git", "github", "gitlab", "tracker", "slack", "mail", "calendar", "drive", "docs",
    "sheets", "jira", "linear", "notion", "postgres", "sqlite", "redis", "s3", "k8s", "docker",
    "browser", "search", "weather", "maps", "billing",
];
const VERBS: [&str; 20] = [
    "get", "list", "create", "update", "delete", "search", "read", "write", "move", "copy",
    "archive", "restore", "sync", "export", "import", "watch", "count", "merge", "close", "open",
];
const NOUNS: [&str; 40] = [
    "file",
    "directory",
    "issue",
    "comment",
    "message",
    "channel",
    "event",
    "user",
    "team",
    "project",
    "branch",
    "commit",
    "pullRequest",
    "label",
    "milestone",
    "page",
    "database",
    "table",
    "row",
    "column",
    "bucket",
    "object",
    "pod",
    "deployment",
    "container",
    "image",
    "tab",
    "cookie",
    "forecast",
    "route",
    "invoice",
    "customer",
    "subscription",
    "ticket",
    "sprint",
    "document",
    "sheet",
    "cell",
    "thread",
    "draft",
];

/// A small deterministic generator (xorshift), so the catalog is the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.next() % items.len()]
    }
}

fn catalog(rng: &mut Rng) -> Vec<ToolDoc> {
    (0..TOOLS)
        .map(|i| {
            let (server, verb, noun) = (rng.pick(&SERVERS), rng.pick(&VERBS), rng.pick(&NOUNS));
            let other = rng.pick(&NOUNS);
            ToolDoc {
                name: format!("{server}__{verb}_{noun}_{i}"),
                title: Some(format!("{verb} {noun}")),
                description: format!(
                    "{verb} a {noun} in {server}, with its {other} and the related metadata. \
                     Returns the {noun} as JSON, paginated with a cursor."
                ),
                input_schema: json!({"type": "object", "required": ["id"], "properties": {
                    "id": {"type": "string"},
                    format!("{other}Id"): {"type": "string"},
                    "limit": {"type": "integer"},
                    "cursor": {"type": "string"},
                    "state": {"enum": ["open", "closed", "all"]}}}),
            }
        })
        .collect()
}

fn queries(rng: &mut Rng) -> Vec<String> {
    let mut out = vec![
        String::new(),
        "zzz nothing".to_owned(),
        "dir".to_owned(),
        "pull request".to_owned(),
        "github list pull requests".to_owned(),
    ];
    for _ in 0..59 {
        let words = 1 + rng.next() % 3;
        let query: Vec<&str> = (0..words)
            .map(|w| match w {
                0 => rng.pick(&VERBS),
                1 => rng.pick(&NOUNS),
                _ => rng.pick(&SERVERS),
            })
            .collect();
        out.push(query.join(" "));
    }
    out
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let at = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[at]
}

fn main() {
    let mut rng = Rng(0x5eed_cafe_f00d_d00d);
    let docs = catalog(&mut rng);
    let queries = queries(&mut rng);

    let started = Instant::now();
    let index = SearchIndex::build(docs);
    let build = started.elapsed();

    // Warm the caches once over every query before timing.
    for q in &queries {
        black_box(index.search(q, LIMIT));
    }
    let mut times = Vec::with_capacity(ROUNDS);
    for round in 0..ROUNDS {
        let query = &queries[round % queries.len()];
        let started = Instant::now();
        black_box(index.search(black_box(query), LIMIT));
        times.push(started.elapsed());
    }
    times.sort_unstable();
    println!(
        "search_tools over {} tools (limit {LIMIT}, {ROUNDS} searches, {} queries)",
        index.len(),
        queries.len()
    );
    println!("  index build: {:.1} ms", build.as_secs_f64() * 1e3);
    for (label, p) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("max", 1.0)] {
        println!(
            "  {label}: {:.1} µs",
            percentile(&times, p).as_secs_f64() * 1e6
        );
    }
}
