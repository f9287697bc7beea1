//! `toolgate doctor`: explains the effective configuration (each value and where it came from), the policy, the
//! state directory, which containment layers this machine offers, and starts every upstream once to show
//! whether it works — its protocol era, catalog size, last error, and any tool that is quarantined or flagged.
//! For each server entry it says which of the client's settings toolgate honours and which it only accepts, and
//! which servers it does not start and why. Progress while it waits for slow servers goes to stderr.

use super::common::ConfigArgs;
use std::fmt::Display;
use std::process::ExitCode;
use std::sync::Arc;
use upstreams::upstreams;

mod upstreams;

/// Check the configuration and every upstream server, then exit (0 when all stdio upstreams start).
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    config: ConfigArgs,
    /// Explain the configuration only: start no upstream.
    #[arg(long)]
    no_start: bool,
}

fn row(name: &str, value: impl Display, from: &config::Provenance) {
    println!("  {name:<30} {value:<16} ({from})");
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let config = if args.no_start {
        args.config.load()?
    } else {
        let config = args.config.load_to_start()?;
        // It starts the upstreams: they get no more of this process than `serve`'s would.
        crate::harden::gateway();
        config
    };
    println!("toolgate {} doctor", env!("CARGO_PKG_VERSION"));
    settings(&config);
    server_entries(&config);
    credential_entries(&config);
    let guard = Arc::new(crate::runtime::load_guard(&config)?);
    match (guard.profile(), config.policy.is_empty()) {
        (Some(p), _) => println!("policy: loaded, profile {p:?}"),
        (None, true) => {
            println!("policy: none configured — every call asks (toolgate's own reads excepted)")
        }
        (None, false) => println!("policy: loaded"),
    }
    client_entry(&config);
    for hook in config.hooks.pre.iter().chain(&config.hooks.post) {
        let tools = if hook.tools.is_empty() {
            "every tool".to_owned()
        } else {
            hook.tools.join(", ")
        };
        println!(
            "hook: {:?}[{}] {} (timeout {} s, {tools}) — {}",
            hook.stage,
            hook.index,
            hook.command,
            hook.timeout.as_secs(),
            hook.from
        );
    }
    let store_ok = store_line(&config);
    let (state, state_ok) = state_line(&config);
    let audit_ok = state.as_ref().is_none_or(|s| audit_health(s));
    let builtin = crate::runtime::builtin_tools(&config, None)?;
    match &builtin {
        Some(b) => println!(
            "workspace tools: served for {}",
            b.workspace().root().display()
        ),
        None => println!(
            "workspace tools: not served (give --workspace or \"workspace\" to serve them)"
        ),
    }
    let worker_ok = code_worker(&config);
    let launcher_ok = launcher_line();
    println!("containment layers for commands on this machine:");
    for entry in sandbox::probe().entries {
        println!("  {:<16} {:?}", format!("{:?}", entry.layer), entry.state);
    }
    for s in config.servers.iter().filter(|s| !s.sandbox.enabled) {
        println!(
            "  {}: NOT contained (\"sandbox\": {{\"enabled\": false}}): it runs with your rights",
            s.name
        );
    }
    if args.no_start {
        println!("upstreams: not started (--no-start)");
        return Ok(exit(
            store_ok && state_ok && audit_ok && worker_ok && launcher_ok,
        ));
    }
    let rt = crate::runtime::tokio()?;
    let healthy = rt.block_on(upstreams(&config, guard, state, builtin)) && audit_ok;
    Ok(exit(
        healthy && store_ok && state_ok && worker_ok && launcher_ok,
    ))
}

/// Where code mode's worker executable is, and whether it is there: the one the gateway starts
/// (`WorkerCommand::beside` the running executable). Missing, it fails the check in code mode and is noted in
/// direct mode (a profile may turn code mode on).
fn code_worker(config: &config::Config) -> bool {
    let Ok(exe) = std::env::current_exe() else {
        println!("code mode worker: cannot tell where toolgate runs from");
        return config.mode.value != config::Mode::Code;
    };
    let worker = codemode::WorkerCommand::beside(&exe).program;
    if worker.is_file() {
        println!("code mode worker: {}", worker.display());
        return true;
    }
    println!(
        "code mode worker: MISSING ({}): run_code cannot start a program; build it beside toolgate \
         (`cargo build -p toolgate`, or `cargo install --path crates/cli`)",
        worker.display()
    );
    config.mode.value != config::Mode::Code
}

