//! Pure firewall policy: operations, adapters, rules, profiles, explain. No I/O, no async, no clock.

#![deny(clippy::print_stdout)]
