//! The merged view of every upstream's catalog that clients see, and the routes back to each item's owner.
//!
//! Built afresh from upstream catalogs whenever one changes. Definitions are copied as they came, with one edit:
//! `name` becomes the exposed name. What cannot be served unambiguously or at all is held back, never guessed
//! at and never fatal: a name an upstream lists twice, an exposed name two sources would share (every claimant
//! is held, so which one serves never depends on which started first; toolgate's own tools keep theirs), and a
//! definition too large for any list page, and a tool that some spelling of another's name could mean
//! (`spellings`: every spelling of a tool resolves in one table). Each held item is kept in `held` with its
//! reason for `doctor` and the status tool. This module does not page lists (`cursor` does) or decide
//! visibility (the guard does).

pub use crate::spellings::Spelled;
use crate::spellings::{self, Named, Table};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::Arc;
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

/// How a merged catalog is built, beyond the catalogs themselves.
#[derive(Clone, Debug)]
pub struct Layout<'a> {
    pub naming: &'a Naming,
    /// The largest definition a list page can carry; larger ones are held.
    pub max_item_bytes: usize,
    /// Some upstream has not finished its first start: offer every list kind (with `listChanged`) so a client
    /// that initialized early still learns of what arrives later.
    pub awaiting: bool,
}

/// An upstream tool, prompt, resource or template that toolgate does not serve, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    pub server: String,
    pub kind: &'static str,
    /// The item's name (or URI) as the upstream gave it.
    pub name: String,
    pub reason: String,
}

impl Held {
    pub fn to_json(&self) -> Value {
        json!({"server": self.server, "kind": self.kind, "name": self.name, "reason": self.reason})
    }
}

#[derive(Debug, Default)]
pub struct Aggregate {
    pub tools: Vec<Value>,
    /// Serialised size of each entry of `tools`, for pages sized in bytes.
    pub tool_sizes: Vec<usize>,
    /// For each entry of `tools`, the server and name it has in rules (`toolgate` for toolgate's own).
    pub tool_owners: Vec<(String, String)>,
    tool_routes: HashMap<String, Route>,
    tool_index: HashMap<String, usize>,
    /// Every spelling of each served tool, and the spellings that could mean two.
    tool_spellings: Table,
    pub prompts: Vec<Value>,
    pub prompt_sizes: Vec<usize>,
    prompt_routes: HashMap<String, Route>,
    pub resources: Vec<Value>,
    pub resource_sizes: Vec<usize>,
    resource_routes: HashMap<String, String>,
    pub templates: Vec<Value>,
    pub template_sizes: Vec<usize>,
    /// Literal prefix of each template (before its first `{`) and its owner, longest prefix first.
    template_routes: Vec<(String, String)>,
    resource_servers: Vec<String>,
    pub capabilities: Value,
    pub instructions: Option<String>,
    /// What is not served, in config order of its server.
    pub held: Vec<Held>,
    /// The catalogs this was built from, so the next build can reuse what it made of those that did not change.
    sources: Vec<(String, Arc<Catalog>)>,
    /// toolgate's own tools and the layout this was built with (`None` before the first build), so a build from
    /// the very same inputs can be skipped (`built_from`).
    built_with: Option<BuiltWith>,
}

/// What besides the catalogs an aggregate was built from.
#[derive(Debug)]
struct BuiltWith {
    own_tools: Vec<Value>,
    separator: String,
    prefix: bool,
    max_item_bytes: usize,
    awaiting: bool,
}

impl BuiltWith {
    fn of(own_tools: &[Value], layout: &Layout) -> Self {
        Self {
            own_tools: own_tools.to_vec(),
            separator: layout.naming.separator.clone(),
            prefix: layout.naming.prefix,
            max_item_bytes: layout.max_item_bytes,
            awaiting: layout.awaiting,
        }
    }

    fn matches(&self, own_tools: &[Value], layout: &Layout) -> bool {
        self.own_tools == own_tools
            && self.separator == layout.naming.separator
            && self.prefix == layout.naming.prefix
            && self.max_item_bytes == layout.max_item_bytes
            && self.awaiting == layout.awaiting
    }
}

impl Aggregate {
    /// Merges `catalogs` (in config order) plus toolgate's own tools.
    pub fn build(
        catalogs: &[(String, Arc<Catalog>)],
        own_tools: &[Value],
        layout: &Layout,
    ) -> Self {
        Self::build_after(catalogs, own_tools, layout, &Aggregate::default())
    }

