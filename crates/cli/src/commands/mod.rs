//! One module per subcommand: its arguments (clap doc comments are the help text) and its `run`.

pub mod approvals;
pub mod audit;
pub mod common;
pub mod completions;
pub mod conformance_client;
pub mod demo;
pub mod doctor;
pub mod escape;
pub mod fixture;
pub mod pins;
pub mod policy;
pub mod preview;
pub mod report;
pub mod serve;
pub mod store;
pub mod wrap;
