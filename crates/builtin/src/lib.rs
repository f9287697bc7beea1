//! toolgate's own workspace tools: confined files, read-only git, structured shell.

#![deny(clippy::print_stdout)]