/// How contained children start: through the launcher (named by its variable, or beside toolgate), or by
/// copying toolgate when there is none, which does not fail the check (containment is the same; each start
/// costs more and each tree's init holds a copy of toolgate's memory). A named launcher that is not there does.
fn launcher_line() -> bool {
    match sandbox::launcher() {
        Some(path) if path.is_file() => println!("sandbox launcher: {}", path.display()),
        Some(path) => {
            println!(
                "sandbox launcher: MISSING ({}, named by {}): every contained start will fail; correct or unset \
                 it",
                path.display(),
                sandbox::LAUNCHER_VAR
            );
            return false;
        }
        None => println!(
            "sandbox launcher: not found beside toolgate ({}): contained children start as copies of toolgate \
             (slower, and each tree's init holds a copy of toolgate's memory); build it with `cargo build -p \
             toolgate`",
            sandbox::LAUNCHER_EXE
        ),
    }
    true
}

fn exit(healthy: bool) -> ExitCode {
    if healthy {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(crate::runtime::EXIT_FAILURE)
    }
}

/// The store: its kind and, for PostgreSQL, where (never the password), its pool and deadlines, whether it
/// answers, and its schema version against the one this build needs. False when `serve` could not use it.
fn store_line(config: &config::Config) -> bool {
    let config::Store::Postgres(url, pool) = &config.store else {
        println!("store: sqlite in the state root (its schema moves on when opened)");
        return true;
    };
    println!("store: postgres {} ({})", url.value, url.from);
    println!(
        "  pool {} connections, connect timeout {} s, statement timeout {} s",
        pool.size,
        pool.connect_timeout.as_secs(),
        pool.statement_timeout.as_secs()
    );
    let options = crate::runtime::pg_options(pool);
    match store::PostgresStore::check_schema_with(url.value.expose(), options) {
        Ok(v) => {
            println!("  reachable, schema version {v} (the one this build needs)");
            true
        }
        Err(store::Error::SchemaBehind { found, needed }) => {
            println!(
                "  reachable, schema version {found}: BEHIND this build's {needed}; run `toolgate store migrate`"
            );
            false
        }
        Err(store::Error::SchemaTooNew { found, supported }) => {
            println!(
                "  reachable, schema version {found}: NEWER than this build's {supported}; upgrade toolgate"
            );
            false
        }
        Err(e) => {
            println!("  UNREACHABLE — {e}");
            false
        }
    }
}

/// The state `serve` would open, or why it would refuse to start.
fn state_line(config: &config::Config) -> (Option<Arc<gateway::State>>, bool) {
    match crate::runtime::serve_state(config) {
        Ok(Some(s)) => {
            println!(
                "state: {} (approvals, pins, audit, reporting)",
                s.namespace().dir().display()
            );
            (Some(s), true)
        }
        Ok(None) => (None, true),
        Err(e) => {
            println!(
                "state: REFUSED — serve would not start: {}",
                crate::runtime::error_chain(&e)
            );
            (None, false)
        }
    }
}

/// Each server entry: how it is started, which of its settings toolgate honours, which it only accepts, and the
/// servers it does not start. Values of env and headers are never shown, only their names.
fn server_entries(config: &config::Config) {
    if config.servers.is_empty() && config.disabled.is_empty() {
        return;
    }
    println!("servers in the config:");
    for s in &config.servers {
        let how = match &s.transport {
            config::Transport::Stdio { command, args, .. } => {
                let argv = std::iter::once(command).chain(args).cloned();
                format!(
                    "stdio  {}",
                    audit::redact(&argv.collect::<Vec<_>>().join(" "))
                )
            }
            config::Transport::Http { url, sse, .. } => {
                format!(
                    "{}  {}",
                    if *sse { "sse" } else { "http" },
                    audit::redact(url)
                )
            }
        };
        println!("  {:<16} {how}", s.name);
        let honoured = honoured(s);
        if !honoured.is_empty() {
            println!("      honoured: {}", honoured.join("; "));
        }
        for note in &s.notes {
            println!("      not honoured: {note}");
        }
    }
    for d in &config.disabled {
        println!("  {:<16} not started: {}", d.name, d.reason);
    }
}

/// Each credential: its server, where it goes, whom it is granted to and where its value is read from; never
/// the value.
fn credential_entries(config: &config::Config) {
    if config.credentials.is_empty() {
        return;
    }
    println!("credentials (values never shown):");
    for c in &config.credentials {
        let from = match &c.source {
            config::SecretSource::Value => "the config".to_owned(),
            config::SecretSource::File(path) => path.display().to_string(),
        };
        println!(
            "  {:<16} {} of {}, granted to {}, from {from}",
            c.name, c.target, c.server, c.grant
        );
    }
}

