//! `toolgate approvals`: the human side of approval requests — list, show, approve, reject, watch, prune.
//!
//! Approval is out of band by design: the agent can only wait, and a human decides here, in the workspace's own
//! state namespace (the same one `serve` uses for the same config, workspace and `TOOLGATE_STATE_DIR`).
//! Approving shows the full protected request and needs `APPROVE` typed exactly on the controlling terminal, or
//! the operator key presented by a script; a process the gateway started can do neither (`trust`). Each decision
//! is also written to the audit log. Creating, waiting on and consuming requests belong to the gateway, not here.

mod elsewhere;
mod render;
mod trust;
mod watch;

use super::common::ConfigArgs;
use super::escape::label;
use ::audit::{AuditEvent, EventKind};
use anyhow::Context;
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use store::{Approval, ApprovalStatus, PruneMode, Timestamp};

/// Exit status when a request cannot be decided as asked (unknown, expired, already decided, not confirmed).
/// Errors of toolgate itself (configuration, I/O, database) exit 2, as every command does.
const REFUSED: u8 = 1;
/// The word that confirms an approval, typed exactly.
const CONFIRM_WORD: &[u8] = b"APPROVE";
/// Longest confirmation line read; a longer one cannot be `APPROVE`, and it must not fill memory.
const MAX_CONFIRM_BYTES: u64 = 1024;

/// Review and decide the approval requests the gateway is holding for a human.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
    // Here, so `approvals --config X list` and `approvals list --config X` both work (the flags are global).
    #[command(flatten)]
    config: ConfigArgs,
}

#[derive(clap::Subcommand)]
enum Action {
    /// List approval requests, newest first.
    List(ListArgs),
    /// Show one request in full: everything the gateway would run if it were approved.
    Show(IdArgs),
    /// Show a pending request, then approve it once you type APPROVE on the terminal (never read from stdin),
    /// or at once with --operator-key from a script.
    Approve(ApproveArgs),
    /// Reject a pending request.
    Reject(IdArgs),
    /// Follow pending requests and decide each, live ones (a call is waiting) first: a (approve), r (reject),
    /// s (skip), q (quit).
    Watch(WatchArgs),
    /// Delete rejected, consumed, cancelled and expired requests older than N days (a dry run unless --apply).
    /// Finished requests are also deleted automatically a day after they finish.
    Prune(PruneArgs),
}

#[derive(clap::Args)]
struct ListArgs {
    /// Only requests in this state, as effective now (a pending request past its expiry is expired).
    #[arg(long, value_enum)]
    status: Option<Status>,
}

#[derive(clap::Args)]
struct IdArgs {
    /// The request id (apr_…), as `toolgate approvals list` shows it.
    id: String,
}

#[derive(clap::Args)]
struct ApproveArgs {
    #[command(flatten)]
    id: IdArgs,
    #[command(flatten)]
    operator: OperatorArgs,
}

#[derive(clap::Args)]
struct OperatorArgs {
    /// Approve without a terminal: FILE holds the state root's operator key (`operator.key` beside
    /// `approval.key`, which no command, hook or contained upstream can read). For scripts run by the operator;
    /// a process started by a running gateway is refused even with the key.
    #[arg(long, value_name = "FILE")]
    operator_key: Option<PathBuf>,
}

#[derive(clap::Args)]
struct WatchArgs {
    /// Read the answers from stdin instead of the terminal, for a script that holds the operator key.
    #[command(flatten)]
    operator: OperatorArgs,
}

#[derive(clap::Args)]
struct PruneArgs {
    /// Select requests that stopped being usable (rejected, consumed, expired) at least N days ago.
    #[arg(long, value_name = "N")]
    older_than_days: u32,
    /// Delete them; without this flag the command only lists what would go.
    #[arg(long)]
    apply: bool,
}

/// A request state, as typed on the command line.
#[derive(Clone, Copy, clap::ValueEnum)]
pub(crate) enum Status {
    Pending,
    Approved,
    Rejected,
    Expired,
    Consumed,
    Cancelled,
}

impl From<Status> for ApprovalStatus {
    fn from(s: Status) -> Self {
        match s {
            Status::Pending => Self::Pending,
            Status::Approved => Self::Approved,
            Status::Rejected => Self::Rejected,
            Status::Expired => Self::Expired,
            Status::Consumed => Self::Consumed,
            Status::Cancelled => Self::Cancelled,
        }
    }
}

/// A human's verdict on a pending request.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Approve,
    Reject,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let config = &args.config;
    match args.action {
        Action::List(a) => {
            let config = config.load()?;
            list(Some(&config), &crate::runtime::state(&config)?, a.status)
        }
        Action::Show(a) => show(&state(config)?, &a.id),
        Action::Approve(a) => approve(
            &state(config)?,
            &a.id.id,
            a.operator.operator_key.as_deref(),
        ),
        Action::Reject(a) => reject(&state(config)?, &a.id),
        Action::Watch(a) => {
            let config = config.load()?;
            let state = crate::runtime::state(&config)?;
            let whereabouts = elsewhere::lines(&config, &state);
            watch::run(&state, &whereabouts, a.operator.operator_key.as_deref())
        }
        Action::Prune(a) => prune(&state(config)?, a.older_than_days, a.apply),
    }
}

