//! The policy fuzz targets' corpora run on every test run, through the very functions the targets call
//! (`fuzz/fuzz_targets/policy_entries.rs`), so a seed that once crashed stays fixed without a fuzzer installed.

use std::path::Path;

#[path = "../../../../fuzz/fuzz_targets/policy_entries.rs"]
mod policy_entries;

fn run_corpus(target: &str, entry: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{} has no seeds", dir.display());
    for file in files {
        let data = std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        if let Err(panic) = std::panic::catch_unwind(|| entry(&data)) {
            std::panic::resume_unwind(Box::new(format!("{}: {panic:?}", file.display())));
        }
    }
}

#[test]
fn policy_decide_corpus_runs_clean() {
    run_corpus("policy_decide", policy_entries::decide);
}

#[test]
fn policy_load_corpus_runs_clean() {
    run_corpus("policy_load", policy_entries::load);
}

#[test]
fn policy_definition_corpus_runs_clean() {
    run_corpus("policy_definition", policy_entries::definition);
}
