//! Tool pins: the accepted definition of each tool, and quarantine when it changes.
//!
//! A pin maps a tool identity to the SHA-256 and canonical JSON of the definition a human
//! (or trust-on-first-use) accepted. Observing a different definition quarantines the pin
//! and keeps the new definition as a candidate until `accept_pin`; the store never accepts
//! a changed definition by itself. A pin held on first sight (`FirstUse::Quarantine`) has no
//! accepted definition at all: it is new, not changed, and stays new (holding the newest
//! definition seen, with no candidate) until a human accepts it. Deciding what a quarantined tool may do is the caller's.
//! The whole definition is hashed (unlike `policy::definition_hash`, which picks the contract
//! fields), so any change the upstream makes is seen.

use jsonrpc::{canonical_json, sha256_hex};
use rusqlite::{params, OptionalExtension, Row};
use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::handle::Store;
use crate::time::Timestamp;

mod pass;
pub(crate) use pass::Definition;
use pass::{observe_one, Pass};

/// Whether a pinned tool may be used as pinned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PinState {
    /// The stored definition is the accepted one.
    Accepted,
    /// A different definition was observed; a human must accept it (or not).
    Quarantined,
}

impl PinState {
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Self::Accepted => "ACCEPTED",
            Self::Quarantined => "QUARANTINED",
        }
    }
}

/// What happens to a tool seen for the first time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FirstUse {
    /// Pin it as accepted (trust on first use).
    Accept,
    /// Pin it quarantined, so even a first definition needs a human.
    Quarantine,
}

/// A stored pin.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolPin {
    /// Tool identity, as the gateway names it.
    pub name: String,
    /// Current state.
    pub state: PinState,
    /// Hash of the accepted (or, for a first-use quarantine, the first seen) definition.
    pub definition_sha256: String,
    /// Canonical JSON of that definition.
    pub definition_json: String,
    /// A newer definition awaiting acceptance, if any.
    pub candidate_sha256: Option<String>,
    /// Its canonical JSON.
    pub candidate_json: Option<String>,
    /// When the tool was first seen.
    pub first_seen: Timestamp,
    /// When the pin last changed.
    pub updated_at: Timestamp,
    /// The accepted definition whose poisoning flags a human chose to override, if any. It names one
    /// definition: a later change is flagged (and quarantined) afresh.
    pub flags_override_sha256: Option<String>,
}

impl ToolPin {
    /// Whether the pin is held without any definition ever accepted: the item was new when first seen (on a
    /// server listed before it) and awaits review. Such a pin never has a candidate.
    pub fn never_accepted(&self) -> bool {
        self.state == PinState::Quarantined && self.candidate_sha256.is_none()
    }

    /// Whether a human overrode the flags of the definition accepted now.
    pub fn flags_overridden(&self) -> bool {
        self.state == PinState::Accepted
            && self.flags_override_sha256.as_deref() == Some(self.definition_sha256.as_str())
    }
}

/// The result of checking an observed definition against its pin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PinCheck {
    /// First sighting; pinned according to `FirstUse`.
    New(PinState),
    /// Matches the accepted definition and the pin is accepted.
    Unchanged,
    /// Differs from the accepted definition; the pin is now quarantined.
    Changed {
        /// Hash of the accepted definition.
        accepted_sha256: String,
        /// Hash of what was observed.
        observed_sha256: String,
    },
    /// The pin was already quarantined; it stays so until `accept_pin`.
    Quarantined,
}

/// SHA-256 (lowercase hex) of the canonical JSON of the whole `definition`.
pub fn definition_hash(definition: &Value) -> String {
    sha256_hex(canonical_json(definition).as_bytes())
}

const COLUMNS: &str = "name, state, definition_sha256, definition_json, candidate_sha256, \
                       candidate_json, first_seen, updated_at, flags_override_sha256";

impl Store {
    /// Checks `definition` against the pin for `name`, creating or quarantining as needed.
    pub fn observe_tool(
        &mut self,
        name: &str,
        definition: &Value,
        first_use: FirstUse,
        now: Timestamp,
    ) -> Result<PinCheck> {
        let item = PinObservation {
            name,
            definition,
            sha256: None,
            first_use,
        };
        let mut checks = self.observe_pins(std::slice::from_ref(&item), now)?;
        Ok(checks
            .pop()
            .ok_or_else(|| Error::Corrupt("no pin check".to_owned()))??
            .check)
    }

