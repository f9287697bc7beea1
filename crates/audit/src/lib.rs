//! Privacy-first audit: bounded JSON Lines events, redaction, hash chain.

#![deny(clippy::print_stdout)]
