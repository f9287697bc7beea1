//! Advisory file locks between two processes serving one workspace on one state (two `Builtin`s, each with its
//! own store connection): the holder writes, the other is refused until the lease is released or lapses, a
//! lease that lapsed no longer covers a write, a patch honours the lock of every file it touches, and a gateway
//! without a state store has no locks to take.

use std::sync::Arc;

use builtin::{
    Builtin, BuiltinConfig, ToolOutcome, APPLY_PATCH, LOCK_ACQUIRE, LOCK_RELEASE, WRITE_FILE,
};
use serde_json::{json, Value};

use crate::{read_to_string, Fixture};

/// Two processes' tools on the fixture's workspace, sharing one state root.
fn two(f: &Fixture) -> (Builtin, Builtin) {
    let state = f.outside().join("state");
    std::fs::create_dir_all(&state).unwrap();
    let tools = || {
        let namespace = store::Namespace::open(&state, &f.root).unwrap();
        let store: Arc<dyn store::StateStore> =
            Arc::new(store::SqliteStore::open(&namespace).unwrap());
        let mut config = BuiltinConfig::new(&f.root);
        config.leases = Some(store);
        Builtin::new(config).unwrap()
    };
    (tools(), tools())
}

fn call(tools: &Builtin, name: &str, args: Value) -> ToolOutcome {
    tools.call_blocking(name, args).unwrap()
}

fn code(outcome: &ToolOutcome) -> &str {
    outcome.structured["error"]["code"].as_str().unwrap_or("")
}

#[test]
fn another_process_cannot_write_a_file_held_by_a_lock() {
    let f = Fixture::new();
    f.write("src/app.py", "v1\n");
    let (a, b) = two(&f);
    let lock = call(
        &a,
        LOCK_ACQUIRE,
        json!({"path": "src/app.py", "owner": "agent-a"}),
    );
    assert_eq!(lock.outcome, "SUCCEEDED", "{}", lock.structured);
    let lease = lock.structured["lease_id"].as_str().unwrap().to_owned();
    assert_eq!(lock.structured["ttl_seconds"], 300);
    // The other process is refused, told who holds it and until when, never the lease id.
    let refused = call(
        &b,
        WRITE_FILE,
        json!({"path": "./src/app.py", "content": "from b"}),
    );
    assert_eq!(
        (refused.outcome.as_str(), code(&refused)),
        ("CONFLICT", "LOCK_CONFLICT")
    );
    let message = refused.structured["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("agent-a") && !message.contains(&lease),
        "{message}"
    );
    let taken = call(
        &b,
        LOCK_ACQUIRE,
        json!({"path": "src/app.py", "owner": "agent-b"}),
    );
    assert_eq!(code(&taken), "LOCK_CONFLICT");
    let patch = "--- a/src/app.py\n+++ b/src/app.py\n@@ -1 +1 @@\n-v1\n+from b\n";
    assert_eq!(
        code(&call(&b, APPLY_PATCH, json!({"patch": patch}))),
        "LOCK_CONFLICT"
    );
    assert_eq!(read_to_string(&f.root.join("src/app.py")), "v1\n");
    // The holder writes under its lease, by either tool.
    let wrote = call(
        &a,
        WRITE_FILE,
        json!({"path": "src/app.py", "content": "v2\n", "lock_lease_id": lease}),
    );
    assert_eq!(wrote.outcome, "SUCCEEDED", "{}", wrote.structured);
    let patch = "--- a/src/app.py\n+++ b/src/app.py\n@@ -1 +1 @@\n-v2\n+v3\n";
    let patched = call(
        &a,
        APPLY_PATCH,
        json!({"patch": patch, "lock_lease_ids": {"src/app.py": lease}}),
    );
    assert_eq!(patched.outcome, "SUCCEEDED", "{}", patched.structured);
    // Released, the file is anyone's again; the old lease covers nothing.
    let released = call(
        &a,
        LOCK_RELEASE,
        json!({"path": "src/app.py", "lease_id": lease}),
    );
    assert_eq!(released.structured["released"], true);
    let again = call(
        &a,
        LOCK_RELEASE,
        json!({"path": "src/app.py", "lease_id": lease}),
    );
    assert_eq!(again.structured["released"], false);
    let stale = call(
        &a,
        WRITE_FILE,
        json!({"path": "src/app.py", "content": "v4", "lock_lease_id": lease}),
    );
    assert_eq!(
        (stale.outcome.as_str(), code(&stale)),
        ("CONFLICT", "LOCK_MISSING")
    );
    let free = call(
        &b,
        WRITE_FILE,
        json!({"path": "src/app.py", "content": "from b"}),
    );
    assert_eq!(free.outcome, "SUCCEEDED", "{}", free.structured);
}