    /// Checks every item against its pin in one transaction (one commit for a whole catalog, not one per item).
    /// The answer has one result per item, in order: an item whose check fails does not fail the others.
    pub fn observe_pins(
        &mut self,
        items: &[PinObservation<'_>],
        now: Timestamp,
    ) -> Result<Vec<Result<Observed>>> {
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let mut run = Pass::default();
        let checks = items
            .iter()
            .map(|item| observe_one(&tx, item, now, &mut run))
            .collect();
        tx.commit()?;
        Ok(checks)
    }

    /// The pins' generation: every write to a pin advances it in the writer's own transaction, whichever process
    /// writes (a pass of checks once for all its writes, any other write by trigger). Two equal readings mean no
    /// pin changed in between.
    pub fn pins_generation(&self) -> Result<u64> {
        generation(&self.conn)
    }

    /// Checks `pass.changed` against their pins, and `pass.unchanged` too unless no pin changed since the caller's
    /// earlier results (`pass.generation`), all in one transaction. The generation is read inside it, before and
    /// after the checks, so a write by another process either lands before (and everything is checked) or after
    /// (and the next pass sees a newer generation): it is never missed.
    pub fn observe_pins_since(
        &mut self,
        pass: PinsSince<'_>,
        now: Timestamp,
    ) -> Result<SinceChecks> {
        if pass.changed.is_empty() {
            let current = generation(&self.conn)?;
            if Some(current) == pass.generation {
                return Ok(SinceChecks {
                    changed: Vec::new(),
                    unchanged: None,
                    generation: current,
                });
            }
        }
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let before = generation(&tx)?;
        let mut run = Pass::default();
        let changed = pass
            .changed
            .iter()
            .map(|item| observe_one(&tx, item, now, &mut run))
            .collect();
        let unchanged = (Some(before) != pass.generation).then(|| {
            pass.unchanged
                .iter()
                .map(|item| observe_one(&tx, item, now, &mut run))
                .collect()
        });
        let after = generation(&tx)?;
        tx.commit()?;
        Ok(SinceChecks {
            changed,
            unchanged,
            generation: after,
        })
    }

    /// Accepts a quarantined pin: the candidate (if any) becomes the accepted definition.
    /// `expected_sha256` must name the definition being accepted, so a human never accepts
    /// a definition that changed after they looked at it.
    pub fn accept_pin(
        &mut self,
        name: &str,
        expected_sha256: &str,
        now: Timestamp,
    ) -> Result<ToolPin> {
        self.update_one_pin(
            name,
            "UPDATE tool_pins
             SET state = 'ACCEPTED',
                 definition_sha256 = COALESCE(candidate_sha256, definition_sha256),
                 definition_json = COALESCE(candidate_json, definition_json),
                 candidate_sha256 = NULL, candidate_json = NULL, updated_at = ?3
             WHERE name = ?1 AND COALESCE(candidate_sha256, definition_sha256) = ?2",
            params![name, expected_sha256, now.as_millis()],
        )
    }

    /// Records that a human accepted the flagged definition `sha256` of `name` despite its flags. Only the
    /// accepted definition can be overridden, so an override never reaches a definition nobody reviewed.
    pub fn override_pin_flags(
        &mut self,
        name: &str,
        sha256: &str,
        now: Timestamp,
    ) -> Result<ToolPin> {
        self.update_one_pin(
            name,
            "UPDATE tool_pins SET flags_override_sha256 = ?2, updated_at = ?3
             WHERE name = ?1 AND state = 'ACCEPTED' AND definition_sha256 = ?2",
            params![name, sha256, now.as_millis()],
        )
    }

    /// Runs `update` on the pin `name` and returns the pin as it then stands, in one transaction. An update that
    /// does not change exactly that one row (the definition moved on, or the pin is absent) is a mismatch.
    fn update_one_pin(
        &mut self,
        name: &str,
        update: &str,
        params: impl rusqlite::Params,
    ) -> Result<ToolPin> {
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        if tx.execute(update, params)? != 1 {
            return Err(Error::PinMismatch);
        }
        let sql = format!("SELECT {COLUMNS} FROM tool_pins WHERE name = ?1");
        let pin = tx.query_row(&sql, [name], pin_from_row)??;
        tx.commit()?;
        Ok(pin)
    }

    /// The pin for `name`, if any.
    pub fn get_pin(&self, name: &str) -> Result<Option<ToolPin>> {
        let sql = format!("SELECT {COLUMNS} FROM tool_pins WHERE name = ?1");
        self.conn
            .query_row(&sql, [name], pin_from_row)
            .optional()?
            .transpose()
    }

    /// Every pin, by name.
    pub fn list_pins(&self) -> Result<Vec<ToolPin>> {
        let sql = format!("SELECT {COLUMNS} FROM tool_pins ORDER BY name");
        let mut stmt = self.conn.prepare(&sql)?;
        let rows = stmt.query_map([], pin_from_row)?;
        let mut out = Vec::new();
        for row in rows {
            out.push(row??);
        }
        Ok(out)
    }
}

/// One definition to check against its pin (`Store::observe_pins`).
#[derive(Debug, Clone, Copy)]
pub struct PinObservation<'a> {
    /// The pin's name.
    pub name: &'a str,
    /// The definition observed now.
    pub definition: &'a Value,
    /// `definition_hash(definition)` when the caller already has it (a gateway keeps the hashes of definitions it
    /// saw before); `None` to have it computed.
    pub sha256: Option<&'a str>,
    /// What a first sighting becomes.
    pub first_use: FirstUse,
}

