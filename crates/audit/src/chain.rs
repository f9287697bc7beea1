//! The hash chain: sealing records and verifying a log.
//!
//! Each event record carries `seq` (1, 2, …), `prev` (the previous event's hash, or 64
//! zeros for the first) and `hash` = SHA-256 of the canonical JSON of the record without
//! `hash`. A pruned log starts with one anchor record holding the `prev` and `seq` its
//! first kept event continues from, so the kept part still verifies. The chain is unkeyed:
//! it reveals edits, deletions and reordering by anyone who does not rewrite every later
//! hash; it is evidence, not a signature. A cut end or a forged anchor is consistent with
//! itself, so `verify_text_with` also checks the log against a `Witness` kept elsewhere.

use std::fmt;

use jsonrpc::{canonical_json, sha256_hex};
use serde::Serialize;
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

use crate::print::Entries;
use crate::witness::{Against, Anchor, Head, Witness};

/// `prev` of the first event of a log that was never pruned.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";
/// `kind` of the anchor record written by pruning.
pub(crate) const ANCHOR_KIND: &str = "anchor";

/// What is wrong at the first bad line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum ProblemKind {
    /// Not a JSON object with the chain fields (or a torn final line).
    Malformed,
    /// The record's content does not match its own hash: it was edited.
    HashMismatch,
    /// `seq` is not the next number: events before it were deleted, or it was moved.
    SequenceMismatch {
        /// The sequence number that should have come here.
        expected: u64,
        /// The one found.
        found: u64,
    },
    /// `prev` does not name the previous event's hash: something before it changed.
    BrokenLink,
    /// An anchor record anywhere but the first line.
    MisplacedAnchor,
    /// The log ends before the newest event the witness saw written: its end was cut off
    /// (or the whole log emptied or deleted).
    Truncated {
        /// The newest sequence number the witness recorded.
        witnessed: u64,
        /// The last sequence number the log still holds (0 for none).
        last: u64,
    },
    /// The event at the witnessed head's sequence number has another hash: the log was
    /// rewritten from there on.
    HeadMismatch,
    /// The first-line anchor is not one a prune or recovery wrote: the start of the log was
    /// cut and replaced.
    UnknownAnchor,
}

impl fmt::Display for ProblemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Malformed => f.write_str("malformed record"),
            Self::HashMismatch => f.write_str("record edited (hash mismatch)"),
            Self::SequenceMismatch { expected, found } => write!(
                f,
                "sequence {found} where {expected} was expected (events deleted or reordered)"
            ),
            Self::BrokenLink => f.write_str("prev hash does not match the previous event"),
            Self::MisplacedAnchor => f.write_str("anchor record not on the first line"),
            Self::Truncated { witnessed, last } => write!(
                f,
                "log ends at sequence {last} but sequence {witnessed} was written (events removed from the end)"
            ),
            Self::HeadMismatch => {
                f.write_str("event differs from the one recorded as written (log rewritten)")
            }
            Self::UnknownAnchor => f.write_str(
                "pruning anchor was not written by toolgate (start of the log replaced)",
            ),
        }
    }
}

/// The first problem found by `verify`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// 1-based line number.
    pub line: u64,
    /// The record's `seq`, if it had one.
    pub seq: Option<u64>,
    /// What is wrong.
    #[serde(flatten)]
    pub kind: ProblemKind,
}

/// The result of verifying a log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    /// Event records checked before the first problem (or in all, if none).
    pub events: u64,
    /// Whether the log starts with a pruning anchor.
    pub anchored: bool,
    /// The first problem; `None` means the whole log verified.
    pub problem: Option<Problem>,
    /// Where the verified chain ends (the last event, or what an anchor-only log continues
    /// from); `None` for an empty log or when a problem was found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head: Option<Head>,
    /// The first-line anchor, if the log starts with one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub anchor: Option<Anchor>,
}

impl VerifyReport {
    /// True when no problem was found.
    pub fn is_ok(&self) -> bool {
        self.problem.is_none()
    }
}

impl fmt::Display for VerifyReport {
    /// One line for the administrator: the verdict, and where the damage starts.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let anchored = if self.anchored {
            " (from a pruning anchor)"
        } else {
            ""
        };
        match &self.problem {
            None => write!(f, "ok: {} events verified{anchored}", self.events),
            Some(p) => {
                write!(f, "FAILED at line {}", p.line)?;
                if let Some(seq) = p.seq {
                    write!(f, " (seq {seq})")?;
                }
                write!(
                    f,
                    ": {}; {} events verified before it{anchored}",
                    p.kind, self.events
                )
            }
        }
    }
}

/// Where the next event continues the chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ChainHead {
    pub(crate) next_seq: u64,
    pub(crate) prev: String,
}

impl ChainHead {
    pub(crate) fn genesis() -> Self {
        Self {
            next_seq: 1,
            prev: GENESIS.to_owned(),
        }
    }
}

