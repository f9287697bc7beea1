//! toolgate's own workspace tools: confined files, read-only git, structured shell.
//!
//! Every path is resolved beneath one frozen workspace root by the kernel (`openat2` RESOLVE_BENEATH, or a
//! no-follow descriptor walk), writes are atomic with optional expected-hash checks and honour the advisory file
//! locks other processes hold through the state store (`leases`), git runs hardened and
//! read-only, and commands run from approved, fingerprinted snapshots inside the `sandbox` crate. This crate
//! does not decide whether a call is allowed (policy and approval do that before it is called), does not
//! speak MCP framing, and never prints.

#![deny(clippy::print_stdout)]

mod builtin;
mod confine;
mod definitions;
mod error;
mod fsops;
mod git;
mod leases;
mod patch;
mod shell;

pub use builtin::{Builtin, BuiltinConfig, Limits, ToolOutcome};
pub use confine::{confine_lexically, RelPath, Workspace};
pub use definitions::{
    adapt, tool_definitions, tools, Arg, Role, Tool, APPLY_PATCH, GIT_DIFF, GIT_STATUS,
    LIST_DIRECTORY, LOCK_ACQUIRE, LOCK_RELEASE, READ_FILE, SHELL_RUN, WRITE_FILE,
};
pub use error::{Error, Result};
pub use fsops::{DirEntry, FileRead, FileWrite, Listing};
pub use git::{GitDiffArgs, GitStatusArgs, StatusEntry};
// Tool results carry this digest of file content; a caller computes `expected_hash` for `write_file` with it.
pub use jsonrpc::sha256_hex;
pub use patch::{patch_targets, PatchedFile};
pub use shell::{CommandSnapshot, ShellRequest, ShellSettings, SNAPSHOT_VERSION};
