//! One module per subcommand: its arguments (clap doc comments are the help text) and its `run`.

pub mod common;
pub mod demo;
pub mod doctor;
pub mod fixture;
pub mod serve;
pub mod wrap;
