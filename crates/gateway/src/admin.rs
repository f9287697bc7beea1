//! What the admin surface asks the gateway: how a profile's policy would decide a hypothetical call (as
//! `toolgate policy explain` explains it), a profile's tool surface (as `toolgate preview` shows it, with the
//! names its clients' `tools/list` gives), readiness, and the metrics text. Answers carry no raw arguments: a call is described by its tool, its decision and what it touches,
//! redacted as the audit log redacts it, and its arguments by size and SHA-256 only. Each question is audited.
//!
//! It runs nothing and holds nothing: no upstream is called, no approval is created.

use crate::error::Error;
use crate::gateway::Gateway;
use crate::guard::OWN_SERVER;
use audit::{AuditEvent, Digest, EventKind};
use policy::Visibility;
use serde_json::{json, Value};

impl Gateway {
    /// The Prometheus text of `GET /metrics`, with the gauges read now: each upstream connected or not, and the
    /// records waiting for the audit writer. `None` when metrics are off.
    pub fn metrics(&self) -> Option<String> {
        let telemetry = &self.stages.opts.telemetry;
        if !telemetry.metrics_on() {
            return None;
        }
        let now = telemetry::Gauges {
            audit_queue: self.stages.state.as_ref().map_or(0, |s| {
                i64::try_from(s.audit_queue_depth()).unwrap_or(i64::MAX)
            }),
            upstreams: self
                .statuses()
                .into_iter()
                .map(|s| (s.server, s.state == upstream::State::Ready))
                .collect(),
        };
        telemetry.render_metrics(&now)
    }

    /// How `profile` (`None`: the served one) would decide a call of `exposed` (the name a client calls) with
    /// `arguments`: effect, rule id, reason, operation and the redacted resources it touches. `None` when no
    /// such tool is listed.
    pub fn explain_call(
        &self,
        profile: Option<&str>,
        exposed: &str,
        arguments: &Value,
    ) -> Result<Option<Value>, Error> {
        let guard = self.profile_guard(profile)?;
        let agg = self.aggregate();
        let (server, tool) = match agg.route_tool(exposed) {
            Some(route) => (route.server.clone(), route.name.clone()),
            None if agg.tool_definition(exposed).is_some() => {
                (OWN_SERVER.to_owned(), exposed.to_owned())
            }
            None => return Ok(None),
        };
        let explanation = guard.explain_tool(&server, &tool, arguments);
        let (_, resources) = guard.check(&server, &tool, None, arguments);
        let touches: Vec<String> = resources.iter().map(|r| audit::redact(r)).collect();
        let d = &explanation.decision;
        let digest = Digest::of_json(arguments);
        Ok(Some(json!({
            "profile_id": guard.profile(),
            "tool_name": exposed,
            "server": server,
            "tool": tool,
            "effect": d.effect.as_str(),
            "rule_id": d.rule_id,
            "rule_at": d.rule_at,
            "reason": d.reason.as_str(),
            "operation": d.operation.to_string(),
            "hidden": explanation.hidden,
            "touches": touches,
            "arguments": {"bytes": digest.bytes, "sha256": digest.sha256},
        })))
    }

    /// `profile`'s tool surface: every tool of the merged catalog as visible, deferred, blocked or unavailable,
    /// with the reason, rule and category (`category_of`), plus one unavailable row per server that is down. `category` keeps one kind;
    /// blocked tools are left out unless `include_denied`.
    pub fn tool_preview(
        &self,
        profile: Option<&str>,
        category: Option<Visibility>,
        include_denied: bool,
    ) -> Result<Value, Error> {
        let guard = self.profile_guard(profile)?;
        let agg = self.aggregate();
        let pins = self.pins();
        let surface = guard.surface(&agg.tool_owners, &pins, self.stages.opts.quarantine_asks);
        let mut rows: Vec<Value> = agg
            .tools
            .iter()
            .zip(&agg.tool_owners)
            .zip(&surface)
            .map(|((def, (server, tool)), entry)| {
                let exposed = def.get("name").and_then(Value::as_str).unwrap_or(tool);
                (entry.visibility, exposed.to_owned(), server, entry)
            })
            .filter(|(v, ..)| include_denied || *v != Visibility::Blocked)
            .filter(|(v, ..)| category.is_none_or(|c| c == *v))
            .map(|(v, exposed, server, entry)| {
                json!({"name": exposed, "server": server, "category": category_of(&guard, server, &exposed),
                       "visibility": v, "reason": entry.reason, "rule_id": entry.rule_id,
                       "rule_at": entry.rule_at})
            })
            .collect();
        let down = self
            .statuses()
            .into_iter()
            .filter(|s| s.state != upstream::State::Ready);
        if category.is_none_or(|c| c == Visibility::Unavailable) {
            for s in down {
                rows.push(
                    json!({"name": format!("{}__*", s.server), "server": s.server,
                                 "category": category_of(&guard, &s.server, ""),
                                 "visibility": Visibility::Unavailable, "reason": "SERVER_DOWN",
                                 "rule_id": null}),
                );
            }
        }
        Ok(json!({"profile_id": guard.profile(), "tools": rows}))
    }

    /// The exposed names `tools/list` gives a client of `profile` (`None`: the served one), in list order:
    /// toolgate's own tools included, and in code mode only what code mode lists. `preview` shows this set.
    pub fn listed_tools(&self, profile: Option<&str>) -> Result<Vec<String>, Error> {
        let guard = self.profile_guard(profile)?;
        let (agg, visible) = self.stages.visible_tools(&guard);
        Ok(visible
            .iter()
            .filter_map(|&i| agg.tools.get(i)?.get("name")?.as_str().map(str::to_owned))
            .collect())
    }

