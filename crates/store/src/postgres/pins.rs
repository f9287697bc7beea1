//! Tool pins on PostgreSQL, with the rules of the SQLite store (`pins`): quarantine on change, acceptance of the
//! named definition only, audited flag overrides, and a generation every pin write advances.
//!
//! A pass of checks takes the namespace's pin lock (a transaction-level advisory lock), so two replicas seeing a
//! tool for the first time do not both insert it, and reads the generation inside that transaction. The
//! generation is advanced in the writer's own transaction, once per transaction that wrote a pin. A statement
//! that fails aborts a PostgreSQL transaction, so a pass with a failing item fails whole (nothing of it is
//! written) rather than answering item by item as SQLite does.

use tokio_postgres::Row;

use super::pool::{col, Tx};
use crate::error::{Error, Result};
use crate::pins::{parse_state, Definition, FirstUse, Observed, PinCheck, PinObservation};
use crate::pins::{PinState, PinsSince, SinceChecks, ToolPin};
use crate::time::Timestamp;

const COLUMNS: &str = "name, state, definition_sha256, definition_json, candidate_sha256, \
                       candidate_json, first_seen, updated_at, flags_override_sha256";

fn lock_pins(tx: &Tx<'_>, ns: &str) -> Result<()> {
    let name = format!("{ns} pins");
    tx.one(
        "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
        &[&name],
    )?;
    Ok(())
}

/// The pins' generation of `ns` (0 before any pin write).
pub(crate) fn generation(tx: &Tx<'_>, ns: &str) -> Result<u64> {
    let row = tx.opt("SELECT n FROM pin_generation WHERE ns = $1", &[&ns])?;
    let n: i64 = row.map(|r| col(&r, 0)).transpose()?.unwrap_or(0);
    u64::try_from(n).map_err(|_| Error::Corrupt(format!("pin generation {n}")))
}

/// Advances the generation when this transaction wrote a pin since `before` (its count of changed rows).
fn advance(tx: &mut Tx<'_>, ns: &str, before: u64) -> Result<()> {
    if tx.changed > before {
        tx.execute(
            "INSERT INTO pin_generation (ns, n) VALUES ($1, 1)
             ON CONFLICT (ns) DO UPDATE SET n = pin_generation.n + 1",
            &[&ns],
        )?;
    }
    Ok(())
}

/// See `PinStore::observe_pins`.
pub(crate) fn observe(
    tx: &mut Tx<'_>,
    ns: &str,
    items: &[PinObservation<'_>],
    now: Timestamp,
) -> Result<Vec<Result<Observed>>> {
    lock_pins(tx, ns)?;
    let before = tx.changed;
    let checks = items
        .iter()
        .map(|i| observe_one(tx, ns, i, now))
        .collect::<Result<Vec<_>>>()?;
    advance(tx, ns, before)?;
    Ok(checks.into_iter().map(Ok).collect())
}

/// See `PinStore::observe_pins_since`.
pub(crate) fn observe_since(
    tx: &mut Tx<'_>,
    ns: &str,
    pass: PinsSince<'_>,
    now: Timestamp,
) -> Result<SinceChecks> {
    lock_pins(tx, ns)?;
    let before = tx.changed;
    let start = generation(tx, ns)?;
    let mut check = |items: &[PinObservation<'_>]| -> Result<Vec<Result<Observed>>> {
        let checks = items
            .iter()
            .map(|i| observe_one(tx, ns, i, now))
            .collect::<Result<Vec<_>>>()?;
        Ok(checks.into_iter().map(Ok).collect())
    };
    let changed = check(pass.changed)?;
    let unchanged = if Some(start) != pass.generation {
        Some(check(pass.unchanged)?)
    } else {
        None
    };
    advance(tx, ns, before)?;
    Ok(SinceChecks {
        changed,
        unchanged,
        generation: generation(tx, ns)?,
    })
}

fn observe_one(
    tx: &mut Tx<'_>,
    ns: &str,
    item: &PinObservation<'_>,
    now: Timestamp,
) -> Result<Observed> {
    let name = item.name;
    // Serialised once at most: to hash a definition that came without its hash, kept for the row written.
    let mut def = Definition::of(item);
    let hash = def.hash().to_owned();
    let hash = hash.as_str();
    let now = now.as_millis();
    let existing = tx.opt(
        "SELECT state, definition_sha256, candidate_sha256, flags_override_sha256
         FROM tool_pins WHERE ns = $1 AND name = $2",
        &[&ns, &name],
    )?;
    let (mut flags_overridden, mut never_accepted) = (false, false);
    let set = |what: &str| {
        format!("UPDATE tool_pins SET {what}, updated_at = $4 WHERE ns = $1 AND name = $2")
    };
    let check = match existing {
        None => {
            let state = match item.first_use {
                FirstUse::Accept => PinState::Accepted,
                FirstUse::Quarantine => PinState::Quarantined,
            };
            tx.execute(
                "INSERT INTO tool_pins (ns, name, state, definition_sha256, definition_json,
                                        first_seen, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $6)",
                &[&ns, &name, &state.as_str(), &hash, &def.json(), &now],
            )?;
            never_accepted = state == PinState::Quarantined;
            PinCheck::New(state)
        }
        Some(r) => {
            let accepted: String = col(&r, 1)?;
            let candidate: Option<String> = col(&r, 2)?;
            let overridden: Option<String> = col(&r, 3)?;
            match parse_state(col(&r, 0)?)? {
                // Held on first sight, never accepted: it keeps the newest definition and stays new.
                PinState::Quarantined if candidate.is_none() => {
                    if accepted != hash {
                        let sql = set("definition_sha256 = $3, definition_json = $5");
                        tx.execute(&sql, &[&ns, &name, &hash, &now, &def.json()])?;
                    }
                    never_accepted = true;
                    PinCheck::Quarantined
                }
                PinState::Quarantined => {
                    if accepted != hash && candidate.as_deref() != Some(hash) {
                        // Keep the newest candidate so the human reviews what is served now.
                        let sql = set("candidate_sha256 = $3, candidate_json = $5");
                        tx.execute(&sql, &[&ns, &name, &hash, &now, &def.json()])?;
                    }
                    PinCheck::Quarantined
                }
                PinState::Accepted if accepted == hash => {
                    flags_overridden = overridden.as_deref() == Some(accepted.as_str());
                    PinCheck::Unchanged
                }
                PinState::Accepted => {
                    let sql =
                        set("state = 'QUARANTINED', candidate_sha256 = $3, candidate_json = $5");
                    tx.execute(&sql, &[&ns, &name, &hash, &now, &def.json()])?;
                    PinCheck::Changed {
                        accepted_sha256: accepted,
                        observed_sha256: hash.to_owned(),
                    }
                }
            }
        }
    };
    Ok(Observed {
        check,
        flags_overridden,
        never_accepted,
        sha256: def.into_hash(),
    })
}

