//! The policy crate's one integration test binary: golden decisions, hostile inputs, string/structured twins,
//! precedence, property tests, profiles, loading errors and `policy test` cases. No I/O beyond reading fixtures.

mod cases;
mod common;
mod fuzz_corpus;
mod git_argv;
mod globs;
mod golden;
mod hostile;
mod hosts;
mod loading;
mod precedence;
mod profiles;
mod props;
mod twins;
mod wrappers;
