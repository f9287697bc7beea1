//! Tasks passed through with their ids remapped: the 2025-11-25 experimental tasks (`params.task` on
//! `tools/call`, `CreateTaskResult`, `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel`,
//! `notifications/tasks/status`) and the ids of the 2026-07-28 tasks extension (`resultType: "task"`,
//! `tasks/get`, `tasks/update`, `tasks/cancel`, `notifications/tasks`).
//!
//! A client never sees an upstream's task id: each task an upstream creates for a client's call gets a
//! toolgate id that is a sealed token (`store::TokenKey`, under the state root's key: encrypted, authenticated,
//! expiring with the task's ttl, capped) naming the server, the upstream id and the owner — the session that
//! created it for a legacy client, the identity for a modern one, whose requests may come on any session. So any
//! toolgate process of the same state root resolves it, with no table to share; one that cannot open it, or
//! whose caller is not its owner, answers as for an unknown id, in every method. What stays in this process is
//! what only it can do: deliver an upstream's status notification to the live session that owns the task, and
//! list the owner's tasks it created (`tasks/list` merges them across servers and shows nothing else). That local
//! index is bounded (per owner and overall) and expires with the tokens. A method the upstream's era lacks (`tasks/result` and `tasks/list` on a 2026-07-28 upstream,
//! `tasks/update` on a legacy one) is refused with the reason.
//!
//! Creating a task is a `tools/call`, governed by the pipeline like any call; the task methods only read or
//! cancel what the owner already started, so they are not decided again.

use crate::gateway::Gateway;
use crate::session::{ClientEra, Session};
use crate::state::State;
use jsonrpc::error_object;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};
use store::{Timestamp, TokenKey};
use tokio_util::sync::CancellationToken;
use upstream::Era;

/// Prefix of toolgate's task ids.
const ID_PREFIX: &str = "tgtask-";

/// The purpose task tokens are sealed for: no other token opens as a task id.
const TOKEN_PURPOSE: &str = "task id";

/// Tasks one owner keeps at once; past it a new task is cancelled upstream and the call fails.
const MAX_PER_OWNER: usize = 64;

/// Tasks kept at once, over all owners.
const MAX_OVERALL: usize = 4096;

/// How long a task is kept when the upstream gave no ttl, and the most it is kept whatever it said.
const DEFAULT_TTL: Duration = Duration::from_secs(3600);
const MAX_TTL: Duration = Duration::from_secs(24 * 3600);

/// Pages of an upstream's `tasks/list` walked for one merged list.
const MAX_LIST_PAGES: usize = 8;

/// Who a task belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Owner {
    identity: Option<String>,
    /// The legacy session that created it; `None` for a modern client (stateless: any of its sessions).
    session: Option<String>,
}

struct Entry {
    server: String,
    /// The tool whose call created it, by its upstream name: task methods are decided as that tool.
    tool: String,
    upstream_id: String,
    owner: Owner,
    /// Where its status notifications go (a legacy session).
    notify: Weak<Session>,
    expires: Instant,
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

    /// A toolgate id for `owner`'s task `upstream_id` on `server`, valid for `ttl`.
    fn mint(
        &self,
        state: Option<&State>,
        server: &str,
        upstream_id: &str,
        owner: &Owner,
        ttl: Duration,
    ) -> Option<String> {
        let expires = Timestamp::now().plus_millis(i64::try_from(ttl.as_millis()).ok()?);
        seal_id(self.key(state)?, server, upstream_id, owner, expires)
    }

    /// The (server, upstream id) a toolgate id names, if it is unexpired, genuine and `owner`'s.
    fn resolve(
        &self,
        state: Option<&State>,
        ours: &str,
        owner: &Owner,
    ) -> Option<(String, String)> {
        open_id(self.key(state)?, ours, owner, Timestamp::now())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        entries.retain(|_, e| e.expires > now);
        entries
    }
}

