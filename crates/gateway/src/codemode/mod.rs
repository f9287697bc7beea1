//! Code mode in the gateway: a client sees `search_tools`, `run_code` and toolgate's control tools, and every
//! other tool is reached only from programs, each call of which goes through the one governed-call pipeline.
//!
//! Here: the two tools' definitions, which of toolgate's own tools a client lists and a program may call, the
//! names a program may use (any spelling of a tool, resolved by the aggregate's one table), the search index built
//! with each merged catalog. Each client session's code state (call numbers, saved files) is in `sessions`, what an
//! identity and the gateway may take in `bounds`, the pre-run check in `prerun`, the two tools' work in
//! `tools`, the `ToolHost` over the pipeline in `host`. Nothing here
//! runs JavaScript: the `codemode` crate's runner and worker do.

pub(crate) mod bounds;
mod host;
pub(crate) mod options;
mod prerun;
mod sessions;
mod tools;

#[cfg(test)]
pub(crate) use options::worker_require;
pub use options::CodeOptions;
pub(crate) use sessions::Sessions;

pub(crate) use tools::{offer, prepare, run_approved, run_unapproved, search, Prepared};

use crate::aggregate::Aggregate;
use crate::contract::{CAPABILITIES_TOOL, RESUME_TOOL, STATUS_TOOL};
use crate::guard::{Guard, OWN_SERVER};
use crate::outcome::{Refusal, RefusalCode};
use crate::pins::PinView;
use crate::pipeline::context::{CallContext, Origin};
use codemode::{SearchIndex, ToolDoc};
use policy::Visibility;
use serde_json::{json, Value};

pub const SEARCH_TOOL: &str = crate::own::SEARCH_TOOLS;
pub const RUN_TOOL: &str = crate::own::RUN_CODE;

/// The largest program `run_code` accepts: a program is a short script that calls tools, not a payload.
pub(crate) const MAX_PROGRAM_BYTES: usize = 100 * 1024;
/// Most hits one search returns.
pub(crate) const MAX_HITS: u64 = 50;
const DEFAULT_HITS: u64 = 10;

/// toolgate's own tools a client lists in code mode besides the two code-mode tools: what it needs to see
/// toolgate's state and to resume a held run.
const CLIENT_SURFACE: &[&str] = &[
    crate::status::TOOL_NAME,
    STATUS_TOOL,
    RESUME_TOOL,
    CAPABILITIES_TOOL,
    SEARCH_TOOL,
    RUN_TOOL,
];

/// toolgate's own tools a program may not call: resuming a held call or a held run, starting a run inside a
/// run, or searching (the client's step before a run) belong to the client and its human, not to a program.
const NOT_FROM_PROGRAMS: &[&str] = &[RESUME_TOOL, SEARCH_TOOL, RUN_TOOL];

/// The two code-mode tools, listed with toolgate's own tools in code mode.
pub(crate) fn definitions() -> Vec<Value> {
    vec![
        json!({
            "name": SEARCH_TOOL,
            "title": "Search tools",
            "description": "Finds the tools a run_code program can call. Returns TypeScript-like signatures, best \
                            match first, and the servers that failed to start. Read-only.",
            "inputSchema": {"type": "object", "properties": {
                "query": {"type": "string", "minLength": 1, "maxLength": 1000,
                          "description": "What the tool should do, or part of its name"},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_HITS, "default": DEFAULT_HITS}},
                "required": ["query"], "additionalProperties": false},
            "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true,
                            "openWorldHint": false}
        }),
        json!({
            "name": RUN_TOOL,
            "title": "Run a program over the tools",
            "description": "Runs a JavaScript program: the body of an async function. `await call(name, args)` \
                            calls a tool found with search_tools and gives its structuredContent when it has one, \
                            else its content (a lone text item as its string); `return` gives the answer. \
                            Also `recall(n)` (the result of call #n), `saveFile(name, data)`, `readFile(path)` and \
                            `console.log`. Filter and join inside the program and return only what is needed. \
                            Every call is checked by toolgate's policy; a refused call throws.",
            "inputSchema": {"type": "object", "properties": {
                "code": {"type": "string", "minLength": 1, "maxLength": MAX_PROGRAM_BYTES}},
                "required": ["code"], "additionalProperties": false},
            "annotations": {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false,
                            "openWorldHint": true}
        }),
    ]
}

/// What a model is told first in code mode, before the upstreams' own instructions.
pub(crate) const INSTRUCTIONS: &str = "toolgate is in code mode: find tools with search_tools, then call them from one \
    run_code program (`await call(name, args)`, `return` the answer); filter and join inside the program and \
    return only what is needed. Calls the policy refuses throw; a run that needs a human's approval returns a \
    request id to resume with toolgate_resume.";

