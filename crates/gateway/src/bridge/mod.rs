//! Bridging the protocol eras for calls a client of one era makes on an upstream of the other.
//!
//! A 2026-07-28 client cannot receive server→client requests; it gets an `input_required` result instead and
//! retries with `inputResponses`. A legacy upstream asks mid-call with `elicitation/create`,
//! `sampling/createMessage` or `roots/list` and waits for the JSON-RPC answer. `modern` joins the two: the
//! upstream call goes on in a task of its own while the client's request ends with `input_required`; the call
//! waits here, in a gateway-level table (the retry may come on another session: stateless HTTP opens one per
//! request), named by an unguessable `requestState` toolgate mints. `legacy` joins them the other way: a modern
//! upstream's `input_required` is asked of a legacy client as the equivalent requests, and toolgate retries.
//!
//! A request state is bound to the identity that got it and to the request it answers (method, server, tool and
//! the SHA-256 of the canonical arguments); it is single use (each round mints a new one), bounded in number per
//! identity and overall, and expires: then the upstream's requests are answered with an error and the upstream
//! call is cancelled. A retry that does not match is refused and delivers nothing.
//!
//! Governance of the rounds: the first call is decided by the pipeline as any call (policy, approval, one
//! decision record); its finishing guard waits here with the call and is closed once with the final outcome, so
//! the rounds share one trace id, one decision record and one finished record. A retry is not decided again — it
//! runs nothing new, it only carries the client's answers to the call the policy already allowed — but it passes
//! the audit gate, and must repeat the call exactly.
//!
//! The request state is a sealed token naming the process that holds the call and its address (`holder`), so
//! that behind a load balancer a retry reaching another replica is sent on to the holder by the HTTP front end.
//!
//! Nothing here decides policy; the tasks extension is not bridged.

mod holder;
mod legacy;
mod listen;
mod modern;

pub use holder::Holder;
pub(crate) use legacy::{answer_for_legacy, input_requests, is_input_required};
pub(crate) use listen::Listens;
pub(crate) use modern::{forward, retry, retry_state, Retry};

use crate::outcome::{CallOutcome, Refusal, RefusalCode};
use crate::pipeline::finish::Finish;
use crate::progress::ProgressGuard;
pub(crate) use holder::Seal;
use jsonrpc::error_object;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use upstream::Connection;

/// Prefix of every request state toolgate mints; a retry carrying one is toolgate's to answer, never an
/// upstream's.
pub(crate) const STATE_PREFIX: &str = "toolgate-bridge.";

/// Calls waiting for one identity's answers at once; past it an upstream's request is refused.
const MAX_PER_IDENTITY: usize = 16;

/// Calls waiting for answers at once, over all identities.
const MAX_OVERALL: usize = 256;

/// Upstream requests one bridged call keeps queued before the next round; past it they are refused.
const ASK_CAPACITY: usize = 8;

/// How long toolgate waits after an upstream's request for others sent with it, so that requests outstanding
/// together become one round's `inputRequests`.
const SETTLE: Duration = Duration::from_millis(30);

/// An upstream's request caught for a bridged call.
#[derive(Debug)]
pub(crate) struct Asked {
    pub upstream_id: Value,
    pub method: String,
    pub params: Option<Value>,
}

/// Where the upstream's requests for one bridged call go (`route`).
pub(crate) type AskSink = mpsc::Sender<Asked>;

/// What a request state is bound to: who may retry, and the request the retry must repeat.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Binding {
    identity: Option<String>,
    method: String,
    server: String,
    /// The upstream's own name of the tool or prompt, or the resource's URI.
    target: String,
    /// SHA-256 of the canonical arguments.
    arguments: String,
}

impl Binding {
    /// `identity`'s request `method` for `target` on `server` with `arguments`.
    pub(crate) fn request(
        identity: Option<String>,
        method: &str,
        (server, target): (&str, &str),
        arguments: &Value,
    ) -> Self {
        Self {
            identity,
            method: method.to_owned(),
            server: server.to_owned(),
            target: target.to_owned(),
            arguments: jsonrpc::sha256_hex(jsonrpc::canonical_json(arguments).as_bytes()),
        }
    }
}

/// The requests bridged for a modern client on a legacy upstream: those a legacy server may ask during.
pub(crate) const BRIDGED: &[&str] = &["tools/call", "prompts/get", "resources/read"];

