//! Profiles' tool visibility and the effective tool surface a profile shows (for `preview`).
//!
//! Visibility of a tool, in this order: unavailable (the caller says the tool is quarantined or its server is
//! down) → blocked (the profile's `blocked` globs, a poisoning flag, or a deny rule that applies to every call of
//! the tool) → visible (`visible` globs) → deferred (`deferred` globs) → the profile's `default` (visible unless
//! set). Blocked tools are also denied at call time (`TOOL_HIDDEN`); deferred tools are callable once discovered.
//! Profile rules themselves are compiled in `load.rs`.

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::glob::NameGlob;
use crate::load::Policy;
use crate::operation::{Effect, Operation};
use crate::rule::Rule;

/// How a tool appears to the client under a profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Visibility {
    #[default]
    Visible,
    Deferred,
    Blocked,
    Unavailable,
}

/// A profile's visibility globs (over `server__tool` or `mcp__server__tool`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolVisibility {
    #[serde(default)]
    pub visible: Vec<String>,
    #[serde(default)]
    pub deferred: Vec<String>,
    #[serde(default)]
    pub blocked: Vec<String>,
    #[serde(default)]
    pub default: Visibility,
    #[serde(skip)]
    compiled: [Vec<NameGlob>; 3],
}

impl ToolVisibility {
    pub(crate) fn compile(mut self) -> std::result::Result<ToolVisibility, String> {
        if self.default == Visibility::Unavailable {
            return Err(
                "`default` cannot be `unavailable`: that is a runtime state, not a choice"
                    .to_owned(),
            );
        }
        let globs = |list: &[String]| {
            list.iter()
                .map(|p| NameGlob::new(p.strip_prefix("mcp__").unwrap_or(p)))
                .collect::<std::result::Result<Vec<_>, _>>()
        };
        self.compiled = [
            globs(&self.blocked)?,
            globs(&self.visible)?,
            globs(&self.deferred)?,
        ];
        Ok(self)
    }

    /// Visibility from the globs alone (no runtime flags, no rules).
    pub(crate) fn classify(&self, tool: &str) -> Visibility {
        let hit = |i: usize| self.compiled[i].iter().any(|g| g.matches(tool));
        if hit(0) {
            Visibility::Blocked
        } else if hit(1) {
            Visibility::Visible
        } else if hit(2) {
            Visibility::Deferred
        } else {
            self.default
        }
    }
}

/// What a client sees under a profile (`"mode"`); absent, the config's mode applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProfileMode {
    /// Every allowed tool is listed and called directly.
    Direct,
    /// `search_tools`, `run_code` and toolgate's control tools; other tools only from programs.
    Code,
}

/// A compiled profile.
#[derive(Debug, Clone)]
pub(crate) struct Profile {
    pub(crate) description: Option<String>,
    pub(crate) mode: Option<ProfileMode>,
    pub(crate) default: Option<Effect>,
    pub(crate) rules: Vec<Rule>,
    pub(crate) tools: ToolVisibility,
}

/// One installed tool as the caller knows it, with runtime flags.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolListing {
    /// `server__tool`.
    pub name: String,
    /// The definition changed since it was pinned and awaits review.
    #[serde(default)]
    pub quarantined: bool,
    /// A poisoning check raised a flag on the definition.
    #[serde(default)]
    pub flagged: bool,
    /// The owning server is down or the tool vanished.
    #[serde(default)]
    pub unavailable: bool,
}

impl ToolListing {
    pub fn new(name: &str) -> ToolListing {
        ToolListing {
            name: name.to_owned(),
            quarantined: false,
            flagged: false,
            unavailable: false,
        }
    }
}

/// Why a tool got its visibility.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SurfaceReason {
    Quarantined,
    ServerUnavailable,
    ProfileBlocked,
    Flagged,
    DenyRule,
    ProfileVisible,
    ProfileDeferred,
    ProfileDefault,
    /// Served in code mode: a client lists only code mode's tools and reaches this one through `run_code`.
    CodeMode,
}

