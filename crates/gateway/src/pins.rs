//! Rug-pull and poisoning defence. Each upstream tool's whole definition is pinned on first sight (its hash in
//! the state store); a definition that changes afterwards is quarantined until a human accepts it
//! (`toolgate pins accept`). Definitions carrying hidden-instruction phrases, invisible Unicode or look-alike
//! names are flagged. Quarantined and flagged tools are hidden from lists and refused when called.
//!
//! This module observes and remembers; the decisions it feeds are the guard's and the policy's.

use crate::state::State;
use policy::PoisonFlag;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use store::{FirstUse, PinCheck, Timestamp};
use upstream::Catalog;

/// What the pins say about one tool (`server__tool`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PinStatus {
    pub quarantined: bool,
    pub flags: Vec<String>,
}

/// The pin status of every upstream tool, after observing the current catalogs.
pub type PinView = HashMap<String, PinStatus>;

/// Pins what is new, notices what changed, flags what looks poisoned. Without state nothing can be pinned, so
/// only the flags are computed.
pub fn observe(state: Option<&Arc<State>>, catalogs: &[(String, Arc<Catalog>)]) -> PinView {
    let mut view = PinView::new();
    let names: Vec<(String, String)> = catalogs
        .iter()
        .flat_map(|(s, c)| {
            c.tools
                .iter()
                .filter_map(move |t| Some((s.clone(), t.get("name")?.as_str()?.to_owned())))
        })
        .collect();
    for (server, tool) in &names {
        view.entry(format!("{server}__{tool}")).or_default();
    }
    for (key, flag) in policy::lookalike_flags(&names) {
        add_flag(&mut view, &key, &flag);
    }
    let now = Timestamp::now();
    for (server, catalog) in catalogs {
        for def in &catalog.tools {
            let Some(tool) = def.get("name").and_then(Value::as_str) else {
                continue;
            };
            let key = format!("{server}__{tool}");
            for flag in policy::inspect_definition(def) {
                add_flag(&mut view, &key, &flag);
            }
            let Some(state) = state else { continue };
            match state.store(|s| s.observe_tool(&key, def, FirstUse::Accept, now)) {
                Ok(PinCheck::New(_) | PinCheck::Unchanged) => {}
                Ok(PinCheck::Changed {
                    accepted_sha256,
                    observed_sha256,
                }) => {
                    tracing::warn!(
                        tool = %key,
                        "tool definition changed since it was pinned ({accepted_sha256:.12} → {observed_sha256:.12}); \
                         quarantined until `toolgate pins accept {key}`"
                    );
                    view.entry(key).or_default().quarantined = true;
                }
                Ok(_) => view.entry(key).or_default().quarantined = true,
                Err(e) => {
                    // A pin that cannot be checked is treated as changed: fail closed.
                    tracing::warn!(tool = %key, "pin check failed ({e}); quarantining");
                    view.entry(key).or_default().quarantined = true;
                }
            }
        }
    }
    view
}

fn add_flag(view: &mut PinView, key: &str, flag: &PoisonFlag) {
    let text = format!("{:?} in {}: {}", flag.code, flag.field, flag.detail);
    let entry = view.entry(key.to_owned()).or_default();
    if !entry.flags.contains(&text) {
        entry.flags.push(text);
    }
}
