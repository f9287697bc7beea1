//! External command hooks from the config: the call's metadata goes to the command as one JSON object on stdin,
//! and a pre-hook answers on stdout with `{"decision": "allow"|"deny"|"ask", "reason": "..."}`. Exit 0 with
//! nothing on stdout is no objection; anything else unexpected (non-zero exit, timeout, unreadable answer) denies,
//! naming the hook. A post-hook's stdout is ignored; its failures are reported, never acted on.
//!
//! Each run goes through the sandbox runner (`sandbox::run`, the one deadline-bound runner toolgate has) with
//! the environment upstreams get (the short allowlist, no secrets of toolgate's), its own PID namespace where
//! the kernel allows (so a `setsid` descendant still dies at the deadline; elsewhere its process group is
//! killed), no_new_privs, and Landlock: the whole filesystem readable but the protected paths (the state root
//! and the config file, neither readable nor writable), writes only in a private temporary directory and the
//! directories the hook's `writable` lists. The network is reachable unless the hook says `"network": false`.
//! These layers are best effort, since hooks are the operator's own programs; a hook that asks for no network
//! is refused where that cannot be enforced. This module does not decide what a hook's answer does to the call;
//! `hooks.rs` does.

use super::input::{Answer, Event, Input};
use super::{CallHook, HookCall, HookDecision, HookOutcome};
use config::{HookCommand, HookStage};
use sandbox::{
    Capture, CommandSpec, Layer, LayerMode, LayerReport, LayerRequest, LayerState, Outcome,
};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// The most a hook may write on stdout: an answer is one small object.
const MAX_ANSWER_BYTES: u64 = 64 * 1024;
/// How much of a failing hook's stderr is kept for its log line.
const MAX_STDERR_CHARS: usize = 2 * 1024;
/// Between SIGTERM and SIGKILL at the deadline: the call is refused either way, so a hook gets only a moment
/// to clean up.
const KILL_GRACE: Duration = Duration::from_millis(500);

/// The configured hooks as the gateway runs them: every pre-hook, then every post-hook, so a pre-hook's
/// position in the list (its rule id, `hook:<index>`) is its index in `hooks.pre`. `protected` are the paths
/// no hook may read or write: the state root (approvals and their key) and the config file.
pub fn command_hooks(hooks: &config::Hooks, protected: &[PathBuf]) -> Vec<Arc<dyn CallHook>> {
    hooks
        .pre
        .iter()
        .chain(&hooks.post)
        .map(|h| Arc::new(CommandHook::new(h.clone(), protected.to_vec())) as Arc<dyn CallHook>)
        .collect()
}

/// One configured hook command.
pub struct CommandHook {
    config: HookCommand,
    label: String,
    protected: Vec<PathBuf>,
}

impl CommandHook {
    /// A hook that may neither read nor write `protected` (where Landlock is available).
    pub fn new(config: HookCommand, protected: Vec<PathBuf>) -> Self {
        let list = match config.stage {
            HookStage::Pre => "pre",
            HookStage::Post => "post",
        };
        // The file name, not the whole path: the label reaches the agent in refusals.
        let file = std::path::Path::new(&config.command)
            .file_name()
            .map_or(config.command.clone(), |f| f.to_string_lossy().into_owned());
        let label = format!("hooks.{list}[{}] {file}", config.index);
        Self {
            config,
            label,
            protected,
        }
    }

    fn applies(&self, stage: HookStage, call: &HookCall) -> bool {
        let name = format!("{}__{}", call.server, call.tool);
        self.config.stage == stage
            && (self.config.tools.is_empty() || self.config.tools.iter().any(|g| glob(g, &name)))
    }

    fn input(&self, event: Event, call: &HookCall, outcome: Option<&HookOutcome>) -> Vec<u8> {
        serde_json::to_vec(&Input::at(call, event, outcome)).unwrap_or_default()
    }

