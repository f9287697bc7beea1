//! The store's part of a first pin pass over a large catalog: `observe_pins` of N new definitions shaped like an
//! upstream's tools, in a fresh SQLite store, as the gateway's first pass makes it (no hashes given). Prints the
//! process's CPU time and the wall time of each pass, and the pins generation after it.
//!
//! Run: `cargo run --release -p store --example pin_pass -- 50000 5` (definitions, passes).

#![allow(clippy::unwrap_used, clippy::print_stdout)]

mod common;

use serde_json::json;
use std::time::Instant;
use store::{FirstUse, Namespace, PinObservation, Store, Timestamp};

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(50_000, |a| a.parse().unwrap());
    let passes: usize = args.next().map_or(3, |a| a.parse().unwrap());
    let defs: Vec<_> = (0..n)
        .map(|i| {
            json!({"name": format!("tool_{i:05}"), "description": format!("Dataset tool number {i}, returns rows."),
                   "inputSchema": {"type": "object", "properties": {"query": {"type": "string"},
                   "limit": {"type": "integer", "minimum": 1}}, "required": ["query"]}})
        })
        .collect();
    let names: Vec<_> = (0..n).map(|i| format!("big__tool_{i:05}")).collect();
    let items: Vec<_> = names
        .iter()
        .zip(&defs)
        .map(|(name, definition)| PinObservation {
            name,
            definition,
            sha256: None,
            first_use: FirstUse::Accept,
        })
        .collect();
    for pass in 1..=passes {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let ns = Namespace::open(&dir.path().join("state"), &ws).unwrap();
        let mut store = Store::open(&ns).unwrap();
        let (c0, t0) = (common::cpu(), Instant::now());
        let checks = store.observe_pins(&items, Timestamp::now()).unwrap();
        let (c1, t1) = (common::cpu(), t0.elapsed());
        assert!(checks.iter().all(Result::is_ok));
        println!(
            "pass {pass}: {n} new pins, cpu {:.3} s, wall {:.3} s, generation {}",
            c1 - c0,
            t1.as_secs_f64(),
            store.pins_generation().unwrap()
        );
    }
}
