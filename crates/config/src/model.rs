//! The validated configuration: what the rest of toolgate reads. Every field is already checked.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

mod store;

pub use store::{Store, StorePool, StoreUrl};

/// The default separator between a server name and its tool name in exposed names (`files__read_file`).
pub const DEFAULT_SEPARATOR: &str = "__";

/// The hidden subcommand that runs toolgate's bundled fixture server. An upstream that runs toolgate with this
/// subcommand is a test server, not a gateway, so it is not a spawning loop.
pub const FIXTURE_SUBCOMMAND: &str = "fixture-server";

/// Where a setting's value came from, for `toolgate doctor`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Provenance {
    Default,
    File {
        path: PathBuf,
        key: String,
    },
    Flag(&'static str),
    /// An environment variable a product reads instead of a flag (`TOOLHUB_WORKSPACE_ROOT`).
    Env(&'static str),
}

impl std::fmt::Display for Provenance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Provenance::Default => f.write_str("default"),
            Provenance::File { path, key } => write!(f, "{} ({key})", path.display()),
            Provenance::Flag(flag) => write!(f, "command line ({flag})"),
            Provenance::Env(name) => write!(f, "environment ({name})"),
        }
    }
}

/// A value and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setting<T> {
    pub value: T,
    pub from: Provenance,
}

impl<T> Setting<T> {
    pub fn default(value: T) -> Self {
        Self {
            value,
            from: Provenance::Default,
        }
    }
}

/// Which protocol era to speak to an upstream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// Probe with `server/discover`; fall back to `initialize` when the server does not know it.
    Auto,
    /// Only `initialize` (2024-11-05 … 2025-11-25).
    Legacy,
    /// Only the stateless 2026-07-28 era.
    Modern,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transport {
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP, or the deprecated HTTP+SSE transport; connected by the `upstream` crate's HTTP links.
    Http {
        url: String,
        headers: BTreeMap<String, String>,
        /// `"type": "sse"`: the deprecated HTTP+SSE transport, not Streamable HTTP.
        sse: bool,
    },
}

/// What kind of well-known server an upstream is, so the policy's built-in adapters know its tools. Set with
/// `"kind"`, or recognised from the package the command runs; never guessed from tool names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerKind {
    /// `@modelcontextprotocol/server-filesystem`.
    Filesystem,
    /// `mcp-server-git`.
    Git,
    /// A fetch-style server (`mcp-server-fetch`): tool `fetch` with `url`.
    Fetch,
    /// Anything else: its tools are matched by name only, unless a mapping says more.
    Generic,
}

impl ServerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ServerKind::Filesystem => "filesystem",
            ServerKind::Git => "git",
            ServerKind::Fetch => "fetch",
            ServerKind::Generic => "generic",
        }
    }
}

/// The policy sections, as written; the policy stage parses and validates them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PolicyConfig {
    /// Structured rules: `{default, path_case, rules: [...], mappings: [...]}`.
    pub policy: Option<serde_json::Value>,
    /// Claude Code strings: `{default, allow: [...], ask: [...], deny: [...]}`.
    pub permissions: Option<serde_json::Value>,
    /// Named rule sets with tool visibility.
    pub profiles: Option<serde_json::Value>,
    /// A toolscript-mcp `"policy": [{match, action}]` list as written (first match wins); `policy` then holds
    /// its translation, and `policy check` reports where toolgate's deny-overrides reads it differently.
    pub toolscript: Option<serde_json::Value>,
}

