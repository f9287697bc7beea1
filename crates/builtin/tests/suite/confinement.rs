//! Path escapes: symlinks, `..`, absolute paths, prefix tricks, NUL, dangling links and hard links.

use std::os::unix::fs::symlink;

use builtin::{LIST_DIRECTORY, READ_FILE, WRITE_FILE};
use serde_json::json;

use crate::{assert_refused, read_to_string, Fixture};

#[test]
fn symlink_to_etc_passwd() {
    let f = Fixture::new();
    symlink("/etc/passwd", f.root.join("passwd")).unwrap();
    let before = read_to_string("/etc/passwd".as_ref());
    assert_refused(
        &f.call(READ_FILE, json!({"path": "passwd"})),
        "PATH_OUTSIDE_WORKSPACE",
    );
    assert_refused(
        &f.call(WRITE_FILE, json!({"path": "passwd", "content": "x"})),
        "SYMLINK_REFUSED",
    );
    assert_eq!(read_to_string("/etc/passwd".as_ref()), before);
}

#[test]
fn directory_symlink_to_root() {
    let f = Fixture::new();
    symlink("/", f.root.join("rootfs")).unwrap();
    let victim = f.outside().join("victim.txt");
    let through_link = format!("rootfs{}", victim.display());
    assert_refused(
        &f.call(READ_FILE, json!({"path": "rootfs/etc/passwd"})),
        "PATH_OUTSIDE_WORKSPACE",
    );
    assert_refused(
        &f.call(LIST_DIRECTORY, json!({"path": "rootfs"})),
        "PATH_OUTSIDE_WORKSPACE",
    );
    assert_refused(
        &f.call(WRITE_FILE, json!({"path": through_link, "content": "x"})),
        "SYMLINK_REFUSED",
    );
    assert!(!victim.exists());
}

#[test]
fn dotdot_escape() {
    let f = Fixture::new();
    std::fs::write(f.outside().join("outside.txt"), "secret").unwrap();
    f.write("a/inner.txt", "in");
    for path in ["../outside.txt", "a/../../outside.txt", "a/.."] {
        assert_refused(
            &f.call(READ_FILE, json!({"path": path})),
            "PATH_OUTSIDE_WORKSPACE",
        );
        assert_refused(
            &f.call(WRITE_FILE, json!({"path": path, "content": "x"})),
            "PATH_OUTSIDE_WORKSPACE",
        );
    }
    assert_eq!(read_to_string(&f.outside().join("outside.txt")), "secret");
}

#[test]
fn absolute_path() {
    let f = Fixture::new();
    f.write("inside.txt", "hello");
    assert_refused(
        &f.call(READ_FILE, json!({"path": "/etc/passwd"})),
        "PATH_OUTSIDE_WORKSPACE",
    );
    let inside = f.root.join("inside.txt");
    let ok = f.call(READ_FILE, json!({"path": inside}));
    assert_eq!(ok.outcome, "SUCCEEDED");
    assert_eq!(ok.structured["content"], "hello");
    assert_eq!(ok.structured["path"], "inside.txt");
}

#[test]
fn sibling_prefix_ws_evil() {
    let f = Fixture::new();
    let evil = f.outside().join("ws-evil");
    std::fs::create_dir(&evil).unwrap();
    std::fs::write(evil.join("secret"), "evil").unwrap();
    let abs = format!("{}-evil/secret", f.root.display());
    assert_refused(
        &f.call(READ_FILE, json!({"path": abs})),
        "PATH_OUTSIDE_WORKSPACE",
    );
    assert_refused(
        &f.call(READ_FILE, json!({"path": "../ws-evil/secret"})),
        "PATH_OUTSIDE_WORKSPACE",
    );
    assert_refused(
        &f.call(WRITE_FILE, json!({"path": abs, "content": "x"})),
        "PATH_OUTSIDE_WORKSPACE",
    );
    assert_eq!(read_to_string(&evil.join("secret")), "evil");
}

#[test]
fn nul_in_path() {
    let f = Fixture::new();
    f.write("a", "x");
    assert_refused(
        &f.call(READ_FILE, json!({"path": "a\u{0}/etc/passwd"})),
        "PATH_OUTSIDE_WORKSPACE",
    );
    assert_refused(
        &f.call(WRITE_FILE, json!({"path": "b\u{0}", "content": "x"})),
        "PATH_OUTSIDE_WORKSPACE",
    );
}

#[test]
fn dangling_symlink_write() {
    let f = Fixture::new();
    let target = f.outside().join("created-through-link.txt");
    symlink(&target, f.root.join("dangle")).unwrap();
    assert_refused(
        &f.call(WRITE_FILE, json!({"path": "dangle", "content": "x"})),
        "SYMLINK_REFUSED",
    );
    assert!(!target.exists());
    // A relative dangling link is refused the same way.
    symlink("../also-outside.txt", f.root.join("dangle2")).unwrap();
    assert_refused(
        &f.call(WRITE_FILE, json!({"path": "dangle2", "content": "x"})),
        "SYMLINK_REFUSED",
    );
    assert!(!f.outside().join("also-outside.txt").exists());
}

/// Decision: a regular file with more than one link may share its inode with a name outside the workspace,
/// so both reading and writing it are refused (HARD_LINK_REFUSED).
#[test]
fn hard_link_to_outside_file() {
    let f = Fixture::new();
    let outside = f.outside().join("outside.txt");
    std::fs::write(&outside, "original").unwrap();
    std::fs::hard_link(&outside, f.root.join("hl")).unwrap();
    assert_refused(
        &f.call(READ_FILE, json!({"path": "hl"})),
        "HARD_LINK_REFUSED",
    );
    assert_refused(
        &f.call(WRITE_FILE, json!({"path": "hl", "content": "pwned"})),
        "HARD_LINK_REFUSED",
    );
    assert_eq!(read_to_string(&outside), "original");
}

#[test]
fn inner_symlink_is_readable_but_not_writable() {
    let f = Fixture::new();
    f.write("real/file.txt", "inner");
    symlink("real", f.root.join("alias")).unwrap();
    let read = f.call(READ_FILE, json!({"path": "alias/file.txt"}));
    assert_eq!(read.structured["content"], "inner");
    assert_refused(
        &f.call(
            WRITE_FILE,
            json!({"path": "alias/file.txt", "content": "x"}),
        ),
        "SYMLINK_REFUSED",
    );
}

#[test]
fn fifo_is_refused_without_hanging() {
    let f = Fixture::new();
    let status = std::process::Command::new("mkfifo")
        .arg(f.root.join("pipe"))
        .status()
        .unwrap();
    assert!(status.success());
    assert_refused(
        &f.call(READ_FILE, json!({"path": "pipe"})),
        "WRONG_FILE_TYPE",
    );
    assert_refused(
        &f.call(WRITE_FILE, json!({"path": "pipe", "content": "x"})),
        "WRONG_FILE_TYPE",
    );
}
