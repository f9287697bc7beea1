//! Deny rules hold through every program that runs another program; prefix allows admit only plain commands.

use policy::{Effect, ReasonCode};
use serde_json::json;

use crate::common::{decide, load, shell};

fn policy(default: &str) -> policy::Policy {
    load(
        &json!({"permissions": {"default": default, "deny": ["Bash(rm:*)"], "allow": [
            "Bash(find:*)", "Bash(env:*)", "Bash(sh:*)", "Bash(flock:*)", "Bash(chrt:*)", "Bash(xargs:*)",
            "Bash(timeout:*)", "Bash(sudo:*)", "Bash(awk:*)", "Bash(ls:*)",
        ]}}),
    )
}

#[test]
fn deny_rm_holds_through_every_wrapper() {
    let p = policy("allow");
    for argv in [
        vec!["env", "-S", "rm -rf /"],
        vec!["env", "-i", "A=1", "rm", "-rf", "/"],
        vec!["sh", "-c", "rm -rf /"],
        vec!["bash", "-c", "cd / && rm -rf x"],
        vec!["flock", "/tmp/lock", "rm", "-rf", "/"],
        vec!["flock", "/tmp/lock", "-c", "rm -rf /"],
        vec!["chrt", "-f", "10", "rm", "-rf", "/"],
        vec!["nice", "-n", "1", "nohup", "rm", "x"],
        vec!["timeout", "5", "stdbuf", "-oL", "rm", "x"],
        vec!["ionice", "-c", "3", "taskset", "0x1", "setsid", "rm", "x"],
        vec!["xargs", "-0", "rm"],
        vec!["find", ".", "-exec", "rm", "{}", ";"],
        vec!["find", ".", "-execdir", "/bin/rm", "{}", "+"],
        vec!["find", ".", "-ok", "rm", "{}", ";"],
        vec!["time", "command", "exec", "rm", "x"],
        vec!["busybox", "rm", "x"],
        vec!["sudo", "-u", "root", "rm", "x"],
        vec!["doas", "rm", "x"],
        vec!["su", "-c", "rm -rf /", "root"],
        vec!["watch", "-n", "1", "rm", "x"],
        vec!["parallel", "rm", ":::", "a"],
    ] {
        let program = argv[0];
        let d = decide(&p, &shell(program, &argv[1..]));
        assert_eq!(
            (d.effect, d.reason),
            (Effect::Deny, ReasonCode::DenyRule),
            "{argv:?}"
        );
    }
}

#[test]
fn find_exec_is_not_allowed_by_a_find_prefix() {
    let p = load(&json!({"permissions": {"default": "ask", "allow": ["Bash(find:*)"]}}));
    let d = decide(
        &p,
        &shell("find", &[".", "-exec", "chmod", "777", "{}", ";"]),
    );
    assert_eq!((d.effect, d.reason), (Effect::Ask, ReasonCode::DefaultAsk));
    assert_eq!(
        decide(&p, &shell("find", &[".", "-name", "x"])).effect,
        Effect::Allow
    );
}

#[test]
fn wrapper_prefix_allow_does_not_admit_the_wrapped_command() {
    let p = load(
        &json!({"permissions": {"default": "deny", "allow": ["Bash(sudo:*)", "Bash(env:*)"]}}),
    );
    assert_eq!(decide(&p, &shell("sudo", &["reboot"])).effect, Effect::Deny);
    assert_eq!(
        decide(&p, &shell("env", &["A=1", "curl", "x"])).effect,
        Effect::Deny
    );
    // An exact command names everything that runs, so it may allow a wrapper.
    let exact = load(&json!({"policy": {"default": "deny", "rules": [
        {"id": "t", "effect": "allow", "commands": [["timeout", "5", "npm", "test"]]},
    ]}}));
    assert_eq!(
        decide(&exact, &shell("timeout", &["5", "npm", "test"])).effect,
        Effect::Allow
    );
}

#[test]
fn opaque_command_is_at_least_ask_under_allow_default() {
    let p = policy("allow");
    for argv in [
        vec!["awk", "BEGIN{system(\"rm -rf /\")}"],
        vec!["python3", "-c", "import shutil; shutil.rmtree('/')"],
        vec!["sh", "script.sh"],
        vec!["timeout", "--frobnicate", "5", "ls"],
        vec!["git", "grep", "-Osh", "x"],
    ] {
        let d = decide(&p, &shell(argv[0], &argv[1..]));
        assert_ne!(d.effect, Effect::Allow, "{argv:?}");
    }
    let d = decide(&p, &shell("awk", &["{print}"]));
    assert_eq!(
        (d.effect, d.reason),
        (Effect::Ask, ReasonCode::OpaqueCommand)
    );
}

#[test]
fn ask_rules_see_through_wrappers_too() {
    let p = load(&json!({"permissions": {"default": "allow", "ask": ["Bash(curl:*)"]}}));
    let d = decide(&p, &shell("timeout", &["5", "curl", "https://x.org"]));
    assert_eq!((d.effect, d.reason), (Effect::Ask, ReasonCode::AskRule));
}

#[test]
fn deny_rm_holds_through_wrappers_inside_shell_strings() {
    let p = load(&json!({"policy": {"default": "allow", "rules": [
        {"id": "no-rm", "effect": "deny", "commands": [["rm", "-rf", "/"]]},
    ], "mappings": [{"tool": "term__run", "operation": "shell.exec", "command": "command"}]}}));
    let c = crate::common::call(
        "term",
        "run",
        json!({"command": "ls; sudo -u x env -S 'rm -rf /'"}),
        None,
    );
    assert_eq!(decide(&p, &c).effect, Effect::Deny);
}