impl PolicyConfig {
    pub fn is_empty(&self) -> bool {
        self.policy.is_none() && self.permissions.is_none() && self.profiles.is_none()
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerConfig {
    pub name: String,
    pub transport: Transport,
    pub protocol: Protocol,
    pub kind: ServerKind,
    /// Per-request timeout for this upstream; `None` uses `Limits::request_timeout`.
    pub request_timeout: Option<Duration>,
    /// How long its handshake and first catalog may take; `None` uses `Limits::startup_timeout`.
    pub startup_timeout: Option<Duration>,
    /// Which of its tools are offered at all (`enabled_tools` / `disabled_tools`).
    pub tools: ToolFilter,
    /// What the entry said that toolgate accepts but does not act on, for `doctor`.
    pub notes: Vec<String>,
    /// How an stdio server is contained (`"sandbox"` in its entry); HTTP servers are not processes.
    pub sandbox: ServerSandbox,
}

/// How one stdio server is contained. By default it runs in its own user, PID and mount namespaces with its
/// own /proc, reads everything but the state root, the config file and the shared temporary directory, writes
/// only its private temporary directory, the package caches and the paths its entry names, may use the
/// network but no unix socket, and gains no privileges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerSandbox {
    /// `"enabled": false`: started as a plain child process with the user's rights (doctor says so).
    pub enabled: bool,
    /// `"network"` (default true): false gives it an empty network namespace.
    pub network: bool,
    /// `"unixSockets"`: pathname unix sockets (a container daemon's, a database's). Default false, true for a
    /// server started by `docker` or `podman`, whose client needs the daemon's socket.
    pub unix_sockets: bool,
    /// `"writable"`: more paths it may write beneath (absolute; relative ones are taken from the config
    /// file's folder).
    pub writable: Vec<PathBuf>,
    /// `"require"`: layers that must be active, else the server does not start (and says why).
    pub require: Vec<String>,
}

impl Default for ServerSandbox {
    fn default() -> Self {
        Self {
            enabled: true,
            network: true,
            unix_sockets: false,
            writable: Vec::new(),
            require: Vec::new(),
        }
    }
}

/// A client's per-server tool list (Codex `enabled_tools` / `disabled_tools`). A filtered-out tool is neither
/// listed nor callable; this narrows what the policy sees, it never widens it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolFilter {
    /// Only these tools, when given.
    pub enabled: Option<Vec<String>>,
    /// Never these tools; wins over `enabled`.
    pub disabled: Vec<String>,
}

impl ToolFilter {
    pub fn allows(&self, tool: &str) -> bool {
        self.enabled
            .as_ref()
            .is_none_or(|only| only.iter().any(|t| t == tool))
            && !self.disabled.iter().any(|t| t == tool)
    }

    pub fn is_empty(&self) -> bool {
        self.enabled.is_none() && self.disabled.is_empty()
    }
}

/// A server the config lists but toolgate does not start, and why (for stderr and `doctor`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DisabledServer {
    pub name: String,
    pub reason: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest JSON-RPC message accepted or sent, in bytes.
    pub max_message_bytes: Setting<usize>,
    /// Deepest JSON nesting accepted.
    pub max_depth: Setting<usize>,
    /// How long a forwarded request may wait for its upstream.
    pub request_timeout: Setting<Duration>,
    /// How long `initialize` / `server/discover` waits for upstreams that are still starting.
    pub startup_timeout: Setting<Duration>,
    /// Items per page in aggregated lists.
    pub page_size: Setting<usize>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_message_bytes: Setting::default(4 * 1024 * 1024),
            max_depth: Setting::default(64),
            request_timeout: Setting::default(Duration::from_secs(120)),
            startup_timeout: Setting::default(Duration::from_secs(30)),
            page_size: Setting::default(100),
        }
    }
}

/// How an `ask` reaches a human.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Approvals {
    /// How long a call is held waiting for a decision before the client gets an approval handle.
    pub wait: Setting<Duration>,
    /// How long a request stays decidable.
    pub expire: Setting<Duration>,
    /// Also ask through MCP elicitation when the client declares it (never the only channel).
    pub elicitation: Setting<bool>,
    /// Let elicitation also decide commands, writes, deletions, git writes and network requests. Off by default:
    /// a client's dialog is easier to click through than the admin CLI, which shows the full request.
    pub elicitation_for_writes: Setting<bool>,
}

impl Default for Approvals {
    fn default() -> Self {
        Self {
            wait: Setting::default(Duration::from_secs(20)),
            expire: Setting::default(Duration::from_secs(15 * 60)),
            elicitation: Setting::default(true),
            elicitation_for_writes: Setting::default(false),
        }
    }
}

