//! Look-alike tool names: a name that is a homoglyph of another tool's, or one edit away from another server's.
//!
//! Proportional to the catalog, not quadratic in it: names are grouped by skeleton (the homoglyph-folded form),
//! and names one edit apart are found through their one-character deletions, so a 50,000-tool catalog is checked
//! in one pass. It flags; it does not decide, and it says nothing about a name's own characters (see `poison`).

use crate::poison::{skeleton, within_one_edit, PoisonCode, PoisonFlag};
use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::BuildHasher;

/// Flags tools whose names are confusable with another installed tool. `tools` is `(server, tool)` pairs; the
/// answer names the flagged tool as `server__tool`. Identical names on different servers are not flagged (the
/// server prefix tells them apart); near-identical ones are, because a model reading descriptions cannot.
///
/// Each flag names the first confusable tool in `tools` order; a homoglyph is reported over an edit.
pub fn lookalike_flags(tools: &[(String, String)]) -> Vec<(String, PoisonFlag)> {
    let names = Names::of(tools);
    let neighbours = names.neighbours();
    let mut out = Vec::new();
    for (i, (server, tool)) in tools.iter().enumerate() {
        let a = names.id_of[i];
        let mut best: Option<(usize, bool)> = None;
        for &b in &neighbours[a] {
            let found = if names.skeletons[a] == names.skeletons[b] {
                names.tools_of[b].first().map(|&j| (j, true))
            } else {
                names.tools_of[b]
                    .iter()
                    .find(|&&j| tools[j].0 != *server)
                    .map(|&j| (j, false))
            };
            if let Some(found) = found {
                if best.is_none_or(|(j, _)| found.0 < j) {
                    best = Some(found);
                }
            }
        }
        if let Some((j, homoglyph)) = best {
            let (s2, t2) = &tools[j];
            let detail = if homoglyph {
                format!("homoglyph of `{s2}__{t2}`")
            } else {
                format!("one edit away from `{s2}__{t2}`")
            };
            out.push((
                format!("{server}__{tool}"),
                PoisonFlag {
                    code: PoisonCode::LookalikeName,
                    field: "name".to_owned(),
                    detail,
                },
            ));
        }
    }
    out
}

/// The distinct tool names of a catalog, each with the tools (indices, in order) that carry it.
struct Names<'a> {
    text: Vec<&'a str>,
    skeletons: Vec<String>,
    tools_of: Vec<Vec<usize>>,
    /// Tool index → name id.
    id_of: Vec<usize>,
    /// The one server whose tools carry each name, `None` when several do. Two names on the same sole server
    /// cannot be flagged for an edit, so those pairs are never compared (a catalog of `tool_00001`,
    /// `tool_00002`, … from one server would otherwise compare every pair differing in one digit).
    sole_server: Vec<Option<&'a str>>,
}

impl<'a> Names<'a> {
    fn of(tools: &'a [(String, String)]) -> Self {
        let mut ids: HashMap<&str, usize> = HashMap::new();
        let mut names = Names {
            text: Vec::new(),
            skeletons: Vec::new(),
            tools_of: Vec::new(),
            id_of: Vec::with_capacity(tools.len()),
            sole_server: Vec::new(),
        };
        for (i, (server, tool)) in tools.iter().enumerate() {
            let id = *ids.entry(tool.as_str()).or_insert_with(|| {
                names.text.push(tool.as_str());
                names.skeletons.push(skeleton(tool));
                names.tools_of.push(Vec::new());
                names.sole_server.push(Some(server.as_str()));
                names.text.len() - 1
            });
            if names.sole_server[id] != Some(server.as_str()) {
                names.sole_server[id] = None;
            }
            names.tools_of[id].push(i);
            names.id_of.push(id);
        }
        names
    }

    /// Whether names `a` and `b` may be flagged for being one edit apart: some of their tools are on
    /// different servers, and they are.
    fn edit_pair(&self, a: usize, b: usize) -> bool {
        let same_server =
            self.sole_server[a].is_some() && self.sole_server[a] == self.sole_server[b];
        !same_server && within_one_edit(self.text[a], self.text[b])
    }

    /// For each distinct name, the other names that share its skeleton, and those one edit away from it that
    /// some tool on another server carries.
    fn neighbours(&self) -> Vec<Vec<usize>> {
        let mut out: Vec<Vec<usize>> = vec![Vec::new(); self.text.len()];
        let mut link = |a: usize, b: usize| {
            if a != b {
                out[a].push(b);
                out[b].push(a);
            }
        };
        let mut by_skeleton: HashMap<&str, Vec<usize>> = HashMap::new();
        for (id, sk) in self.skeletons.iter().enumerate() {
            by_skeleton.entry(sk.as_str()).or_default().push(id);
        }
        for group in by_skeleton.values() {
            for (k, &a) in group.iter().enumerate() {
                for &b in &group[k + 1..] {
                    link(a, b);
                }
            }
        }
        // Edits count only across servers: with every name on one server there is nothing more to find.
        let first = self.sole_server.first().copied().flatten();
        if first.is_some() && self.sole_server.iter().all(|s| *s == first) {
            return finish(out);
        }
        // Keyed hashes: an upstream cannot choose names that collide into one bucket. A collision only costs a
        // comparison; every pair found is confirmed with `within_one_edit`.
        let hasher = RandomState::new();
        let mut buf = String::new();
        let mut deleted = |chars: &[char], p: usize| {
            buf.clear();
            buf.extend(&chars[..p]);
            buf.extend(&chars[p + 1..]);
            hasher.hash_one(buf.as_str())
        };
        let whole: HashMap<u64, Vec<usize>> =
            self.text
                .iter()
                .enumerate()
                .fold(HashMap::new(), |mut m, (id, t)| {
                    m.entry(hasher.hash_one(*t)).or_default().push(id);
                    m
                });
        // Same length, one substitution: both names lose the same position and become equal.
        let mut substituted: HashMap<(usize, usize, u64), Vec<usize>> = HashMap::new();
        for (id, t) in self.text.iter().enumerate() {
            let chars: Vec<char> = t.chars().collect();
            for p in 0..chars.len() {
                let key = deleted(&chars, p);
                substituted
                    .entry((chars.len(), p, key))
                    .or_default()
                    .push(id);
                // One character longer: losing one character gives the shorter name.
                for &b in whole.get(&key).into_iter().flatten() {
                    if self.edit_pair(id, b) {
                        link(id, b);
                    }
                }
            }
        }
        for group in substituted.values() {
            for (k, &a) in group.iter().enumerate() {
                for &b in &group[k + 1..] {
                    if self.edit_pair(a, b) {
                        link(a, b);
                    }
                }
            }
        }
        finish(out)
    }
}

/// Each name's neighbours in order, once each.
fn finish(mut lists: Vec<Vec<usize>>) -> Vec<Vec<usize>> {
    for list in &mut lists {
        list.sort_unstable();
        list.dedup();
    }
    lists
}

#[cfg(test)]
#[path = "lookalike_tests.rs"]
mod tests;
