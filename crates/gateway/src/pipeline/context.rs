//! What the pipeline is told about one governed request besides the request itself: everything it needs from
//! whoever asked. Its trace id, where it came from, whose session grants apply, where progress goes, whether and
//! how a human can be asked, whether a held call waits, and its cancellation. It holds no transport: a front end
//! (a client session today, an HTTP request or a code-mode run later) builds one per request, and the pipeline
//! reaches the requester only through the traits of `client`: never a concrete session.
//!
//! It decides nothing and records nothing.

pub(crate) use crate::client::{AskFuture, AskHuman, Progress, ProgressSink};
use crate::client::{Client, LogLevel};
use crate::guard::Guard;
use jsonrpc::Id;
use serde_json::Value;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Where a governed request came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    /// A client's request on one of its sessions.
    Client { session_id: String },
    /// A call a code-mode program made; each call has its own trace id, and this names the run's.
    CodeRun { run_trace_id: String },
    /// `toolgate_resume` of an approved call, which re-enters after the approval stage under the trace id and
    /// tool name of the call that was held.
    Resume,
    /// A request this upstream sent toward a client (sampling, elicitation, roots).
    Upstream { server: String },
}

/// Which session grants apply to the request, and where a grant a human gives while it is held goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum GrantScope {
    /// No grant applies and none can be made: every ask is decided on its own.
    None,
    /// The grants of this session (a client connection's id).
    Session(String),
}

impl GrantScope {
    /// The session whose grants apply, if any. Never an empty id: an empty id would match every other
    /// request that has no session.
    pub(crate) fn session(&self) -> Option<&str> {
        match self {
            GrantScope::None => None,
            GrantScope::Session(id) => Some(id.as_str()).filter(|id| !id.is_empty()),
        }
    }
}

/// What a held call does while a human decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HoldPolicy {
    /// Block up to `approvals.wait`, then hand out a Contract V1 handle (a client's request).
    Wait,
    /// Hand out the handle at once, without waiting (a caller that resumes on its own schedule).
    HandleNow,
}

/// The client request a governed request serves: the client it came on and its id there. What an upstream
/// asks while the request runs belongs to it.
#[derive(Clone)]
pub(crate) struct Requester {
    /// Weak: a call that outlives its client (a bridged call parked for a retry) does not keep it open.
    pub client: Weak<dyn Client>,
    pub request: Id,
    /// The least severe log message a modern client asked to receive on this request's stream
    /// (`_meta["io.modelcontextprotocol/logLevel"]`); `None`: none.
    pub log_level: Option<LogLevel>,
}

impl Requester {
    /// The client, while it is still there.
    pub(crate) fn client(&self) -> Option<Arc<dyn Client>> {
        self.client.upgrade()
    }
}

/// What a human approved for one code-mode run, before it started: the calls its program writes with a
/// literal tool name that asked, each for exactly the arguments written, or for any when they are computed. A
/// call whose verdict is `ask` runs under this approval only when it is one of them; any other `ask` in the
/// run is refused (a name built at run time runs only under an allow rule, or as a call approved here).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct RunApproval {
    /// By exposed name: the canonical JSON of each approved argument object, or `None` for any arguments.
    calls: std::collections::BTreeMap<String, Option<std::collections::BTreeSet<String>>>,
}

impl RunApproval {
    /// Approves calls of `exposed` with the arguments of canonical JSON `arguments`, or with any (`None`).
    pub(crate) fn approve(&mut self, exposed: &str, arguments: Option<String>) {
        let entry = self
            .calls
            .entry(exposed.to_owned())
            .or_insert_with(|| Some(Default::default()));
        match (entry.as_mut(), arguments) {
            (Some(set), Some(a)) => {
                set.insert(a);
            }
            _ => *entry = None,
        }
    }

