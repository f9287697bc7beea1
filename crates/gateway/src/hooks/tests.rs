//! Hook ordering, what a hook is shown, and command hooks run for real (small shell scripts).

use super::*;
use config::{HookCommand, HookStage, Provenance};
use pretty_assertions::assert_eq;
use serde_json::json;
use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

fn call() -> HookCall {
    HookCall {
        trace_id: "t-1".into(),
        server: "fx".into(),
        tool: "echo".into(),
        exposed: "fx__echo".into(),
        operation: "mcp.call".into(),
        effect: Effect::Allow,
        rule_id: None,
        rule_at: None,
        reason: "DEFAULT_ALLOW".into(),
        profile: "default".into(),
        arguments_bytes: 2,
        arguments_sha256: "00".into(),
        arguments: None,
    }
}

/// An embedder's hook that answers `decision` and notes what it was shown.
struct Fixed {
    decision: HookDecision,
    arguments: bool,
    seen: Mutex<Vec<Option<Value>>>,
}

impl Fixed {
    fn new(decision: HookDecision, arguments: bool) -> Arc<Self> {
        Arc::new(Self {
            decision,
            arguments,
            seen: Mutex::new(Vec::new()),
        })
    }
}

impl CallHook for Fixed {
    fn wants_arguments(&self) -> bool {
        self.arguments
    }
    fn before(&self, call: &HookCall) -> HookDecision {
        self.seen.lock().unwrap().push(call.arguments.clone());
        self.decision.clone()
    }
}

struct Panics;

impl CallHook for Panics {
    fn before(&self, _call: &HookCall) -> HookDecision {
        panic!("a hook bug")
    }
}

#[test]
fn the_first_objection_wins_and_later_hooks_do_not_run() {
    let ask = HookDecision::Ask {
        reason: "look".into(),
    };
    let (a, b, c) = (
        Fixed::new(HookDecision::Allow, false),
        Fixed::new(ask, false),
        Fixed::new(HookDecision::Allow, false),
    );
    let hooks: Vec<Arc<dyn CallHook>> = vec![a.clone(), b.clone(), c.clone()];
    let objection = first_objection(&hooks, call(), None).unwrap();
    assert_eq!(
        (objection.index, objection.effect, objection.reason.as_str()),
        (1, Effect::Ask, "look")
    );
    assert_eq!(c.seen.lock().unwrap().len(), 0);
    let allow_all: Vec<Arc<dyn CallHook>> = vec![a];
    assert_eq!(first_objection(&allow_all, call(), None), None);
}

#[test]
fn only_hooks_that_ask_for_arguments_see_them_and_then_redacted() {
    let (blind, sighted) = (
        Fixed::new(HookDecision::Allow, false),
        Fixed::new(HookDecision::Allow, true),
    );
    let hooks: Vec<Arc<dyn CallHook>> = vec![blind.clone(), sighted.clone()];
    let arguments = json!({"path": "a.txt", "api_key": "sk-live-123"});
    first_objection(&hooks, call(), Some(arguments));
    assert_eq!(*blind.seen.lock().unwrap(), vec![None]);
    assert_eq!(
        *sighted.seen.lock().unwrap(),
        vec![Some(json!({"path": "a.txt", "api_key": audit::REDACTED}))]
    );
}

#[test]
fn a_panicking_hook_denies() {
    let hooks: Vec<Arc<dyn CallHook>> = vec![Arc::new(Panics)];
    let objection = first_objection(&hooks, call(), None).unwrap();
    assert_eq!(
        (objection.effect, objection.reason.as_str()),
        (Effect::Deny, "the hook panicked")
    );
}

#[test]
fn reasons_are_single_line_and_bounded() {
    assert_eq!(clean_reason(" too\nbig\t"), "too big");
    assert_eq!(clean_reason(""), "no reason given");
    assert_eq!(clean_reason(&"x".repeat(2000)).len(), MAX_REASON_CHARS);
}

#[test]
fn the_json_a_command_reads_has_no_arguments_unless_given() {
    let v = call().to_json();
    assert_eq!(v.get("arguments"), None);
    assert_eq!(
        v["policy"],
        json!({"effect": "allow", "rule_id": null, "reason": "DEFAULT_ALLOW"})
    );
}