/// Which calls a hook sees and when it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookStage {
    /// Before the call runs, after the policy decided; may make the call stricter.
    Pre,
    /// After the outcome is known; observes only.
    Post,
}

/// Default wall-clock limit of one hook run.
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(5);

/// One external command hook (`hooks.pre[i]` / `hooks.post[i]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookCommand {
    pub stage: HookStage,
    /// Position in its list, as rule ids and messages name it (`hook:<index>`).
    pub index: usize,
    pub command: String,
    pub args: Vec<String>,
    /// Past it the hook's process group is killed and, for a pre-hook, the call is denied.
    pub timeout: Duration,
    /// Globs over `server__tool` (`*` any run, `?` one character); empty means every tool.
    pub tools: Vec<String>,
    /// Whether the hook is shown the call's arguments (redacted); off by default.
    pub arguments: bool,
    /// Absolute directories the hook may write beneath. Without any it writes only its private temporary
    /// directory (`TMPDIR`); the state root and the config file are never writable.
    pub writable: Vec<PathBuf>,
    /// Whether the hook may reach the network (default true); false runs it without network or refuses it.
    pub network: bool,
    pub from: Provenance,
}

/// Ordered pre- and post-call hooks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hooks {
    pub pre: Vec<HookCommand>,
    pub post: Vec<HookCommand>,
}

/// Containment of toolgate's own commands (`shell_run`, git).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sandbox {
    /// Layers that must be active, else the command is refused: `pid_namespace`, `no_network`, `landlock`,
    /// `rlimits`, `no_new_privs`, `socket_filter`.
    pub require: Vec<String>,
    /// Let commands reach the network (no network namespace, no socket filter).
    pub network: bool,
    /// Resource limits every command gets.
    pub limits: SandboxLimits,
}

/// Resource limits of each contained command (and each of its processes). Finite by default, so an approved
/// command cannot exhaust the machine; a limit above toolgate's own hard limit is lowered to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SandboxLimits {
    /// CPU seconds per process (RLIMIT_CPU); the default equals the longest allowed timeout.
    pub cpu_seconds: u64,
    /// Address space per process in bytes (RLIMIT_AS). Generous by default: runtimes such as V8 and Go
    /// reserve far more address space than they use.
    pub address_space_bytes: u64,
    /// Largest file a command may write, in bytes (RLIMIT_FSIZE).
    pub file_size_bytes: u64,
    /// Processes (RLIMIT_NPROC), counted in the command's user namespace when it has one; not enforced by
    /// the kernel for root.
    pub processes: u64,
    /// Open descriptors per process (RLIMIT_NOFILE).
    pub open_files: u64,
}

impl Default for SandboxLimits {
    fn default() -> Self {
        Self {
            cpu_seconds: 600,
            address_space_bytes: 16 << 30,
            file_size_bytes: 4 << 30,
            processes: 512,
            open_files: 4096,
        }
    }
}

/// What a client sees and calls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// Every allowed tool is listed and called directly.
    #[default]
    Direct,
    /// The client sees `search_tools`, `run_code` and toolgate's control tools; every other tool is reached only
    /// from programs.
    Code,
}

/// Code mode's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeMode {
    /// Wall clock of one `run_code` (`sandbox.timeoutSeconds`, 5 … 86,400 s).
    pub timeout: Setting<std::time::Duration>,
}

impl Default for CodeMode {
    fn default() -> Self {
        Self {
            timeout: Setting::default(std::time::Duration::from_secs(120)),
        }
    }
}

/// The layer names `sandbox.require` accepts.
pub const SANDBOX_LAYERS: &[&str] = &[
    "pid_namespace",
    "own_proc",
    "no_network",
    "landlock",
    "rlimits",
    "no_new_privs",
    "socket_filter",
];

