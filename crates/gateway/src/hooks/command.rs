//! External command hooks from the config: the call's metadata goes to the command as one JSON object on stdin,
//! and a pre-hook answers on stdout with `{"decision": "allow"|"deny"|"ask", "reason": "..."}`. Exit 0 with
//! nothing on stdout is no objection; anything else unexpected (non-zero exit, timeout, unreadable answer) denies,
//! naming the hook. A post-hook's stdout is ignored; its failures are reported, never acted on.
//!
//! Each run gets the environment upstreams get (the short allowlist, no secrets of toolgate's), its own process
//! group, and a deadline after which the group is killed. This module does not decide what a hook's answer does
//! to the call; `hooks.rs` does.

use super::{CallHook, HookCall, HookDecision, HookOutcome};
use config::{HookCommand, HookStage};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc};
use std::thread;

/// The most a hook may write on stdout: an answer is one small object.
const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// How much of a failing hook's stderr is kept for its log line.
const MAX_STDERR_BYTES: usize = 2 * 1024;
/// How long output may keep arriving once the hook's group is gone.
const DRAIN_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// The configured hooks as the gateway runs them: every pre-hook, then every post-hook, so a pre-hook's
/// position in the list (its rule id, `hook:<index>`) is its index in `hooks.pre`.
pub fn command_hooks(hooks: &config::Hooks) -> Vec<Arc<dyn CallHook>> {
    hooks
        .pre
        .iter()
        .chain(&hooks.post)
        .map(|h| Arc::new(CommandHook::new(h.clone())) as Arc<dyn CallHook>)
        .collect()
}

/// One configured hook command.
pub struct CommandHook {
    config: HookCommand,
    label: String,
}

impl CommandHook {
    pub fn new(config: HookCommand) -> Self {
        let list = match config.stage {
            HookStage::Pre => "pre",
            HookStage::Post => "post",
        };
        // The file name, not the whole path: the label reaches the agent in refusals.
        let file = std::path::Path::new(&config.command)
            .file_name()
            .map_or(config.command.clone(), |f| f.to_string_lossy().into_owned());
        let label = format!("hooks.{list}[{}] {file}", config.index);
        Self { config, label }
    }

    fn applies(&self, stage: HookStage, call: &HookCall) -> bool {
        let name = format!("{}__{}", call.server, call.tool);
        self.config.stage == stage
            && (self.config.tools.is_empty() || self.config.tools.iter().any(|g| glob(g, &name)))
    }

    fn input(&self, stage: &str, call: &HookCall, outcome: Option<&HookOutcome>) -> Vec<u8> {
        let mut v = call.to_json();
        v["event"] = Value::String(stage.to_owned());
        if let Some(o) = outcome {
            v["outcome"] = o.to_json();
        }
        v.to_string().into_bytes()
    }
}

impl CallHook for CommandHook {
    fn name(&self) -> &str {
        &self.label
    }

    fn wants_arguments(&self) -> bool {
        self.config.arguments
    }

    fn before(&self, call: &HookCall) -> HookDecision {
        if !self.applies(HookStage::Pre, call) {
            return HookDecision::Allow;
        }
        match run(&self.config, &self.input("pre", call, None)) {
            Ok(stdout) => answer(&stdout),
            Err(why) => HookDecision::Deny {
                reason: format!("the hook failed ({why}), so the call is refused"),
            },
        }
    }

    fn after(&self, call: &HookCall, outcome: &HookOutcome) -> Result<(), String> {
        if !self.applies(HookStage::Post, call) {
            return Ok(());
        }
        run(&self.config, &self.input("post", call, Some(outcome))).map(|_| ())
    }
}

/// Reads a pre-hook's stdout. Fails closed: whatever is not a clear allow is a deny that says why.
fn answer(stdout: &[u8]) -> HookDecision {
    let deny = |why: &str| HookDecision::Deny {
        reason: format!("the hook's answer {why}, so the call is refused"),
    };
    let Ok(text) = std::str::from_utf8(stdout) else {
        return deny("is not UTF-8");
    };
    if text.trim().is_empty() {
        return HookDecision::Allow;
    }
    let Ok(Value::Object(answer)) = serde_json::from_str::<Value>(text) else {
        return deny("is not a JSON object");
    };
    let reason = answer
        .get("reason")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    match answer.get("decision").and_then(Value::as_str) {
        Some("allow") => HookDecision::Allow,
        Some("deny") => HookDecision::Deny { reason },
        Some("ask") => HookDecision::Ask { reason },
        Some(other) => deny(&format!("has an unknown decision {other:?}")),
        None => deny("has no \"decision\""),
    }
}