/// The bytes a command hook has always been given, before and after a call.
#[test]
fn the_json_a_command_reads_keeps_its_bytes() {
    let mut seen = call();
    seen.rule_id = Some("r\u{e9}".into());
    seen.arguments = Some(json!({"path": "a.txt", "n": 1.5}));
    let pre = serde_json::to_string(&input::Input::at(&seen, input::Event::Pre, None)).unwrap();
    assert_eq!(
        pre,
        "{\"trace_id\":\"t-1\",\"server\":\"fx\",\"tool\":\"echo\",\"exposed\":\"fx__echo\",\
         \"operation\":\"mcp.call\",\"profile\":\"default\",\"policy\":{\"effect\":\"allow\",\
         \"rule_id\":\"r\u{e9}\",\"reason\":\"DEFAULT_ALLOW\"},\"arguments_bytes\":2,\"arguments_sha256\":\"00\",\
         \"arguments\":{\"path\":\"a.txt\",\"n\":1.5},\"event\":\"pre\"}"
    );
    let outcome = HookOutcome {
        outcome: "SUCCEEDED".into(),
        duration_ms: 7,
        result_bytes: None,
        result_sha256: Some("ff".into()),
    };
    let post = serde_json::to_string(&input::Input::at(
        &call(),
        input::Event::Post,
        Some(&outcome),
    ));
    assert_eq!(
        post.unwrap(),
        "{\"trace_id\":\"t-1\",\"server\":\"fx\",\"tool\":\"echo\",\"exposed\":\"fx__echo\",\
         \"operation\":\"mcp.call\",\"profile\":\"default\",\"policy\":{\"effect\":\"allow\",\
         \"rule_id\":null,\"reason\":\"DEFAULT_ALLOW\"},\"arguments_bytes\":2,\"arguments_sha256\":\"00\",\
         \"event\":\"post\",\"outcome\":{\"outcome\":\"SUCCEEDED\",\"duration_ms\":7,\"result_bytes\":null,\
         \"result_sha256\":\"ff\"}}"
    );
    assert_eq!(outcome.to_json()["duration_ms"], 7);
}

/// How a command hook's input was written before it was a type, kept verbatim as the oracle of its bytes.
fn input_before(call: &HookCall, stage: &str, outcome: Option<&HookOutcome>) -> String {
    let mut v = json!({
        "trace_id": call.trace_id, "server": call.server, "tool": call.tool, "exposed": call.exposed,
        "operation": call.operation, "profile": call.profile,
        "policy": {"effect": call.effect.as_str(), "rule_id": call.rule_id, "reason": call.reason},
        "arguments_bytes": call.arguments_bytes, "arguments_sha256": call.arguments_sha256,
    });
    if let Some(a) = &call.arguments {
        v["arguments"] = a.clone();
    }
    v["event"] = Value::String(stage.to_owned());
    if let Some(o) = outcome {
        v["outcome"] = json!({"outcome": o.outcome, "duration_ms": o.duration_ms,
                              "result_bytes": o.result_bytes, "result_sha256": o.result_sha256});
    }
    v.to_string()
}

#[test]
fn the_json_a_command_reads_is_what_it_was_written_as_before() {
    let outcomes = [
        None,
        Some(HookOutcome {
            outcome: "FAILED".into(),
            duration_ms: 0,
            result_bytes: Some(3),
            result_sha256: None,
        }),
    ];
    for arguments in [None, Some(json!({"b": [1, "\u{1b}"], "a": null}))] {
        for rule_id in [None, Some("hook:1".to_owned())] {
            for outcome in &outcomes {
                let seen = HookCall {
                    arguments: arguments.clone(),
                    rule_id: rule_id.clone(),
                    effect: Effect::Ask,
                    ..call()
                };
                for (event, stage) in [(input::Event::Pre, "pre"), (input::Event::Post, "post")] {
                    let now =
                        serde_json::to_string(&input::Input::at(&seen, event, outcome.as_ref()));
                    assert_eq!(now.unwrap(), input_before(&seen, stage, outcome.as_ref()));
                }
            }
        }
    }
}

fn script(dir: &Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_string_lossy().into_owned()
}

fn config(stage: HookStage, command: String, timeout: u64, tools: &[&str]) -> HookCommand {
    HookCommand {
        stage,
        index: 0,
        command,
        args: Vec::new(),
        timeout: Duration::from_secs(timeout),
        tools: tools.iter().map(|t| (*t).to_owned()).collect(),
        arguments: false,
        writable: Vec::new(),
        network: true,
        from: Provenance::Default,
    }
}

fn hook(stage: HookStage, command: String, timeout: u64, tools: &[&str]) -> CommandHook {
    CommandHook::new(config(stage, command, timeout, tools), Vec::new())
}

/// A pre-hook that may write beneath `dir`, where the test reads what it did.
fn writing_hook(dir: &Path, command: String, timeout: u64) -> CommandHook {
    let mut c = config(HookStage::Pre, command, timeout, &[]);
    c.writable = vec![dir.to_path_buf()];
    CommandHook::new(c, Vec::new())
}

fn denial(d: HookDecision) -> String {
    match d {
        HookDecision::Deny { reason } => reason,
        other => panic!("expected a deny, got {other:?}"),
    }
}

