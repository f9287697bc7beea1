//! `toolgate approvals watch`: a line-based live view that shows each new pending request and asks for a decision.
//!
//! While nothing is left to show, the store's change mark is checked every `TICK` (no rows read), and PENDING ids
//! not seen yet are listed again only when the database changed (requests already pending at start count as new).
//! Live requests — a call is held waiting for the answer right now — come first, oldest first; stale ones (the
//! call's wait ran out and the agent holds a handle, or the call is gone) come after, marked, so an operator never
//! works through an old backlog while a live call times out. Each shows its age. Tampered requests are named and
//! skipped: nothing can decide them. Each one is shown in full, then one line decides it: `a` (then `APPROVE`, typed exactly), `r`,
//! `s` (skip: left pending, not shown again) or `q`. End of input quits. Input typed before a request was on the
//! screen is discarded, so keystrokes meant for one request can never decide the next. Details go to stdout,
//! prompts to stderr. Answers are read from the controlling terminal, or from stdin for a script that presented
//! the operator key; a process the gateway started gets neither (`trust`). No terminal library: plain lines
//! work in any terminal.

use super::{decidable, decide, decided_line, is_confirmation, render, trust, Verdict};
use crate::commands::escape::label;
use anyhow::Context;
use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::time::Duration;
use store::Approval;
use store::{ApprovalStatus, Timestamp};

/// How often the store's change mark is checked while idle: a pragma, not a query of the requests, so it can be
/// frequent enough that a new request shows at once.
const TICK: Duration = Duration::from_millis(50);
/// How often the request on screen is read again: it can expire, which is no write a change mark would show.
const RECHECK: Duration = Duration::from_millis(500);
/// Lines the reader may run ahead of the decisions; a human types far fewer.
const INPUT_BACKLOG: usize = 64;
/// Longest input line kept; anything longer is no valid answer.
const MAX_LINE_BYTES: u64 = 1024;

/// One thing read from the operator.
enum Input {
    Line(Vec<u8>),
    End,
}

/// The operator's reply while a request is on screen.
enum Reply {
    Line(Vec<u8>),
    /// The request stopped being pending while on screen; there is nothing left to decide.
    Moot,
    End,
}

/// What became of the request on screen.
enum Next {
    /// Move on to the next request.
    Continue,
    /// The operator quit or input ended.
    Quit,
}

/// Follows `state`'s pending requests; `whereabouts` says which state it reads and where else requests wait
/// (`elsewhere`), printed once under the first line.
pub fn run(
    state: &gateway::State,
    whereabouts: &[String],
    key: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    let source: Box<dyn Read + Send> = match trust::operator(state.namespace().state_root(), key) {
        Ok(trust::Operator::Terminal(tty)) => Box::new(tty),
        Ok(trust::Operator::Key) => Box::new(std::io::stdin()),
        Err(message) => return Ok(super::refuse(&message)),
    };
    let input = spawn_reader(source);
    let mut seen: HashSet<String> = HashSet::new();
    println!(
        "watching approval requests for {} (a approve, r reject, s skip, q quit)",
        state.namespace().workspace().display()
    );
    for line in whereabouts {
        println!("{line}");
    }
    // Set while idle: the store as it was when the requests were last listed with nothing left to show.
    let mut idle_since: Option<store::ChangeMark> = None;
    loop {
        if let Some(mark) = idle_since.as_mut() {
            let changed = state
                .store(|s| s.changed_since(mark))
                .context("cannot read the approval store")?;
            if !changed {
                if let Next::Quit = idle(&input) {
                    return Ok(ExitCode::SUCCESS);
                }
                continue;
            }
        }
        // Taken before listing, so a request committed while listing moves it and is listed next time.
        let mark = state
            .store(|s| s.change_mark())
            .context("cannot read the approval store")?;
        let now = Timestamp::now();
        let pending = state
            .store(|s| s.list_requests(Some(ApprovalStatus::Pending), now))
            .context("cannot read approval requests")?;
        idle_since = None;
        let next = match next_request(pending, &seen, now) {
            Some(a) => {
                seen.insert(a.id.clone());
                if a.authentic {
                    present(state, &a.id, &input)?
                } else {
                    eprintln!(
                        "skipping {}: its record failed the integrity check (changed outside toolgate)",
                        label(&a.id)
                    );
                    Next::Continue
                }
            }
            None => {
                idle_since = Some(mark);
                idle(&input)
            }
        };
        if let Next::Quit = next {
            return Ok(ExitCode::SUCCESS);
        }
    }
}

/// The request to show next among `pending` not yet seen: live ones first, then stale ones, oldest first in each.
fn next_request(
    pending: Vec<Approval>,
    seen: &HashSet<String>,
    now: Timestamp,
) -> Option<Approval> {
    pending
        .into_iter()
        .filter(|a| !seen.contains(&a.id))
        .min_by_key(|a| (!render::is_live(a, now), a.created_at, a.id.clone()))
}

/// Waits one tick with nothing to decide; only `q` or end of input mean anything.
fn idle(input: &Receiver<Input>) -> Next {
    match input.recv_timeout(TICK) {
        Ok(Input::Line(line)) if answer(&line) == "q" => Next::Quit,
        Ok(Input::Line(_)) => {
            eprintln!("no request is waiting for a decision (q to quit)");
            Next::Continue
        }
        Ok(Input::End) | Err(RecvTimeoutError::Disconnected) => Next::Quit,
        Err(RecvTimeoutError::Timeout) => Next::Continue,
    }
}