/// A toolgate task id: the sealed (server, upstream id, owner), until `expires`.
fn seal_id(
    key: &TokenKey,
    server: &str,
    upstream_id: &str,
    owner: &Owner,
    expires: Timestamp,
) -> Option<String> {
    let payload = json!({
        "s": server,
        "u": upstream_id,
        "i": owner.identity,
        "p": owner.session,
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

fn owner_of(session: &Session) -> Owner {
    let modern = matches!(session.lock().era, ClientEra::Modern);
    Owner {
        identity: session.identity(),
        session: (!modern).then(|| session.id.clone()),
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
fn rewrite(v: &mut Value, ours: &str) {
    for slot in id_slots(v) {
        *slot = Value::String(ours.to_owned());
    }
}

/// The task a call's result created, if it is one: its upstream id and ttl.
fn created(result: &Value) -> Option<(String, Option<u64>)> {
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

impl Gateway {
    /// A `tools/call` result of `server` for `session`: a task it created is registered and its id replaced
    /// with toolgate's; anything else comes back as it was. A task that cannot be kept is cancelled upstream
    /// and the call fails.
    pub(crate) fn adopt_task(
        &self,
        (server, tool): (&str, &str),
        session: Option<&Arc<Session>>,
        mut result: Value,
    ) -> Result<Value, String> {
        let Some((upstream_id, ttl)) = created(&result) else {
            return Ok(result);
        };
        let ttl = ttl.map_or(DEFAULT_TTL, Duration::from_millis).min(MAX_TTL);
        let state = self.state.as_deref();
        let minted = session.and_then(|session| {
            let owner = owner_of(session);
            let ours = self.tasks.mint(state, server, &upstream_id, &owner, ttl)?;
            Some((session, owner, ours))
        });
        let ours = match minted {
            Some((session, owner, ours)) => {
                let mut entries = self.tasks.lock();
                let mine = entries.values().filter(|e| e.owner == owner).count();
                if entries.len() < MAX_OVERALL && mine < MAX_PER_OWNER {
                    entries.insert(
                        ours.clone(),
                        Entry {
                            server: server.to_owned(),
                            tool: tool.to_owned(),
                            upstream_id: upstream_id.clone(),
                            owner,
                            notify: Arc::downgrade(session),
                            expires: Instant::now() + ttl,
                        },
                    );
                    Some(ours)
                } else {
                    None
                }
            }
            None => None,
        };
        let Some(ours) = ours else {
            self.cancel_upstream_task(server, upstream_id);
            return Err(
                "toolgate cannot keep another task for this client (too many, or no client to own \
                        it); the upstream's task was cancelled"
                    .to_owned(),
            );
        };
        rewrite(&mut result, &ours);
        Ok(result)
    }

    /// A task created where toolgate cannot keep it (a legacy upstream's task for a modern client's call, which
    /// it has no shape for): cancelled upstream; the reason the call fails, if it is one.
    pub(crate) fn refuse_task(&self, server: &str, result: &Value) -> Option<String> {
        let (upstream_id, _) = created(result)?;
        self.cancel_upstream_task(server, upstream_id);
        Some(
            "the upstream answered with a task of another protocol version, which toolgate cannot carry to \
             this client; the task was cancelled"
                .to_owned(),
        )
    }

    /// Best effort: tells `server` to cancel a task nobody can reach.
    fn cancel_upstream_task(&self, server: &str, upstream_id: String) {
        let Some(up) = self.upstream(server).cloned() else {
            return;
        };
        tokio::spawn(async move {
            if let Ok(conn) = up.connection() {
                let params = json!({"taskId": upstream_id});
                let never = CancellationToken::new();
                let _ = conn
                    .request("tasks/cancel", Some(params), up.request_timeout(), &never)
                    .await;
            }
        });
    }

    /// An upstream's task status notification: to the session that owns the task, under toolgate's id; dropped
    /// when no owner is known (it is nobody else's to hear).
    pub(crate) async fn on_task_status(&self, server: &str, method: &str, mut params: Value) {
        let Some(upstream_id) = params
            .get("taskId")
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            return;
        };
        let found = self
            .tasks
            .lock()
            .iter()
            .find(|(_, e)| e.server == server && e.upstream_id == upstream_id)
            .map(|(ours, e)| (ours.clone(), e.notify.clone()));
        let Some((ours, Some(session))) = found.map(|(o, s)| (o, s.upgrade())) else {
            return;
        };
        rewrite(&mut params, &ours);
        session.forward_notification(method, Some(params)).await;
    }
}

impl Session {
    /// The server and tool of the caller's own task `ours`, for the pipeline to decide a task method by.
    pub(crate) fn task_target(&self, ours: &str) -> Option<(String, String)> {
        let owner = owner_of(self);
        let entries = self.gateway.tasks.lock();
        let e = entries.get(ours).filter(|e| e.owner == owner)?;
        Some((e.server.clone(), e.tool.clone()))
    }

    /// `tasks/get`, `tasks/result`, `tasks/cancel`, `tasks/update`: the caller's own task, forwarded to its
    /// upstream under the upstream's id, the answer under toolgate's.
    pub(crate) async fn task_request(
        &self,
        method: &str,
        mut params: Value,
        cancel: &CancellationToken,
    ) -> Result<Value, Value> {
        let ours = params
            .get("taskId")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let owner = owner_of(self);
        let state = self.gateway.state.as_deref();
        let Some((server, upstream_id)) = self.gateway.tasks.resolve(state, &ours, &owner) else {
            return Err(unknown(&ours));
        };
        let up = self
            .gateway
            .upstream(&server)
            .cloned()
            .ok_or_else(|| unknown(&ours))?;
        let conn = up
            .connection()
            .map_err(|e| crate::errors::to_client(e).unwrap_or_else(|| unknown(&ours)))?;
        let carried = match (conn.era(), method) {
            (Some(Era::Modern), "tasks/result") | (Some(Era::Legacy(_)), "tasks/update") => false,
            (Some(_), _) => true,
            (None, _) => false,
        };
        if !carried {
            return Err(error_object(
                jsonrpc::METHOD_NOT_FOUND,
                format!(
                    "toolgate cannot carry {method} to {server}: its protocol version has no such method"
                ),
                None,
            ));
        }
        params["taskId"] = Value::String(upstream_id);
        let mut answer = conn
            .request(method, Some(params), up.request_timeout(), cancel)
            .await
            .map_err(|e| {
                crate::errors::to_client(e)
                    .unwrap_or_else(|| error_object(jsonrpc::REQUEST_CANCELLED, "cancelled", None))
            })?;
        rewrite(&mut answer, &ours);
        Ok(answer)
    }

    /// `tasks/list`: the caller's tasks on every server that has some, as each upstream lists them, under
    /// toolgate's ids; nobody else's.
    pub(crate) async fn list_tasks(&self, cancel: &CancellationToken) -> Result<Value, Value> {
        let owner = owner_of(self);
        let mut mine: HashMap<String, HashMap<String, String>> = HashMap::new();
        for (ours, e) in self.gateway.tasks.lock().iter() {
            if e.owner == owner {
                mine.entry(e.server.clone())
                    .or_default()
                    .insert(e.upstream_id.clone(), ours.clone());
            }
        }
        let mut servers: Vec<_> = mine.into_iter().collect();
        servers.sort_by(|a, b| a.0.cmp(&b.0));
        let mut tasks = Vec::new();
        for (server, ids) in servers {
            let Some(up) = self.gateway.upstream(&server).cloned() else {
                continue;
            };
            let Ok(conn) = up.connection() else { continue };
            if !matches!(conn.era(), Some(Era::Legacy(_))) {
                continue;
            }
            let mut cursor: Option<Value> = None;
            for _ in 0..MAX_LIST_PAGES {
                let params = cursor
                    .take()
                    .map_or_else(|| json!({}), |c| json!({"cursor": c}));
                let Ok(page) = conn
                    .request("tasks/list", Some(params), up.request_timeout(), cancel)
                    .await
                else {
                    break;
                };
                for mut task in page
                    .get("tasks")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default()
                {
                    let id = task
                        .get("taskId")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    if let Some(ours) = ids.get(id) {
                        rewrite(&mut task, ours);
                        tasks.push(task);
                    }
                }
                match page.get("nextCursor") {
                    Some(c) if !c.is_null() => cursor = Some(c.clone()),
                    _ => break,
                }
            }
        }
        Ok(json!({"tasks": tasks}))
    }
}

#[cfg(test)]
#[path = "tasks_tests.rs"]
mod tests;
