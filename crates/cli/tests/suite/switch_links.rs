//! One binary under the products' names: `toolgate install-links` makes the links, never replaces what is not
//! one of its links, and a name toolgate does not speak yet says so and fails instead of acting as toolgate.

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
    for name in ["toolfence", "toolscript-mcp", "mcp-unified-gateway"] {
        assert_eq!(std::fs::canonicalize(bin.join(name)).unwrap(), me, "{name}");
        let (code, out, _) = run(&bin.join(name), &["--version"]);
        assert_eq!((code, out.split_whitespace().next()), (0, Some(name)));
    }
    for name in ["mcp-toolhub", "mcp-toolhub-admin"] {
        assert!(
            !bin.join(name).exists(),
            "{name} is not spoken yet, so it is not linked"
        );
    }
    let (code, out, _) = run(&toolgate(), &["install-links", bin.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("unchanged") && out.contains("skipped    mcp-toolhub:"),
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

#[test]
fn a_product_name_not_spoken_yet_fails_saying_so_instead_of_acting_as_toolgate() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["mcp-toolhub", "mcp-toolhub-admin"] {
        let link = dir.path().join(name);
        std::os::unix::fs::symlink(toolgate(), &link).unwrap();
        let (code, out, err) = run(&link, &["serve"]);
        assert_eq!(code, 2, "{name}: {out}{err}");
        assert!(out.is_empty(), "{name}: nothing on stdout: {out}");
        assert!(
            err.starts_with(&format!("{name}: not supported yet")),
            "{name}: {err}"
        );
    }
}