    /// `build`, reusing the renamed definitions and sizes `previous` (built with the same layout) made of
    /// catalogs that did not change: a rebuild caused by one small server does not re-serialise a large one.
    pub(crate) fn build_after(
        catalogs: &[(String, Arc<Catalog>)],
        own_tools: &[Value],
        layout: &Layout,
        previous: &Aggregate,
    ) -> Self {
        let mut agg = Aggregate {
            sources: catalogs.to_vec(),
            built_with: Some(BuiltWith::of(own_tools, layout)),
            ..Aggregate::default()
        };
        let own_names = agg.own(own_tools);
        let tools = agg.claims(
            catalogs,
            "tool",
            |c| &c.tools,
            &own_names,
            layout,
            Some(previous),
        );
        let listed = spellings::listed(catalogs, &own_names, layout.naming);
        let (mut spellings, collide) = Table::collisions(&listed, hint(layout));
        let tools: Vec<_> = tools
            .into_iter()
            .filter(
                |(c, _, _)| match collide.get(&(c.server.to_owned(), c.original.to_owned())) {
                    Some(why) => {
                        agg.hold(c.server, "tool", c.original, why.clone());
                        false
                    }
                    None => true,
                },
            )
            .collect();
        for name in &own_names {
            spellings.serve(&Named::own(name));
        }
        for (claim, def, size) in tools {
            spellings.serve(&Named {
                server: claim.server.to_owned(),
                original: claim.original.to_owned(),
                exposed: claim.exposed.clone(),
            });
            agg.tool_index
                .insert(claim.exposed.clone(), agg.tools.len());
            agg.tool_owners
                .push((claim.server.to_owned(), claim.original.to_owned()));
            agg.tool_sizes.push(size);
            agg.tools.push(def);
            let r = route(&claim);
            agg.tool_routes.insert(claim.exposed, r);
        }
        agg.tool_spellings = spellings;
        let prompts = agg.claims(catalogs, "prompt", |c| &c.prompts, &[], layout, None);
        for (claim, def, size) in prompts {
            agg.prompt_sizes.push(size);
            agg.prompts.push(def);
            agg.prompt_routes
                .insert(claim.exposed.clone(), route(&claim));
        }
        agg.merge_resources(catalogs, layout);
        agg.capabilities = capabilities(catalogs, !own_tools.is_empty(), layout.awaiting);
        agg.instructions = instructions(catalogs);
        agg
    }

    /// Whether this was built from these very catalogs (the same allocations, in the same order), own tools and
    /// layout: a build from them would make exactly this aggregate, so it need not be made again.
    pub(crate) fn built_from(
        &self,
        catalogs: &[(String, Arc<Catalog>)],
        own_tools: &[Value],
        layout: &Layout,
    ) -> bool {
        let same_catalogs = self.sources.len() == catalogs.len()
            && self
                .sources
                .iter()
                .zip(catalogs)
                .all(|((s, c), (server, catalog))| s == server && Arc::ptr_eq(c, catalog));
        same_catalogs
            && self
                .built_with
                .as_ref()
                .is_some_and(|b| b.matches(own_tools, layout))
    }

    /// toolgate's own tools, first and under their own names; their names.
    fn own(&mut self, own_tools: &[Value]) -> Vec<String> {
        let mut names = Vec::new();
        for tool in own_tools {
            let name = tool
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            self.tool_index.insert(name.clone(), self.tools.len());
            // Listed under a product's name (`filesystem.read_file`), it is still the own tool it stands for.
            let own = crate::own::internal(&name).map_or_else(|| name.clone(), str::to_owned);
            if own != name {
                let route = Route {
                    server: crate::guard::OWN_SERVER.to_owned(),
                    name: own.clone(),
                };
                self.tool_routes.insert(name.clone(), route);
            }
            self.tool_owners
                .push((crate::guard::OWN_SERVER.to_owned(), own));
            self.tool_sizes.push(size_of(tool));
            self.tools.push(tool.clone());
            names.push(name);
        }
        names
    }

