//! One binary under the products' names: `toolgate install-links` makes the links and never replaces what is not
//! one of its links.

use crate::support::{product_links, toolgate};
use std::process::Command;

fn run(program: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(program).args(args).output().expect("run");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn install_links_links_the_supported_names_and_says_what_it_did() {
    let dir = tempfile::tempdir().unwrap();
    let bin = product_links(dir.path());
    let me = std::fs::canonicalize(toolgate()).unwrap();
    for name in [
        "toolfence",
        "toolscript-mcp",
        "mcp-toolhub",
        "mcp-toolhub-admin",
        "mcp-unified-gateway",
    ] {
        assert_eq!(std::fs::canonicalize(bin.join(name)).unwrap(), me, "{name}");
        let (code, out, _) = run(&bin.join(name), &["--version"]);
        assert_eq!((code, out.split_whitespace().next()), (0, Some(name)));
    }
    let (code, out, _) = run(&toolgate(), &["install-links", bin.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("unchanged") && !out.contains("skipped"),
        "{out}"
    );
}

#[test]
fn install_links_never_replaces_the_product_itself() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("toolfence");
    std::fs::write(&real, "#!/bin/sh\necho the real toolfence\n").unwrap();
    let (code, out, _) = run(
        &toolgate(),
        &["install-links", dir.path().to_str().unwrap()],
    );
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("refused") && out.contains("left as it is"),
        "{out}"
    );
    assert_eq!(
        std::fs::read_to_string(&real).unwrap(),
        "#!/bin/sh\necho the real toolfence\n"
    );
    // The other names were still linked.
    assert!(dir.path().join("toolscript-mcp").exists());
}
