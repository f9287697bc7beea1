//! Tasks passed through with their ids remapped: the 2025-11-25 experimental tasks (`params.task` on
//! `tools/call`, `CreateTaskResult`, `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel`,
//! `notifications/tasks/status`) and the ids of the 2026-07-28 tasks extension (`resultType: "task"`,
//! `tasks/get`, `tasks/update`, `tasks/cancel`, `notifications/tasks`).
//!
//! A client never sees an upstream's task id: each task an upstream creates for a client's call gets a
//! toolgate id that is a sealed token (`store::TokenKey`, under the state root's key: encrypted, authenticated,
//! expiring with the task's ttl, capped) naming the server, the upstream id, the owner — the session that
//! created it for a legacy client, the identity for a modern one, whose requests may come on any session — and
//! the process that created it (`bridge::Seal::naming`). The task lives in that process's upstream: another
//! replica's upstream of the same name is another process whose task ids collide with it, so a task method is
//! carried only by the process that created the task (`task_target` finds it in this table); another replica's
//! HTTP front end sends a modern client's task method on to it (`holder`). One that cannot open an id, or whose
//! caller is not its owner, answers as for an unknown id, in every method. Only this process can also deliver an
//! upstream's status notification to the live session that owns the task, and list the owner's tasks it created
//! (`tasks/list` merges them across servers and shows nothing else; a legacy client's session, which owns them,
//! lives here). That index is bounded (per owner and overall) and expires with the tokens. A method the upstream's
//! era lacks (`tasks/result` and `tasks/list` on a 2026-07-28 upstream, `tasks/update` on a legacy one) is refused
//! with the reason.
//!
//! Creating a task is a `tools/call`, governed by the pipeline like any call; the task methods are decided as the
//! task's tool (`pipeline::task_methods`). This file keeps the table (ids, owners, sealing); carrying a created
//! task and the task methods to the upstream is `task_calls`'.

use crate::bridge::{Holder, Seal};
use crate::client::{Client, ClientEra};
use crate::state::State;
use jsonrpc::error_object;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};
use store::{Timestamp, TokenKey};

/// Prefix of toolgate's task ids.
const ID_PREFIX: &str = "tgtask-";

/// The purpose task tokens are sealed for: no other token opens as a task id.
const TOKEN_PURPOSE: &str = "task id";

/// Tasks one owner keeps at once; past it a new task is cancelled upstream and the call fails.
pub(crate) const MAX_PER_OWNER: usize = 64;

/// Tasks kept at once, over all owners.
pub(crate) const MAX_OVERALL: usize = 4096;

/// How long a task is kept when the upstream gave no ttl, and the most it is kept whatever it said.
pub(crate) const DEFAULT_TTL: Duration = Duration::from_secs(3600);
pub(crate) const MAX_TTL: Duration = Duration::from_secs(24 * 3600);

/// Pages of an upstream's `tasks/list` walked for one merged list.
pub(crate) const MAX_LIST_PAGES: usize = 8;

/// Who a task belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Owner {
    pub(crate) identity: Option<String>,
    /// The legacy session that created it; `None` for a modern client (stateless: any of its sessions).
    pub(crate) session: Option<String>,
}

pub(crate) struct Entry {
    pub(crate) server: String,
    /// The tool whose call created it, by its upstream name: task methods are decided as that tool.
    pub(crate) tool: String,
    pub(crate) upstream_id: String,
    /// Also where its status notifications go (its legacy session).
    pub(crate) owner: Owner,
    pub(crate) expires: Instant,
}

/// The tasks this process created, by toolgate task id: where their notifications go, and what `tasks/list`
/// shows. Resolving an id needs none of it (`resolve`).
#[derive(Default)]
pub(crate) struct Tasks {
    entries: Mutex<HashMap<String, Entry>>,
    /// The sealing key, derived once from the state root's key (or this process's own without state).
    key: OnceLock<TokenKey>,
}

impl Tasks {
    fn key(&self, state: Option<&State>) -> Option<&TokenKey> {
        if let Some(key) = self.key.get() {
            return Some(key);
        }
        let made = match state {
            Some(state) => TokenKey::for_state_root(state.namespace().state_root(), TOKEN_PURPOSE),
            None => TokenKey::ephemeral(TOKEN_PURPOSE),
        };
        match made {
            Ok(key) => Some(self.key.get_or_init(|| key)),
            Err(e) => {
                tracing::warn!("cannot make task ids: {e}");
                None
            }
        }
    }

