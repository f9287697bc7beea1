//! One pass of pin checks: each item checked against its pin (and the pin written when it must be), what the pass
//! computes once (each observed definition's hash and canonical JSON), and what it carries from item to item (the
//! generation its writes advance the pins to, and how many first sightings it met in a row).

use jsonrpc::{canonical_json, sha256_hex};
use serde_json::Value;

use super::{parse_state, FirstUse, Observed, PinCheck, PinObservation, PinState};
use crate::error::Result;
use crate::time::Timestamp;
use rusqlite::{params, OptionalExtension};

/// An observed definition's hash, and its canonical JSON once it is needed: computed at most once, whether the
/// hash came with it or not.
pub(crate) struct Definition<'a> {
    definition: &'a Value,
    hash: std::borrow::Cow<'a, str>,
    canonical: Option<String>,
}

impl<'a> Definition<'a> {
    pub(crate) fn of(item: &PinObservation<'a>) -> Self {
        match item.sha256 {
            Some(h) => Self {
                definition: item.definition,
                hash: h.into(),
                canonical: None,
            },
            None => {
                let canonical = canonical_json(item.definition);
                Self {
                    definition: item.definition,
                    hash: sha256_hex(canonical.as_bytes()).into(),
                    canonical: Some(canonical),
                }
            }
        }
    }

    pub(crate) fn hash(&self) -> &str {
        &self.hash
    }

    /// The canonical JSON, for the one row written.
    pub(crate) fn json(&mut self) -> String {
        self.canonical
            .take()
            .unwrap_or_else(|| canonical_json(self.definition))
    }

    pub(crate) fn into_hash(self) -> String {
        self.hash.into_owned()
    }
}

/// The generation a pass's writes advance the pins to: advanced once, just before the pass's first write, and
/// stamped on every row the pass writes, so the triggers (the last migration on pins) leave those rows to it.
#[derive(Default)]
pub(super) struct Stamp(Option<i64>);

impl Stamp {
    pub(super) fn generation(&mut self, tx: &rusqlite::Transaction<'_>) -> Result<i64> {
        if let Some(n) = self.0 {
            return Ok(n);
        }
        let n = tx
            .prepare_cached("UPDATE pin_generation SET n = n + 1 WHERE id = 1 RETURNING n")?
            .query_row([], |r| r.get(0))?;
        self.0 = Some(n);
        Ok(n)
    }
}

/// What one pass carries from item to item: its generation stamp, and how many first sightings it met in a row.
#[derive(Default)]
pub(super) struct Pass {
    pub(super) stamp: Stamp,
    new_in_a_row: u32,
}

/// First sightings in a row after which a pass inserts each next item straight away, and looks it up only when
/// the insert finds a pin of that name already there. A server's first listing is nothing but first sightings,
/// and the lookup before each insert was a fifth of its store time; any item found pinned ends the run.
const INSERT_FIRST_AFTER: u32 = 2;

impl Pass {
    /// Whether the next item is tried as new first.
    pub(super) fn expects_new(&self) -> bool {
        self.new_in_a_row >= INSERT_FIRST_AFTER
    }

    /// Counts an item that was (`new`) or was not a first sighting.
    pub(super) fn saw(&mut self, new: bool) {
        self.new_in_a_row = match new {
            true => self.new_in_a_row.saturating_add(1),
            false => 0,
        };
    }
}

/// The stored state, accepted hash, candidate hash and flag override of pin `name`: only the columns a check
/// reads, so the stored JSON of every pin is not loaded on every pass.
type Stored = (String, String, Option<String>, Option<String>);

fn stored(tx: &rusqlite::Transaction<'_>, name: &str) -> Result<Option<Stored>> {
    Ok(tx
        .prepare_cached(
            "SELECT state, definition_sha256, candidate_sha256, flags_override_sha256
             FROM tool_pins WHERE name = ?1",
        )?
        .query_row([name], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .optional()?)
}

/// A first sighting's row (`$tail` empty), or the same insert followed by `$tail`.
macro_rules! insert_pin {
    ($tail:literal) => {
        concat!(
            "INSERT INTO tool_pins (name, definition_sha256, definition_json, first_seen, updated_at, generation,
                                    state)
             VALUES (?1, ?2, ?3, ?4, ?4, ?5, ?6)",
            $tail
        )
    };
}
const INSERT: &str = insert_pin!("");
/// The same insert, leaving a row already there as it is.
const INSERT_IF_NEW: &str = insert_pin!(" ON CONFLICT (name) DO NOTHING");

