//! Rug-pull and poisoning defence for everything an upstream puts in front of the model: tools, prompts, resources,
//! resource templates and the server's `instructions`. Each is pinned on first sight (its whole definition's hash
//! in the state store); one that changes afterwards is held until a human accepts it (`toolgate pins accept`). On
//! a server that was already listed, a tool or prompt that appears later is held like a changed one (unless
//! `"pins": {"newTools": "accept"}`): a rug pull may come as a new name as easily as a changed definition.
//! Resources and templates are data lists that churn, so a new one is pinned as it is (and still checked).
//! Definitions carrying hidden-instruction phrases, invisible Unicode or look-alike names are flagged, unless a
//! human accepted that exact definition despite its flags. Held and flagged tools are hidden from lists and refused
//! when called (see the guard); held and flagged prompts, resources, templates and instructions are withheld from
//! the merged catalog (`withhold`) until accepted, which a running gateway sees at its next catalog refresh.
//!
//! This module observes and remembers; the decisions it feeds are the guard's and the policy's.

#[cfg(test)]
use crate::state::State;
use policy::PoisonFlag;
use serde_json::{json, Value};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use store::{Observed, PinCheck};
use upstream::Catalog;

/// The rule id a quarantined tool's calls ask under (`"pins": {"onChange": "ask"}`).
pub(crate) const QUARANTINE_RULE: &str = "pins.quarantine";

mod pass;
pub use pass::PinCache;

/// What the pins say about one item (keyed by `Item::key`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PinStatus {
    pub quarantined: bool,
    /// Held because it is new on a server listed before it, not because it changed: no definition of it was
    /// ever accepted.
    pub new: bool,
    pub flags: Vec<String>,
    /// A human accepted this exact definition despite its flags (`pins accept --despite-flags`).
    pub flags_overridden: bool,
}

impl PinStatus {
    /// Flags that still block: present and not overridden.
    pub fn blocked_by_flags(&self) -> bool {
        !self.flags.is_empty() && !self.flags_overridden
    }

    /// Whether the item is kept from the model: held, or flagged without an override.
    pub fn withheld(&self) -> bool {
        self.quarantined || self.blocked_by_flags()
    }
}

/// The pin status of every upstream item, after observing the current catalogs.
pub type PinView = HashMap<String, PinStatus>;

/// What kind of item a pin is for; the kind is part of the pin's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Item {
    Tool,
    Prompt,
    Resource,
    Template,
    Instructions,
}

impl Item {
    /// The pin's name: `server__tool` for tools (as rules name them), `KIND:server__name` for the rest, and
    /// `instructions:server`, whose pin also marks that the server was listed before.
    pub fn key(self, server: &str, name: &str) -> String {
        match self {
            Self::Tool => format!("{server}__{name}"),
            Self::Prompt => format!("prompt:{server}__{name}"),
            Self::Resource => format!("resource:{server}__{name}"),
            Self::Template => format!("template:{server}__{name}"),
            Self::Instructions => format!("instructions:{server}"),
        }
    }

    /// Whether a pin name is a tool's (the other kinds carry a `KIND:` prefix, which server names cannot).
    pub fn is_tool_key(key: &str) -> bool {
        !["prompt:", "resource:", "template:", "instructions:"]
            .iter()
            .any(|p| key.starts_with(p))
    }

    /// The field that names one item of this kind in its list.
    fn name_field(self) -> &'static str {
        match self {
            Self::Tool | Self::Prompt => "name",
            Self::Resource => "uri",
            Self::Template => "uriTemplate",
            Self::Instructions => "instructions",
        }
    }

    /// Whether a new item of this kind on an already-listed server is held.
    fn held_when_new(self, hold_new: bool) -> bool {
        hold_new && matches!(self, Self::Tool | Self::Prompt)
    }
}

/// The items of one catalog, by kind, with the name each is pinned under.
fn items(catalog: &Catalog) -> Vec<(Item, &str, Cow<'_, Value>)> {
    let mut out = Vec::new();
    for (kind, list) in [
        (Item::Tool, &catalog.tools),
        (Item::Prompt, &catalog.prompts),
        (Item::Resource, &catalog.resources),
        (Item::Template, &catalog.resource_templates),
    ] {
        for def in list {
            if let Some(name) = def.get(kind.name_field()).and_then(Value::as_str) {
                out.push((kind, name, Cow::Borrowed(def)));
            }
        }
    }
    // Pinned even when absent, so instructions that appear later count as a change; pinned last, because its pin
    // is also the mark that this server's first listing is done.
    out.push((
        Item::Instructions,
        "",
        Cow::Owned(json!({ "instructions": catalog.instructions })),
    ));
    out
}