    /// A toolgate id for `owner`'s task `upstream_id` on `server`, valid for `ttl`, naming this process
    /// (`here`: `Seal::naming`), whose upstream holds the task.
    pub(crate) fn mint(
        &self,
        state: Option<&State>,
        (server, upstream_id): (&str, &str),
        owner: &Owner,
        ttl: Duration,
        here: &Seal,
    ) -> Option<String> {
        let expires = Timestamp::now().plus_millis(i64::try_from(ttl.as_millis()).ok()?);
        let task = Task {
            server,
            upstream_id,
            owner,
            holder: here.naming(),
        };
        seal_id(self.key(state)?, &task, expires)
    }

    /// Where the task `ours` is held: this process when it created it (or the id is not a genuine one, refused
    /// here as unknown), else the replica its sealed id names, whose upstream holds the task. The owner is
    /// checked where it is held.
    pub(crate) fn holder(&self, state: Option<&State>, ours: &str, here: &Seal) -> Holder {
        if self.lock().contains_key(ours) {
            return Holder::Here;
        }
        let opened = self.key(state).and_then(|key| {
            let payload = key.open(ours.strip_prefix(ID_PREFIX)?, Timestamp::now())?;
            serde_json::from_slice::<Value>(&payload).ok()
        });
        match opened.and_then(|v| v.get("h").cloned()) {
            Some(named) => here.locate(&named),
            None => Holder::Here,
        }
    }

    /// The (server, upstream id) a toolgate id names, if it is unexpired, genuine and `owner`'s.
    pub(crate) fn resolve(
        &self,
        state: Option<&State>,
        ours: &str,
        owner: &Owner,
    ) -> Option<(String, String)> {
        open_id(self.key(state)?, ours, owner, Timestamp::now())
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        entries.retain(|_, e| e.expires > now);
        entries
    }
}

/// What a task id names: the task, its owner, and the process whose upstream holds it.
struct Task<'a> {
    server: &'a str,
    upstream_id: &'a str,
    owner: &'a Owner,
    /// `Seal::naming` of the minting process.
    holder: Value,
}

/// A toolgate task id: the sealed task, until `expires`.
fn seal_id(key: &TokenKey, task: &Task<'_>, expires: Timestamp) -> Option<String> {
    let payload = json!({
        "s": task.server,
        "u": task.upstream_id,
        "i": task.owner.identity,
        "p": task.owner.session,
        "h": task.holder,
    });
    let token = key.seal(payload.to_string().as_bytes(), expires).ok()?;
    Some(format!("{ID_PREFIX}{token}"))
}

/// What `seal_id` sealed, if `ours` opens under `key` at `now` and names `owner`.
fn open_id(key: &TokenKey, ours: &str, owner: &Owner, now: Timestamp) -> Option<(String, String)> {
    let payload = key.open(ours.strip_prefix(ID_PREFIX)?, now)?;
    let v: Value = serde_json::from_slice(&payload).ok()?;
    let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    let named = Owner {
        identity: text("i"),
        session: text("p"),
    };
    (named == *owner).then_some((text("s")?, text("u")?))
}

pub(crate) fn owner_of(client: &dyn Client) -> Owner {
    let modern = matches!(client.era(), ClientEra::Modern);
    Owner {
        identity: client.identity(),
        session: (!modern).then(|| client.session_id().to_owned()),
    }
}

pub(crate) fn unknown(id: &str) -> Value {
    error_object(
        jsonrpc::INVALID_PARAMS,
        format!("unknown task {id:?}"),
        None,
    )
}

/// Where the task id sits in a result or notification: a `CreateTaskResult`'s `task.taskId`, a task's own
/// `taskId`, the related-task `_meta` of a task's result.
fn id_slots(v: &mut Value) -> Vec<&mut Value> {
    let mut slots = Vec::new();
    let Value::Object(m) = v else { return slots };
    let mut meta = None;
    let mut nested = None;
    for (k, v) in m.iter_mut() {
        match k.as_str() {
            "taskId" => slots.push(v),
            "task" => nested = v.get_mut("taskId"),
            "_meta" => meta = v.pointer_mut("/io.modelcontextprotocol~1related-task/taskId"),
            _ => {}
        }
    }
    slots.extend(nested);
    slots.extend(meta);
    slots
}

/// Replaces the upstream's task id in `v` with `ours`.
pub(crate) fn rewrite(v: &mut Value, ours: &str) {
    for slot in id_slots(v) {
        *slot = Value::String(ours.to_owned());
    }
}

/// The task a call's result created, if it is one: its upstream id and ttl.
pub(crate) fn created(result: &Value) -> Option<(String, Option<u64>)> {
    let task = result
        .get("task")
        .filter(|t| t.is_object())
        .or_else(|| (result.get("resultType") == Some(&json!("task"))).then_some(result))?;
    let id = task.get("taskId")?.as_str()?.to_owned();
    let ttl = task
        .get("ttl")
        .or_else(|| task.get("ttlMs"))
        .and_then(Value::as_u64);
    Some((id, ttl))
}

#[cfg(test)]
#[path = "tasks_tests.rs"]
mod tests;
