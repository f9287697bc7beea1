//! Pure firewall policy: operations, adapters, rules, profiles, explain, lint, policy tests, tool-definition checks.
//!
//! The pipeline stage is `adapt` (call → operation + raw resources) → `normalise` (caller-supplied canonicaliser
//! resolves paths) → `Policy::decide` / `Policy::explain`. This crate does no I/O, no async, reads no clock and no
//! environment: everything it needs arrives as arguments, and the filesystem is reached only through the caller's
//! [`Canonicalise`]. It does not hold approvals, write audit records or talk to servers.

//!
//! ```
//! use policy::{Context, Effect, Policy, PolicySources, ServerKind, ToolCall};
//! use serde_json::json;
//!
//! let permissions = json!({"default": "ask", "allow": ["Read(./src/**)"], "deny": ["Read(**/.env)"]});
//! let ctx = Context { workspace: "/ws".into(), home: None };
//! let policy = Policy::load(PolicySources { permissions: Some(&permissions), ..Default::default() }, &ctx)?;
//!
//! // The caller owns the filesystem: here a canonicaliser that resolves one symlink.
//! let canon = |p: &str| Some(p.replace("/ws/src/link", "/etc"));
//! let call = |path: &str| ToolCall::new("files", "read_file", json!({ "path": path }), Some(ServerKind::Filesystem));
//!
//! let d = policy.decide_call(&call("src/main.rs"), &canon);
//! assert_eq!((d.effect, d.rule_id.as_deref(), d.reason.as_str()), (Effect::Allow, Some("Read(./src/**)"), "ALLOW_RULE"));
//! assert_eq!(policy.decide_call(&call("src/.env"), &canon).effect, Effect::Deny);
//! assert_eq!(policy.decide_call(&call("src/link/passwd"), &canon).effect, Effect::Ask);
//! # Ok::<(), policy::Error>(())
//! ```

#![deny(clippy::print_stdout)]

mod action;
mod adapter;
mod beneath;
mod cases;
mod claude;
mod decide;
mod error;
mod explain;
mod glob;
mod hash;
mod host;
mod index;
mod lint;
mod load;
mod lookalike;
mod operation;
mod origin;
mod path;
mod poison;
mod profile;
mod rule;
mod shell;
mod starter;
mod toolfence;
mod toolscript;
mod unknown_arguments;
mod wrapper;

pub use action::{
    normalise, Access, Action, Command, RawAction, RawCommand, Scope, ServerKind, ToolCall,
    UnknownReason,
};
pub use adapter::{
    adapt, adapt_with, command_action, only_known_arguments, required_str, str_arg, str_list,
    OwnAdapter, Servers, ToolMapping, FETCH_ARGUMENTS, FILESYSTEM_ARGUMENTS, GIT_ARGUMENTS,
};
pub use cases::{judge_case, parse_cases, run_cases, CaseResult, TestCase, TestReport};
pub use claude::translate_permission;
pub use decide::{rule_label, Decision, ReasonCode};
pub use error::{Error, Result};
pub use explain::{AccessTrace, Explanation, RuleTrace};
pub use glob::PathCase;
pub use hash::{definition_hash, HASHED_FIELDS};
pub use host::NetTarget;
pub use jsonrpc::canonical_json;
pub use lint::{check_policy, LintFinding, Severity};
pub use load::{Names, Policy, PolicySources, BUILTIN_PREFIX};
pub use lookalike::lookalike_flags;
pub use operation::{Effect, Operation, Precedence};
pub use path::{file_uri_path, lexical_normalise, Canonicalise, Context, Lexical};
pub use poison::{inspect_definition, PoisonCode, PoisonFlag};
pub use profile::{
    ProfileMode, SurfaceEntry, SurfaceReason, ToolListing, ToolVisibility, Visibility,
};
pub use rule::{Example, Mismatch, RuleSpec};
pub use starter::STARTER_POLICY;
pub use toolfence::{
    is_toolfence_policy, parse_action, parse_fence_cases, translate_toolfence, FenceAction,
    FenceCase, TOOLFENCE_KEYS,
};
pub use toolscript::{toolscript_findings, translate_toolscript};
