//! The merged view of every upstream's catalog that clients see, and the routes back to each item's owner.
//!
//! Built afresh from upstream catalogs whenever one changes. Definitions are copied as they came, with one edit:
//! `name` becomes the exposed name. At start-up a name collision is fatal and names both sources; later (after a
//! `list_changed`) the first source in config order keeps the name and the other is hidden with a warning.

use crate::names::expose;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use upstream::Catalog;

/// Where an exposed tool or prompt really lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    pub server: String,
    pub name: String,
}

#[derive(Clone, Debug)]
pub struct Naming {
    pub separator: String,
    pub prefix: bool,
}

#[derive(Debug, Default)]
pub struct Aggregate {
    pub tools: Vec<Value>,
    /// For each entry of `tools`, the server and name it has in rules (`toolgate` for toolgate's own).
    pub tool_owners: Vec<(String, String)>,
    tool_routes: HashMap<String, Route>,
    tool_index: HashMap<String, usize>,
    pub prompts: Vec<Value>,
    prompt_routes: HashMap<String, Route>,
    pub resources: Vec<Value>,
    resource_routes: HashMap<String, String>,
    pub templates: Vec<Value>,
    /// Literal prefix of each template (before its first `{`) and its owner, longest prefix first.
    template_routes: Vec<(String, String)>,
    resource_servers: Vec<String>,
    pub capabilities: Value,
    pub instructions: Option<String>,
}

impl Aggregate {
    /// Merges `catalogs` (in config order) plus toolgate's own tools. With `strict`, a collision is an error.
    pub fn build(
        catalogs: &[(String, std::sync::Arc<Catalog>)],
        naming: &Naming,
        own_tools: &[Value],
        strict: bool,
    ) -> Result<Self, String> {
        let mut agg = Aggregate::default();
        let mut tool_sources: HashMap<String, String> = HashMap::new();
        for tool in own_tools {
            let name = tool
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            tool_sources.insert(name.clone(), "toolgate itself".into());
            agg.tool_index.insert(name.clone(), agg.tools.len());
            agg.tool_owners
                .push((crate::guard::OWN_SERVER.to_owned(), name));
            agg.tools.push(tool.clone());
        }
        let mut prompt_sources: HashMap<String, String> = HashMap::new();
        for (server, catalog) in catalogs {
            for tool in &catalog.tools {
                if let Some((exposed, def)) =
                    agg.claim(server, tool, naming, &mut tool_sources, "tool", strict)?
                {
                    let r = route(server, tool);
                    agg.tool_index.insert(exposed.clone(), agg.tools.len());
                    agg.tool_owners.push((r.server.clone(), r.name.clone()));
                    agg.tools.push(def);
                    agg.tool_routes.insert(exposed, r);
                }
            }
            for prompt in &catalog.prompts {
                if let Some((exposed, def)) = agg.claim(
                    server,
                    prompt,
                    naming,
                    &mut prompt_sources,
                    "prompt",
                    strict,
                )? {
                    agg.prompts.push(def);
                    agg.prompt_routes.insert(exposed, route(server, prompt));
                }
            }
            for resource in &catalog.resources {
                let Some(uri) = resource.get("uri").and_then(Value::as_str) else {
                    continue;
                };
                match agg.resource_routes.get(uri) {
                    Some(owner) => tracing::warn!(
                        "resource {uri} is offered by {owner} and {server}; {owner} keeps it"
                    ),
                    None => {
                        agg.resource_routes.insert(uri.to_owned(), server.clone());
                        agg.resources.push(resource.clone());
                    }
                }
            }
            for template in &catalog.resource_templates {
                let Some(t) = template.get("uriTemplate").and_then(Value::as_str) else {
                    continue;
                };
                let prefix = t.split('{').next().unwrap_or_default().to_owned();
                agg.template_routes.push((prefix, server.clone()));
                agg.templates.push(template.clone());
            }
            if catalog.has("resources") {
                agg.resource_servers.push(server.clone());
            }
        }
        agg.template_routes
            .sort_by_key(|(prefix, _)| std::cmp::Reverse(prefix.len()));
        agg.capabilities = capabilities(catalogs, !own_tools.is_empty());
        agg.instructions = instructions(catalogs);
        Ok(agg)
    }