#[test]
fn a_lease_is_renewed_by_its_holder_and_never_by_a_guess() {
    let f = Fixture::new();
    let (a, b) = two(&f);
    let lock = call(
        &a,
        LOCK_ACQUIRE,
        json!({"path": "notes.md", "ttl_seconds": 60}),
    );
    let lease = lock.structured["lease_id"].as_str().unwrap().to_owned();
    assert_eq!(lock.structured["owner"], "agent");
    let renewed = call(
        &b,
        LOCK_ACQUIRE,
        json!({"path": "notes.md", "ttl_seconds": 600, "lease_id": lease}),
    );
    assert_eq!(
        renewed.structured["renewed"], true,
        "the lease id is what proves the holder"
    );
    let guess = format!("lease_{}", "0".repeat(32));
    let guessed = call(
        &b,
        LOCK_ACQUIRE,
        json!({"path": "notes.md", "lease_id": guess}),
    );
    assert_eq!(code(&guessed), "LOCK_CONFLICT");
    let release = call(
        &b,
        LOCK_RELEASE,
        json!({"path": "notes.md", "lease_id": guess}),
    );
    assert_eq!(
        code(&release),
        "LOCK_CONFLICT",
        "a guessed lease releases nothing"
    );
    for bad in [
        json!({"path": "notes.md", "ttl_seconds": 0}),
        json!({"path": "notes.md", "ttl_seconds": 3601}),
        json!({"path": "notes.md", "owner": ""}),
        json!({"path": "."}),
    ] {
        assert!(a.call_blocking(LOCK_ACQUIRE, bad.clone()).is_err(), "{bad}");
    }
    let outside = call(&a, LOCK_ACQUIRE, json!({"path": "../elsewhere.txt"}));
    assert_eq!(code(&outside), "PATH_OUTSIDE_WORKSPACE");
}

#[test]
fn a_patch_honours_the_lock_of_every_file_it_touches() {
    let f = Fixture::new();
    f.write("one.txt", "1\n");
    f.write("two.txt", "2\n");
    let (a, b) = two(&f);
    let lease = call(
        &b,
        LOCK_ACQUIRE,
        json!({"path": "two.txt", "owner": "agent-b"}),
    )
    .structured["lease_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let patch = "--- a/one.txt\n+++ b/one.txt\n@@ -1 +1 @@\n-1\n+one\n\
                 --- a/two.txt\n+++ b/two.txt\n@@ -1 +1 @@\n-2\n+two\n";
    let refused = call(&a, APPLY_PATCH, json!({"patch": patch}));
    assert_eq!(code(&refused), "LOCK_CONFLICT");
    assert_eq!(
        read_to_string(&f.root.join("one.txt")),
        "1\n",
        "all or nothing"
    );
    let stray = a.call_blocking(
        APPLY_PATCH,
        json!({"patch": patch, "lock_lease_ids": {"three.txt": lease}}),
    );
    assert!(
        stray.is_err(),
        "a lease for a file the patch does not touch is a mistake"
    );
    let done = call(
        &b,
        APPLY_PATCH,
        json!({"patch": patch, "lock_lease_ids": {"two.txt": lease}}),
    );
    assert_eq!(done.outcome, "SUCCEEDED", "{}", done.structured);
    assert_eq!(read_to_string(&f.root.join("two.txt")), "two\n");
}

#[test]
fn without_a_state_store_there_are_no_locks() {
    let f = Fixture::new();
    let taken = f.call(LOCK_ACQUIRE, json!({"path": "a.txt"}));
    assert_eq!(
        (taken.outcome.as_str(), code(&taken)),
        ("FAILED", "LOCKS_UNAVAILABLE")
    );
    let lease = format!("lease_{}", "1".repeat(32));
    let claimed = f.call(
        WRITE_FILE,
        json!({"path": "a.txt", "content": "x", "lock_lease_id": lease}),
    );
    assert_eq!(
        code(&claimed),
        "LOCKS_UNAVAILABLE",
        "a lease presented is never taken on trust"
    );
    assert_eq!(
        f.call(WRITE_FILE, json!({"path": "a.txt", "content": "x"}))
            .outcome,
        "SUCCEEDED"
    );
}