    /// Every catalog's resources (the first server to offer a URI keeps it) and templates, in config order.
    fn merge_resources(&mut self, catalogs: &[(String, Arc<Catalog>)], layout: &Layout) {
        for (server, catalog) in catalogs {
            for resource in &catalog.resources {
                let Some(uri) = resource.get("uri").and_then(Value::as_str) else {
                    continue;
                };
                if let Some(owner) = self.resource_routes.get(uri) {
                    tracing::warn!(
                        "resource {uri} is offered by {owner} and {server}; {owner} keeps it"
                    );
                    continue;
                }
                let Some(size) = self.fits(server, "resource", uri, resource, layout) else {
                    continue;
                };
                self.resource_routes.insert(uri.to_owned(), server.clone());
                self.resource_sizes.push(size);
                self.resources.push(resource.clone());
            }
            for template in &catalog.resource_templates {
                let Some(t) = template.get("uriTemplate").and_then(Value::as_str) else {
                    continue;
                };
                let Some(size) = self.fits(server, "resource template", t, template, layout) else {
                    continue;
                };
                let prefix = t.split('{').next().unwrap_or_default().to_owned();
                self.template_routes.push((prefix, server.clone()));
                self.template_sizes.push(size);
                self.templates.push(template.clone());
            }
            if catalog.has("resources") {
                self.resource_servers.push(server.clone());
            }
        }
        self.template_routes
            .sort_by_key(|(prefix, _)| std::cmp::Reverse(prefix.len()));
    }

    /// The serialised size of `def` when it fits in a list page; else it is held and `None`.
    fn fits(
        &mut self,
        server: &str,
        kind: &'static str,
        name: &str,
        def: &Value,
        layout: &Layout,
    ) -> Option<usize> {
        let size = size_of(def);
        if size <= layout.max_item_bytes {
            return Some(size);
        }
        self.hold(
            server,
            kind,
            name,
            format!(
                "its definition has {size} bytes, more than a list page can carry ({} bytes; limits.maxMessageBytes)",
                layout.max_item_bytes
            ),
        );
        None
    }

    fn hold(&mut self, server: &str, kind: &'static str, name: &str, reason: String) {
        tracing::warn!(server, "not serving {kind} {name:?}: {reason}");
        self.held.push(Held {
            server: server.to_owned(),
            kind,
            name: name.to_owned(),
            reason,
        });
    }

    /// The definition a client sees for `exposed`.
    pub fn tool_definition(&self, exposed: &str) -> Option<&Value> {
        self.tool_index
            .get(exposed)
            .and_then(|&i| self.tools.get(i))
    }

    /// What `name` stands for: any spelling of a served tool gives its exposed name (`spellings`).
    pub fn spelled(&self, name: &str) -> Spelled<'_> {
        self.tool_spellings.spelled(name)
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
}

/// How to fix a name two sources would share.
fn hint(layout: &Layout) -> &'static str {
    if layout.naming.prefix {
        "rename a server"
    } else {
        "set \"prefixTools\": true or rename a server"
    }
}

fn route(claim: &claims::Claim) -> Route {
    Route {
        server: claim.server.to_owned(),
        name: claim.original.to_owned(),
    }
}

/// Bytes `item` takes in a page: its JSON plus the comma that separates it from the next. Counted as written,
/// not collected: a large catalog is sized on every rebuild.
fn size_of(item: &Value) -> usize {
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, item) {
        Ok(()) => count.0.saturating_add(1),
        Err(_) => usize::MAX,
    }
}

/// A writer that only counts bytes.
struct Count(usize);

impl std::io::Write for Count {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 = self.0.saturating_add(buf.len());
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What toolgate offers follows from what its upstreams offer. `listChanged` is always on for what exists,
/// because an upstream restart or refresh changes the merged list.
fn capabilities(catalogs: &[(String, Arc<Catalog>)], own_tools: bool, awaiting: bool) -> Value {
    let any = |cap: &str| awaiting || catalogs.iter().any(|(_, c)| c.has(cap));
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
    let any = |cap: &str| catalogs.iter().any(|(_, c)| c.has(cap));
    if any("completions") {
        caps.insert("completions".into(), json!({}));
    }
    if any("logging") {
        caps.insert("logging".into(), json!({}));
    }
    // Tasks pass through under toolgate's ids (`tasks`); toolgate merges `tasks/list` itself.
    if any("tasks") {
        caps.insert(
            "tasks".into(),
            json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}),
        );
    }
    let extension = "/extensions/io.modelcontextprotocol~1tasks";
    if catalogs
        .iter()
        .any(|(_, c)| c.capabilities.pointer(extension).is_some())
    {
        caps.insert(
            "extensions".into(),
            json!({"io.modelcontextprotocol/tasks": {}}),
        );
    }
    Value::Object(caps)
}

fn instructions(catalogs: &[(String, Arc<Catalog>)]) -> Option<String> {
    let parts: Vec<String> = catalogs
        .iter()
        .filter_map(|(s, c)| c.instructions.as_ref().map(|i| format!("## {s}\n{i}")))
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

mod claims;

#[cfg(test)]
#[path = "aggregate_tests.rs"]
mod tests;
