//! Task requests carried to the upstreams: a call's result that created a task is adopted under toolgate's id
//! (`adopt_task`), a task the client cannot be handed is cancelled upstream, the task methods of a client's own
//! tasks are forwarded under the upstream's id and answered under toolgate's, and a status notification is
//! given to the session that owns its task. The table of ids and owners is `tasks`'; deciding a task method is
//! the pipeline's (`pipeline::task_methods`).

use crate::client::Client;
use crate::stages::Stages;
use crate::tasks::{
    created, owner_of, rewrite, unknown, Entry, DEFAULT_TTL, MAX_LIST_PAGES, MAX_OVERALL,
    MAX_PER_OWNER, MAX_TTL,
};
use jsonrpc::error_object;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use upstream::Era;

impl Stages {
    /// A `tools/call` result of `server` for `session`: a task it created is registered and its id replaced
    /// with toolgate's; anything else comes back as it was. A task that cannot be kept is cancelled upstream
    /// and the call fails.
    pub(crate) fn adopt_task(
        &self,
        (server, tool): (&str, &str),
        client: Option<&Arc<dyn Client>>,
        mut result: Value,
    ) -> Result<Value, String> {
        let Some((upstream_id, ttl)) = created(&result) else {
            return Ok(result);
        };
        let ttl = ttl.map_or(DEFAULT_TTL, Duration::from_millis).min(MAX_TTL);
        let state = self.state.as_deref();
        let minted = client.and_then(|client| {
            let owner = owner_of(client.as_ref());
            let here = self.bridge.seal();
            let ours = self
                .tasks
                .mint(state, (server, &upstream_id), &owner, ttl, here)?;
            Some((owner, ours))
        });
        let ours = match minted {
            Some((owner, ours)) => {
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
        let Some(up) = self.upstream(server) else {
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

    /// An upstream's task status notification: the legacy session that owns the task and the notification
    /// under toolgate's id; `None` when no owner is known (it is nobody else's to hear).
    pub(crate) fn task_status(&self, server: &str, mut params: Value) -> Option<(String, Value)> {
        let upstream_id = params.get("taskId").and_then(Value::as_str)?.to_owned();
        let (ours, session) = self
            .tasks
            .lock()
            .iter()
            .find(|(_, e)| e.server == server && e.upstream_id == upstream_id)
            .and_then(|(ours, e)| Some((ours.clone(), e.owner.session.clone()?)))?;
        rewrite(&mut params, &ours);
        Some((session, params))
    }

    /// The server and tool of `client`'s own task `ours`, for the pipeline to decide a task method by.
    pub(crate) fn task_target(&self, client: &dyn Client, ours: &str) -> Option<(String, String)> {
        let owner = owner_of(client);
        let entries = self.tasks.lock();
        let e = entries.get(ours).filter(|e| e.owner == owner)?;
        Some((e.server.clone(), e.tool.clone()))
    }

    /// `tasks/get`, `tasks/result`, `tasks/cancel`, `tasks/update`: `client`'s own task, forwarded to its
    /// upstream under the upstream's id, the answer under toolgate's.
    pub(crate) async fn task_request(
        &self,
        client: &dyn Client,
        method: &str,
        mut params: Value,
        cancel: &CancellationToken,
    ) -> Result<Value, Value> {
        let ours = params
            .get("taskId")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let owner = owner_of(client);
        let state = self.state.as_deref();
        let Some((server, upstream_id)) = self.tasks.resolve(state, &ours, &owner) else {
            return Err(unknown(&ours));
        };
        let up = self.upstream(&server).ok_or_else(|| unknown(&ours))?;
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
    pub(crate) async fn list_tasks(
        &self,
        client: &dyn Client,
        cancel: &CancellationToken,
    ) -> Result<Value, Value> {
        let owner = owner_of(client);
        let mut mine: HashMap<String, HashMap<String, String>> = HashMap::new();
        for (ours, e) in self.tasks.lock().iter() {
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
            let Some(up) = self.upstream(&server) else {
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
        Ok(jsonrpc::object([("tasks", Value::Array(tasks))]))
    }
}