    /// Whether a call of `exposed` with `arguments` was approved.
    pub(crate) fn covers(&self, exposed: &str, arguments: &Value) -> bool {
        match self.calls.get(exposed) {
            Some(None) => true,
            Some(Some(set)) => set.contains(&jsonrpc::canonical_json(arguments)),
            None => false,
        }
    }
}

/// The time a request spent waiting for a human (held for approval, asked through the client), shared by the
/// clones of its context, so its records report that wait apart from the time toolgate and the tool took.
#[derive(Clone, Debug, Default)]
pub(crate) struct HumanWait(Arc<WaitClock>);

#[derive(Debug, Default)]
struct WaitClock {
    micros: AtomicU64,
    started: AtomicBool,
}

impl HumanWait {
    /// Counts the time from now until the returned guard is dropped (also when the wait is cut short).
    pub(crate) fn start(&self) -> Waiting<'_> {
        self.0.started.store(true, Ordering::Relaxed);
        Waiting {
            clock: self,
            since: Instant::now(),
        }
    }

    /// The time waited; `None` when the request never waited for a human (a grant, an allow, a resume).
    pub(crate) fn total(&self) -> Option<Duration> {
        self.0
            .started
            .load(Ordering::Relaxed)
            .then(|| Duration::from_micros(self.0.micros.load(Ordering::Relaxed)))
    }
}

/// A wait for a human in progress (`HumanWait::start`).
pub(crate) struct Waiting<'a> {
    clock: &'a HumanWait,
    since: Instant,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let micros = u64::try_from(self.since.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.clock.0.micros.fetch_add(micros, Ordering::Relaxed);
    }
}

/// One governed request's context.
#[derive(Clone)]
pub(crate) struct CallContext {
    /// One id from first sight through approval, resume and execution.
    pub trace_id: String,
    pub origin: Origin,
    pub grants: GrantScope,
    /// Set when the requester asked for progress (a held call reports that it is waiting; an upstream's
    /// progress is routed back).
    pub progress: Option<Progress>,
    /// Set when a human can be asked besides the admin channels.
    pub asker: Option<Arc<dyn AskHuman>>,
    pub hold: HoldPolicy,
    /// The client request behind this one, when there is one.
    pub requester: Option<Requester>,
    pub cancel: CancellationToken,
    /// For a call a code-mode program made: what the run was approved for (`None`: nothing, so every `ask`
    /// is refused). Never set for any other origin.
    pub run_approval: Option<Arc<RunApproval>>,
    /// The guard of the profile the requester runs under (a session's; a program's calls use its run's).
    pub guard: Arc<Guard>,
    /// Who the front end authenticated as the requester (`key:ci`, `jwt:<iss>#<sub>`); `None` on stdio. It is
    /// recorded with the call, and a held call can be resumed or read only by the same identity.
    pub principal: Option<String>,
    /// How long the request waited for a human, for its records.
    pub human_wait: HumanWait,
    /// The W3C `traceparent` the requester's transport carried, when telemetry is on: the request's span is its
    /// child.
    pub traceparent: Option<String>,
}

impl CallContext {
    /// A request from `origin` under a fresh trace id, with no grants, no progress, no one to ask and no client
    /// request behind it; the builder of the context adds what its requester has.
    pub(crate) fn new(
        origin: Origin,
        hold: HoldPolicy,
        cancel: CancellationToken,
        guard: Arc<Guard>,
    ) -> Self {
        Self {
            trace_id: crate::ids::trace_id(),
            origin,
            grants: GrantScope::None,
            progress: None,
            asker: None,
            hold,
            requester: None,
            cancel,
            run_approval: None,
            guard,
            principal: None,
            human_wait: HumanWait::default(),
            traceparent: None,
        }
    }

    /// The context an approved call runs in when it is resumed: the held call's trace, everything else the
    /// resumer's.
    pub(crate) fn resumed(&self, trace_id: &str) -> Self {
        Self {
            trace_id: trace_id.to_owned(),
            origin: Origin::Resume,
            ..self.clone()
        }
    }
}
