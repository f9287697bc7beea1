//! `toolgate pins list | diff NAME | accept NAME`: the human's side of rug-pull defence. Every upstream tool,
//! prompt, resource, resource template and server instructions is pinned on first sight; a changed definition
//! (and a tool or prompt new to an already-pinned server) stays held until it is reviewed here. A held item is
//! NEW when nothing of it was ever accepted (its whole definition is what to review) and QUARANTINED when its
//! accepted definition changed (the diff is what to review). Flags (hidden
//! instructions, invisible characters, look-alike names) are recomputed from the stored definitions, so the
//! listing needs no running server. Accepting a flagged definition is a separate, explicit override
//! (`--despite-flags`) that is written to the audit log; without it the command refuses and says why.

use super::common::ConfigArgs;
use anyhow::{bail, Context};
use serde_json::Value;
use std::process::ExitCode;
use std::time::Duration;
use store::{PinState, ToolPin};

/// A diff that has not finished by then falls back to a coarser (still correct) one, so a huge definition cannot
/// hold the terminal.
const DIFF_DEADLINE: Duration = Duration::from_secs(2);
/// Unchanged lines shown around each change.
const DIFF_CONTEXT: usize = 3;

/// Review pinned tool definitions: list them with their flags, diff a changed one, accept it.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
    #[command(flatten)]
    config: ConfigArgs,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Every pinned tool: state (ACCEPTED; NEW: held, new on a server listed before it; QUARANTINED: changed since
    /// accepted), definition hash, and any poisoning flags.
    List,
    /// What changed in a quarantined tool's definition (accepted → observed), or a new tool's whole definition;
    /// for a server, for each of its held tools.
    Diff {
        /// A tool as `pins list` names it (`server__tool`), or a server's name: each of its held tools.
        name: String,
    },
    /// Accept the observed definition of a quarantined tool, or of every held tool of a server (after an
    /// upgrade), showing each diff once as it does. `--sha256` accepts only that exact definition, so what is
    /// accepted is what was reviewed.
    Accept {
        /// A tool as `pins list` names it (`server__tool`), or a server's name: every held tool of that server.
        name: String,
        /// The observed definition's SHA-256 (at least its first 12 hex digits, as `pins diff` prints it): accept
        /// only if the held definition is still that one. For one tool only.
        #[arg(long, value_name = "HEX")]
        sha256: Option<String>,
        /// Let a definition that is flagged as poisoned run anyway. Recorded in the audit log; a later change of
        /// the definition is flagged and held afresh.
        #[arg(long)]
        despite_flags: bool,
    },
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let config = args.config.load()?;
    let state = crate::runtime::state(&config)?;
    let pins = state
        .store(|s| s.list_pins())
        .context("cannot read the pins")?;
    match args.action {
        Action::List => list(&pins),
        Action::Diff { name } if is_server(&pins, &name) => {
            for pin in held_of(&pins, &name) {
                show_diff(pin);
            }
        }
        Action::Accept {
            name,
            sha256,
            despite_flags,
        } if is_server(&pins, &name) => {
            if sha256.is_some() {
                bail!("--sha256 names one definition; accept {name}'s tools one by one to use it");
            }
            let held = held_of(&pins, &name);
            if held.is_empty() {
                println!("{name} has no held tools; there is nothing to accept");
            }
            for pin in held {
                show_diff(pin);
                accept(&state, &pins, &pin.name, None, despite_flags)?;
            }
        }
        Action::Diff { name } => {
            let pin = find(&pins, &name)?;
            if pin.candidate_json.is_none() && !pin.never_accepted() {
                println!("{name} is {} and has no pending change", state_name(pin));
                return Ok(ExitCode::SUCCESS);
            }
            show_diff(pin);
        }
        Action::Accept {
            name,
            sha256,
            despite_flags,
        } => accept(&state, &pins, &name, sha256.as_deref(), despite_flags)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Whether `name` is a server's (no pinned tool has that name, and some tool is pinned under it).
fn is_server(pins: &[ToolPin], name: &str) -> bool {
    let prefix = format!("{name}__");
    !pins.iter().any(|p| p.name == name) && pins.iter().any(|p| p.name.starts_with(&prefix))
}

/// A server's tools with a definition awaiting review (changed, or new on a server already listed).
fn held_of<'a>(pins: &'a [ToolPin], server: &str) -> Vec<&'a ToolPin> {
    let prefix = format!("{server}__");
    pins.iter()
        .filter(|p| p.name.starts_with(&prefix))
        .filter(|p| p.state == PinState::Quarantined || p.candidate_sha256.is_some())
        .collect()
}

