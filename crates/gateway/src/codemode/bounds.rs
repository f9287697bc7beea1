//! What code mode lets one identity take, and all identities together: workers (each one engine heap of
//! memory), calls of programs in flight, memory of results kept for `recall`, and disk of saved files. A
//! client session is free to open (a 2026-07-28 request is a session of its own), so none of these is counted
//! per session; each is a share per identity under one ceiling for the gateway, and slots are handed out in
//! turn between identities that wait (`codemode::fair`), so one identity's flood does not make another's
//! trivial run wait behind it.
//!
//! The identity is the one the front end authenticated (`key:<name>`, `jwt:<iss>#<sub>`). A caller without
//! one — every stdio client, and an HTTP front end with no authentication configured — is the one local
//! identity [`LOCAL`]: those callers are the machine's own user, and counting each of their sessions apart
//! would hand out a fresh share per session, which is the hole this closes. It decides nothing about what a
//! program may call.

use crate::outcome::{Refusal, RefusalCode};
use crate::pipeline::context::CallContext;
use codemode::session::{DISK_CEILING, DISK_SHARE, MEMORY_CEILING, MEMORY_SHARE};
use codemode::{FairGate, Quota, TooManyWaiting};
use std::sync::Arc;

/// The identity of every caller the front end did not authenticate.
pub(crate) const LOCAL: &str = "local";

/// Workers running at once in the gateway (each up to its engine heap, 64 MiB by default, plus the
/// process's own), and per identity.
pub(crate) const WORKERS: usize = 8;
pub(crate) const WORKER_SHARE: usize = 2;
/// Runs of one identity that may wait for a worker; past it a run is refused at once.
pub(crate) const RUNS_WAITING: usize = 32;
/// Calls of programs in flight at once in the gateway, and per identity (a program's `Promise.all` waits
/// for its identity's turn past that).
pub(crate) const CALLS: usize = 64;
pub(crate) const CALL_SHARE: usize = 16;
/// Calls of one identity that may wait for a slot: every call of its running programs.
pub(crate) const CALLS_WAITING: usize = WORKER_SHARE * 1000;

/// The identity a request's holdings are charged to.
pub(crate) fn identity(ctx: &CallContext) -> String {
    ctx.principal.clone().unwrap_or_else(|| LOCAL.to_owned())
}

/// Who within an identity waits for a slot: the client session a request came on, else the run itself, so
/// the sessions (and stdio clients) of one identity are served in turn among themselves.
pub(crate) fn party(ctx: &CallContext) -> String {
    ctx.grants
        .session()
        .map_or_else(|| ctx.trace_id.clone(), str::to_owned)
}

/// The shares and ceilings of one gateway, shared by every session and run.
#[derive(Debug)]
pub(crate) struct Bounds {
    pub disk: Arc<Quota>,
    pub memory: Arc<Quota>,
    pub workers: FairGate,
    pub calls: FairGate,
}

impl Default for Bounds {
    fn default() -> Self {
        Self {
            disk: Arc::new(Quota::new(DISK_SHARE, DISK_CEILING)),
            memory: Arc::new(Quota::new(MEMORY_SHARE, MEMORY_CEILING)),
            workers: FairGate::new(WORKERS, WORKER_SHARE, RUNS_WAITING),
            calls: FairGate::new(CALLS, CALL_SHARE, CALLS_WAITING),
        }
    }
}

/// A run refused because its identity has too many runs waiting for a worker already.
pub(crate) fn runs_waiting(identity: &str, full: TooManyWaiting, workers: &FairGate) -> Refusal {
    Refusal::new(
        RefusalCode::LimitReached,
        format!(
            "run_code refused: {identity} has {} runs waiting for a worker already (its limit), and runs at \
             most {} at once of toolgate's {}; it frees as its running programs end",
            full.limit,
            workers.share(),
            workers.capacity()
        ),
    )
}

/// A program's call refused because its identity has too many calls waiting for a slot already.
pub(crate) fn calls_waiting(identity: &str, full: TooManyWaiting, calls: &FairGate) -> Refusal {
    Refusal::new(
        RefusalCode::LimitReached,
        format!(
            "refused: {identity} has {} program calls waiting already (its limit), with at most {} in flight \
             of toolgate's {}; it frees as its calls finish",
            full.limit,
            calls.share(),
            calls.capacity()
        ),
    )
}