    /// toolgate's approval tools (`toolgate_request_status`, `toolgate_resume`) that a client of `profile` is not
    /// listed: without them an agent cannot follow a held call, so every approval it meets is lost.
    pub fn hidden_approval_tools(&self, profile: Option<&str>) -> Result<Vec<&'static str>, Error> {
        let listed = self.listed_tools(profile)?;
        let agg = self.aggregate();
        Ok([crate::contract::STATUS_TOOL, crate::contract::RESUME_TOOL]
            .into_iter()
            // Only a tool the gateway serves here (it needs the state) can be hidden.
            .filter(|t| agg.tool_definition(t).is_some() && !listed.iter().any(|l| l == t))
            .collect())
    }

    /// Whether a client of `profile` is served in code mode (it lists `search_tools` and `run_code`).
    pub fn code_mode(&self) -> bool {
        self.stages.opts.code.on()
    }

    /// Readiness, as `GET /mcp/status` gives it: the runtime, the served (default) profile, the state store,
    /// the upstream servers up and down, whether the audit log is written, and what is wrong with what to do
    /// about it. Nothing secret: no key, token, argument or path. Servers are named only when `named` (the
    /// admin asks); anyone else gets counts, so a caller learns no server its profile may not see.
    pub fn readiness(&self, named: bool) -> Value {
        let statuses = self.statuses();
        let down: Vec<&upstream::Status> = statuses
            .iter()
            .filter(|s| s.state != upstream::State::Ready)
            .collect();
        let (mut warnings, mut next): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
        if named {
            for s in &down {
                warnings.push(format!("server {} is {}", s.server, s.state.as_str()));
                next.push(format!(
                    "see why server {} is not ready: toolgate doctor --config <this config>",
                    s.server
                ));
            }
        } else if !down.is_empty() {
            warnings.push(format!(
                "{} of {} servers are not ready",
                down.len(),
                statuses.len()
            ));
            next.push("ask the operator: the admin's status names the servers".to_owned());
        }
        let health = self.audit_health();
        match &health {
            crate::status::AuditHealth::Failing(p) => {
                warnings.push(if named {
                    format!("the audit log cannot be written: {p}")
                } else {
                    "the audit log cannot be written".to_owned()
                });
                next.push("calls are refused until the audit log can be written again".to_owned());
            }
            crate::status::AuditHealth::Off => {
                warnings
                    .push("no state store: nothing is audited and every ask is refused".to_owned());
                next.push(
                    "serve with a state directory (TOOLGATE_STATE_DIR or \"stateDir\")".to_owned(),
                );
            }
            crate::status::AuditHealth::Ok => {}
        }
        let profile = self.profile_guard(None).ok();
        let mut servers = json!({"total": statuses.len(), "up": statuses.len() - down.len(),
                                 "down": down.len()});
        if named {
            servers["not_ready"] = down
                .iter()
                .map(|s| json!({"name": s.server, "state": s.state.as_str()}))
                .collect();
        }
        json!({
            "ready": warnings.is_empty(),
            "runtime": {"name": "toolgate", "version": env!("CARGO_PKG_VERSION"),
                        "protocol_versions": crate::session::SUPPORTED_VERSIONS},
            "default_profile": {
                "id": profile.as_ref().map_or("default", |g| g.profile().unwrap_or("default")),
                "state": if profile.is_some() { "loaded" } else { "unavailable" },
            },
            "state_store": match &self.stages.state {
                Some(state) => json!({"kind": state.store(|s| s.backend()), "persistent": true}),
                None => json!({"kind": "none", "persistent": false}),
            },
            "servers": servers,
            "audit": !matches!(health, crate::status::AuditHealth::Off),
            "warnings": warnings,
            "next_actions": next,
        })
    }

    /// Records one admin request: the route, the profile and tool it asked about, by the admin; never its
    /// arguments.
    pub fn audit_admin(&self, route: &str, profile: Option<&str>, tool: Option<&str>) {
        let Some(state) = &self.stages.state else {
            return;
        };
        let now = store::Timestamp::now().as_millis();
        let mut e = AuditEvent::new(EventKind::Admin, now, &crate::ids::trace_id());
        e.operation = route.to_owned();
        e.profile = profile.unwrap_or_default().to_owned();
        e.tool = tool.unwrap_or_default().to_owned();
        e.actor = Some("admin".to_owned());
        state.audit(e);
    }
}

/// A tool's category, as MCP Unified's previews group tools: its server's kind (filesystem, git, fetch), and for
/// toolgate's own tools the kind their name says; anything else is generic.
fn category_of(guard: &crate::guard::Guard, server: &str, tool: &str) -> &'static str {
    let kind = if server == OWN_SERVER {
        if tool.starts_with("filesystem_") {
            Some(policy::ServerKind::Filesystem)
        } else if tool.starts_with("git_") {
            Some(policy::ServerKind::Git)
        } else {
            None
        }
    } else {
        guard.server_kind(server)
    };
    match kind {
        Some(policy::ServerKind::Filesystem) => "filesystem",
        Some(policy::ServerKind::Git) => "git",
        Some(policy::ServerKind::Fetch) => "fetch",
        Some(policy::ServerKind::Toolgate) | None => "generic",
    }
}