fn honoured(s: &config::ServerConfig) -> Vec<String> {
    let secs = |d: std::time::Duration| format!("{} s", d.as_secs_f64());
    let mut out = Vec::new();
    if let Some(t) = s.startup_timeout {
        out.push(format!("start-up timeout {}", secs(t)));
    }
    if let Some(t) = s.request_timeout {
        out.push(format!("call timeout {}", secs(t)));
    }
    if let Some(only) = &s.tools.enabled {
        out.push(format!("only tools {}", only.join(", ")));
    }
    if !s.tools.disabled.is_empty() {
        out.push(format!("never tools {}", s.tools.disabled.join(", ")));
    }
    match &s.transport {
        config::Transport::Stdio { env, cwd, .. } => {
            if !env.is_empty() {
                let names: Vec<&str> = env.keys().map(String::as_str).collect();
                out.push(format!("env {}", names.join(", ")));
            }
            if let Some(cwd) = cwd {
                out.push(format!("cwd {}", cwd.display()));
            }
        }
        config::Transport::Http { headers, .. } => {
            if !headers.is_empty() {
                let names: Vec<&str> = headers.keys().map(String::as_str).collect();
                out.push(format!("headers {}", names.join(", ")));
            }
        }
    }
    out
}

/// The audit line: the whole log verified against its witness, and whether records can be written now (calls are
/// refused while they cannot).
fn audit_health(state: &gateway::State) -> bool {
    let verified = match state.verify_audit() {
        Ok(report) => {
            println!("audit: {} — {report}", state.audit_log().path().display());
            report.is_ok()
        }
        Err(e) => {
            println!("audit: FAILED — {e}");
            false
        }
    };
    match state.audit_problem() {
        None => verified,
        Some(p) => {
            println!(
                "audit: FAILING — {p}; calls are refused until `toolgate audit recover` repairs it"
            );
            false
        }
    }
}

fn settings(config: &config::Config) {
    match &config.source {
        Some(p) => println!("config: {}", p.display()),
        None => println!("config: none (only toolgate's own tools are served)"),
    }
    let l = &config.limits;
    row(
        "separator",
        format!("{:?}", config.separator.value),
        &config.separator.from,
    );
    row(
        "prefixTools",
        config.prefix_tools.value,
        &config.prefix_tools.from,
    );
    row(
        "limits.maxMessageBytes",
        l.max_message_bytes.value,
        &l.max_message_bytes.from,
    );
    row("limits.maxDepth", l.max_depth.value, &l.max_depth.from);
    row(
        "limits.requestTimeoutSeconds",
        l.request_timeout.value.as_secs(),
        &l.request_timeout.from,
    );
    row(
        "limits.startupTimeoutSeconds",
        l.startup_timeout.value.as_secs(),
        &l.startup_timeout.from,
    );
    row("limits.pageSize", l.page_size.value, &l.page_size.from);
    let a = &config.approvals;
    row(
        "approvals.wait_seconds",
        a.wait.value.as_secs(),
        &a.wait.from,
    );
    row(
        "approvals.expire_seconds",
        a.expire.value.as_secs(),
        &a.expire.from,
    );
    row(
        "approvals.elicitation",
        a.elicitation.value,
        &a.elicitation.from,
    );
    row(
        "approvals.elicitation_for_writes",
        a.elicitation_for_writes.value,
        &a.elicitation_for_writes.from,
    );
    match &config.workspace {
        Some(w) => row("workspace", w.value.display(), &w.from),
        None => println!(
            "  {:<30} none (the current directory stands in for state)",
            "workspace"
        ),
    }
    if let Some(s) = &config.state_dir {
        row("stateDir", s.value.display(), &s.from);
    }
    println!(
        "upstream environment passes through only: {}",
        config::UPSTREAM_ENV_ALLOWLIST.join(", ")
    );
}

/// The entry to give a client, with everything absolute: clients start servers in a directory of their choosing
/// and with a trimmed environment, so a relative command, config or workspace, or a state directory taken from
/// the environment, would be another toolgate's.
fn client_entry(config: &config::Config) {
    let exe = crate::runtime::self_exe()
        .map_or_else(|| "toolgate".to_owned(), |p| p.display().to_string());
    let mut args = vec!["serve".to_owned()];
    if let Some(c) = config
        .source
        .as_ref()
        .and_then(|c| std::fs::canonicalize(c).ok())
    {
        args.extend(["--config".to_owned(), c.display().to_string()]);
    }
    if let Ok(w) = crate::runtime::workspace(config) {
        args.extend(["--workspace".to_owned(), w.display().to_string()]);
    }
    let entry = serde_json::json!({"mcpServers": {"toolgate": {"command": exe, "args": args}}});
    println!("client entry (paste into the client's MCP config):");
    println!("  {entry}");
    let quoted: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    println!(
        "  Claude Code: claude mcp add toolgate -- {exe:?} {}",
        quoted.join(" ")
    );
    match (&config.state_dir, crate::runtime::state_root(config)) {
        (Some(dir), _) => println!("  state: {} (named by the config)", dir.value.display()),
        (None, Ok(dir)) => println!(
            "  state: {} (from this environment; a client that trims it would use another: set \"stateDir\" \
             in the config)",
            dir.display()
        ),
        (None, Err(e)) => println!("  state: unknown ({e})"),
    }
}