/// Runs the command with `input` on stdin; its stdout when it exits 0 in time.
fn run(config: &HookCommand, input: &[u8]) -> Result<Vec<u8>, String> {
    let env = config::upstream_env(&BTreeMap::new(), |k| std::env::var(k).ok());
    let mut child = Command::new(&config.command)
        .args(&config.args)
        .env_clear()
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own group, so the deadline ends whatever the hook started too.
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", config.command))?;
    let group = Pid::from_raw(child.id() as i32);
    let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let input = input.to_vec();
    // Not joined: a hook need not read its input, and a closed pipe ends the write.
    thread::spawn(move || stdin.map(|mut s| s.write_all(&input)));
    let out = drain(stdout, MAX_ANSWER_BYTES);
    let err = drain(stderr, MAX_STDERR_BYTES);
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || tx.send(child.wait()));
    let status = rx.recv_timeout(config.timeout);
    // The leader is done or out of time; whatever is left in its group would hold the pipes open.
    let _ = killpg(group, Signal::SIGKILL);
    let status: Option<std::io::Result<ExitStatus>> = match status {
        Ok(s) => Some(s),
        Err(_) => {
            let _ = rx.recv();
            None
        }
    };
    // Bounded: a descendant that left the group could keep a pipe open for ever.
    let stdout = out.recv_timeout(DRAIN_GRACE).ok();
    let stderr = err.recv_timeout(DRAIN_GRACE).unwrap_or_default();
    let Some(status) = status else {
        return Err(format!(
            "timed out after {} s",
            config.timeout.as_secs_f64()
        ));
    };
    let status = status.map_err(|e| format!("cannot wait for it: {e}"))?;
    if !status.success() {
        let said = String::from_utf8_lossy(&stderr.0);
        let said = said.trim();
        let said = if said.is_empty() {
            String::new()
        } else {
            format!(": {said}")
        };
        return Err(format!("it ended with {status}{said}"));
    }
    match stdout {
        None => Err("its stdout stayed open after it exited".to_owned()),
        Some((_, true)) => Err(format!(
            "it wrote more than {MAX_ANSWER_BYTES} bytes on stdout"
        )),
        Some((answer, false)) => Ok(answer),
    }
}

/// Reads a pipe on its own thread; the bytes (and whether there were more) arrive on the channel at EOF.
fn drain(pipe: Option<impl Read + Send + 'static>, cap: usize) -> mpsc::Receiver<(Vec<u8>, bool)> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(pipe.map(|p| bounded(p, cap)).unwrap_or_default());
    });
    rx
}

/// Reads everything, keeping the first `cap` bytes; whether more came. Draining the rest keeps a chatty hook
/// from blocking on a full pipe.
fn bounded(mut source: impl Read, cap: usize) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut over = false;
    let mut buf = [0u8; 8192];
    loop {
        match source.read(&mut buf) {
            Ok(0) | Err(_) => return (kept, over),
            Ok(n) => {
                let room = cap.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
                over |= n > room;
            }
        }
    }
}

/// Tool-name globs: `*` matches any run of characters (including `__`), `?` one character, all else literally.
fn glob(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, ni));
                pi += 1;
            }
            Some(c) if *c == '?' || *c == n[ni] => {
                pi += 1;
                ni += 1;
            }
            _ => match star {
                // Let the last star swallow one more character and try again.
                Some((sp, sn)) => {
                    star = Some((sp, sn + 1));
                    pi = sp + 1;
                    ni = sn + 1;
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn globs_match_whole_tool_names() {
        assert!(glob("fx__*", "fx__add_tool"));
        assert!(glob("*__add*", "fx__add_tool"));
        assert!(glob("fx__ech?", "fx__echo"));
        assert!(glob("*", "anything"));
        assert!(!glob("fx__*", "other__echo"));
        assert!(!glob("fx__echo", "fx__echo2"));
        assert!(!glob("fx__ech?", "fx__ech"));
    }

    #[test]
    fn answers_fail_closed() {
        let reason = |s: &str| match answer(s.as_bytes()) {
            HookDecision::Deny { reason } => reason,
            other => panic!("{other:?}"),
        };
        assert_eq!(answer(b" \n"), HookDecision::Allow);
        assert_eq!(answer(br#"{"decision": "allow"}"#), HookDecision::Allow);
        assert_eq!(
            answer(br#"{"decision": "ask", "reason": "big"}"#),
            HookDecision::Ask {
                reason: "big".into()
            }
        );
        assert_eq!(reason(r#"{"decision": "deny", "reason": "no"}"#), "no");
        assert!(reason("yes").contains("not a JSON object"));
        assert!(reason(r#"{"decision": "maybe"}"#).contains("unknown decision \"maybe\""));
        assert!(reason(r#"{"reason": "x"}"#).contains("no \"decision\""));
        assert!(reason(r#"["allow"]"#).contains("not a JSON object"));
    }
}
