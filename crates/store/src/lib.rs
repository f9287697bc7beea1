//! SQLite state under the trusted state root: approvals, session grants, pins, reporting events.

#![deny(clippy::print_stdout)]