/// Pins what is new, notices what changed, flags what looks poisoned, with nothing remembered from an earlier
/// pass (`PinCache::observe` is the same pass for a running gateway).
#[cfg(test)]
pub fn observe(
    state: Option<&Arc<State>>,
    catalogs: &[(String, Arc<Catalog>)],
    hold_new: bool,
) -> PinView {
    Arc::unwrap_or_clone(PinCache::default().observe(state, catalogs, hold_new))
}

/// What one pin check does to an item's status.
#[derive(Clone, Copy, Debug)]
enum PinEffect {
    Accepted {
        flags_overridden: bool,
    },
    /// Held for review; `new` when nothing of it was ever accepted (new on its server), else it changed.
    Held {
        new: bool,
    },
}

/// What the pin check of one item found, for its status.
fn effect(key: &str, check: Result<Observed, store::Error>) -> PinEffect {
    match check {
        Ok(Observed {
            check: PinCheck::New(store::PinState::Accepted) | PinCheck::Unchanged,
            flags_overridden,
            ..
        }) => PinEffect::Accepted { flags_overridden },
        Ok(Observed {
            check: PinCheck::New(_),
            ..
        }) => {
            tracing::warn!(
                item = %key,
                "new on a server that was already listed; held until `toolgate pins accept {key}`"
            );
            PinEffect::Held { new: true }
        }
        Ok(Observed {
            check:
                PinCheck::Changed {
                    accepted_sha256,
                    observed_sha256,
                },
            ..
        }) => {
            tracing::warn!(
                item = %key,
                "definition changed since it was pinned ({accepted_sha256:.12} → {observed_sha256:.12}); \
                 quarantined until `toolgate pins accept {key}`"
            );
            PinEffect::Held { new: false }
        }
        Ok(Observed {
            check: PinCheck::Quarantined,
            never_accepted,
            ..
        }) => PinEffect::Held {
            new: never_accepted,
        },
        Err(e) => {
            // A pin that cannot be checked is treated as changed: fail closed.
            tracing::warn!(item = %key, "pin check failed ({e}); quarantining");
            PinEffect::Held { new: false }
        }
    }
}

/// The catalogs as the model may see them: held or flagged prompts, resources, templates and instructions taken
/// out (tools stay: the guard hides and refuses them, and `"onChange": "ask"` may keep them listed).
pub fn withhold(
    catalogs: &[(String, Arc<Catalog>)],
    view: &PinView,
) -> Vec<(String, Arc<Catalog>)> {
    let held = |key: String| view.get(&key).is_some_and(PinStatus::withheld);
    catalogs
        .iter()
        .map(|(server, catalog)| {
            let any_held = [
                (Item::Prompt, &catalog.prompts),
                (Item::Resource, &catalog.resources),
                (Item::Template, &catalog.resource_templates),
            ]
            .iter()
            .any(|(kind, list)| {
                list.iter().any(|d| {
                    let name = d.get(kind.name_field()).and_then(Value::as_str);
                    name.is_none_or(|n| held(kind.key(server, n)))
                })
            }) || held(Item::Instructions.key(server, ""));
            // Copying a catalog copies all of its tools: only one that loses something is copied.
            if !any_held {
                return (server.clone(), Arc::clone(catalog));
            }
            let keep = |kind: Item, list: &[Value]| -> Vec<Value> {
                list.iter()
                    .filter(|d| {
                        let name = d.get(kind.name_field()).and_then(Value::as_str);
                        name.is_some_and(|n| !held(kind.key(server, n)))
                    })
                    .cloned()
                    .collect()
            };
            let mut c = (**catalog).clone();
            c.prompts = keep(Item::Prompt, &catalog.prompts);
            c.resources = keep(Item::Resource, &catalog.resources);
            c.resource_templates = keep(Item::Template, &catalog.resource_templates);
            if held(Item::Instructions.key(server, "")) {
                c.instructions = None;
            }
            (server.clone(), Arc::new(c))
        })
        .collect()
}

fn add_flag(view: &mut PinView, key: &str, flag: &PoisonFlag) {
    push_flag(view.entry(key.to_owned()).or_default(), flag);
}

fn push_flag(entry: &mut PinStatus, flag: &PoisonFlag) {
    let text = flag_text(flag);
    if !entry.flags.contains(&text) {
        entry.flags.push(text);
    }
}

fn flag_text(flag: &PoisonFlag) -> String {
    format!("{:?} in {}: {}", flag.code, flag.field, flag.detail)
}

#[cfg(test)]
#[path = "pins_tests.rs"]
mod tests;