/// Whether a client lists tool `owner` in this mode (the profile's visibility applies on top).
pub(crate) fn client_lists(code_mode: bool, owner: &(String, String)) -> bool {
    !code_mode || (owner.0 == OWN_SERVER && CLIENT_SURFACE.contains(&owner.1.as_str()))
}

/// The route-stage refusal of a call this mode does not allow from where it came: in code mode a client calls
/// only the listed tools; a program calls no control tool, and nothing once its run has ended.
pub(crate) fn route_refusal(
    code_mode: bool,
    ctx: &CallContext,
    server: &str,
    tool: &str,
    name: &str,
) -> Option<Refusal> {
    let own = server == OWN_SERVER;
    match &ctx.origin {
        Origin::CodeRun { .. } if own && NOT_FROM_PROGRAMS.contains(&tool) => Some(Refusal::new(
            RefusalCode::Refused,
            format!("{name} cannot be called from a program"),
        )),
        Origin::CodeRun { .. } if ctx.cancel.is_cancelled() => Some(Refusal::new(
            RefusalCode::Refused,
            format!("{name} was called after its run ended; it did not run"),
        )),
        Origin::CodeRun { .. } => None,
        Origin::Client { .. } | Origin::Resume
            if code_mode && !client_lists(true, &(server.to_owned(), tool.to_owned())) =>
        {
            Some(Refusal::new(
                RefusalCode::Refused,
                format!(
                    "toolgate is in code mode: {name} is not called directly; in code mode, call it from \
                     {RUN_TOOL} (await call({name:?}, args)), and find tools with {SEARCH_TOOL}"
                ),
            ))
        }
        Origin::Client { .. } | Origin::Resume | Origin::Upstream { .. } => None,
    }
}

/// A program's call the policy asks about: it runs when the run was approved for this call (its literal name,
/// with these arguments or with any when the program computes them), and is refused otherwise, naming the
/// allow rule that would let it through. The run's approval answers the policy's rules about the call, which
/// the human saw before the run; it never answers a question raised by this call alone — a hook that asks
/// about these arguments, or a definition changed since it was accepted (quarantine) — and those calls are
/// refused.
pub(crate) fn program_ask(
    ctx: &CallContext,
    call: (&str, &Value),
    server: &str,
    tool: &str,
    decision: &policy::Decision,
) -> Result<(), Refusal> {
    let (name, arguments) = call;
    let per_call = decision.reason == policy::ReasonCode::HookAsk
        || decision.rule_id.as_deref() == Some(crate::pins::QUARANTINE_RULE);
    if !per_call
        && ctx
            .run_approval
            .as_ref()
            .is_some_and(|a| a.covers(name, arguments))
    {
        return Ok(());
    }
    let rule = decision
        .rule()
        .unwrap_or_else(|| decision.reason.as_str().to_owned());
    let message = format!(
        "toolgate refused {name}: its calls need a human's approval ({rule}) and this run was not approved \
         for this one. A run is approved only for the calls its program writes as call(\"<tool>\", …) with the \
         tool's name as a string literal, each for the arguments written there (or any, where they are \
         computed); any other call runs only under an allow rule (for {server}__{tool})"
    );
    Err(Refusal::new(RefusalCode::Refused, message).with_decision(decision.clone()))
}

/// The exposed name a program's `name` stands for: any spelling of a tool (its exposed name, `server__tool`,
/// `mcp__server__tool`) gives its exposed name; `None` when it names no tool here or could mean two.
pub(crate) fn resolve(agg: &Aggregate, name: &str) -> Option<String> {
    match agg.spelled(name) {
        crate::aggregate::Spelled::Tool(exposed) => Some(exposed.to_owned()),
        _ => None,
    }
}

/// The search index of a merged catalog: the tools the active profile shows as visible or deferred (never
/// blocked, quarantined or flagged ones), under the names programs call, without toolgate's control tools.
pub(crate) fn index(
    guard: &Guard,
    quarantine_asks: bool,
    agg: &Aggregate,
    pins: &PinView,
) -> SearchIndex {
    let surface = guard.surface(&agg.tool_owners, pins, quarantine_asks);
    let docs = agg
        .tools
        .iter()
        .zip(&agg.tool_owners)
        .zip(&surface)
        .filter(|((_, (server, tool)), entry)| {
            matches!(entry.visibility, Visibility::Visible | Visibility::Deferred)
                && !(server == OWN_SERVER && CLIENT_SURFACE.contains(&tool.as_str()))
        })
        .map(|((def, _), _)| {
            let text = |k: &str| def.get(k).and_then(Value::as_str).map(str::to_owned);
            ToolDoc {
                name: text("name").unwrap_or_default(),
                title: text("title"),
                description: text("description").unwrap_or_default(),
                input_schema: def.get("inputSchema").cloned().unwrap_or_else(|| json!({})),
            }
        })
        .collect();
    SearchIndex::build(docs)
}

#[cfg(test)]
mod host_tests;
#[cfg(test)]
mod tests;
