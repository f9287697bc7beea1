//! toolgate's configuration: a raw file (TOML, YAML, or JSON (comments and trailing commas allowed) in the `mcpServers` shape that Claude Desktop, Claude
//! Code, Cursor and Codex use, or VS Code's `servers`) is parsed, `${VAR}`s are expanded, and the result is
//! validated into a `Config` whose settings remember where they came from (file, flag, default), so `toolgate doctor` can explain them.
//!
//! This crate does no spawning and no network; it reads the config file, the env files it names, and the
//! environment given to it.

#![deny(clippy::print_stdout)]

mod code;
mod credentials;
mod env;
mod envfile;
mod error;
mod expand;
mod http;
mod keys;
mod load;
mod model;
mod rate;
mod raw;
mod server;
mod syntax;
mod telemetry;
mod unified;

pub use credentials::{Credential, CredentialTarget, Grant, Secret, SecretSource};
pub use env::{upstream_env, UPSTREAM_ENV_ALLOWLIST};
pub use error::{ConfigError, Result};
pub use http::{AdminKey, ApiKey, HttpAuth, HttpConfig, HttpLimits, JwtAuth};
pub use load::{load, parse_str, Format, Overrides};
pub use model::{
    Approvals, CodeMode, Config, DisabledServer, HookCommand, HookStage, Hooks, Limits, Mode,
    PolicyConfig, Protocol, Provenance, Sandbox, SandboxLimits, ServerConfig, ServerKind,
    ServerSandbox, Setting, Store, StorePool, StoreUrl, ToolFilter, Transport,
    DEFAULT_HOOK_TIMEOUT, DEFAULT_SEPARATOR, FIXTURE_SUBCOMMAND, SANDBOX_LAYERS,
};
pub use rate::{RateLimit, RateLimits};
pub use syntax::{parse_json, parse_toml, parse_yaml};
pub use telemetry::{Otlp, Telemetry};
pub use unified::{profile_store_for, state_root_for, unified_presets, Reporting};
