//! Measures how much this process's peak RSS grows while a sandboxed command prints 1 GiB to stdout, and the
//! layer support found by `probe()`. It only reports; the bound itself is asserted by the test suite.
//!
//! Reproduce: `cargo run --release -p sandbox --example flood_rss`

use std::time::{Duration, Instant};

use sandbox::{probe, run, CommandSpec, LayerMode};

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    for entry in probe().entries {
        println!("layer {:<14} {:?}", entry.layer.as_str(), entry.state);
    }
    let spec = CommandSpec::new("/bin/sh", "/")
        .args(["-c", "head -c 1073741824 /dev/zero"])
        .env("PATH", "/usr/bin:/bin")
        .timeout(Duration::from_secs(120));
    run(&CommandSpec::new("/bin/true", "/"))?;
    let before = peak_rss_kib();
    let start = Instant::now();
    let result = run(&spec)?;
    let growth = peak_rss_kib().saturating_sub(before);
    println!(
        "outcome {:?}; stdout total {} retained {} dropped {}; {:?}; peak RSS growth {} KiB",
        result.outcome,
        result.stdout.total_bytes,
        result.stdout.retained_bytes,
        result.stdout.dropped_bytes,
        start.elapsed(),
        growth
    );

    // Spawn cost with every layer on, for comparison with the design's measurement.
    let mut all = CommandSpec::new("/bin/true", "/");
    all.layers.no_network = LayerMode::BestEffort;
    all.layers.landlock = LayerMode::BestEffort;
    all.layers.writable_paths = vec![std::env::current_dir()?];
    all.layers.rlimits = LayerMode::BestEffort;
    all.layers.socket_filter = LayerMode::BestEffort;
    all.layers.private_tmp = true;
    // A protected directory beside the state root's usual place, so Landlock's grant list is split as in use.
    all.layers.protected_paths = vec![std::env::temp_dir().join("toolgate-example-state")];
    let runs = 50u32;
    let start = Instant::now();
    for _ in 0..runs {
        run(&all)?;
    }
    println!(
        "/bin/true with every layer: {:?} per run",
        start.elapsed() / runs
    );
    Ok(())
}