/// The approval terminal on a state opened by the caller (`toolfence approvals`, which finds the state as its
/// `wrap` does rather than through a config file). `list`, `approve`, `reject` and `prune` below take such a
/// state too (`mcp-toolhub-admin`, which finds it from ToolHub's environment).
pub(crate) fn watch_state(
    config: &config::Config,
    state: &gateway::State,
) -> anyhow::Result<ExitCode> {
    watch::run(state, &elsewhere::lines(config, state), None)
}

fn state(config: &ConfigArgs) -> anyhow::Result<gateway::State> {
    crate::runtime::state(&config.load()?)
}

pub(crate) fn list(
    config: Option<&config::Config>,
    state: &gateway::State,
    status: Option<Status>,
) -> anyhow::Result<ExitCode> {
    let status = status.map(ApprovalStatus::from);
    let all = state
        .store(|s| s.list_requests(status, Timestamp::now()))
        .context("cannot read approval requests")?;
    if all.is_empty() {
        match status {
            Some(s) => println!("no {s} approval requests"),
            None => println!("no approval requests"),
        }
        // Say where this looked, and where requests are waiting: the served workspace, or the state directory
        // of the toolgate a client started, may be another one.
        eprintln!("looked in {}", crate::runtime::where_state_is(state));
        // A product's state (ToolHub's) is bound where its environment says: nowhere else to point at.
        for line in config
            .map(|c| elsewhere::lines(c, state))
            .unwrap_or_default()
        {
            eprintln!("{line}");
        }
    } else {
        print!("{}", render::list(&all, Timestamp::now()));
    }
    Ok(ExitCode::SUCCESS)
}

fn show(state: &gateway::State, id: &str) -> anyhow::Result<ExitCode> {
    let now = Timestamp::now();
    match lookup(state, id, now)? {
        Ok(a) => {
            print!("{}", render::detail(&a, now));
            Ok(ExitCode::SUCCESS)
        }
        Err(message) => Ok(refuse(&message)),
    }
}

pub(crate) fn approve(
    state: &gateway::State,
    id: &str,
    key: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    // Before anything is shown: a caller that is not the operator learns nothing about the request either.
    let operator = match trust::operator(state.namespace().state_root(), key) {
        Ok(o) => o,
        Err(message) => return Ok(refuse(&message)),
    };
    let now = Timestamp::now();
    let request = match lookup(state, id, now)?.and_then(|a| decidable(&a).map(|()| a)) {
        Ok(a) => a,
        Err(message) => return Ok(refuse(&message)),
    };
    print!("{}", render::detail(&request, now));
    std::io::stdout().flush().ok();
    if let trust::Operator::Terminal(mut tty) = operator {
        let prompt = format!("Type APPROVE to approve {}: ", label(id));
        let line = trust::confirm_on(&mut tty, &prompt, MAX_CONFIRM_BYTES)
            .context("cannot read the confirmation from the terminal")?;
        if !is_confirmation(&line) {
            return Ok(refuse(
                "not approved: the confirmation must be APPROVE, typed exactly; the request is unchanged",
            ));
        }
    }
    report(decide(state, id, Verdict::Approve)?)
}

pub(crate) fn reject(state: &gateway::State, id: &str) -> anyhow::Result<ExitCode> {
    report(decide(state, id, Verdict::Reject)?)
}

/// Prints the outcome of a decision and turns it into the exit status.
fn report(outcome: Result<Approval, String>) -> anyhow::Result<ExitCode> {
    match outcome {
        Ok(a) => {
            println!("{}", decided_line(&a));
            Ok(ExitCode::SUCCESS)
        }
        Err(message) => Ok(refuse(&message)),
    }
}

pub(crate) fn prune(state: &gateway::State, days: u32, apply: bool) -> anyhow::Result<ExitCode> {
    let mode = if apply {
        PruneMode::Apply
    } else {
        PruneMode::DryRun
    };
    let selected = state
        .store(|s| s.prune_approvals(days, Timestamp::now(), mode))
        .context("cannot prune approval requests")?;
    let n = selected.len();
    if n == 0 {
        println!(
            "nothing to prune: no rejected, consumed or expired request is older than {days} days"
        );
        return Ok(ExitCode::SUCCESS);
    }
    if apply {
        println!("deleted {n} approval requests:");
    } else {
        println!("would delete {n} approval requests (dry run; add --apply to delete them):");
    }
    for p in &selected {
        println!("  {}  {:<9}  since {}", p.id, p.status, p.terminal_at);
    }
    Ok(ExitCode::SUCCESS)
}

/// Reads a request; `Ok(Err(message))` when there is none of that id in this workspace.
fn lookup(
    state: &gateway::State,
    id: &str,
    now: Timestamp,
) -> anyhow::Result<Result<Approval, String>> {
    match state.store(|s| s.get_request(id, now)) {
        Ok(a) => Ok(Ok(a)),
        Err(e) => refusal(e, id).map(Err),
    }
}