/// Shows one request and takes the operator's decision on it.
fn present(state: &gateway::State, id: &str, input: &Receiver<Input>) -> anyhow::Result<Next> {
    let now = Timestamp::now();
    let request = match state.store(|s| s.get_request(id, now)) {
        Ok(a) => a,
        // Pruned or gone since it was listed: nothing to decide.
        Err(store::Error::RequestNotFound) => return Ok(Next::Continue),
        Err(e) => return Err(anyhow::Error::new(e).context("cannot read the approval store")),
    };
    if decidable(&request).is_err() {
        return Ok(Next::Continue);
    }
    if discard_typed_ahead(input) {
        return Ok(Next::Quit);
    }
    println!();
    if render::is_live(&request, now) {
        println!(
            "LIVE: a call is waiting for this answer now (asked {} ago)",
            render::age(request.created_at, now)
        );
    } else {
        println!(
            "STALE: no call is waiting for this answer (asked {} ago); approving only lets the agent resume it",
            render::age(request.created_at, now)
        );
    }
    print!("{}", render::detail(&request, now));
    std::io::stdout().flush().ok();
    loop {
        prompt(&format!(
            "{}: [a]pprove, [r]eject, [s]kip, [q]uit? ",
            label(id)
        ));
        let line = match next_line(state, id, input)? {
            Reply::Line(line) => line,
            Reply::Moot => return Ok(Next::Continue),
            Reply::End => return Ok(Next::Quit),
        };
        match answer(&line) {
            "a" => {
                prompt(&format!("Type APPROVE to approve {}: ", label(id)));
                match next_line(state, id, input)? {
                    Reply::Line(line) if is_confirmation(&line) => {
                        settle(state, id, Verdict::Approve)?;
                    }
                    Reply::Line(_) => eprintln!(
                        "not approved (the confirmation must be APPROVE, typed exactly); it stays PENDING"
                    ),
                    Reply::Moot => {}
                    Reply::End => return Ok(Next::Quit),
                }
                return Ok(Next::Continue);
            }
            "r" => {
                settle(state, id, Verdict::Reject)?;
                return Ok(Next::Continue);
            }
            "s" => {
                eprintln!("skipped {}; it stays PENDING", label(id));
                return Ok(Next::Continue);
            }
            "q" => return Ok(Next::Quit),
            _ => eprintln!("answer a, r, s or q"),
        }
    }
}

/// Records a verdict and says how it went; a refusal (expired meanwhile, decided elsewhere) is shown, not fatal.
fn settle(state: &gateway::State, id: &str, verdict: Verdict) -> anyhow::Result<()> {
    match decide(state, id, verdict)? {
        Ok(a) => println!("{}", decided_line(&a)),
        Err(message) => eprintln!("toolgate: {message}"),
    }
    Ok(())
}

/// The next line for request `id`. While waiting it re-reads the request, so one that expires, is decided
/// elsewhere or is pruned meanwhile is reported and ends the wait as `Moot`.
fn next_line(state: &gateway::State, id: &str, input: &Receiver<Input>) -> anyhow::Result<Reply> {
    loop {
        match input.recv_timeout(RECHECK) {
            Ok(Input::Line(line)) => return Ok(Reply::Line(line)),
            Ok(Input::End) | Err(RecvTimeoutError::Disconnected) => return Ok(Reply::End),
            Err(RecvTimeoutError::Timeout) => {}
        }
        match state.store(|s| s.get_request(id, Timestamp::now())) {
            Ok(a) if a.status == ApprovalStatus::Pending => {}
            Ok(a) => {
                eprintln!("\n{} is now {}; nothing to decide", label(id), a.status);
                return Ok(Reply::Moot);
            }
            Err(store::Error::RequestNotFound) => {
                eprintln!("\n{} is gone (pruned)", label(id));
                return Ok(Reply::Moot);
            }
            Err(e) => return Err(anyhow::Error::new(e).context("cannot read the approval store")),
        }
    }
}

/// Drops every line typed before the request appeared; true when input has ended.
fn discard_typed_ahead(input: &Receiver<Input>) -> bool {
    loop {
        match input.try_recv() {
            Ok(Input::Line(_)) => {}
            Ok(Input::End) | Err(std::sync::mpsc::TryRecvError::Disconnected) => return true,
            Err(std::sync::mpsc::TryRecvError::Empty) => return false,
        }
    }
}

/// The answer in a line: its trimmed text, or nothing recognisable when it is not UTF-8.
fn answer(line: &[u8]) -> &str {
    std::str::from_utf8(line).map_or("", str::trim)
}

fn prompt(text: &str) {
    eprint!("{text}");
    std::io::stderr().flush().ok();
}

/// Reads the operator's input on its own thread, so the main loop can poll the store while it waits for the
/// operator. The thread ends at end of input; if the process exits first it is simply dropped with the process.
fn spawn_reader(source: Box<dyn Read + Send>) -> Receiver<Input> {
    let (tx, rx) = sync_channel(INPUT_BACKLOG);
    std::thread::spawn(move || read_lines(source, &tx));
    rx
}

fn read_lines(source: Box<dyn Read + Send>, tx: &SyncSender<Input>) {
    let mut input = BufReader::new(source);
    loop {
        let mut line = Vec::new();
        match (&mut input)
            .take(MAX_LINE_BYTES)
            .read_until(b'\n', &mut line)
        {
            Ok(0) | Err(_) => {
                let _ = tx.send(Input::End);
                return;
            }
            Ok(_) => {
                if tx.send(Input::Line(line)).is_err() {
                    return;
                }
            }
        }
    }
}
