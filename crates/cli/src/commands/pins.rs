//! `toolgate pins list | diff NAME | accept NAME`: the human's side of rug-pull defence. Every upstream tool's
//! definition is pinned on first sight; a changed definition stays quarantined until it is reviewed here.
//! Flags (hidden instructions, invisible characters, look-alike names) are recomputed from the stored
//! definitions, so the listing needs no running server.

use super::common::ConfigArgs;
use anyhow::{bail, Context};
use serde_json::Value;
use std::process::ExitCode;
use store::{PinState, ToolPin};

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
    /// Every pinned tool: state, definition hash, and any poisoning flags.
    List,
    /// What changed in a quarantined tool's definition (accepted → observed).
    Diff { name: String },
    /// Accept the observed definition of a quarantined tool. `--sha256` accepts only that exact definition, so
    /// what is accepted is what was reviewed.
    Accept {
        name: String,
        #[arg(long)]
        sha256: Option<String>,
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
        Action::Diff { name } => {
            let pin = find(&pins, &name)?;
            let (Some(candidate), Some(hash)) = (&pin.candidate_json, &pin.candidate_sha256) else {
                println!(
                    "{name} is {} and has no pending change",
                    state_name(pin.state)
                );
                return Ok(ExitCode::SUCCESS);
            };
            println!(
                "{name}: accepted {:.16} → observed {hash:.16}",
                pin.definition_sha256
            );
            for line in diff(&pretty(&pin.definition_json), &pretty(candidate)) {
                println!("{line}");
            }
        }
        Action::Accept { name, sha256 } => {
            let pin = find(&pins, &name)?;
            let Some(candidate) = pin.candidate_sha256.clone().or_else(|| {
                (pin.state == PinState::Quarantined).then(|| pin.definition_sha256.clone())
            }) else {
                bail!("{name} is not quarantined; there is nothing to accept");
            };
            if let Some(expected) = sha256 {
                if !candidate.starts_with(&expected) || expected.len() < 12 {
                    bail!("{name}'s pending definition is {candidate}, not {expected}: review it again with `pins diff`");
                }
            }
            state.store(|s| s.accept_pin(&name, &candidate, store::Timestamp::now()))?;
            println!("accepted {name} at {candidate:.16}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn find<'a>(pins: &'a [ToolPin], name: &str) -> anyhow::Result<&'a ToolPin> {
    pins.iter()
        .find(|p| p.name == name)
        .with_context(|| format!("no pinned tool named {name}"))
}

fn state_name(s: PinState) -> &'static str {
    match s {
        PinState::Accepted => "ACCEPTED",
        PinState::Quarantined => "QUARANTINED",
    }
}

fn list(pins: &[ToolPin]) {
    if pins.is_empty() {
        println!("no tools are pinned yet (they are pinned when toolgate first sees them)");
    }
    let names: Vec<(String, String)> = pins
        .iter()
        .filter_map(|p| {
            p.name
                .split_once("__")
                .map(|(s, t)| (s.to_owned(), t.to_owned()))
        })
        .collect();
    let lookalikes = policy::lookalike_flags(&names);
    for pin in pins {
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
            lookalikes
                .iter()
                .filter(|(k, _)| k == &pin.name)
                .map(|(_, f)| format!("{:?}: {}", f.code, f.detail)),
        );
        let pending = pin
            .candidate_sha256
            .as_deref()
            .map(|h| format!(" → {h:.12} pending"))
            .unwrap_or_default();
        println!(
            "{:<40} {:<11} {:.12}{pending}",
            pin.name,
            state_name(pin.state),
            pin.definition_sha256
        );
        for f in flags {
            println!("    flag: {f}");
        }
    }
}

fn pretty(json: &str) -> Vec<String> {
    let v: Value = serde_json::from_str(json).unwrap_or(Value::Null);
    serde_json::to_string_pretty(&v)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// A line diff (longest common subsequence): `-` only in the accepted definition, `+` only in the observed one.
fn diff(old: &[String], new: &[String]) -> Vec<String> {
    let (n, m) = (old.len(), new.len());
    let mut lcs = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if old[i] == new[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < n || j < m {
        if i < n && j < m && old[i] == new[j] {
            out.push(format!("  {}", old[i]));
            i += 1;
            j += 1;
        } else if j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j]) {
            out.push(format!("+ {}", new[j]));
            j += 1;
        } else {
            out.push(format!("- {}", old[i]));
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::diff;

    #[test]
    fn diff_marks_only_what_changed() {
        let old: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let new: Vec<String> = ["a", "x", "c"].iter().map(|s| s.to_string()).collect();
        assert_eq!(diff(&old, &new), ["  a", "+ x", "- b", "  c"]);
    }
}