/// Why a request cannot be decided now, if it cannot.
fn decidable(a: &Approval) -> Result<(), String> {
    if !a.authentic {
        return Err(tampered(&a.id));
    }
    match a.status {
        ApprovalStatus::Pending => Ok(()),
        ApprovalStatus::Expired => Err(expired(&a.id)),
        s @ (ApprovalStatus::Approved
        | ApprovalStatus::Rejected
        | ApprovalStatus::Consumed
        | ApprovalStatus::Cancelled) => Err(already(&a.id, s)),
    }
}

/// Records `verdict` on request `id` and audits it; `Ok(Err(message))` when the request cannot take it.
fn decide(
    state: &gateway::State,
    id: &str,
    verdict: Verdict,
) -> anyhow::Result<Result<Approval, String>> {
    let actor = operator();
    // The time of the decision, not of the display: a request that expired while the human read it stays expired.
    let now = Timestamp::now();
    let result = state.store(|s| match verdict {
        Verdict::Approve => s.approve(id, &actor, now),
        Verdict::Reject => s.reject(id, &actor, now),
    });
    match result {
        Ok(a) => {
            audit_decision(state, &a, verdict, &actor, now);
            Ok(Ok(a))
        }
        Err(e) => refusal(e, id).map(Err),
    }
}

/// The operator-facing message for a store error that means "not decidable", or the error itself.
/// An unknown id and an id of another workspace's namespace give the same message: the store cannot tell them
/// apart, and the message must not either.
fn refusal(e: store::Error, id: &str) -> anyhow::Result<String> {
    match e {
        store::Error::RequestNotFound => Ok(format!(
            "no approval request {} in this workspace",
            label(id)
        )),
        store::Error::Expired => Ok(expired(id)),
        store::Error::InvalidTransition(s) => Ok(already(id, s)),
        store::Error::Tampered => Ok(tampered(id)),
        other => Err(anyhow::Error::new(other).context("cannot read the approval store")),
    }
}

fn tampered(id: &str) -> String {
    format!(
        "approval request {} failed its integrity check: its record was changed outside toolgate, so it can be \
         neither approved nor run",
        label(id)
    )
}

fn expired(id: &str) -> String {
    format!(
        "approval request {} has expired; it can no longer be approved or rejected",
        label(id)
    )
}

fn already(id: &str, status: ApprovalStatus) -> String {
    format!(
        "approval request {} is already {status}; only a PENDING request can be approved or rejected",
        label(id)
    )
}

fn refuse(message: &str) -> ExitCode {
    eprintln!("toolgate: {message}");
    ExitCode::from(REFUSED)
}

fn decided_line(a: &Approval) -> String {
    let by = a.decided_by.as_deref().map_or_else(String::new, label);
    format!("{} {} by {by}", a.status, a.id)
}

/// Whether a line read from the operator is the confirmation: `APPROVE` and nothing else but its line ending.
fn is_confirmation(line: &[u8]) -> bool {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    line == CONFIRM_WORD
}

/// Who decides: the OS user name, as the audit log and the request record it.
pub(crate) fn operator() -> String {
    ["USER", "LOGNAME"]
        .iter()
        .filter_map(|k| std::env::var(k).ok())
        .find(|v| !v.trim().is_empty())
        .unwrap_or_else(|| "operator".to_owned())
}

/// Writes the human decision to the audit log with what it was about (never the arguments themselves).
fn audit_decision(
    state: &gateway::State,
    a: &Approval,
    verdict: Verdict,
    actor: &str,
    now: Timestamp,
) {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
    let snapshot = &a.snapshot;
    let policy = snapshot.get("decision");
    let mut event = AuditEvent::new(EventKind::Approval, now.as_millis(), &a.trace_id);
    event.server = text(snapshot.get("server")).unwrap_or_default();
    event.tool = text(snapshot.get("tool")).unwrap_or_default();
    event.operation = text(policy.and_then(|d| d.get("operation"))).unwrap_or_default();
    event.decision = text(policy.and_then(|d| d.get("effect")));
    event.rule_id = text(policy.and_then(|d| d.get("rule_id")));
    event.reason_code = text(policy.and_then(|d| d.get("reason")));
    event.outcome = Some(
        match verdict {
            Verdict::Approve => "APPROVED",
            Verdict::Reject => "REJECTED",
        }
        .to_owned(),
    );
    event.request_id = Some(a.id.clone());
    event.actor = Some(actor.to_owned());
    if let Some(arguments) = snapshot.get("arguments") {
        event = event.with_arguments(arguments);
    }
    state.audit(event);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_word_confirms() {
        assert!(is_confirmation(b"APPROVE\n"));
        assert!(is_confirmation(b"APPROVE\r\n"));
        assert!(is_confirmation(b"APPROVE"));
        for no in [
            &b"approve\n"[..],
            b"",
            b"\n",
            b" APPROVE\n",
            b"APPROVE \n",
            b"APPROVED\n",
            b"APPROVE\n\n",
        ] {
            assert!(!is_confirmation(no), "{no:?}");
        }
    }
}