/// What a bridged request names and with what arguments: a tool or a prompt by name with its arguments, a
/// resource by its URI.
pub(crate) fn target_of(method: &str, params: &Value) -> (String, Value) {
    let text = |k: &str| {
        params
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let arguments = || {
        params
            .get("arguments")
            .cloned()
            .unwrap_or_else(|| Value::Object(Default::default()))
    };
    match method {
        "resources/read" => (text("uri"), Value::Object(Default::default())),
        _ => (text("name"), arguments()),
    }
}

/// One bridged call: the upstream call still running, and what it asked that awaits the client's answers.
pub(crate) struct Exchange {
    binding: Binding,
    conn: Arc<Connection>,
    answer: oneshot::Receiver<upstream::Result<Value>>,
    asks: mpsc::Receiver<Asked>,
    /// False once the upstream call ended and nothing more can be asked.
    asks_open: bool,
    /// The upstream's requests of this round by key, as the client sees them in `inputRequests`.
    outstanding: BTreeMap<String, Asked>,
    next_key: u64,
    /// Ends the upstream call.
    cancel: CancellationToken,
    /// The first call's finishing guard, closed once with the final outcome.
    finish: Option<Finish>,
    /// The route of the upstream's progress: to the client request waiting on the call, none while parked.
    progress: Option<ProgressGuard>,
}

impl Exchange {
    /// Gives up: the upstream's requests are answered with an error, the upstream call is cancelled, and the
    /// call is recorded as cancelled.
    async fn abandon(mut self, why: &str) {
        let err = error_object(jsonrpc::INTERNAL_ERROR, why, None);
        self.asks.close();
        let mut asked: Vec<Asked> = std::mem::take(&mut self.outstanding)
            .into_values()
            .collect();
        while let Ok(a) = self.asks.try_recv() {
            asked.push(a);
        }
        for a in asked {
            let _ = self.conn.respond(a.upstream_id, Err(err.clone())).await;
        }
        self.cancel.cancel();
        if let Some(finish) = self.finish.take() {
            finish.close(&CallOutcome::Cancelled).await;
        }
    }
}

impl Drop for Exchange {
    /// However it ends, the upstream call does not outlive it (a no-op once the call answered).
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// The calls waiting for a client's answers, by request state.
pub(crate) struct Bridge {
    parked: Mutex<HashMap<String, Box<Exchange>>>,
    /// How long a call waits for the retry.
    ttl: Duration,
    /// Mints the request states and tells whose a presented one is.
    seal: Seal,
}

impl Bridge {
    /// A bridge whose request states are sealed under the state root at `root`'s key (shared by a team's
    /// replicas), or this process's own without one.
    pub(crate) fn new(ttl: Duration, root: Option<&std::path::Path>) -> Arc<Self> {
        Arc::new(Self {
            parked: Mutex::new(HashMap::new()),
            ttl,
            seal: Seal::new(root),
        })
    }

    /// Records the `host:port` other replicas reach this process at, named in the states it mints from now on.
    pub(crate) fn advertise(&self, address: String) {
        self.seal.advertise(address);
    }

    /// The seal naming this process in the tokens it mints (request states, task ids).
    pub(crate) fn seal(&self) -> &Seal {
        &self.seal
    }

    /// Where the call a retry's `state` names waits; see `Holder`.
    pub(crate) fn holder(&self, state: &str) -> Holder {
        if self.lock().contains_key(state) {
            return Holder::Here;
        }
        self.seal.holder(state, store::Timestamp::now())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Box<Exchange>>> {
        self.parked.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Parks `ex` until its retry under a fresh request state, which expires after the bridge's ttl. Refused
    /// (the exchange comes back, with why) past the bounds, or when no unguessable state can be minted.
    fn park(self: &Arc<Self>, ex: Box<Exchange>) -> Result<String, (Box<Exchange>, String)> {
        let Some(state) = self.seal.mint(self.ttl) else {
            return Err((ex, "toolgate could not mint a request state".to_owned()));
        };
        {
            let mut parked = self.lock();
            let mine = parked
                .values()
                .filter(|p| p.binding.identity == ex.binding.identity)
                .count();
            if parked.len() >= MAX_OVERALL || mine >= MAX_PER_IDENTITY {
                return Err((
                    ex,
                    "toolgate holds too many calls waiting for a client's answers".to_owned(),
                ));
            }
            parked.insert(state.clone(), ex);
        }
        let bridge = Arc::clone(self);
        let expiring = state.clone();
        tokio::spawn(async move {
            tokio::time::sleep(bridge.ttl).await;
            let expired = bridge.lock().remove(&expiring);
            if let Some(ex) = expired {
                tracing::info!("a call waiting for a client's answers expired; cancelled upstream");
                ex.abandon("the client did not answer in time").await;
            }
        });
        Ok(state)
    }

    /// The call waiting under `state`, taken (a state is single use) when `binding` is the one it was given
    /// for; else the refusal, and a call parked for someone else stays parked.
    fn take(&self, state: &str, binding: &Binding) -> Result<Box<Exchange>, Refusal> {
        let mut parked = self.lock();
        let Some(ex) = parked.get(state) else {
            return Err(Refusal::new(
                RefusalCode::RequestNotFound,
                "toolgate refused this retry: its requestState is unknown, expired or already used",
            ));
        };
        let b = &ex.binding;
        let why = if b.identity != binding.identity {
            Some("it was issued to another identity")
        } else if (&b.method, &b.server, &b.target)
            != (&binding.method, &binding.server, &binding.target)
        {
            Some("it was issued for another request")
        } else if b.arguments != binding.arguments {
            Some("it was issued for a call with other arguments")
        } else {
            None
        };
        if let Some(why) = why {
            tracing::warn!("refused a retry whose request state does not match: {why}");
            return Err(Refusal::new(
                RefusalCode::RequestTampered,
                format!(
                    "toolgate refused this retry: its requestState does not belong to it ({why})"
                ),
            ));
        }
        parked
            .remove(state)
            .ok_or_else(|| Refusal::new(RefusalCode::RequestNotFound, "gone"))
    }

    /// The first call's finishing guard joins the call parked under `state`; closed as cancelled when the call
    /// is already gone (it expired in between).
    pub(crate) async fn adopt(&self, state: &str, finish: Finish) {
        let orphan = match self.lock().get_mut(state) {
            Some(ex) => {
                ex.finish = Some(finish);
                None
            }
            None => Some(finish),
        };
        if let Some(finish) = orphan {
            finish.close(&CallOutcome::Cancelled).await;
        }
    }

    /// Abandons every parked call (shutdown).
    pub(crate) async fn abandon_all(&self) {
        let all: Vec<Box<Exchange>> = self.lock().drain().map(|(_, ex)| ex).collect();
        for ex in all {
            ex.abandon("toolgate is shutting down").await;
        }
    }
}

#[cfg(test)]
#[path = "../bridge_flow_tests.rs"]
mod flow_tests;
#[cfg(test)]
#[path = "../bridge_reads_flow_tests.rs"]
mod reads_flow_tests;
