//! What a pass of pin checks computes once: each observed definition's hash and canonical JSON, and the
//! generation the pass's writes advance the pins to.

use jsonrpc::{canonical_json, sha256_hex};
use serde_json::Value;

use super::PinObservation;
use crate::error::Result;

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