/// A pass of pin checks whose unchanged part may be skipped (`Store::observe_pins_since`).
#[derive(Debug, Clone, Copy)]
pub struct PinsSince<'a> {
    /// The generation the caller's earlier results were read at (`SinceChecks::generation`); `None` without any.
    pub generation: Option<u64>,
    /// Items that may differ from what the caller saw at `generation`: always checked.
    pub changed: &'a [PinObservation<'a>],
    /// Items checked at `generation` with these same definitions: checked again only when a pin changed since.
    pub unchanged: &'a [PinObservation<'a>],
}

/// What `Store::observe_pins_since` found.
#[derive(Debug)]
pub struct SinceChecks {
    /// One result per changed item, in order.
    pub changed: Vec<Result<Observed>>,
    /// One result per unchanged item, or `None` when no pin changed since: the caller's earlier results stand.
    pub unchanged: Option<Vec<Result<Observed>>>,
    /// The generation after this pass, for the next one.
    pub generation: u64,
}

fn generation(conn: &rusqlite::Connection) -> Result<u64> {
    let n: i64 = conn
        .prepare_cached("SELECT n FROM pin_generation WHERE id = 1")?
        .query_row([], |r| r.get(0))?;
    u64::try_from(n).map_err(|_| Error::Corrupt(format!("pin generation {n}")))
}

/// What observing one item found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    /// How the definition compares with its pin.
    pub check: PinCheck,
    /// The pin is accepted as observed and a human overrode that definition's flags.
    pub flags_overridden: bool,
    /// The pin is held and no definition of it was ever accepted ([`ToolPin::never_accepted`]): the item is new
    /// on its server, not changed.
    pub never_accepted: bool,
    /// `definition_hash` of the observed definition (the caller's, when it gave one), so a caller that did not
    /// have it can keep it without serialising the definition again.
    pub sha256: String,
}

pub(crate) fn parse_state(state: &str) -> Result<PinState> {
    match state {
        "ACCEPTED" => Ok(PinState::Accepted),
        "QUARANTINED" => Ok(PinState::Quarantined),
        other => Err(Error::Corrupt(format!("pin state {other:?}"))),
    }
}

fn pin_from_row(r: &Row<'_>) -> rusqlite::Result<Result<ToolPin>> {
    let state: String = r.get(1)?;
    let state = match parse_state(&state) {
        Ok(state) => state,
        Err(e) => return Ok(Err(e)),
    };
    Ok(Ok(ToolPin {
        name: r.get(0)?,
        state,
        definition_sha256: r.get(2)?,
        definition_json: r.get(3)?,
        candidate_sha256: r.get(4)?,
        candidate_json: r.get(5)?,
        first_seen: Timestamp::from_millis(r.get(6)?),
        updated_at: Timestamp::from_millis(r.get(7)?),
        flags_override_sha256: r.get(8)?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_does_not_change_the_hash() {
        let a = json!({"b": 1, "a": {"y": [1, {"d": 2, "c": 3}], "x": null}});
        let b = json!({"a": {"x": null, "y": [1, {"c": 3, "d": 2}]}, "b": 1});
        assert_eq!(
            canonical_json(&a),
            r#"{"a":{"x":null,"y":[1,{"c":3,"d":2}]},"b":1}"#
        );
        assert_eq!(definition_hash(&a), definition_hash(&b));
    }
}