/// One row of a profile preview.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SurfaceEntry {
    pub name: String,
    pub visibility: Visibility,
    pub reason: SurfaceReason,
    /// The deny rule that blocks every call of the tool, when that is the reason.
    pub rule_id: Option<String>,
    /// Where that rule was written (`toolgate.json:28`), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule_at: Option<String>,
}

impl Policy {
    /// The tool surface of `profile` (or of the base policy with `None`) over the caller's installed tools.
    pub fn tool_surface(
        &self,
        profile: Option<&str>,
        tools: &[ToolListing],
    ) -> Result<Vec<SurfaceEntry>> {
        // The base policy is read where it is; only a profile's is built.
        let effective = match profile {
            Some(name) => std::borrow::Cow::Owned(self.with_profile(name)?),
            None => std::borrow::Cow::Borrowed(self),
        };
        let vis = effective
            .active
            .as_ref()
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        Ok(tools
            .iter()
            .map(|t| effective.surface_entry(&vis, t))
            .collect())
    }

    fn surface_entry(&self, vis: &ToolVisibility, tool: &ToolListing) -> SurfaceEntry {
        let entry = |visibility, reason, rule_id: Option<&str>| SurfaceEntry {
            name: tool.name.clone(),
            visibility,
            reason,
            rule_id: rule_id.map(str::to_owned),
            rule_at: rule_id
                .and_then(|id| self.rule_origin(id))
                .map(str::to_owned),
        };
        if tool.quarantined {
            return entry(Visibility::Unavailable, SurfaceReason::Quarantined, None);
        }
        if tool.unavailable {
            return entry(
                Visibility::Unavailable,
                SurfaceReason::ServerUnavailable,
                None,
            );
        }
        let by_globs = vis.classify(&tool.name);
        if by_globs == Visibility::Blocked {
            return entry(Visibility::Blocked, SurfaceReason::ProfileBlocked, None);
        }
        if tool.flagged {
            return entry(Visibility::Blocked, SurfaceReason::Flagged, None);
        }
        // A deny that names the tool and nothing narrower denies every call of it, whatever it would do.
        let total_deny = self.rules.iter().find(|r| {
            r.effect == Effect::Deny
                && !r.tools.is_empty()
                && r.is_resource_free()
                && (r.ops == 0 || r.ops == Operation::ALL.iter().fold(0, |a, op| a | op.bit()))
                && r.tools.iter().any(|(_, g)| g.matches(&tool.name))
        });
        if let Some(rule) = total_deny {
            return entry(Visibility::Blocked, SurfaceReason::DenyRule, Some(&rule.id));
        }
        let reason = if vis.compiled[1].iter().any(|g| g.matches(&tool.name)) {
            SurfaceReason::ProfileVisible
        } else if vis.compiled[2].iter().any(|g| g.matches(&tool.name)) {
            SurfaceReason::ProfileDeferred
        } else {
            SurfaceReason::ProfileDefault
        };
        entry(by_globs, reason, None)
    }

    /// The mode a profile sets, if it sets one (`None` also for an unknown profile).
    pub fn profile_mode(&self, name: &str) -> Option<ProfileMode> {
        self.profiles.get(name).and_then(|p| p.mode)
    }

    /// The mode of the active profile ([`Policy::with_profile`]), if it sets one. The gateway's order: the
    /// `--mode` flag, then this, then the config's `"mode"`.
    pub fn active_mode(&self) -> Option<ProfileMode> {
        self.active
            .as_ref()
            .and_then(|(name, _)| self.profile_mode(name))
    }

    /// A profile's description, for listings.
    pub fn profile_description(&self, name: &str) -> Option<&str> {
        self.profiles
            .get(name)
            .and_then(|p| p.description.as_deref())
    }
}