    /// The containment of every run of this hook.
    fn layers(&self) -> LayerRequest {
        let (no_network, socket_filter) = if self.config.network {
            (LayerMode::Off, LayerMode::Off)
        } else {
            // Asked for in so many words: a hook that would still reach the network does not run.
            (LayerMode::Required, LayerMode::Required)
        };
        // Landlock is best effort for hooks in that a machine without it still runs them (protected paths
        // would make it mandatory, so they are handed over only where it exists); on a machine that has it, a
        // hook it cannot confine as configured (a `writable` directory that is missing) does not run.
        let (landlock, protected) = if landlock_available() {
            (LayerMode::Required, self.protected.clone())
        } else {
            (LayerMode::BestEffort, Vec::new())
        };
        LayerRequest {
            pid_namespace: LayerMode::BestEffort,
            no_network,
            landlock,
            writable_paths: self.config.writable.clone(),
            protected_paths: protected,
            private_tmp: true,
            // The operator's scripts may live there, and every other path is readable too.
            shared_tmp_readable: true,
            socket_filter,
            rlimits: LayerMode::Off,
            limits: Default::default(),
            no_new_privs: LayerMode::BestEffort,
        }
    }

    /// Runs the command with `input` on stdin; its stdout when it exits 0 in time.
    fn run(&self, input: Vec<u8>) -> Result<Capture, String> {
        let config = &self.config;
        let env = config::upstream_env(&BTreeMap::new(), |k| std::env::var(k).ok());
        let cannot_start =
            |why: &dyn std::fmt::Display| format!("cannot start {}: {why}", config.command);
        let program = program(&config.command, env.get("PATH").map(String::as_str))
            .map_err(|why| cannot_start(&why))?;
        let cwd = std::env::current_dir().map_err(|e| cannot_start(&e))?;
        let mut spec = CommandSpec::new(program, cwd)
            .args(config.args.iter().cloned())
            .timeout(config.timeout)
            .stdin(input);
        spec.env = env;
        spec.kill_grace = KILL_GRACE;
        spec.layers = self.layers();
        let ran = sandbox::run(&spec).map_err(|e| cannot_start(&e))?;
        tracing::debug!(hook = %self.label, layers = %summary(&ran.layers), outcome = ?ran.outcome,
            "a command hook ran");
        match ran.outcome {
            Outcome::Succeeded if ran.stdout.total_bytes > MAX_ANSWER_BYTES => Err(format!(
                "it wrote more than {MAX_ANSWER_BYTES} bytes on stdout"
            )),
            Outcome::Succeeded => Ok(ran.stdout),
            Outcome::TimedOut => Err(format!(
                "timed out after {} s",
                config.timeout.as_secs_f64()
            )),
            Outcome::Failed => Err(cannot_start(
                &ran.failure.unwrap_or_else(|| "unknown failure".to_owned()),
            )),
            Outcome::CommandFailed => {
                let status = match (ran.exit.code, ran.exit.signal) {
                    (Some(code), _) => format!("exit status: {code}"),
                    (None, Some(signal)) => format!("signal: {signal}"),
                    (None, None) => "an unknown status".to_owned(),
                };
                let said: String = ran
                    .stderr
                    .text
                    .trim()
                    .chars()
                    .take(MAX_STDERR_CHARS)
                    .collect();
                let said = if said.is_empty() {
                    String::new()
                } else {
                    format!(": {said}")
                };
                Err(format!("it ended with {status}{said}"))
            }
        }
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
        match self.run(self.input(Event::Pre, call, None)) {
            Ok(stdout) => read_answer(&stdout),
            Err(why) => HookDecision::Deny {
                reason: format!("the hook failed ({why}), so the call is refused"),
            },
        }
    }

    fn after(&self, call: &HookCall, outcome: &HookOutcome) -> Result<(), String> {
        if !self.applies(HookStage::Post, call) {
            return Ok(());
        }
        self.run(self.input(Event::Post, call, Some(outcome)))
            .map(|_| ())
    }
}

/// Whether this machine can put Landlock in force, found once by trying (the first hook run pays for it).
/// Without it hooks run unconfined by Landlock (as upstreams do), which the log says once.
fn landlock_available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| match sandbox::probe().state(Layer::Landlock) {
        LayerState::Active => true,
        other => {
            tracing::warn!(
                "Landlock is not available ({other:?}): command hooks can read and write toolgate's state \
                 root and config file"
            );
            false
        }
    })
}

