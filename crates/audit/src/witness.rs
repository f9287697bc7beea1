//! What the log alone cannot prove, remembered elsewhere: the chain head and every pruning anchor.
//!
//! A hash chain shows edits in the middle, but not a cut end (truncation, an emptied file) nor a cut start
//! replaced by a forged anchor: both leave a chain that is consistent with itself. The writer's caller keeps a
//! `Witness` outside the log (the state database): the newest `Head` it saw written and the hash of every anchor a
//! prune or a recovery wrote. Verification then requires the chain to pass through the head and to start, when it
//! starts with an anchor, from one of those anchors. This module compares positions; it stores nothing.

use serde::Serialize;

use crate::chain::ChainHead;

/// A chain position as the witness records it: the newest event's sequence number and hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Head {
    /// Sequence number of the newest event written.
    pub seq: u64,
    /// Its hash.
    pub hash: String,
}

/// An anchor record a prune or recovery wrote, as the witness records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Anchor {
    /// The anchor record's own hash.
    pub hash: String,
    /// The sequence number the first event after it carries.
    pub next_seq: u64,
    /// The hash that event names as `prev`.
    pub prev: String,
}

/// What the log is checked against. The default (nothing witnessed) checks the chain alone, as an older state
/// database or a log read without its state can only do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Witness {
    /// The newest head written, if any was recorded.
    pub head: Option<Head>,
    /// Hashes of every anchor toolgate wrote.
    pub anchors: Vec<String>,
}

/// How a chain position compares with the witnessed head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Against {
    /// At or past the head and consistent with it (or nothing to compare).
    Fine,
    /// Short of the head: newer events are missing.
    Behind,
    /// At the head's position with another hash: history was rewritten.
    Diverged,
}

impl Head {
    /// Compares the position after the log's last line with this head. A position past the head is fine: another
    /// process may have appended, or a crash fell between the append and the witness update.
    pub(crate) fn against(&self, position: &ChainHead) -> Against {
        let at = self.seq.saturating_add(1);
        if position.next_seq < at {
            Against::Behind
        } else if position.next_seq == at && position.prev != self.hash {
            Against::Diverged
        } else {
            Against::Fine
        }
    }
}
