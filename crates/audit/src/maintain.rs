//! Maintenance of the log: pruning old events and recovering from a damaged log.
//!
//! Both are explicit (an administrator runs them), rewrite the log atomically under the cross-process lock, and
//! start the new log with an anchor record so the kept part still verifies. Each reports the anchor to the
//! caller's `on_anchor` *before* the new log replaces the old one, so the caller's witness knows the anchor by
//! the time any reader can see it; if `on_anchor` fails nothing is rewritten. Pruning refuses a log that does not
//! verify; recovery exists for exactly that log, and keeps it beside the new one instead of destroying it.

use std::fs;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::chain::{parse_line, seal, verify_text_with, ChainHead, ANCHOR_KIND};
use crate::error::{Error, Result};
use crate::event::RECORD_VERSION;
use crate::log::{read_all, replace_file, AuditLog};
use crate::time::rfc3339;
use crate::witness::{Anchor, Witness};

/// Maintenance may wait longer than an append: a human started it and can see it waiting.
const MAINTENANCE_LOCK_WAIT: Duration = Duration::from_secs(30);

/// Whether a prune only reports or also rewrites. The default is the harmless one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PruneMode {
    /// Report what would be removed; change nothing.
    #[default]
    DryRun,
    /// Rewrite the log.
    Apply,
}

/// What a prune did (or would do).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PrunePlan {
    /// Dry run or applied.
    pub mode: PruneMode,
    /// Events in the log before pruning.
    pub total_events: u64,
    /// Events removed (or that would be).
    pub removed: u64,
    /// Events kept.
    pub kept: u64,
    /// The anchor written, when the log was rewritten.
    pub anchor: Option<Anchor>,
}

/// What a recovery did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Recovery {
    /// Where the damaged log was kept.
    pub set_aside: PathBuf,
    /// The anchor the new log starts with.
    pub anchor: Anchor,
}

impl AuditLog {
    /// Keeps the newest `keep` events, checking the chain alone (see `prune_witnessed`).
    pub fn prune_keep_last(&self, keep: u64, mode: PruneMode, now_ms: i64) -> Result<PrunePlan> {
        self.prune_witnessed(keep, mode, now_ms, &Witness::default(), |_| Ok(()))
    }

    /// Keeps the newest `keep` events. In `Apply` mode the log is rewritten atomically
    /// (temporary file, fsync, rename) starting with an anchor, so the kept part still
    /// verifies and later appends continue the chain. Refuses a log that does not verify
    /// against `witness`; `on_anchor` records the new anchor before the rewrite.
    pub fn prune_witnessed(
        &self,
        keep: u64,
        mode: PruneMode,
        now_ms: i64,
        witness: &Witness,
        on_anchor: impl FnOnce(&Anchor) -> Result<()>,
    ) -> Result<PrunePlan> {
        let _local = self.guard.lock().unwrap_or_else(|p| p.into_inner());
        let _lock = crate::lock::FileLock::exclusive(&self.lock_path, MAINTENANCE_LOCK_WAIT)?;
        let text = read_all(&self.path)?;
        let report = verify_text_with(&text, witness);
        if let Some(p) = report.problem {
            return Err(Error::Tampered {
                line: p.line,
                problem: p.kind.to_string(),
            });
        }
        let mut anchor = None;
        let mut events = Vec::new();
        for line in text.lines() {
            let parsed = parse_line(line).ok_or(Error::CorruptTail)?;
            if parsed.is_anchor() {
                anchor = Some(parsed);
            } else {
                events.push((line, parsed));
            }
        }
        let total = events.len() as u64;
        let removed = total.saturating_sub(keep);
        let mut plan = PrunePlan {
            mode,
            total_events: total,
            removed,
            kept: total - removed,
            anchor: None,
        };
        if mode == PruneMode::DryRun || removed == 0 {
            return Ok(plan);
        }
        let split = removed as usize;
        let head = match events.get(split) {
            Some((_, first_kept)) => ChainHead {
                next_seq: first_kept.seq().ok_or(Error::CorruptTail)?,
                prev: first_kept.prev().ok_or(Error::CorruptTail)?.to_owned(),
            },
            None => events
                .last()
                .and_then(|(_, p)| p.head_after())
                .ok_or(Error::CorruptTail)?,
        };
        let already = anchor
            .as_ref()
            .and_then(|a| a.record.get("pruned_events").and_then(Value::as_u64))
            .unwrap_or(0);
        let mut rec = anchor_record(now_ms, &head);
        rec.insert("pruned_events".into(), (already + removed).into());
        let (anchor_line, hash) = seal(rec);
        let written = Anchor {
            hash,
            next_seq: head.next_seq,
            prev: head.prev,
        };
        on_anchor(&written)?;
        let mut out = anchor_line;
        out.push('\n');
        for (line, _) in &events[split..] {
            out.push_str(line);
            out.push('\n');
        }
        replace_file(&self.path, out.as_bytes())?;
        plan.anchor = Some(written);
        Ok(plan)
    }

    /// Sets a log that does not verify against `witness` aside (renamed to
    /// `audit.jsonl.damaged-<now_ms>`, nothing deleted) and starts a new log with an anchor
    /// that continues from the witnessed head, so appends resume and the new log verifies.
    /// `Ok(None)` when the log verifies and there is nothing to recover.
    pub fn recover(
        &self,
        witness: &Witness,
        now_ms: i64,
        on_anchor: impl FnOnce(&Anchor) -> Result<()>,
    ) -> Result<Option<Recovery>> {
        let _local = self.guard.lock().unwrap_or_else(|p| p.into_inner());
        let _lock = crate::lock::FileLock::exclusive(&self.lock_path, MAINTENANCE_LOCK_WAIT)?;
        let text = read_all(&self.path)?;
        if verify_text_with(&text, witness).is_ok() {
            return Ok(None);
        }
        let head = match &witness.head {
            Some(h) => ChainHead {
                next_seq: h.seq.saturating_add(1),
                prev: h.hash.clone(),
            },
            None => ChainHead::genesis(),
        };
        let set_aside = self.path.with_extension(format!("jsonl.damaged-{now_ms}"));
        let mut rec = anchor_record(now_ms, &head);
        rec.insert("pruned_events".into(), 0.into());
        let name = set_aside
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        rec.insert("recovered_from".into(), name.into());
        let (line, hash) = seal(rec);
        let anchor = Anchor {
            hash,
            next_seq: head.next_seq,
            prev: head.prev,
        };
        on_anchor(&anchor)?;
        if self.path.exists() {
            fs::rename(&self.path, &set_aside)?;
        }
        replace_file(&self.path, format!("{line}\n").as_bytes())?;
        Ok(Some(Recovery { set_aside, anchor }))
    }
}

/// The fields every anchor has: where the chain continues.
fn anchor_record(now_ms: i64, head: &ChainHead) -> Map<String, Value> {
    let mut rec = Map::new();
    rec.insert("v".into(), RECORD_VERSION.into());
    rec.insert("kind".into(), ANCHOR_KIND.into());
    rec.insert("time".into(), rfc3339(now_ms).into());
    rec.insert("time_ms".into(), now_ms.into());
    rec.insert("next_seq".into(), head.next_seq.into());
    rec.insert("prev".into(), head.prev.clone().into());
    rec
}