/// One line naming each layer's state, for the debug log.
fn summary(layers: &LayerReport) -> String {
    layers
        .entries
        .iter()
        .map(|e| format!("{}={}", e.layer, e.state))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The program to run, found as `execvp` would find it: a name with a slash is a path (relative to toolgate's
/// working directory), any other name is looked up on the hook's PATH (absolute entries only).
fn program(command: &str, path: Option<&str>) -> Result<PathBuf, String> {
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if command.contains('/') {
        let p = std::path::absolute(command).map_err(|e| e.to_string())?;
        return if executable(&p) {
            Ok(p)
        } else {
            Err("no executable file there".to_owned())
        };
    }
    path.unwrap_or_default()
        .split(':')
        .map(Path::new)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(command))
        .find(|p| executable(p))
        .ok_or_else(|| "not found on the hook's PATH".to_owned())
}

/// A pre-hook's stdout as captured: output that was not valid UTF-8 is refused, not read as replaced.
fn read_answer(stdout: &Capture) -> HookDecision {
    if stdout.lossy {
        return HookDecision::Deny {
            reason: "the hook's answer is not UTF-8, so the call is refused".to_owned(),
        };
    }
    answer(&stdout.text)
}

/// Reads a pre-hook's stdout. Fails closed: whatever is not a clear allow is a deny that says why.
fn answer(text: &str) -> HookDecision {
    let deny = |why: &str| HookDecision::Deny {
        reason: format!("the hook's answer {why}, so the call is refused"),
    };
    if text.trim().is_empty() {
        return HookDecision::Allow;
    }
    let Ok(answer @ Value::Object(_)) = serde_json::from_str::<Value>(text) else {
        return deny("is not a JSON object");
    };
    let Ok(Answer { decision, reason }) = Answer::deserialize(answer) else {
        return deny("has a \"decision\" or \"reason\" that is not text");
    };
    let reason = reason.unwrap_or_default();
    match decision.as_deref() {
        Some("allow") => HookDecision::Allow,
        Some("deny") => HookDecision::Deny { reason },
        Some("ask") => HookDecision::Ask { reason },
        Some(other) => deny(&format!("has an unknown decision {other:?}")),
        None => deny("has no \"decision\""),
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
        let reason = |s: &str| match answer(s) {
            HookDecision::Deny { reason } => reason,
            other => panic!("{other:?}"),
        };
        assert_eq!(answer(" \n"), HookDecision::Allow);
        assert_eq!(answer(r#"{"decision": "allow"}"#), HookDecision::Allow);
        assert_eq!(
            answer(r#"{"decision": "ask", "reason": "big"}"#),
            HookDecision::Ask {
                reason: "big".into()
            }
        );
        assert_eq!(reason(r#"{"decision": "deny", "reason": "no"}"#), "no");
        assert!(reason("yes").contains("not a JSON object"));
        assert!(reason(r#"{"decision": "maybe"}"#).contains("unknown decision \"maybe\""));
        assert!(reason(r#"{"reason": "x"}"#).contains("no \"decision\""));
        assert!(reason(r#"["allow"]"#).contains("not a JSON object"));
        // An answer toolgate cannot read as text is not a clear allow.
        assert!(reason(r#"{"decision": "allow", "reason": 5}"#).contains("not text"));
        assert!(reason(r#"{"decision": true}"#).contains("not text"));
    }

    #[test]
    fn an_answer_that_is_not_utf8_denies_even_if_its_replacement_would_allow() {
        let text = "{\"decision\": \"allow\", \"reason\": \"\u{FFFD}\"}".to_owned();
        let lossy = Capture {
            total_bytes: text.len() as u64,
            retained_bytes: text.len() as u64,
            text,
            dropped_bytes: 0,
            lossy: true,
        };
        assert!(
            matches!(read_answer(&lossy), HookDecision::Deny { reason } if reason.contains("not UTF-8"))
        );
        let exact = Capture {
            lossy: false,
            ..lossy
        };
        assert_eq!(read_answer(&exact), HookDecision::Allow);
    }

    #[test]
    fn programs_resolve_like_execvp_on_the_hooks_path() {
        assert_eq!(
            program("sh", Some("relative/bin:/bin")),
            Ok(PathBuf::from("/bin/sh"))
        );
        assert!(program("sh", None).is_err());
        assert!(program("/nonexistent/hook", Some("/bin")).is_err());
        // A directory is not a program.
        assert!(program("/bin", Some("/bin")).is_err());
    }
}