#[test]
fn a_command_reads_the_call_and_answers() {
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("seen.json");
    let body = format!(
        "cat > {}\necho '{{\"decision\": \"deny\", \"reason\": \"not today\"}}'",
        seen.display()
    );
    let h = writing_hook(dir.path(), script(dir.path(), "deny.sh", &body), 5);
    assert_eq!(denial(h.before(&call())), "not today");
    let read: Value = serde_json::from_slice(&std::fs::read(&seen).unwrap()).unwrap();
    assert_eq!(
        (read["event"].as_str(), read["exposed"].as_str()),
        (Some("pre"), Some("fx__echo"))
    );
}

#[test]
fn silence_and_exit_zero_is_no_objection() {
    let dir = tempfile::tempdir().unwrap();
    let h = hook(
        HookStage::Pre,
        script(dir.path(), "ok.sh", "exit 0"),
        5,
        &[],
    );
    assert_eq!(h.before(&call()), HookDecision::Allow);
}

#[test]
fn a_failing_or_missing_command_denies_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let h = hook(
        HookStage::Pre,
        script(dir.path(), "no.sh", "echo broken >&2; exit 3"),
        5,
        &[],
    );
    let why = denial(h.before(&call()));
    assert!(
        why.contains("exit status: 3") && why.contains("broken"),
        "{why}"
    );
    let missing = hook(HookStage::Pre, "/nonexistent/hook".into(), 5, &[]);
    assert!(denial(missing.before(&call())).contains("cannot start"));
}

/// Whether a process whose command line contains `needle` is still running (a zombie has stopped). Found by
/// name, not pid: inside the hook's PID namespace `$!` is not the pid this process sees.
fn running(needle: &str) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|e| {
        let dir = e.path();
        let cmdline = std::fs::read(dir.join("cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
        String::from_utf8_lossy(&cmdline).contains(needle)
            && stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    })
}

/// Waits up to five seconds for every process named by `needle` to stop; whether they did.
fn all_stopped(needle: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while running(needle) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    !running(needle)
}

/// A name no other process on the machine has.
fn unique(dir: &Path) -> String {
    format!("sleeper-{}", dir.file_name().unwrap().to_string_lossy())
}

#[test]
fn a_hook_past_its_deadline_is_killed_with_its_group_and_denies() {
    let dir = tempfile::tempdir().unwrap();
    let name = unique(dir.path());
    let started = dir.path().join("started");
    let body = format!(
        "sh -c 'echo up > {s}; sleep 30; :' {name} &\nuntil [ -s {s} ]; do sleep 0.01; done\nwait",
        s = started.display()
    );
    let h = writing_hook(dir.path(), script(dir.path(), "slow.sh", &body), 1);
    let clock = Instant::now();
    assert!(denial(h.before(&call())).contains("timed out"));
    assert!(clock.elapsed() < Duration::from_secs(10));
    assert!(started.exists(), "the hook's child never started");
    assert!(all_stopped(&name), "the hook's child survived the deadline");
}

#[test]
fn hook_setsid_grandchild_does_not_outlive_the_deadline() {
    assert_eq!(
        sandbox::probe().state(sandbox::Layer::PidNamespace),
        &sandbox::LayerState::Active,
        "this machine has no PID namespace for hooks, so a setsid descendant escapes their deadline"
    );
    let dir = tempfile::tempdir().unwrap();
    let name = unique(dir.path());
    let (started, late) = (dir.path().join("started"), dir.path().join("late"));
    // Its own session and process group, and not the hook's child any more once the hook's shell is gone.
    let body = format!(
        "setsid sh -c 'echo up > {s}; sleep 3; echo late > {l}' {name} &\n\
         until [ -s {s} ]; do sleep 0.01; done\nsleep 30",
        s = started.display(),
        l = late.display()
    );
    let mut c = config(
        HookStage::Pre,
        script(dir.path(), "escape.sh", &body),
        1,
        &[],
    );
    c.timeout = Duration::from_millis(500);
    c.writable = vec![dir.path().to_path_buf()];
    let h = CommandHook::new(c, Vec::new());
    let clock = Instant::now();
    assert!(denial(h.before(&call())).contains("timed out"));
    assert!(
        started.exists(),
        "the grandchild never started, so this run proves nothing"
    );
    assert!(
        all_stopped(&name),
        "the setsid grandchild outlived the deadline"
    );
    std::thread::sleep(Duration::from_secs(4).saturating_sub(clock.elapsed()));
    assert!(
        !late.exists(),
        "the setsid grandchild wrote after the deadline"
    );
}

