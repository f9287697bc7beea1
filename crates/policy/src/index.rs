//! A candidate index over compiled rules so `decide` need not run every rule's matchers on every call.
//!
//! Each rule is filed under ONE necessary condition: the literal prefixes of its tool globs, else for each path glob
//! its last literal segment (or the literal suffix of its final segment, as in `**/*.pem`), else the first tokens
//! of its command patterns, else its operations. A call looks up
//! every key it could satisfy and gets a superset of the rules that can match it, in rule order; the full matcher
//! then runs on those only. `explain` does not use the index (it traces every rule), and a property test checks
//! that both always agree.

use std::collections::HashMap;

use crate::action::Action;
use crate::operation::Operation;
use crate::rule::{Prepared, Rule};
use crate::wrapper::basename;

#[derive(Debug, Clone, Default)]
pub(crate) struct RuleIndex {
    by_tool_prefix: HashMap<String, Vec<u32>>,
    by_path_anchor: HashMap<String, Vec<u32>>,
    by_path_suffix: HashMap<String, Vec<u32>>,
    by_program: HashMap<String, Vec<u32>>,
    /// Rules with no usable key, per operation bit (rules for any operation appear in every list).
    by_op: [Vec<u32>; Operation::ALL.len()],
    tool_key_len: usize,
    suffix_key_len: usize,
}

/// How one path glob is filed.
enum PathKey<'a> {
    Anchor(&'a str),
    Suffix(&'a str),
}

impl RuleIndex {
    pub(crate) fn build(rules: &[Rule]) -> RuleIndex {
        let mut idx = RuleIndex::default();
        for (i, rule) in rules.iter().enumerate() {
            let i = i as u32;
            let prefixes: Vec<String> =
                rule.tools.iter().map(|(_, g)| g.literal_prefix()).collect();
            let anchors: Vec<PathKey<'_>> = rule
                .paths
                .iter()
                .filter_map(|(_, g)| {
                    g.anchor()
                        .map(PathKey::Anchor)
                        .or_else(|| g.final_suffix().map(PathKey::Suffix))
                })
                .collect();
            if !rule.tools.is_empty() && prefixes.iter().all(|p| !p.is_empty()) {
                for p in prefixes {
                    idx.tool_key_len = idx.tool_key_len.max(p.len());
                    push(&mut idx.by_tool_prefix, p, i);
                }
            } else if !rule.paths.is_empty() && anchors.len() == rule.paths.len() {
                for key in anchors {
                    match key {
                        PathKey::Anchor(a) => push(&mut idx.by_path_anchor, a.to_owned(), i),
                        PathKey::Suffix(x) => {
                            idx.suffix_key_len = idx.suffix_key_len.max(x.len());
                            push(&mut idx.by_path_suffix, x.to_owned(), i);
                        }
                    }
                }
            } else if !rule.commands.is_empty() {
                for c in &rule.commands {
                    if let Some(first) = c.tokens.first() {
                        push(&mut idx.by_program, first.clone(), i);
                    }
                }
            } else {
                for (bit, list) in idx.by_op.iter_mut().enumerate() {
                    if rule.ops == 0 || rule.ops & (1 << bit) != 0 {
                        list.push(i);
                    }
                }
            }
        }
        for list in idx
            .by_tool_prefix
            .values_mut()
            .chain(idx.by_path_anchor.values_mut())
            .chain(idx.by_path_suffix.values_mut())
            .chain(idx.by_program.values_mut())
        {
            list.dedup();
        }
        idx
    }

    /// Rule indices, ascending, that could match `action` (prepared once per decision).
    pub(crate) fn candidates(&self, action: &Action, prepared: &Prepared<'_>) -> Vec<u32> {
        let parts = &prepared.parts;
        let mut out: Vec<u32> = Vec::new();
        out.extend_from_slice(&self.by_op[action.operation as usize]);
        if action.via_shell {
            out.extend_from_slice(&self.by_op[Operation::ShellExec as usize]);
        }
        if !self.by_tool_prefix.is_empty() {
            let tool = action.tool.as_str();
            for (end, _) in tool
                .char_indices()
                .skip(1)
                .chain(std::iter::once((tool.len(), ' ')))
            {
                if end > self.tool_key_len {
                    break;
                }
                if let Some(list) = self.by_tool_prefix.get(&tool[..end]) {
                    out.extend_from_slice(list);
                }
            }
        }
        if !self.by_path_anchor.is_empty() {
            for seg in parts.iter().flatten() {
                if let Some(list) = self.by_path_anchor.get(*seg) {
                    out.extend_from_slice(list);
                }
            }
        }
        if !self.by_path_suffix.is_empty() {
            for last in parts.iter().filter_map(|p| p.last()) {
                let from = last.len().saturating_sub(self.suffix_key_len);
                for (start, _) in last.char_indices().filter(|(i, _)| *i >= from) {
                    if let Some(list) = self.by_path_suffix.get(&last[start..]) {
                        out.extend_from_slice(list);
                    }
                }
            }
        }
        if !self.by_program.is_empty() {
            let mut look = |tok: &str| {
                for key in [tok, basename(tok)] {
                    if let Some(list) = self.by_program.get(key) {
                        out.extend_from_slice(list);
                    }
                }
            };
            // Every command the call runs, wrappers seen through: deny rules match any of them.
            for run in &prepared.runs.runs {
                if let Some(program) = run.argv.first() {
                    look(program);
                }
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}

fn push(map: &mut HashMap<String, Vec<u32>>, key: String, i: u32) {
    map.entry(key).or_default().push(i);
}
