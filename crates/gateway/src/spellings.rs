//! One namespace for every way a tool can be named: its exposed name, `server__tool` (the form rules match),
//! and `mcp__server__tool` (the toolscript spelling programs use), for upstream tools and toolgate's own alike
//! (`toolgate__…`). Clients and programs may use any of them; each resolves in one table, built with the
//! merged catalog.
//!
//! A spelling two tools share could mean either: an upstream may list a tool literally named
//! `mcp__files__write_file` with `prefixTools` off, or server names may hold `__` (`a__b` + `c` and `a` +
//! `b__c`). Such a spelling is a collision: every upstream tool it could mean is held (as a shared exposed name
//! already is, so which one serves never depends on start order), and the spelling answers with the tools it
//! could mean. Toolgate's own tools keep their spellings. Nothing is guessed from a name's shape.

use crate::aggregate::Naming;
use crate::guard::OWN_SERVER;
use crate::names::expose;
use serde_json::Value;
use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use upstream::Catalog;

/// Every tool toolgate (`own_names`) and the catalogs list, under the name each would be exposed as, served or
/// not: a held tool's spellings still must not reach another.
pub(crate) fn listed(
    catalogs: &[(String, Arc<Catalog>)],
    own_names: &[String],
    naming: &Naming,
) -> Vec<Named> {
    let own = own_names.iter().map(|n| Named::own(n));
    let upstream = catalogs.iter().flat_map(|(server, catalog)| {
        catalog.tools.iter().filter_map(move |t| {
            let name = t.get("name").and_then(Value::as_str)?;
            Some(Named::upstream(
                server,
                name,
                &naming.separator,
                naming.prefix,
            ))
        })
    });
    own.chain(upstream).collect()
}

/// A tool as the table sees it: its owner and exposed name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Named {
    pub server: String,
    pub original: String,
    pub exposed: String,
}

impl Named {
    pub(crate) fn upstream(server: &str, original: &str, separator: &str, prefix: bool) -> Self {
        Self {
            server: server.to_owned(),
            original: original.to_owned(),
            exposed: expose(server, original, separator, prefix),
        }
    }

    pub(crate) fn own(name: &str) -> Self {
        Self {
            server: OWN_SERVER.to_owned(),
            original: name.to_owned(),
            exposed: name.to_owned(),
        }
    }

    fn is_own(&self) -> bool {
        self.server == OWN_SERVER
    }

    /// Every spelling that names this tool.
    pub(crate) fn spellings(&self) -> [String; 3] {
        let (s, t) = (&self.server, &self.original);
        [
            self.exposed.clone(),
            format!("{s}__{t}"),
            format!("mcp__{s}__{t}"),
        ]
    }

    fn describe(&self) -> String {
        format!("tool {:?} of server {}", self.original, self.server)
    }
}

/// What a name stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spelled<'a> {
    /// The exposed name of the one tool it names.
    Tool(&'a str),
    /// It could mean two tools or more: why, naming them.
    Collision(&'a str),
    Unknown,
}

/// Spellings to tools, for the tools served; and the spellings that could mean two.
#[derive(Debug, Default)]
pub(crate) struct Table {
    names: HashMap<String, String>,
    collisions: HashMap<String, String>,
}

impl Table {
    /// The collisions among `listed` (every tool a catalog or toolgate lists, served or not): the table of
    /// spellings that could mean two, and for each upstream tool that one of them could mean, why it is held.
    /// `hint` says how to fix one.
    pub(crate) fn collisions(
        listed: &[Named],
        hint: &str,
    ) -> (Self, HashMap<(String, String), String>) {
        // The first tool each spelling names; only a spelling that names another tool too collects them all, so
        // a large catalog without collisions costs one map entry per spelling.
        let mut first: HashMap<String, usize> = HashMap::with_capacity(listed.len() * 2);
        let mut shared: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, named) in listed.iter().enumerate() {
            for spelling in named.spellings() {
                match first.entry(spelling) {
                    Entry::Vacant(e) => {
                        e.insert(i);
                    }
                    Entry::Occupied(e) if *e.get() == i => {}
                    Entry::Occupied(e) => {
                        let j = *e.get();
                        shared
                            .entry(e.key().clone())
                            .or_insert_with(|| vec![j])
                            .push(i);
                    }
                }
            }
        }
        drop(first);
        let mut table = Self::default();
        let mut held = HashMap::new();
        for (spelling, indices) in shared {
            let mut tools: Vec<&Named> = indices.iter().map(|&i| &listed[i]).collect();
            tools.sort();
            tools.dedup();
            let owners: BTreeSet<(&str, &str)> = tools
                .iter()
                .map(|n| (n.server.as_str(), n.original.as_str()))
                .collect();
            if owners.len() < 2 {
                continue;
            }
            let meanings: Vec<String> = tools.iter().map(|n| n.describe()).collect();
            let why = format!(
                "the name {spelling:?} could mean {}; {hint}",
                meanings.join(" and ")
            );
            for n in tools.iter().filter(|n| !n.is_own()) {
                held.entry((n.server.clone(), n.original.clone()))
                    .or_insert_with(|| why.clone());
            }
            // Toolgate's own tool keeps the name: the others are held, so it means only that one.
            if !tools.iter().any(|n| n.is_own()) {
                table.collisions.insert(spelling, why);
            }
        }
        (table, held)
    }

    /// Adds the spellings of a served tool.
    pub(crate) fn serve(&mut self, named: &Named) {
        let [exposed, owned, mcp] = named.spellings();
        // Prefixed with the default separator, the exposed name is the `server__tool` spelling.
        let owned = (owned != exposed).then_some(owned);
        for spelling in [Some(exposed), owned, Some(mcp)].into_iter().flatten() {
            if !self.collisions.contains_key(&spelling) {
                self.names.insert(spelling, named.exposed.clone());
            }
        }
    }

    pub(crate) fn spelled(&self, name: &str) -> Spelled<'_> {
        if let Some(why) = self.collisions.get(name) {
            return Spelled::Collision(why);
        }
        match self.names.get(name) {
            Some(exposed) => Spelled::Tool(exposed),
            None => Spelled::Unknown,
        }
    }
}

#[cfg(test)]
#[path = "spellings_tests.rs"]
mod tests;
