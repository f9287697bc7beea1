//! The results a session keeps for `recall(n)`: the last [`KEEP_RESULTS`] calls, at most [`KEEP_RESULT_BYTES`]
//! of memory for one session, and within its identity's share of memory and the ceiling over every identity.
//!
//! A result is kept as its serialised text, not as a parsed value: a parsed `serde_json::Value` takes many
//! times its text (a 32-byte node per value, a map entry per key; `[[],[],…]` takes about 23 times), so a bound
//! on the text would not bound the memory. Text is what it costs, and `recall` parses it again. It does not
//! decide which calls are recorded.

use super::{Exceeded, Quota};
use serde_json::Value;
use std::collections::VecDeque;

/// Results `recall` can still give, newest kept.
pub const KEEP_RESULTS: usize = 1000;
/// Bytes of memory one session's kept results may take, newest kept.
pub const KEEP_RESULT_BYTES: usize = 32 << 20;
/// What one kept result takes besides its text: its place in the queue and the allocation's own header.
const ENTRY_BYTES: usize = 64;

/// What `recall(n)` finds.
#[derive(Debug, Clone, PartialEq)]
pub enum Recalled {
    /// Call `#n`'s value.
    Kept(Value),
    /// Call `#n`'s value is no longer kept (or it gave none): only the most recent results are.
    Evicted,
    /// Call `#n`'s value was not kept: its identity's share of memory, or the ceiling, was full.
    NotKept(Exceeded),
    /// No call `#n` gave a value in this session.
    Missing,
}

impl Recalled {
    /// The error a program sees when there is no value.
    pub fn message(&self, seq: u32) -> Option<String> {
        match self {
            Recalled::Kept(_) => None,
            Recalled::Evicted => Some(format!(
                "recall({seq}): the result of call #{seq} is no longer kept (a session keeps the last \
                 {KEEP_RESULTS} results, {} MB of memory at most) or the call gave none",
                KEEP_RESULT_BYTES >> 20
            )),
            Recalled::NotKept(Exceeded::Identity { held, share }) => Some(format!(
                "recall({seq}): the result of call #{seq} was not kept: this identity's other sessions keep \
                 {held} bytes of results, its share of {share} bytes of memory; it frees as they end"
            )),
            Recalled::NotKept(Exceeded::Overall { held, ceiling }) => Some(format!(
                "recall({seq}): the result of call #{seq} was not kept: kept results of every identity take \
                 {held} bytes, toolgate's ceiling of {ceiling} bytes of memory; it frees as sessions end"
            )),
            Recalled::Missing => Some(format!(
                "recall({seq}): no call #{seq} gave a result in this session"
            )),
        }
    }
}

#[derive(Debug, Default)]
pub(super) struct Results {
    /// Call number, serialised value, and the memory charged for it.
    kept: VecDeque<(u32, Box<str>, u64)>,
    bytes: u64,
    /// The highest call number whose result was dropped, so `recall` can tell evicted from never seen.
    evicted_up_to: u32,
    /// Recent results not kept for lack of a share, with the bound that was full.
    not_kept: VecDeque<(u32, Exceeded)>,
}

impl Results {
    /// Keeps `value` as call `seq`'s, dropping the oldest past the session's bounds and, when the identity's
    /// share or the ceiling is full, this session's own oldest until it fits.
    pub(super) fn record(&mut self, memory: &Quota, identity: &str, seq: u32, value: &Value) {
        let Ok(text) = serde_json::to_string(value) else {
            self.evicted_up_to = self.evicted_up_to.max(seq);
            return;
        };
        let cost = (text.len() + ENTRY_BYTES) as u64;
        if cost > KEEP_RESULT_BYTES as u64 {
            self.evicted_up_to = self.evicted_up_to.max(seq);
            return;
        }
        while self.kept.len() >= KEEP_RESULTS || self.bytes + cost > KEEP_RESULT_BYTES as u64 {
            self.evict_oldest(memory, identity);
        }
        loop {
            match memory.take(identity, cost) {
                Ok(()) => break,
                Err(_) if !self.kept.is_empty() => self.evict_oldest(memory, identity),
                Err(full) => {
                    if self.not_kept.len() >= KEEP_RESULTS {
                        self.not_kept.pop_front();
                    }
                    self.not_kept.push_back((seq, full));
                    return;
                }
            }
        }
        self.kept.push_back((seq, text.into_boxed_str(), cost));
        self.bytes += cost;
    }

    fn evict_oldest(&mut self, memory: &Quota, identity: &str) {
        if let Some((old, _, cost)) = self.kept.pop_front() {
            self.bytes -= cost;
            memory.give_back(identity, cost);
            self.evicted_up_to = self.evicted_up_to.max(old);
        }
    }

    pub(super) fn lookup(&self, seq: u32) -> Recalled {
        if let Some((_, text, _)) = self.kept.iter().find(|(n, _, _)| *n == seq) {
            // Kept text was serialised from a value here, so it parses; a failure reads as not kept.
            return serde_json::from_str(text).map_or(Recalled::Evicted, Recalled::Kept);
        }
        if let Some((_, full)) = self.not_kept.iter().find(|(n, _)| *n == seq) {
            return Recalled::NotKept(*full);
        }
        if seq <= self.evicted_up_to {
            Recalled::Evicted
        } else {
            Recalled::Missing
        }
    }

    /// The memory charged for what is kept now.
    pub(super) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Gives back everything kept (the session ended).
    pub(super) fn release(&mut self, memory: &Quota, identity: &str) {
        memory.give_back(identity, self.bytes);
        self.kept.clear();
        self.bytes = 0;
    }
}