/// One held tool's change, accepted → observed; for a new one (nothing accepted), its whole definition.
fn show_diff(pin: &ToolPin) {
    let Some(candidate) = &pin.candidate_json else {
        println!(
            "{}: new, never accepted; observed {:.16}",
            pin.name, pin.definition_sha256
        );
        print!("{}", diff("", &pretty(&pin.definition_json)));
        return;
    };
    println!(
        "{}: accepted {:.16} → observed {:.16}",
        pin.name,
        pin.definition_sha256,
        pin.candidate_sha256.as_deref().unwrap_or("")
    );
    print!(
        "{}",
        diff(&pretty(&pin.definition_json), &pretty(candidate))
    );
}

fn find<'a>(pins: &'a [ToolPin], name: &str) -> anyhow::Result<&'a ToolPin> {
    pins.iter()
        .find(|p| p.name == name)
        .with_context(|| format!("no pinned tool named {name}"))
}

/// ACCEPTED; NEW (held, nothing of it ever accepted); QUARANTINED (its accepted definition changed).
fn state_name(pin: &ToolPin) -> &'static str {
    match pin.state {
        PinState::Accepted => "ACCEPTED",
        PinState::Quarantined if pin.never_accepted() => "NEW",
        PinState::Quarantined => "QUARANTINED",
    }
}

/// Accepts a held definition; a flagged one only with `despite_flags`, and then as an audited override.
fn accept(
    state: &gateway::State,
    pins: &[ToolPin],
    name: &str,
    sha256: Option<&str>,
    despite_flags: bool,
) -> anyhow::Result<()> {
    let pin = find(pins, name)?;
    let candidate = pin
        .candidate_sha256
        .clone()
        .or_else(|| (pin.state == PinState::Quarantined).then(|| pin.definition_sha256.clone()));
    let flagged = flags(pins, pin);
    let overridden = pin.flags_overridden();
    let Some(candidate) = candidate
        .or_else(|| (!flagged.is_empty() && !overridden).then(|| pin.definition_sha256.clone()))
    else {
        bail!("{name} is not quarantined; there is nothing to accept");
    };
    if let Some(expected) = sha256 {
        if !candidate.starts_with(expected) || expected.len() < 12 {
            bail!("{name}'s pending definition is {candidate}, not {expected}: review it again with `pins diff`");
        }
    }
    if !flagged.is_empty() && !despite_flags {
        bail!(
            "{name} is flagged as poisoned ({}); accepting it would not let it run. Read it with `toolgate pins \
             diff {name}` / `pins list`; if you are sure it is safe, accept it with --despite-flags (recorded in \
             the audit log)",
            flagged.join("; ")
        );
    }
    let now = store::Timestamp::now();
    if pin.state == PinState::Quarantined || pin.candidate_sha256.is_some() {
        state.store(|s| s.accept_pin(name, &candidate, now))?;
    }
    let outcome = if flagged.is_empty() {
        "PIN_ACCEPTED"
    } else {
        state.store(|s| s.override_pin_flags(name, &candidate, now))?;
        "PIN_ACCEPTED_DESPITE_FLAGS"
    };
    let mut event =
        audit::AuditEvent::new(audit::EventKind::Approval, now.as_millis(), "pins-accept");
    event.tool = name.to_owned();
    event.outcome = Some(outcome.to_owned());
    event.actor = Some(super::approvals::operator());
    event.rule_id = Some(format!("pins.accept:{candidate:.16}"));
    event.resources = flagged.clone();
    state.audit(event);
    state.flush();
    if let Some(problem) = state.audit_problem() {
        bail!("accepted {name}, but its audit record could not be written: {problem}");
    }
    if flagged.is_empty() {
        println!("accepted {name} at {candidate:.16}");
    } else {
        println!(
            "accepted {name} at {candidate:.16} despite its flags ({}); recorded in the audit log",
            flagged.join("; ")
        );
    }
    Ok(())
}

