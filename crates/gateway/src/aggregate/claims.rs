//! Which upstream tools and prompts claim which exposed names: a name a server lists twice, an exposed name two
//! sources (or toolgate's own tool) would share, and a definition too large for a page are held; the rest are
//! renamed, reusing what the previous build made of a catalog that did not change.

use super::{hint, Aggregate, Layout};
use crate::names::expose;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use upstream::Catalog;

/// One upstream tool or prompt that passed the per-server checks and now claims an exposed name.
pub(super) struct Claim<'a> {
    pub(super) server: &'a str,
    pub(super) original: &'a str,
    pub(super) exposed: String,
    def: &'a Value,
    /// Its catalog is the very one the previous aggregate was built from.
    same_source: bool,
}

impl Aggregate {
    /// The tools (or prompts) of every catalog that may be served under their exposed names, in config order,
    /// with their renamed definitions and sizes; everything else goes to `held`. With `previous` (the tools of
    /// the previous aggregate), a definition from an unchanged catalog is taken from it as it was made there.
    pub(super) fn claims<'a>(
        &mut self,
        catalogs: &'a [(String, Arc<Catalog>)],
        kind: &'static str,
        list: fn(&Catalog) -> &Vec<Value>,
        reserved: &[String],
        layout: &Layout,
        previous: Option<&Aggregate>,
    ) -> Vec<(Claim<'a>, Value, usize)> {
        let claims = self.candidates(catalogs, kind, list, layout, previous);
        // Indices of the claims of each exposed name; the text naming them is written only for a shared name.
        let mut claimants: HashMap<&str, Vec<usize>> = HashMap::with_capacity(claims.len());
        for (i, c) in claims.iter().enumerate() {
            claimants.entry(c.exposed.as_str()).or_default().push(i);
        }
        let shared: HashMap<String, String> = claimants
            .values()
            .filter(|ids| ids.len() > 1)
            .map(|ids| {
                let names: Vec<String> = ids
                    .iter()
                    .map(|&i| {
                        let c = &claims[i];
                        format!("{kind} {:?} of server {}", c.original, c.server)
                    })
                    .collect();
                (claims[ids[0]].exposed.clone(), names.join(" and "))
            })
            .collect();
        drop(claimants);
        let hint = hint(layout);
        let mut out = Vec::new();
        for c in claims {
            let why = if reserved.contains(&c.exposed) {
                Some(format!(
                    "the exposed name {:?} is toolgate's own tool",
                    c.exposed
                ))
            } else {
                shared.get(&c.exposed).map(|sources| {
                    format!(
                        "the exposed name {:?} would mean {sources}; {hint}",
                        c.exposed
                    )
                })
            };
            if let Some(reason) = why {
                self.hold(c.server, kind, c.original, reason);
                continue;
            }
            if let Some((def, size)) = previous.and_then(|p| p.reused(&c)) {
                out.push((c, def, size));
                continue;
            }
            let mut def = c.def.clone();
            def["name"] = Value::String(c.exposed.clone());
            if let Some(size) = self.fits(c.server, kind, c.original, &def, layout) {
                out.push((c, def, size));
            }
        }
        out
    }

    /// Every catalog's tools (or prompts) by their exposed names, in config order; a name a server lists
    /// twice is held (which definition a call would reach is the server's secret: neither is served).
    fn candidates<'a>(
        &mut self,
        catalogs: &'a [(String, Arc<Catalog>)],
        kind: &'static str,
        list: fn(&Catalog) -> &Vec<Value>,
        layout: &Layout,
        previous: Option<&Aggregate>,
    ) -> Vec<Claim<'a>> {
        let mut claims = Vec::new();
        for (server, catalog) in catalogs {
            let same_source = previous.is_some_and(|p| {
                p.sources
                    .iter()
                    .any(|(s, c)| s == server && Arc::ptr_eq(c, catalog))
            });
            let items = list(catalog);
            let mut listed: HashMap<&str, usize> = HashMap::new();
            for item in items {
                if let Some(name) = item.get("name").and_then(Value::as_str) {
                    *listed.entry(name).or_default() += 1;
                }
            }
            for item in items {
                let Some(original) = item.get("name").and_then(Value::as_str) else {
                    tracing::warn!(server, "ignoring a {kind} without a name");
                    continue;
                };
                match listed.get(original) {
                    // Which of the definitions a call would reach is the server's secret: serve neither.
                    Some(&n) if n > 1 => self.hold(
                        server,
                        kind,
                        original,
                        format!("the server lists {n} {kind}s named {original:?}"),
                    ),
                    _ => claims.push(Claim {
                        server,
                        original,
                        exposed: expose(
                            server,
                            original,
                            &layout.naming.separator,
                            layout.naming.prefix,
                        ),
                        def: item,
                        same_source,
                    }),
                }
            }
        }
        claims
    }

    /// The renamed definition and size of `c` in this aggregate, when `c` comes from the catalog this was built
    /// from and this served it under the same name.
    fn reused(&self, c: &Claim) -> Option<(Value, usize)> {
        if !c.same_source {
            return None;
        }
        let i = *self.tool_index.get(&c.exposed)?;
        let (server, name) = self.tool_owners.get(i)?;
        if server != c.server || name != c.original {
            return None;
        }
        Some((self.tools.get(i)?.clone(), *self.tool_sizes.get(i)?))
    }
}
