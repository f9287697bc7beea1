//! Process containment and bounded output capture for commands and git runs.

#![deny(clippy::print_stdout)]