/// Adds `hash` to a record that already holds its chain fields; returns the line to write
/// (canonical JSON, no newline) and the hash.
///
/// Each top-level entry is printed once, in canonical (sorted) order: the hash covers them joined, and the line is
/// the same entries with `hash` spliced in at its sorted place — the canonical JSON of the record with its hash,
/// without copying the record or printing it twice.
pub(crate) fn seal(mut record: Map<String, Value>) -> (String, String) {
    record.remove("hash");
    let entries: Vec<(&str, String)> = record
        .iter()
        .map(|(k, v)| {
            let mut entry = Value::String(k.clone()).to_string();
            entry.push(':');
            entry.push_str(&canonical_json(v));
            (k.as_str(), entry)
        })
        .collect();
    seal_entries(entries)
}

/// `seal` for a record already printed as canonical entries (`"key":value`, distinct keys other than `hash`, in
/// any order): sorts them, hashes them joined, and splices the hash in at its sorted place.
pub(crate) fn seal_entries(mut entries: Vec<(&str, String)>) -> (String, String) {
    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let mut printed = Entries::default();
    for (key, entry) in &entries {
        let part = match *key < "hash" {
            true => &mut printed.before,
            false => &mut printed.after,
        };
        if !part.is_empty() {
            part.push(b',');
        }
        part.extend_from_slice(entry.as_bytes());
    }
    let mut line = String::new();
    let hash = seal_printed(&printed, &mut line);
    (line, hash)
}

/// `seal_entries` for entries printed in sorted order (`AuditEvent::print_entries`): hashes them as they lie,
/// joined, appends the line to `out` with the hash spliced in at its sorted place, and answers the hash.
pub(crate) fn seal_printed(entries: &Entries, out: &mut String) -> String {
    let (before, after) = (utf8(&entries.before), utf8(&entries.after));
    let mut body = Sha256::new();
    body.update(b"{");
    for (i, part) in present([&before, "", &after]).enumerate() {
        if i > 0 {
            body.update(b",");
        }
        body.update(part.as_bytes());
    }
    body.update(b"}");
    let hash = jsonrpc::to_hex(&body.finalize());
    let hash_entry = format!("\"hash\":\"{hash}\"");
    out.reserve(before.len() + after.len() + hash_entry.len() + 4);
    join_object(out, present([&before, &hash_entry, &after]));
    hash
}

/// The parts of a record's body that hold entries, in order.
fn present(parts: [&str; 3]) -> impl Iterator<Item = &str> {
    parts.into_iter().filter(|part| !part.is_empty())
}

/// Printed JSON as text: serde_json prints only UTF-8, so the lossy reading never has to replace anything.
fn utf8(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// `{a,b,…}` from printed entries.
fn join_object<'a>(out: &mut String, entries: impl Iterator<Item = &'a str>) {
    out.push('{');
    for (i, entry) in entries.enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(entry);
    }
    out.push('}');
}

/// A parsed, self-consistent line.
pub(crate) struct Parsed {
    /// The record, an object, without its `hash`.
    pub(crate) record: Value,
    pub(crate) hash: String,
}

impl Parsed {
    /// Whether the record hashes to its `hash`: worked out when asked (a verification asks for every line; reading
    /// the log's head before an append needs only its `seq` and `hash`).
    pub(crate) fn hash_ok(&self) -> bool {
        sha256_hex(canonical_json(&self.record).as_bytes()) == self.hash
    }

    pub(crate) fn is_anchor(&self) -> bool {
        self.record.get("kind").and_then(Value::as_str) == Some(ANCHOR_KIND)
    }

    pub(crate) fn seq(&self) -> Option<u64> {
        self.record.get("seq").and_then(Value::as_u64)
    }

    pub(crate) fn prev(&self) -> Option<&str> {
        self.record.get("prev").and_then(Value::as_str)
    }

    /// The chain position after this line.
    pub(crate) fn head_after(&self) -> Option<ChainHead> {
        if self.is_anchor() {
            Some(ChainHead {
                next_seq: self.record.get("next_seq").and_then(Value::as_u64)?,
                prev: self.prev()?.to_owned(),
            })
        } else {
            Some(ChainHead {
                next_seq: self.seq()?.checked_add(1)?,
                prev: self.hash.clone(),
            })
        }
    }
}

/// Parses one line (its own hash is checked by `Parsed::hash_ok`); `None` if it is not a record at all.
pub(crate) fn parse_line(line: &str) -> Option<Parsed> {
    let mut record = serde_json::from_str::<Value>(line).ok()?;
    let hash = match record.as_object_mut()?.remove("hash") {
        Some(Value::String(h)) => h,
        _ => return None,
    };
    Some(Parsed { record, hash })
}

/// Verifies the whole text of a log by its chain alone and reports the first problem with
/// its line number. It cannot see a cut end or a forged anchor: see `verify_text_with`.
pub fn verify_text(text: &str) -> VerifyReport {
    verify_text_with(text, &Witness::default())
}