pub(super) fn observe_one(
    tx: &rusqlite::Transaction<'_>,
    item: &PinObservation<'_>,
    now: Timestamp,
    run: &mut Pass,
) -> Result<Observed> {
    let name = item.name;
    // The canonical JSON is serialised only when a row is written, or once to hash a definition that came without
    // its hash: an unchanged pin costs one lookup.
    let mut def = Definition::of(item);
    let hash = def.hash().to_owned();
    let hash = hash.as_str();
    let first = match item.first_use {
        FirstUse::Accept => PinState::Accepted,
        FirstUse::Quarantine => PinState::Quarantined,
    };
    if run.expects_new() {
        let generation = run.stamp.generation(tx)?;
        let (json, at) = (def.json(), now.as_millis());
        let inserted = tx.prepare_cached(INSERT_IF_NEW)?.execute(params![
            name,
            hash,
            json,
            at,
            generation,
            first.as_str()
        ])?;
        if inserted == 1 {
            return Ok(Observed {
                check: PinCheck::New(first),
                flags_overridden: false,
                never_accepted: first == PinState::Quarantined,
                sha256: def.into_hash(),
            });
        }
    }
    let existing = stored(tx, name)?;
    run.saw(existing.is_none());
    let stamp = &mut run.stamp;
    let mut flags_overridden = false;
    let mut never_accepted = false;
    let mut write = |sql: &str, state: Option<PinState>| -> Result<()> {
        let generation = stamp.generation(tx)?;
        let json = def.json();
        let now = now.as_millis();
        let mut stmt = tx.prepare_cached(sql)?;
        match state {
            Some(state) => stmt.execute(params![name, hash, json, now, generation, state.as_str()]),
            None => stmt.execute(params![name, hash, json, now, generation]),
        }?;
        Ok(())
    };
    let check = match existing {
        None => {
            write(INSERT, Some(first))?;
            never_accepted = first == PinState::Quarantined;
            PinCheck::New(first)
        }
        Some((state, accepted, candidate, overridden)) => match parse_state(&state)? {
            // Held on first sight, never accepted: nothing was accepted for a newer definition to differ from, so
            // the pin keeps the newest one as its definition and stays new.
            PinState::Quarantined if candidate.is_none() => {
                if accepted != hash {
                    write(
                        "UPDATE tool_pins SET definition_sha256 = ?2, definition_json = ?3,
                                              updated_at = ?4, generation = ?5 WHERE name = ?1",
                        None,
                    )?;
                }
                never_accepted = true;
                PinCheck::Quarantined
            }
            PinState::Quarantined => {
                if accepted != hash && candidate.as_deref() != Some(hash) {
                    // Keep the newest candidate so the human reviews what is served now.
                    write(
                        "UPDATE tool_pins SET candidate_sha256 = ?2, candidate_json = ?3,
                                              updated_at = ?4, generation = ?5 WHERE name = ?1",
                        None,
                    )?;
                }
                PinCheck::Quarantined
            }
            PinState::Accepted if accepted == hash => {
                flags_overridden = overridden.as_deref() == Some(accepted.as_str());
                PinCheck::Unchanged
            }
            PinState::Accepted => {
                write(
                    "UPDATE tool_pins SET state = 'QUARANTINED', candidate_sha256 = ?2,
                                          candidate_json = ?3, updated_at = ?4, generation = ?5
                     WHERE name = ?1",
                    None,
                )?;
                PinCheck::Changed {
                    accepted_sha256: accepted,
                    observed_sha256: hash.to_owned(),
                }
            }
        },
    };
    Ok(Observed {
        check,
        flags_overridden,
        never_accepted,
        sha256: def.into_hash(),
    })
}