#[test]
fn hooks_get_the_upstream_allowlist_and_nothing_else_of_toolgates_environment() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("env.txt");
    let body = format!("env > {}", out.display());
    let h = writing_hook(dir.path(), script(dir.path(), "env.sh", &body), 5);
    assert_eq!(h.before(&call()), HookDecision::Allow);
    let env = std::fs::read_to_string(&out).unwrap();
    // The shell adds a few of its own, and the sandbox names the hook's private temporary directory;
    // everything else must come from the allowlist.
    let made = ["PWD", "OLDPWD", "SHLVL", "_", "TMPDIR", "TMP", "TEMP"];
    let vars: Vec<(&str, &str)> = env.lines().filter_map(|l| l.split_once('=')).collect();
    let stray: Vec<&str> = vars
        .iter()
        .map(|(k, _)| *k)
        .filter(|k| !config::UPSTREAM_ENV_ALLOWLIST.contains(k) && !made.contains(k))
        .collect();
    assert_eq!(stray, Vec::<&str>::new());
    let shared = std::env::temp_dir();
    for (k, v) in vars.iter().filter(|(k, _)| made[4..].contains(k)) {
        assert_ne!(
            Path::new(v),
            shared,
            "{k} is the shared temporary directory"
        );
    }
}

#[test]
fn tool_globs_and_stage_decide_which_calls_a_command_sees() {
    let dir = tempfile::tempdir().unwrap();
    let deny = script(dir.path(), "deny.sh", "echo '{\"decision\": \"deny\"}'");
    let other = hook(HookStage::Pre, deny.clone(), 5, &["other__*"]);
    assert_eq!(other.before(&call()), HookDecision::Allow);
    let post = hook(HookStage::Post, deny.clone(), 5, &[]);
    assert_eq!(post.before(&call()), HookDecision::Allow);
    let mine = hook(HookStage::Pre, deny, 5, &["fx__e*"]);
    assert_eq!(denial(mine.before(&call())), "");
}

#[test]
fn a_post_hook_reports_its_failure() {
    let dir = tempfile::tempdir().unwrap();
    let h = hook(
        HookStage::Post,
        script(dir.path(), "fail.sh", "exit 1"),
        5,
        &[],
    );
    let outcome = HookOutcome {
        outcome: "SUCCEEDED".into(),
        duration_ms: 3,
        result_bytes: Some(10),
        result_sha256: Some("ab".into()),
    };
    assert!(h.after(&call(), &outcome).is_err());
    assert_eq!(
        hook(HookStage::Pre, "/nonexistent".into(), 5, &[]).after(&call(), &outcome),
        Ok(())
    );
}

#[test]
fn a_hook_that_says_no_network_cannot_reach_a_listener_on_this_machine() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let body = format!(
        "if /bin/bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}' 2>/dev/null; then\n  \
         echo '{{\"decision\": \"deny\", \"reason\": \"reached\"}}'\nfi"
    );
    let path = script(dir.path(), "net.sh", &body);
    // The control: by default a hook reaches the network (it may ask a policy service).
    let open = hook(HookStage::Pre, path.clone(), 5, &[]);
    assert_eq!(denial(open.before(&call())), "reached");
    let mut c = config(HookStage::Pre, path, 5, &[]);
    c.network = false;
    let closed = CommandHook::new(c, Vec::new());
    assert_eq!(closed.before(&call()), HookDecision::Allow);
}

#[test]
fn a_hook_that_floods_its_stdout_denies_without_being_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let body = "head -c 10000000 /dev/zero | tr '\\0' x";
    let h = hook(HookStage::Pre, script(dir.path(), "flood.sh", body), 5, &[]);
    assert!(denial(h.before(&call())).contains("more than 65536 bytes"));
}

#[test]
fn a_hook_whose_writable_directory_is_missing_is_refused_not_run_unconfined() {
    let dir = tempfile::tempdir().unwrap();
    let ran = dir.path().join("ran");
    let body = format!("touch {}", ran.display());
    let h = writing_hook(
        &dir.path().join("missing"),
        script(dir.path(), "typo.sh", &body),
        5,
    );
    let why = denial(h.before(&call()));
    assert!(why.contains("landlock") && why.contains("missing"), "{why}");
    assert!(!ran.exists());
}

/// A hook is told where the deciding rule was written, as refusals and explain say it; nothing when no file did.
#[test]
fn a_hook_reads_where_the_deciding_rule_was_written() {
    let with = HookCall {
        rule_id: Some("Read(**/.env)".to_owned()),
        rule_at: Some("toolgate.json:6".to_owned()),
        ..call()
    };
    let seen: Value =
        serde_json::to_value(input::Input::at(&with, input::Event::Pre, None)).unwrap();
    assert_eq!(seen["policy"]["rule_at"], "toolgate.json:6", "{seen}");
    let without: Value =
        serde_json::to_value(input::Input::at(&call(), input::Event::Pre, None)).unwrap();
    assert!(without["policy"].get("rule_at").is_none(), "{without}");
}