/// Verifies the whole text of a log and checks it against `witness`: the chain must pass
/// through the witnessed head, and a first-line anchor must be one that was witnessed.
pub fn verify_text_with(text: &str, witness: &Witness) -> VerifyReport {
    let mut report = VerifyReport {
        events: 0,
        anchored: false,
        problem: None,
        head: None,
        anchor: None,
    };
    let mut head = ChainHead::genesis();
    let mut lines: Vec<&str> = text.split('\n').collect();
    // A complete log ends with a newline, leaving one empty piece; anything else there is
    // a torn final line and is reported as such below.
    if lines.last() == Some(&"") {
        lines.pop();
    }
    for (i, line) in lines.iter().enumerate() {
        let lineno = i as u64 + 1;
        let fail = |seq, kind| Problem {
            line: lineno,
            seq,
            kind,
        };
        let Some(p) = parse_line(line) else {
            report.problem = Some(fail(None, ProblemKind::Malformed));
            return report;
        };
        let seq = p.seq();
        if !p.hash_ok() {
            report.problem = Some(fail(seq, ProblemKind::HashMismatch));
            return report;
        }
        if p.is_anchor() {
            if i != 0 {
                report.problem = Some(fail(None, ProblemKind::MisplacedAnchor));
                return report;
            }
            let Some(next) = p.head_after() else {
                report.problem = Some(fail(None, ProblemKind::Malformed));
                return report;
            };
            if witness.head.is_some() && !witness.anchors.contains(&p.hash) {
                report.problem = Some(fail(None, ProblemKind::UnknownAnchor));
                return report;
            }
            report.anchored = true;
            report.anchor = Some(Anchor {
                hash: p.hash.clone(),
                next_seq: next.next_seq,
                prev: next.prev.clone(),
            });
            if let Some(kind) = diverged(witness, &next) {
                report.problem = Some(fail(None, kind));
                return report;
            }
            head = next;
            continue;
        }
        let (Some(found), Some(prev)) = (seq, p.prev()) else {
            report.problem = Some(fail(seq, ProblemKind::Malformed));
            return report;
        };
        if found != head.next_seq {
            let kind = ProblemKind::SequenceMismatch {
                expected: head.next_seq,
                found,
            };
            report.problem = Some(fail(seq, kind));
            return report;
        }
        if prev != head.prev {
            report.problem = Some(fail(seq, ProblemKind::BrokenLink));
            return report;
        }
        let Some(next) = p.head_after() else {
            report.problem = Some(fail(seq, ProblemKind::Malformed));
            return report;
        };
        if let Some(kind) = diverged(witness, &next) {
            report.problem = Some(fail(seq, kind));
            return report;
        }
        head = next;
        report.events += 1;
    }
    if head.next_seq > 1 {
        report.head = Some(Head {
            seq: head.next_seq - 1,
            hash: head.prev.clone(),
        });
    }
    if let Some(w) = &witness.head {
        if w.against(&head) == Against::Behind {
            report.problem = Some(Problem {
                line: lines.len() as u64 + 1,
                seq: None,
                kind: ProblemKind::Truncated {
                    witnessed: w.seq,
                    last: head.next_seq.saturating_sub(1),
                },
            });
        }
    }
    report
}

/// `HeadMismatch` when `position` is the witnessed head's with another hash.
fn diverged(witness: &Witness, position: &ChainHead) -> Option<ProblemKind> {
    let w = witness.head.as_ref()?;
    (w.against(position) == Against::Diverged).then_some(ProblemKind::HeadMismatch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// What `seal` must equal: the hash of the canonical record without `hash`, and the canonical record with it.
    fn reference(record: &Map<String, Value>) -> (String, String) {
        let hash = sha256_hex(canonical_json(&Value::Object(record.clone())).as_bytes());
        let mut with = record.clone();
        with.insert("hash".into(), Value::String(hash.clone()));
        (canonical_json(&Value::Object(with)), hash)
    }

    #[test]
    fn seal_places_the_hash_among_keys_that_sort_around_it() {
        let record = json!({"seq": 1, "hasg": "a", "hasha": [2, {"z": 1, "a": null}], "h": "\"\n",
                            "é": 1.5, "": true, "Hash": "upper", "prev": GENESIS});
        let Value::Object(record) = record else {
            unreachable!()
        };
        assert_eq!(seal(record.clone()), reference(&record));
        assert_eq!(seal(Map::new()), reference(&Map::new()));
    }

    proptest! {
        #[test]
        fn seal_is_the_canonical_record_with_its_hash(
            entries in proptest::collection::vec(("[a-z#é\"]{0,6}", any::<i64>(), "\\PC{0,8}"), 0..12)
        ) {
            let mut record = Map::new();
            for (k, n, t) in entries {
                record.insert(k, json!([n, t]));
            }
            record.remove("hash");
            prop_assert_eq!(seal(record.clone()), reference(&record));
        }
    }
}
