//! The README's main command: `toolgate demo` runs its whole tour and exits 0, and leaves nothing behind.

use crate::support::toolgate;

#[test]
fn demo_runs_the_whole_tour() {
    let out = std::process::Command::new(toolgate())
        .arg("demo")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for line in [
        "ALLOW  demo__echo",
        "DENY   demo__crash",
        "ASK    demo__add",
        "\"sum\":5.0",
        "resultType \"complete\"",
    ] {
        assert!(stdout.contains(line), "missing {line:?} in:\n{stdout}");
    }
    let dir = stdout
        .split("live in ")
        .nth(1)
        .and_then(|r| r.split(" until").next())
        .unwrap();
    assert!(
        !std::path::Path::new(dir).exists(),
        "the demo removes its temporary directory"
    );
}
