//! The check of a program before it starts. Every tool name it writes as a string literal in `call("…")` is
//! resolved and decided at tool level, as the profile's visibility check decides it: a name that is no tool
//! here, a tool the profile blocks, a flagged or quarantined one, or one a deny rule refuses for every call
//! stops the program before anything runs, and the answer names the rule. A name whose calls are not certainly
//! allowed (they ask, or their decision depends on arguments not known yet) makes the whole run ask a human
//! once, before it starts.
//!
//! It decides what can be decided without arguments and nothing else: every call is decided again, with its
//! arguments, while the program runs.

use super::{resolve, NOT_FROM_PROGRAMS, SEARCH_TOOL};
use crate::gateway::Gateway;
use crate::guard::{Guard, Verdict, OWN_SERVER};
use crate::outcome::{Refusal, RefusalCode};
use codemode::Scan;
use policy::{Decision, Operation, ReasonCode, SurfaceEntry, SurfaceReason, Visibility};
use serde_json::json;
use std::collections::BTreeSet;

/// What the check found.
#[derive(Debug)]
pub(crate) enum PreRun {
    /// The program does not start: the refusal names the tool and why.
    Stop(Refusal),
    /// It may start with these (exposed) literal names; with `ask`, only once a human approved the run (the
    /// decision shown is the strictest that asked).
    Start {
        names: BTreeSet<String>,
        ask: Option<Decision>,
    },
}

/// Checks the literal names of `scan` against the current catalog and policy.
pub(crate) fn check(gw: &Gateway, guard: &Guard, scan: &Scan) -> PreRun {
    let agg = gw.aggregate();
    let pins = gw.pins();
    let mut names = BTreeSet::new();
    let mut asks: Vec<Decision> = Vec::new();
    for written in &scan.literal_names {
        let Some(exposed) = resolve(&agg, written) else {
            let why = format!(
                "toolgate did not start this program: it calls {written:?}, which is not a tool here (find tools \
                 with {SEARCH_TOOL})"
            );
            return PreRun::Stop(Refusal::new(RefusalCode::UnknownTarget, why));
        };
        let (server, tool) = match agg.route_tool(&exposed) {
            Some(route) => (route.server.clone(), route.name.clone()),
            None => (OWN_SERVER.to_owned(), exposed.clone()),
        };
        if server == OWN_SERVER && NOT_FROM_PROGRAMS.contains(&tool.as_str()) {
            let why = format!(
                "toolgate did not start this program: it calls {written:?}, which a program cannot call"
            );
            return PreRun::Stop(Refusal::new(RefusalCode::Refused, why));
        }
        let owner = [(server.clone(), tool.clone())];
        let entry = guard.surface(&owner, &pins, gw.opts.quarantine_asks).pop();
        if let Some(refusal) = entry.and_then(|e| blocked(written, &e)) {
            return PreRun::Stop(refusal);
        }
        // Decided without arguments; a decision that needs them (a file tool with no path yet is refused as
        // unknown) is taken by the tool's name alone: the rules that name it, else the default. An ask is
        // approved with the run; each call is still decided with its arguments (a deny stays a deny).
        let verdict = match guard.decide_only(&server, &tool, &json!({})) {
            Verdict::Refuse(_) => guard.decide_by_name(&server, &tool),
            decided => decided,
        };
        match verdict {
            Verdict::Allow(_) => {}
            Verdict::Ask(d) => asks.push(d),
            Verdict::Refuse(r) => asks.push(r.decision.unwrap_or_else(unknown)),
        }
        names.insert(exposed);
    }
    // The one shown to the human (and to elicitation's read-only test) is the one that changes most; what the
    // run is held for is a question, whatever the decision without arguments said.
    let ask = asks
        .iter()
        .find(|d| !read_only(d.operation))
        .or(asks.first())
        .cloned()
        .map(|mut d| {
            d.effect = policy::Effect::Ask;
            d
        });
    PreRun::Start { names, ask }
}

/// The decision shown for a name whose refusal without arguments carried none.
fn unknown() -> Decision {
    Decision {
        effect: policy::Effect::Deny,
        reason: ReasonCode::UnknownOperation,
        rule_id: None,
        operation: Operation::Unknown,
        unknown: None,
    }
}

fn read_only(op: Operation) -> bool {
    matches!(
        op,
        Operation::FsRead | Operation::GitRead | Operation::McpCall
    )
}

/// The refusal for a literal name the profile does not let any call reach, naming the rule.
fn blocked(written: &str, entry: &SurfaceEntry) -> Option<Refusal> {
    if !matches!(
        entry.visibility,
        Visibility::Blocked | Visibility::Unavailable
    ) {
        return None;
    }
    let start = "toolgate did not start this program";
    let refusal = match (entry.reason, &entry.rule_id) {
        (SurfaceReason::DenyRule, Some(rule)) => Refusal::new(
            RefusalCode::Policy(ReasonCode::DenyRule),
            format!("{start}: it calls {written:?}, which rule {rule} (DENY_RULE) denies for every call"),
        ),
        (SurfaceReason::Flagged, _) => Refusal::new(
            RefusalCode::ToolFlagged,
            format!("{start}: it calls {written:?}, whose definition was flagged as poisoned"),
        ),
        (SurfaceReason::Quarantined, _) => Refusal::new(
            RefusalCode::ToolQuarantined,
            format!(
                "{start}: it calls {written:?}, whose definition changed and is quarantined until a human \
                 accepts it (toolgate pins diff / pins accept)"
            ),
        ),
        (SurfaceReason::ServerUnavailable, _) => Refusal::new(
            RefusalCode::Refused,
            format!("{start}: it calls {written:?}, whose server is unavailable"),
        ),
        _ => Refusal::new(
            RefusalCode::Policy(ReasonCode::ToolHidden),
            format!("{start}: it calls {written:?}, which the active profile blocks"),
        ),
    };
    Some(refusal)
}