#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Enabled upstreams, in file order.
    pub servers: Vec<ServerConfig>,
    /// Listed but not started (`enabled = false`, `"disabled": true`, a reference only the client can answer).
    pub disabled: Vec<DisabledServer>,
    pub policy: PolicyConfig,
    /// The profile `serve` applies (`--profile`, or `"profile"` in the file).
    pub profile: Option<Setting<String>>,
    pub separator: Setting<String>,
    pub prefix_tools: Setting<bool>,
    pub limits: Limits,
    pub approvals: Approvals,
    /// `"pins": {"onChange": "ask"}` (else "hide"): what a changed tool definition does until a human accepts it.
    pub pins_on_change_ask: bool,
    /// `"pins": {"newTools": "accept"}` (else "hold"): whether a tool or prompt that appears on a server already
    /// listed is pinned as it is, instead of held until a human accepts it like a changed one.
    pub pins_accept_new_tools: bool,
    pub sandbox: Sandbox,
    /// `"rateLimits"`: the token buckets a call must find a token in before it runs.
    pub rate_limits: crate::rate::RateLimits,
    /// `"credentials"`: upstream secrets and whom they are granted to (env ones, and header ones granted to
    /// everyone, are also in their server's transport).
    pub credentials: Vec<crate::credentials::Credential>,
    /// `serve --http`: where it listens and whom it lets in.
    pub http: crate::http::HttpConfig,
    /// What the client's `tools/list` shows: every tool (`direct`), or `search_tools` and `run_code` (`code`).
    pub mode: Setting<Mode>,
    /// Code mode's settings.
    pub code: CodeMode,
    /// External command hooks, in configured order.
    pub hooks: Hooks,
    pub workspace: Option<Setting<PathBuf>>,
    /// The trusted state root (`"stateDir"`), for clients that start servers with a scrubbed environment;
    /// otherwise `TOOLGATE_STATE_DIR` or the platform default decides.
    pub state_dir: Option<Setting<PathBuf>>,
    /// Where the audit chain's heads and anchors are also appended (`"auditWitness"`): a file outside the state
    /// root, so a log cut together with the database's head is still seen (`audit verify`, and at start).
    pub audit_witness: Option<Setting<PathBuf>>,
    /// Tool-use reporting: on, and its retention (MCP Unified's `tool_use_reporting`).
    pub reporting: crate::unified::Reporting,
    /// Where profiles stored by MCP Unified's `duplicate-preset` and `create-profile` are kept (its `store`).
    pub profile_store: Option<PathBuf>,
    /// Where the durable state lives (`"store"`): SQLite in the state root, or a PostgreSQL server replicas share.
    pub store: Store,
    /// `"telemetry"`: OpenTelemetry spans over OTLP and Prometheus metrics, each off unless configured.
    pub telemetry: crate::telemetry::Telemetry,
    /// Non-fatal findings (ignored client keys, disabled servers), for stderr and `doctor`.
    pub warnings: Vec<String>,
    /// The file this came from, if any.
    pub source: Option<PathBuf>,
}

impl Config {
    /// A config with no upstreams and every default.
    pub fn empty() -> Self {
        Self {
            servers: Vec::new(),
            disabled: Vec::new(),
            policy: PolicyConfig::default(),
            profile: None,
            separator: Setting::default(DEFAULT_SEPARATOR.to_owned()),
            prefix_tools: Setting::default(true),
            limits: Limits::default(),
            approvals: Approvals::default(),
            pins_on_change_ask: false,
            pins_accept_new_tools: false,
            sandbox: Sandbox::default(),
            rate_limits: crate::rate::RateLimits::default(),
            credentials: Vec::new(),
            http: crate::http::HttpConfig::default(),
            mode: Setting::default(Mode::Direct),
            code: CodeMode::default(),
            hooks: Hooks::default(),
            state_dir: None,
            audit_witness: None,
            workspace: None,
            reporting: crate::unified::Reporting::default(),
            profile_store: None,
            store: Store::Sqlite,
            telemetry: crate::telemetry::Telemetry::default(),
            warnings: Vec::new(),
            source: None,
        }
    }
}