/// See `PinStore::accept_pin`.
pub(crate) fn accept(
    tx: &mut Tx<'_>,
    ns: &str,
    name: &str,
    expected_sha256: &str,
    now: Timestamp,
) -> Result<ToolPin> {
    update_one(
        tx,
        ns,
        name,
        "UPDATE tool_pins
         SET state = 'ACCEPTED',
             definition_sha256 = COALESCE(candidate_sha256, definition_sha256),
             definition_json = COALESCE(candidate_json, definition_json),
             candidate_sha256 = NULL, candidate_json = NULL, updated_at = $4
         WHERE ns = $1 AND name = $2 AND COALESCE(candidate_sha256, definition_sha256) = $3",
        expected_sha256,
        now,
    )
}

/// See `PinStore::override_pin_flags`.
pub(crate) fn override_flags(
    tx: &mut Tx<'_>,
    ns: &str,
    name: &str,
    sha256: &str,
    now: Timestamp,
) -> Result<ToolPin> {
    update_one(
        tx,
        ns,
        name,
        "UPDATE tool_pins SET flags_override_sha256 = $3, updated_at = $4
         WHERE ns = $1 AND name = $2 AND state = 'ACCEPTED' AND definition_sha256 = $3",
        sha256,
        now,
    )
}

/// Runs `update` (parameters: ns, name, hash, now) and returns the pin as it then stands; an update that does
/// not change exactly that one row is a mismatch.
fn update_one(
    tx: &mut Tx<'_>,
    ns: &str,
    name: &str,
    update: &str,
    sha256: &str,
    now: Timestamp,
) -> Result<ToolPin> {
    let before = tx.changed;
    if tx.execute(update, &[&ns, &name, &sha256, &now.as_millis()])? != 1 {
        return Err(Error::PinMismatch);
    }
    advance(tx, ns, before)?;
    get(tx, ns, name)?.ok_or(Error::PinMismatch)
}

/// See `PinStore::get_pin`.
pub(crate) fn get(tx: &Tx<'_>, ns: &str, name: &str) -> Result<Option<ToolPin>> {
    let sql = format!("SELECT {COLUMNS} FROM tool_pins WHERE ns = $1 AND name = $2");
    tx.opt(&sql, &[&ns, &name])?.as_ref().map(pin).transpose()
}

/// See `PinStore::list_pins`.
pub(crate) fn list(tx: &Tx<'_>, ns: &str) -> Result<Vec<ToolPin>> {
    let sql = format!("SELECT {COLUMNS} FROM tool_pins WHERE ns = $1 ORDER BY name");
    tx.query(&sql, &[&ns])?.iter().map(pin).collect()
}

fn pin(r: &Row) -> Result<ToolPin> {
    Ok(ToolPin {
        name: col(r, 0)?,
        state: parse_state(col(r, 1)?)?,
        definition_sha256: col(r, 2)?,
        definition_json: col(r, 3)?,
        candidate_sha256: col(r, 4)?,
        candidate_json: col(r, 5)?,
        first_seen: Timestamp::from_millis(col(r, 6)?),
        updated_at: Timestamp::from_millis(col(r, 7)?),
        flags_override_sha256: col(r, 8)?,
    })
}
