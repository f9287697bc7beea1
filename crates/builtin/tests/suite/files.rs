//! Reads, atomic writes with expected hashes, size caps, binary detection and all-or-nothing patches.

use builtin::{sha256_hex, APPLY_PATCH, LIST_DIRECTORY, READ_FILE, WRITE_FILE};
use serde_json::json;

use crate::{assert_refused, read_to_string, Fixture};

#[test]
fn write_then_read_round_trip_with_hash() {
    let f = Fixture::new();
    let w = f.call(
        WRITE_FILE,
        json!({"path": "dir/new.txt", "content": "hello\n"}),
    );
    assert_eq!(w.outcome, "SUCCEEDED", "{}", w.structured);
    assert_eq!(w.structured["created"], true);
    let r = f.call(READ_FILE, json!({"path": "dir/new.txt"}));
    assert_eq!(r.structured["content"], "hello\n");
    assert_eq!(r.structured["sha256"], sha256_hex(b"hello\n"));
    let result = r.to_call_result();
    assert_eq!(result["isError"], false);
    assert_eq!(result["structuredContent"]["outcome"], "SUCCEEDED");
}

#[test]
fn stale_expected_hash_is_a_conflict() {
    let f = Fixture::new();
    f.write("a.txt", "v1");
    let stale = sha256_hex(b"v0");
    let c = f.call(
        WRITE_FILE,
        json!({"path": "a.txt", "content": "v2", "expected_hash": stale}),
    );
    assert_eq!(c.outcome, "CONFLICT");
    assert_eq!(c.structured["error"]["code"], "HASH_MISMATCH");
    assert_eq!(read_to_string(&f.root.join("a.txt")), "v1");
    let ok = f.call(
        WRITE_FILE,
        json!({"path": "a.txt", "content": "v2", "expected_hash": sha256_hex(b"v1")}),
    );
    assert_eq!(ok.outcome, "SUCCEEDED");
    assert_eq!(read_to_string(&f.root.join("a.txt")), "v2");
    // No temporary files are left behind.
    let names: Vec<String> = std::fs::read_dir(&f.root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["a.txt"]);
}

#[test]
fn binary_file_is_reported_not_dumped() {
    let f = Fixture::new();
    std::fs::write(f.root.join("bin"), b"\x7fELF\x00\x01\x02").unwrap();
    let r = f.call(READ_FILE, json!({"path": "bin"}));
    assert_eq!(r.structured["binary"], true);
    assert_eq!(r.structured["content"], serde_json::Value::Null);
    assert_eq!(r.structured["size"], 7);
}

#[test]
fn oversized_read_and_write_are_refused() {
    let f = Fixture::with(|c| {
        c.limits.max_read_bytes = 10;
        c.limits.max_write_bytes = 10;
    });
    f.write("big.txt", "01234567890123");
    assert_refused(&f.call(READ_FILE, json!({"path": "big.txt"})), "TOO_LARGE");
    assert_refused(
        &f.call(WRITE_FILE, json!({"path": "x", "content": "01234567890"})),
        "TOO_LARGE",
    );
}

#[test]
fn listing_is_sorted_and_typed() {
    let f = Fixture::new();
    f.write("b.txt", "bb");
    f.write("a/inner", "");
    std::os::unix::fs::symlink("b.txt", f.root.join("c")).unwrap();
    let l = f.call(LIST_DIRECTORY, json!({}));
    assert_eq!(
        l.structured["entries"],
        json!([
            {"name": "a", "type": "directory", "size": l.structured["entries"][0]["size"]},
            {"name": "b.txt", "type": "file", "size": 2},
            {"name": "c", "type": "symlink", "size": 5}
        ])
    );
}

#[test]
fn patch_applies_all_hunks_or_none() {
    let f = Fixture::new();
    f.write("one.txt", "a\nb\nc\n");
    f.write("two.txt", "x\ny\nz\n");
    let patch = "--- a/one.txt\n+++ b/one.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n\
                 --- a/two.txt\n+++ b/two.txt\n@@ -1 +1 @@\n-x\n+X\n@@ -3 +3 @@\n-nope\n+Z\n";
    let r = f.call(APPLY_PATCH, json!({"patch": patch}));
    assert_eq!(r.outcome, "CONFLICT", "{}", r.structured);
    assert_eq!(r.structured["error"]["code"], "PATCH_HUNK_FAILED");
    let message = r.structured["error"]["message"].as_str().unwrap();
    assert!(message.contains("hunk 2 of two.txt"), "{message}");
    assert_eq!(read_to_string(&f.root.join("one.txt")), "a\nb\nc\n");
    assert_eq!(read_to_string(&f.root.join("two.txt")), "x\ny\nz\n");

    let good = "--- a/one.txt\n+++ b/one.txt\n@@ -2 +2 @@\n-b\n+B\n--- /dev/null\n+++ b/new/three.txt\n@@ -0,0 +1 @@\n+3\n";
    let r = f.call(APPLY_PATCH, json!({"patch": good}));
    assert_eq!(r.outcome, "SUCCEEDED", "{}", r.structured);
    assert_eq!(read_to_string(&f.root.join("one.txt")), "a\nB\nc\n");
    assert_eq!(read_to_string(&f.root.join("new/three.txt")), "3\n");
}

#[test]
fn patch_through_symlink_is_refused() {
    let f = Fixture::new();
    let outside = f.outside().join("o.txt");
    std::fs::write(&outside, "a\n").unwrap();
    std::os::unix::fs::symlink(&outside, f.root.join("o.txt")).unwrap();
    let r = f.call(
        APPLY_PATCH,
        json!({"patch": "--- a/o.txt\n+++ b/o.txt\n@@ -1 +1 @@\n-a\n+b\n"}),
    );
    assert_refused(&r, "SYMLINK_REFUSED");
    assert_eq!(read_to_string(&outside), "a\n");
}

#[test]
fn malformed_arguments_are_protocol_errors() {
    let f = Fixture::new();
    assert!(f
        .tools
        .call_blocking(READ_FILE, json!({"path": "a", "extra": 1}))
        .is_err());
    assert!(f.tools.call_blocking("no_such_tool", json!({})).is_err());
}

#[test]
fn definitions_cover_every_tool() {
    let defs = builtin::tool_definitions();
    let names: Vec<&str> = defs.iter().map(|d| d["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "filesystem_list_directory",
            "filesystem_read_file",
            "filesystem_write_file",
            "filesystem_apply_patch",
            "filesystem_lock_acquire",
            "filesystem_lock_release",
            "git_status",
            "git_diff",
            "shell_run"
        ]
    );
    for d in &defs {
        assert_eq!(d["inputSchema"]["type"], "object");
        assert_eq!(d["outputSchema"]["type"], "object");
        assert!(d["annotations"]["readOnlyHint"].is_boolean());
    }
}

#[test]
fn patch_can_delete_a_file() {
    let f = Fixture::new();
    f.write("gone.txt", "bye\n");
    let r = f.call(
        APPLY_PATCH,
        json!({"patch": "--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n"}),
    );
    assert_eq!(r.outcome, "SUCCEEDED", "{}", r.structured);
    assert_eq!(r.structured["files"][0]["action"], "deleted");
    assert!(!f.root.join("gone.txt").exists());
}
