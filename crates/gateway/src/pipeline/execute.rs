//! The execute stage: the one place a governed request runs, once it was decided and, when it asked, approved
//! (and the audit gate passed again after the wait). It dispatches to the executors — an upstream over any link,
//! toolgate's built-in and intrinsic tools, a code-mode run — and re-checks an approved snapshot before it runs
//! (the policy may have changed, or the tool's definition, while it was held).
//!
//! It decides nothing new and records nothing: the finishing guard does.

use super::{approval_stage, CallContext};
use crate::calls;
use crate::codemode::{self, Prepared};
use crate::guard::{Verdict, OWN_SERVER};
use crate::outcome::{CallOutcome, Refusal, RefusalCode};
use crate::own::OwnTool;
use crate::snapshot::{Kind, Snapshot};
use crate::stages::Stages;
use serde_json::{json, Value};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// What runs.
pub(crate) enum Exec<'a> {
    /// A request forwarded to the owning upstream (`method` with upstream-side `params`).
    Upstream {
        server: &'a str,
        method: &'a str,
        params: Value,
    },
    /// One of toolgate's own tools: an intrinsic, or a built-in workspace tool.
    Own { tool: OwnTool, arguments: &'a Value },
    /// An approved `shell_run`: exactly the command resolved when it was approved.
    Command {
        tool: &'a str,
        arguments: &'a Value,
        command: Value,
    },
    /// `run_code`: the pre-run check, the run's own approval when a literal call asks, then the run.
    Code { arguments: &'a Value },
    /// A held `run_code` a human approved: exactly its program, with the calls that asked approved.
    ApprovedCode { snapshot: &'a Snapshot },
}

/// The future of the stage, boxed: a `run_code` that asks re-enters the approval stage, which comes back here.
pub(crate) type ExecFuture<'a> = Pin<Box<dyn Future<Output = CallOutcome> + Send + 'a>>;

/// Runs `exec` in the call's context.
pub(crate) fn execute<'a>(
    gw: &'a Arc<Stages>,
    ctx: &'a CallContext,
    exec: Exec<'a>,
) -> ExecFuture<'a> {
    Box::pin(async move {
        match exec {
            Exec::Upstream {
                server,
                method,
                params,
            } => calls::forward(gw, ctx, server, method, params).await,
            Exec::Own { tool, arguments } => calls::intrinsic(gw, ctx, &tool, arguments).await,
            Exec::Command {
                tool,
                arguments,
                command,
            } => {
                let caller = crate::codemode::bounds::identity(ctx);
                calls::run_builtin(gw, tool, arguments.clone(), Some(command), &caller).await
            }
            Exec::Code { arguments } => match codemode::prepare(gw, ctx, arguments) {
                Prepared::Stop(refused) => CallOutcome::Refused(refused),
                // Boxed: a run's state would make every call's future as large.
                Prepared::Run(program) => {
                    Box::pin(codemode::run_unapproved(gw, ctx, program)).await
                }
                Prepared::Ask {
                    snapshot,
                    decision,
                    hold,
                } => {
                    let mut held = ctx.clone();
                    held.hold = hold;
                    Box::pin(approval_stage(gw, &held, *snapshot, decision)).await
                }
            },
            Exec::ApprovedCode { snapshot } => {
                Box::pin(codemode::run_approved(gw, ctx, snapshot)).await
            }
        }
    })
}

/// An approved snapshot, run if the policy does not now refuse it and, for a tool, the tool still has the
/// definition that was approved.
pub(crate) async fn approved(
    gw: &Arc<Stages>,
    ctx: &CallContext,
    snapshot: &Snapshot,
) -> CallOutcome {
    let guard = &ctx.guard;
    let (server, target) = (snapshot.server.as_str(), snapshot.tool.as_str());
    let exec = match snapshot.kind {
        Kind::CodeRun => Exec::ApprovedCode { snapshot },
        Kind::Prompt | Kind::Resource => {
            let verdict = match snapshot.kind {
                Kind::Prompt => guard.check_prompt(server, target),
                _ => guard.check_resource(server, target),
            };
            if let Verdict::Refuse(refused) = verdict {
                return CallOutcome::Refused(refused);
            }
            let params = match snapshot.kind {
                Kind::Prompt => jsonrpc::object([
                    ("name", target.into()),
                    ("arguments", snapshot.arguments.clone()),
                ]),
                _ => json!({"uri": target}),
            };
            let method = snapshot.kind.method();
            Exec::Upstream {
                server,
                method,
                params,
            }
        }
        Kind::ToolCall => match approved_tool(gw, ctx, snapshot) {
            Ok(exec) => exec,
            Err(refused) => return CallOutcome::Refused(refused),
        },
    };
    execute(gw, ctx, exec).await
}

/// What an approved tool call runs, checked again against the catalog and the policy.
fn approved_tool<'a>(
    gw: &Stages,
    ctx: &CallContext,
    snapshot: &'a Snapshot,
) -> Result<Exec<'a>, Refusal> {
    let (server, target) = (snapshot.server.as_str(), snapshot.tool.as_str());
    let definition = gw.aggregate().tool_definition(&snapshot.exposed).cloned();
    let current = definition.as_ref().map(store::definition_hash);
    if current.as_deref() != Some(snapshot.definition_sha256.as_str()) {
        let msg = format!(
            "the definition of {} changed (or the tool is gone) since this call was approved; it was not run",
            snapshot.exposed
        );
        return Err(Refusal::new(RefusalCode::Conflict, msg));
    }
    let verdict = ctx
        .guard
        .check_tool(server, target, definition.as_ref(), &snapshot.arguments);
    if let Verdict::Refuse(refused) = verdict {
        return Err(refused);
    }
    let arguments = &snapshot.arguments;
    Ok(match (server, &snapshot.command) {
        // `run_code` that a rule asked for: the program is checked and run now, in this call's context.
        (OWN_SERVER, _) if target == codemode::RUN_TOOL => Exec::Code { arguments },
        // An approved command runs exactly as it was resolved; any other own tool runs as it does when the
        // policy allows it (an intrinsic a rule asked for included, which the workspace tools do not know).
        (OWN_SERVER, Some(command)) => Exec::Command {
            tool: target,
            arguments,
            command: command.clone(),
        },
        (OWN_SERVER, None) => Exec::Own {
            tool: OwnTool::named(target),
            arguments,
        },
        _ => Exec::Upstream {
            server,
            method: "tools/call",
            params: jsonrpc::object([("name", target.into()), ("arguments", arguments.clone())]),
        },
    })
}

/// What a tool call the policy allowed runs: toolgate's own tool, or the upstream's with its upstream name.
pub(crate) fn tool<'a>(
    server: &'a str,
    tool: &'a str,
    mut params: Value,
    arguments: &'a Value,
) -> Exec<'a> {
    match OwnTool::parse(server, tool) {
        Some(OwnTool::RunCode) => Exec::Code { arguments },
        Some(tool) => Exec::Own { tool, arguments },
        None => {
            params["name"] = Value::String(tool.to_owned());
            Exec::Upstream {
                server,
                method: "tools/call",
                params,
            }
        }
    }
}