/// The flags of the definition a pin would run (the pending one if any): poisoning in the definition itself, and
/// a tool name confusable with another pinned tool's.
fn flags(pins: &[ToolPin], pin: &ToolPin) -> Vec<String> {
    let names: Vec<(String, String)> = pins
        .iter()
        .filter(|p| gateway::PinItem::is_tool_key(&p.name))
        .filter_map(|p| {
            p.name
                .split_once("__")
                .map(|(s, t)| (s.to_owned(), t.to_owned()))
        })
        .collect();
    let shown = pin
        .candidate_json
        .as_deref()
        .unwrap_or(&pin.definition_json);
    let def: Value = serde_json::from_str(shown).unwrap_or(Value::Null);
    let mut flags: Vec<String> = policy::inspect_definition(&def)
        .iter()
        .map(|f| format!("{:?} in {}", f.code, f.field))
        .collect();
    flags.extend(
        policy::lookalike_flags(&names)
            .iter()
            .filter(|(k, _)| k == &pin.name)
            .map(|(_, f)| format!("{:?}: {}", f.code, f.detail)),
    );
    flags
}

fn list(pins: &[ToolPin]) {
    if pins.is_empty() {
        println!("nothing is pinned yet (definitions are pinned when toolgate first sees them)");
    }
    for pin in pins {
        let flags = flags(pins, pin);
        let pending = pin
            .candidate_sha256
            .as_deref()
            .map(|h| format!(" → {h:.12} pending"))
            .unwrap_or_default();
        println!(
            "{:<40} {:<11} {:.12}{pending}",
            pin.name,
            state_name(pin),
            pin.definition_sha256
        );
        let overridden = if pin.flags_overridden() {
            " (accepted despite flags)"
        } else {
            ""
        };
        for f in flags {
            println!("    flag: {f}{overridden}");
        }
    }
}

fn pretty(json: &str) -> String {
    let v: Value = serde_json::from_str(json).unwrap_or(Value::Null);
    let mut text = serde_json::to_string_pretty(&v).unwrap_or_default();
    text.push('\n');
    text
}

/// A unified line diff, accepted → observed: within each change the removed (`-`) lines come before the added
/// (`+`) ones. Myers' algorithm in linear memory with a deadline, so a 12,000-line definition costs megabytes and
/// seconds at worst, never a quadratic table.
fn diff(old: &str, new: &str) -> String {
    let diff = similar::TextDiff::configure()
        .algorithm(similar::Algorithm::Myers)
        .timeout(DIFF_DEADLINE)
        .diff_lines(old, new);
    diff.unified_diff()
        .context_radius(DIFF_CONTEXT)
        .header("accepted", "observed")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::diff;
    use pretty_assertions::assert_eq;

    #[test]
    fn diff_prints_removed_lines_before_added_ones() {
        assert_eq!(
            diff("a\nb\nc\n", "a\nx\nc\n"),
            "--- accepted\n+++ observed\n@@ -1,3 +1,3 @@\n a\n-b\n+x\n c\n"
        );
    }

    /// Peak resident memory of this process in KiB (Linux); each test runs in its own process under nextest.
    fn peak_kib() -> Option<u64> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
        line.split_whitespace().nth(1)?.parse().ok()
    }

    #[test]
    fn huge_definition_diff_stays_small() {
        // Every line differs: the worst case. The former table would have been 12,001² words (over a gigabyte).
        let old: String = (0..12_000)
            .map(|i| format!("  \"old{i}\": {i},\n"))
            .collect();
        let new: String = (0..12_000)
            .map(|i| format!("  \"new{i}\": {i},\n"))
            .collect();
        let before = peak_kib();
        let started = std::time::Instant::now();
        let out = diff(&old, &new);
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
        let removed = out.lines().filter(|l| l.starts_with("-  ")).count();
        let added = out.lines().filter(|l| l.starts_with("+  ")).count();
        assert_eq!((removed, added), (12_000, 12_000));
        let first_added = out.find("\n+  ").unwrap();
        assert!(
            out.rfind("\n-  ").unwrap() < first_added,
            "removed lines come first"
        );
        if let (Some(b), Some(a)) = (before, peak_kib()) {
            assert!(
                a.saturating_sub(b) < 256 * 1024,
                "peak grew by {} KiB",
                a - b
            );
        }
    }
}