    /// Checks and records an exposed name; `None` when a later duplicate is hidden (non-strict).
    fn claim(
        &mut self,
        server: &str,
        item: &Value,
        naming: &Naming,
        sources: &mut HashMap<String, String>,
        kind: &str,
        strict: bool,
    ) -> Result<Option<(String, Value)>, String> {
        let Some(original) = item.get("name").and_then(Value::as_str) else {
            tracing::warn!(server, "ignoring a {kind} without a name");
            return Ok(None);
        };
        let exposed = expose(server, original, &naming.separator, naming.prefix);
        let source = format!("{kind} {original:?} of server {server}");
        if let Some(first) = sources.get(&exposed) {
            let msg = format!("the exposed name {exposed:?} would mean both {first} and {source}");
            if strict {
                let hint = if naming.prefix {
                    "rename a server"
                } else {
                    "set \"prefixTools\": true or rename a server"
                };
                return Err(format!("{msg}; {hint}"));
            }
            tracing::warn!("{msg}; hiding the second");
            return Ok(None);
        }
        sources.insert(exposed.clone(), source);
        let mut def = item.clone();
        def["name"] = Value::String(exposed.clone());
        Ok(Some((exposed, def)))
    }

    /// The definition a client sees for `exposed`.
    pub fn tool_definition(&self, exposed: &str) -> Option<&Value> {
        self.tool_index
            .get(exposed)
            .and_then(|&i| self.tools.get(i))
    }

    pub fn route_tool(&self, exposed: &str) -> Option<&Route> {
        self.tool_routes.get(exposed)
    }

    pub fn route_prompt(&self, exposed: &str) -> Option<&Route> {
        self.prompt_routes.get(exposed)
    }

    /// The server that owns `uri`: a listed resource, else the longest matching template prefix, else the only
    /// server with resources.
    pub fn route_resource(&self, uri: &str) -> Option<&str> {
        if let Some(s) = self.resource_routes.get(uri) {
            return Some(s);
        }
        if let Some((_, s)) = self
            .template_routes
            .iter()
            .find(|(p, _)| !p.is_empty() && uri.starts_with(p.as_str()))
        {
            return Some(s);
        }
        match self.resource_servers.as_slice() {
            [only] => Some(only),
            _ => None,
        }
    }

    /// Every server that declared `capability`.
    pub fn servers_with(
        catalogs: &[(String, std::sync::Arc<Catalog>)],
        capability: &str,
    ) -> Vec<String> {
        catalogs
            .iter()
            .filter(|(_, c)| c.has(capability))
            .map(|(s, _)| s.clone())
            .collect()
    }
}

fn route(server: &str, item: &Value) -> Route {
    Route {
        server: server.to_owned(),
        name: item
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
    }
}

/// What toolgate offers follows from what its upstreams offer. `listChanged` is always on for what exists,
/// because an upstream restart or refresh changes the merged list.
fn capabilities(catalogs: &[(String, std::sync::Arc<Catalog>)], own_tools: bool) -> Value {
    let any = |cap: &str| catalogs.iter().any(|(_, c)| c.has(cap));
    let mut caps = Map::new();
    if own_tools || any("tools") {
        caps.insert("tools".into(), json!({"listChanged": true}));
    }
    if any("prompts") {
        caps.insert("prompts".into(), json!({"listChanged": true}));
    }
    if any("resources") {
        let subscribe = catalogs.iter().any(|(_, c)| {
            c.capabilities.pointer("/resources/subscribe") == Some(&Value::Bool(true))
        });
        caps.insert(
            "resources".into(),
            json!({"listChanged": true, "subscribe": subscribe}),
        );
    }
    if any("completions") {
        caps.insert("completions".into(), json!({}));
    }
    if any("logging") {
        caps.insert("logging".into(), json!({}));
    }
    Value::Object(caps)
}

fn instructions(catalogs: &[(String, std::sync::Arc<Catalog>)]) -> Option<String> {
    let parts: Vec<String> = catalogs
        .iter()
        .filter_map(|(s, c)| c.instructions.as_ref().map(|i| format!("## {s}\n{i}")))
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

#[cfg(test)]
#[path = "aggregate_tests.rs"]
mod tests;
