//! The check of a program before it starts. Every `call("…", …)` whose tool name is a string literal is
//! resolved and decided as the same call made directly would be: with the arguments written, when the scan
//! read them as a plain literal; as the strictest call of that tool, when they are computed (any arguments:
//! `shell_run` runs an unknown command, a write tool writes anywhere). A name that is no tool here (or could
//! mean two), a tool the profile blocks, a flagged or quarantined one, or one a deny rule refuses for every call
//! stops the program before anything runs, and the answer names the rule.
//!
//! The calls that ask make the whole run ask a human once, before it starts, and the approval covers exactly
//! those calls: each for the arguments written, a computed one for any. The run is approved no more cheaply
//! than its calls would be: through the client only when each of them could be approved there directly (a
//! read that is not a destructive tool), and for the rest of the session only when none computes its
//! arguments (the same program could then make other calls next time). Every call is decided again, with its
//! real arguments, while the program runs; a deny stays a deny.

use super::{NOT_FROM_PROGRAMS, SEARCH_TOOL};
use crate::aggregate::Spelled;
use crate::elicit;
use crate::guard::{Guard, Verdict, OWN_SERVER};
use crate::outcome::{Refusal, RefusalCode};
use crate::pipeline::context::RunApproval;
use crate::stages::Stages;
use codemode::Scan;
use policy::{Decision, Operation, ReasonCode, SurfaceEntry, SurfaceReason, Visibility};
use serde_json::json;
use std::collections::BTreeSet;

/// What the check found.
#[derive(Debug)]
pub(crate) enum PreRun {
    /// The program does not start: the refusal names the tool and why.
    Stop(Refusal),
    /// It may start, once a human approved it when `plan.ask` says so.
    Start(Plan),
}

/// How a program that may start is approved.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    /// What the run's approval covers once a human gave it.
    pub approval: RunApproval,
    /// The decision the run is held with (the strictest that asked), `None` when nothing asks.
    pub ask: Option<Decision>,
    /// Each call that needs the approval, and why, one line each, for the human who decides.
    pub needs: Vec<String>,
    /// Whether every call that asks could be approved through the client, as a direct call of it could.
    pub in_band: bool,
    /// Whether "allow for this session" may cover this program again: not when an asking call computes its
    /// arguments, since the same program may compute other ones next time.
    pub grantable: bool,
}

impl Plan {
    /// The lines of `needs` as one note for the held request.
    pub(crate) fn note(&self) -> Option<String> {
        (!self.needs.is_empty()).then(|| {
            format!(
                "this run needs a human's approval for: {}",
                self.needs.join("; ")
            )
        })
    }
}

/// Checks the literal calls of `scan` against the current catalog and policy.
pub(crate) fn check(gw: &Stages, guard: &Guard, scan: &Scan) -> PreRun {
    let agg = gw.aggregate();
    let pins = gw.pins();
    let mut plan = Plan {
        in_band: true,
        grantable: true,
        ..Plan::default()
    };
    let mut asks: Vec<Decision> = Vec::new();
    let mut seen = BTreeSet::new();
    for call in &scan.calls {
        let written = &call.name;
        let exposed = match agg.spelled(written) {
            Spelled::Tool(exposed) => exposed.to_owned(),
            Spelled::Collision(why) => {
                let why =
                    format!("toolgate did not start this program: it calls {written:?}, {why}");
                return PreRun::Stop(Refusal::new(RefusalCode::UnknownTarget, why));
            }
            Spelled::Unknown => {
                let why = format!(
                    "toolgate did not start this program: it calls {written:?}, which is not a tool here (find \
                     tools with {SEARCH_TOOL})"
                );
                return PreRun::Stop(Refusal::new(RefusalCode::UnknownTarget, why));
            }
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
        let key = call.arguments.as_ref().map(jsonrpc::canonical_json);
        if !seen.insert((exposed.clone(), key.clone())) {
            continue;
        }
        let definition = agg.tool_definition(&exposed);
        let verdict = match &call.arguments {
            Some(arguments) => guard.check(&server, &tool, definition, arguments).0,
            None => strictest(guard, &server, &tool),
        };
        // An allowed call needs nothing; a refused one will be refused again when the program makes it.
        let Verdict::Ask(decision) = verdict else {
            continue;
        };
        let in_band = elicit::in_band(&decision, definition);
        plan.in_band &= in_band;
        plan.grantable &= key.is_some();
        let shown = match &call.arguments {
            Some(arguments) => format!("{exposed} {}", crate::snapshot::ascii_json(arguments)),
            None => format!("{exposed} (arguments computed at run time: any call of it)"),
        };
        let rule = decision
            .rule_id
            .as_deref()
            .unwrap_or(decision.reason.as_str());
        let channel = if in_band {
            ""
        } else {
            ", approved out of band only"
        };
        plan.needs
            .push(format!("{shown}: {} ({rule}){channel}", decision.operation));
        plan.approval.approve(&exposed, key);
        asks.push(decision);
    }
    // The one shown (and recorded) is the one that changes most.
    plan.ask = asks
        .iter()
        .find(|d| !read_only(d.operation))
        .or(asks.first())
        .cloned();
    PreRun::Start(plan)
}

/// The strictest call of a tool whose arguments are not known: exactly its decision when its calls are decided
/// by name alone (an `mcp.call`); else a question, when some call of it could ask (`Policy::may_ask`), about an
/// operation that may touch anything — the tool's own operation for toolgate's workspace tools (a write
/// anywhere, a command not known), `unknown` for an upstream's.
fn strictest(guard: &Guard, server: &str, tool: &str) -> Verdict {
    let by_name = guard.decide_only(server, tool, &json!({}));
    let generic = match &by_name {
        Verdict::Allow(d) | Verdict::Ask(d) => d.operation == Operation::McpCall,
        Verdict::Refuse(r) => r
            .decision
            .as_ref()
            .is_some_and(|d| d.operation == Operation::McpCall),
    };
    if generic {
        return by_name;
    }
    let own = match server {
        OWN_SERVER => builtin::tools().iter().find(|t| t.name == tool),
        _ => None,
    };
    let operation = own.map_or(Operation::Unknown, |t| t.operation);
    let commands = operation == Operation::ShellExec;
    let decision = |effect, reason, rule_id: Option<String>| Decision {
        effect,
        reason,
        rule_at: rule_id
            .as_deref()
            .and_then(|id| guard.policy().rule_origin(id))
            .map(str::to_owned),
        rule_id,
        operation,
        unknown: None,
    };
    match guard
        .policy()
        .may_ask(&format!("{server}__{tool}"), commands)
    {
        Some((reason, rule_id)) => Verdict::Ask(decision(policy::Effect::Ask, reason, rule_id)),
        // Every call of it is allowed or refused when it is made: nothing for a human to approve.
        None => Verdict::Allow(decision(
            policy::Effect::Allow,
            ReasonCode::DefaultAllow,
            None,
        )),
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
    let rule = entry
        .rule_id
        .as_deref()
        .map(|id| policy::rule_label(id, entry.rule_at.as_deref()));
    let refusal = match (entry.reason, &rule) {
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
                "{start}: it calls {written:?}, which is held until a human reviews and accepts its definition \
                 (new on its server, or changed since it was accepted: toolgate pins diff / pins accept)"
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
