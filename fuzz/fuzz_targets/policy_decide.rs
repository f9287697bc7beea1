//! Fuzzes adapter → normalisation → decision; the body and its invariants live in `policy_entries.rs`, which the policy
//! crate's test suite also runs over this target's corpus.

#![no_main]

mod policy_entries;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| policy_entries::decide(data));
