//! Reading and validating a config file. Parse first (TOML or JSON into one JSON tree), then validate each known
//! section into the typed `Config`, recording provenance. Top-level keys toolgate does not know are a client's
//! own settings: they are ignored with a warning, unless they look like a misspelt toolgate key.

use crate::error::{ConfigError, Result};
use crate::expand::expand;
use crate::model::{
    Config, HookCommand, HookStage, Protocol, Provenance, Sandbox, SandboxLimits, ServerConfig,
    ServerKind, Setting, Transport, DEFAULT_HOOK_TIMEOUT, FIXTURE_SUBCOMMAND, SANDBOX_LAYERS,
};
use crate::raw::{
    RawApprovals, RawHook, RawHooks, RawLimits, RawPins, RawSandbox, RawSandboxLimits, RawServer,
};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    Toml,
}

/// Values given on the command line; they win over the file.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    pub workspace: Option<PathBuf>,
    /// toolgate's own executable, canonical, so a config that would spawn toolgate as an upstream is refused.
    pub self_exe: Option<PathBuf>,
    /// `--profile`.
    pub profile: Option<String>,
}

/// Sections reserved for features that this version does not enforce yet. Accepting them silently would let a
/// user believe a deny rule is active when it is not, so they are refused.
const NOT_YET: &[(&str, &str)] = &[];

const KNOWN: &[&str] = &[
    "pins",
    "sandbox",
    "stateDir",
    "state_dir",
    "approvals",
    "permissions",
    "policy",
    "profiles",
    "profile",
    "mcpServers",
    "mcp_servers",
    "separator",
    "prefixTools",
    "prefix_tools",
    "limits",
    "workspace",
    "hooks",
];

/// Reads and validates the config file at `path`; the format follows the extension (`.toml`, else JSON).
pub fn load(
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    overrides: &Overrides,
) -> Result<Config> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        source,
    })?;
    let format = match path.extension().and_then(|e| e.to_str()) {
        Some(e) if e.eq_ignore_ascii_case("toml") => Format::Toml,
        _ => Format::Json,
    };
    parse_str(&text, format, path, env, overrides)
}

/// Validates config text. `origin` is used in messages and provenance.
pub fn parse_str(
    text: &str,
    format: Format,
    origin: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    overrides: &Overrides,
) -> Result<Config> {
    let tree: Value = match format {
        Format::Json => serde_json::from_str(text).map_err(|e| ConfigError::Syntax {
            path: origin.display().to_string(),
            format: "JSON",
            message: e.to_string(),
        })?,
        Format::Toml => toml::from_str(text).map_err(|e| ConfigError::Syntax {
            path: origin.display().to_string(),
            format: "TOML",
            message: e.message().to_owned(),
        })?,
    };
    let Value::Object(top) = tree else {
        return Err(ConfigError::invalid(
            "(top level)",
            "the config must be an object/table",
        ));
    };
    Validator {
        origin,
        env,
        overrides,
        config: Config::empty(),
    }
    .run(top)
}

struct Validator<'a> {
    origin: &'a Path,
    env: &'a dyn Fn(&str) -> Option<String>,
    overrides: &'a Overrides,
    config: Config,
}

impl Validator<'_> {
    fn provenance(&self, key: &str) -> Provenance {
        Provenance::File {
            path: self.origin.to_owned(),
            key: key.to_owned(),
        }
    }

    fn run(mut self, top: Map<String, Value>) -> Result<Config> {
        let mut servers = None;
        for (key, value) in top {
            if let Some((_, why)) = NOT_YET.iter().find(|(k, _)| *k == key) {
                return Err(ConfigError::NotYetSupported { key, why });
            }
            match key.as_str() {
                "mcpServers" | "mcp_servers" => {
                    if servers.is_some() {
                        return Err(ConfigError::invalid(
                            key,
                            "give either mcpServers or mcp_servers, not both",
                        ));
                    }
                    servers = Some((key, value));
                }
                "separator" => self.separator(value)?,
                "prefixTools" | "prefix_tools" => {
                    let v = value
                        .as_bool()
                        .ok_or_else(|| ConfigError::invalid(&key, "must be true or false"))?;
                    self.config.prefix_tools = Setting {
                        value: v,
                        from: self.provenance(&key),
                    };
                }
                "limits" => self.limits(value)?,
                "approvals" => self.approvals(value)?,
                "sandbox" => self.sandbox(value)?,
                "pins" => {
                    let raw: RawPins = section(value, "pins")?;
                    self.config.pins_on_change_ask = match raw.on_change.as_deref() {
                        None | Some("hide") => false,
                        Some("ask") => true,
                        Some(other) => {
                            return Err(ConfigError::invalid(
                                "pins.onChange",
                                format!("{other:?} is not one of \"hide\", \"ask\""),
                            ))
                        }
                    };
                    self.config.pins_accept_new_tools = match raw.new_tools.as_deref() {
                        None | Some("hold") => false,
                        Some("accept") => true,
                        Some(other) => {
                            return Err(ConfigError::invalid(
                                "pins.newTools",
                                format!("{other:?} is not one of \"hold\", \"accept\""),
                            ))
                        }
                    };
                }
                "hooks" => self.hooks(value)?,
                "stateDir" | "state_dir" => {
                    let s = value
                        .as_str()
                        .ok_or_else(|| ConfigError::invalid(&key, "must be a path"))?;
                    let s = expand(s, &key, self.env)?;
                    if !Path::new(&s).is_absolute() {
                        return Err(ConfigError::invalid(&key, "must be an absolute path"));
                    }
                    self.config.state_dir = Some(Setting {
                        value: PathBuf::from(s),
                        from: self.provenance(&key),
                    });
                }
                "permissions" | "policy" | "profiles" => self.policy_section(&key, value)?,
                "profile" => {
                    let p = value
                        .as_str()
                        .ok_or_else(|| ConfigError::invalid("profile", "must be a profile name"))?;
                    self.config.profile = Some(Setting {
                        value: p.to_owned(),
                        from: self.provenance("profile"),
                    });
                }
                "workspace" => {
                    let s = value
                        .as_str()
                        .ok_or_else(|| ConfigError::invalid("workspace", "must be a path"))?;
                    let s = expand(s, "workspace", self.env)?;
                    self.config.workspace = Some(Setting {
                        value: PathBuf::from(s),
                        from: self.provenance("workspace"),
                    });
                }
                _ => self.unknown_top_level(key)?,
            }
        }
        if let Some((key, value)) = servers {
            self.servers(&key, value)?;
        }
        if let Some(p) = &self.overrides.profile {
            self.config.profile = Some(Setting {
                value: p.clone(),
                from: Provenance::Flag("--profile"),
            });
        }
        if let Some(ws) = &self.overrides.workspace {
            self.config.workspace = Some(Setting {
                value: ws.clone(),
                from: Provenance::Flag("--workspace"),
            });
        }
        self.config.source = Some(self.origin.to_owned());
        Ok(self.config)
    }

    fn unknown_top_level(&mut self, key: String) -> Result<()> {
        let squash = |s: &str| s.to_ascii_lowercase().replace(['_', '-'], "");
        if let Some(known) = KNOWN
            .iter()
            .chain(NOT_YET.iter().map(|(k, _)| k))
            .find(|k| squash(k) == squash(&key))
        {
            return Err(ConfigError::UnknownKey {
                key,
                hint: format!(" (did you mean {known}?)"),
            });
        }
        self.config.warnings.push(format!(
            "ignoring top-level key {key:?}: not a toolgate setting"
        ));
        Ok(())
    }

    /// Kept as written: the policy stage parses, validates and explains these sections.
    fn policy_section(&mut self, key: &str, value: Value) -> Result<()> {
        if !value.is_object() {
            return Err(ConfigError::invalid(key, "must be an object/table"));
        }
        let slot = match key {
            "permissions" => &mut self.config.policy.permissions,
            "policy" => &mut self.config.policy.policy,
            _ => &mut self.config.policy.profiles,
        };
        *slot = Some(value);
        Ok(())
    }

    fn separator(&mut self, value: Value) -> Result<()> {
        let sep = value
            .as_str()
            .ok_or_else(|| ConfigError::invalid("separator", "must be a string"))?;
        let ok = !sep.is_empty() && sep.len() <= 4 && sep.chars().all(|c| c == '_' || c == '-');
        if !ok {
            return Err(ConfigError::invalid(
                "separator",
                "must be 1 to 4 characters of '_' and '-', so exposed names stay valid for every model API",
            ));
        }
        self.config.separator = Setting {
            value: sep.to_owned(),
            from: self.provenance("separator"),
        };
        Ok(())
    }

    fn sandbox(&mut self, value: Value) -> Result<()> {
        let raw: RawSandbox = section(value, "sandbox")?;
        if let Some(bad) = raw
            .require
            .iter()
            .find(|l| !SANDBOX_LAYERS.contains(&l.as_str()))
        {
            return Err(ConfigError::invalid(
                "sandbox.require",
                format!("{bad:?} is not one of {}", SANDBOX_LAYERS.join(", ")),
            ));
        }
        if let Some(layer) = raw
            .require
            .iter()
            .find(|l| raw.network && (*l == "no_network" || *l == "socket_filter"))
        {
            return Err(ConfigError::invalid(
                "sandbox",
                format!("network: true contradicts requiring {layer}"),
            ));
        }
        let limits = sandbox_limits(raw.limits)?;
        self.config.sandbox = Sandbox {
            require: raw.require,
            network: raw.network,
            limits,
        };
        Ok(())
    }

    fn approvals(&mut self, value: Value) -> Result<()> {
        let raw: RawApprovals = section(value, "approvals")?;
        let file = |k: &str| Provenance::File {
            path: self.origin.to_owned(),
            key: format!("approvals.{k}"),
        };
        let a = &mut self.config.approvals;
        if let Some(v) = raw.wait_seconds {
            check_range("approvals.wait_seconds", v, 0, 3_600)?;
            a.wait = Setting {
                value: Duration::from_secs(v),
                from: file("wait_seconds"),
            };
        }
        if let Some(v) = raw.expire_seconds {
            check_range("approvals.expire_seconds", v, 10, 7 * 86_400)?;
            a.expire = Setting {
                value: Duration::from_secs(v),
                from: file("expire_seconds"),
            };
        }
        if let Some(v) = raw.elicitation {
            a.elicitation = Setting {
                value: v,
                from: file("elicitation"),
            };
        }
        if let Some(v) = raw.elicitation_for_writes {
            a.elicitation_for_writes = Setting {
                value: v,
                from: file("elicitation_for_writes"),
            };
        }
        Ok(())
    }

    fn hooks(&mut self, value: Value) -> Result<()> {
        let raw: RawHooks = section(value, "hooks")?;
        let pre = self.hook_list(HookStage::Pre, raw.pre)?;
        let post = self.hook_list(HookStage::Post, raw.post)?;
        self.config.hooks = crate::model::Hooks { pre, post };
        Ok(())
    }

    fn hook_list(&self, stage: HookStage, raw: Vec<Value>) -> Result<Vec<HookCommand>> {
        let list = match stage {
            HookStage::Pre => "pre",
            HookStage::Post => "post",
        };
        raw.into_iter()
            .enumerate()
            .map(|(index, h)| {
                let at = format!("hooks.{list}[{index}]");
                let h: RawHook = section(h, &at)?;
                let command = expand(&h.command, &format!("{at}.command"), self.env)?;
                if command.trim().is_empty() {
                    return Err(ConfigError::invalid(
                        format!("{at}.command"),
                        "must not be empty",
                    ));
                }
                let args = h
                    .args
                    .iter()
                    .enumerate()
                    .map(|(i, a)| expand(a, &format!("{at}.args[{i}]"), self.env))
                    .collect::<Result<Vec<_>>>()?;
                let timeout = match h.timeout_seconds {
                    Some(v) => {
                        check_range(&format!("{at}.timeout_seconds"), v, 1, 600)?;
                        Duration::from_secs(v)
                    }
                    None => DEFAULT_HOOK_TIMEOUT,
                };
                // An empty glob, or an empty list, is more likely a mistake than a wish to hook nothing.
                let tools = match h.tools {
                    Some(t) if t.is_empty() || t.iter().any(|g| g.trim().is_empty()) => {
                        return Err(ConfigError::invalid(
                            format!("{at}.tools"),
                            "give non-empty globs, or leave tools out to hook every tool",
                        ))
                    }
                    t => t.unwrap_or_default(),
                };
                Ok(HookCommand {
                    stage,
                    index,
                    command,
                    args,
                    timeout,
                    tools,
                    arguments: h.arguments,
                    from: self.provenance(&at),
                })
            })
            .collect()
    }

    fn limits(&mut self, value: Value) -> Result<()> {
        let raw: RawLimits = section(value, "limits")?;
        let limits = &mut self.config.limits;
        let file = |k: &str| Provenance::File {
            path: self.origin.to_owned(),
            key: format!("limits.{k}"),
        };
        if let Some(v) = raw.max_message_bytes {
            check_range("limits.maxMessageBytes", v, 1024, 1 << 30)?;
            limits.max_message_bytes = Setting {
                value: v,
                from: file("maxMessageBytes"),
            };
        }
        if let Some(v) = raw.max_depth {
            check_range("limits.maxDepth", v, 4, 120)?;
            limits.max_depth = Setting {
                value: v,
                from: file("maxDepth"),
            };
        }
        if let Some(v) = raw.request_timeout_seconds {
            check_range("limits.requestTimeoutSeconds", v, 1, 86_400)?;
            limits.request_timeout = Setting {
                value: Duration::from_secs(v),
                from: file("requestTimeoutSeconds"),
            };
        }
        if let Some(v) = raw.startup_timeout_seconds {
            check_range("limits.startupTimeoutSeconds", v, 1, 3_600)?;
            limits.startup_timeout = Setting {
                value: Duration::from_secs(v),
                from: file("startupTimeoutSeconds"),
            };
        }
        if let Some(v) = raw.page_size {
            check_range("limits.pageSize", v, 1, 10_000)?;
            limits.page_size = Setting {
                value: v,
                from: file("pageSize"),
            };
        }
        Ok(())
    }

    fn servers(&mut self, key: &str, value: Value) -> Result<()> {
        let Value::Object(entries) = value else {
            return Err(ConfigError::invalid(
                key,
                "must be an object of server name to server entry",
            ));
        };
        for (name, entry) in entries {
            let at = format!("{key}.{name}");
            check_server_name(&at, &name)?;
            if name.eq_ignore_ascii_case("toolgate") {
                return Err(ConfigError::invalid(
                    at,
                    "\"toolgate\" is reserved for toolgate's own tools in rules",
                ));
            }
            let raw: RawServer = section(entry, &at)?;
            if raw.disabled {
                self.config
                    .warnings
                    .push(format!("{at} is disabled and will not be started"));
                continue;
            }
            let server = self.server(&at, name, raw)?;
            self.config.servers.push(server);
        }
        Ok(())
    }

    fn server(&self, at: &str, name: String, raw: RawServer) -> Result<ServerConfig> {
        let env = self.env;
        let protocol = match raw.protocol.as_deref() {
            None | Some("auto") => Protocol::Auto,
            Some("legacy") => Protocol::Legacy,
            Some("modern") => Protocol::Modern,
            Some(other) => {
                return Err(ConfigError::invalid(
                    format!("{at}.protocol"),
                    format!("{other:?} is not one of \"auto\", \"legacy\", \"modern\""),
                ))
            }
        };
        let transport = match (raw.kind.as_deref(), &raw.command, &raw.url) {
            (None | Some("stdio"), Some(command), None) => {
                if !raw.headers.is_empty() {
                    return Err(ConfigError::invalid(
                        format!("{at}.headers"),
                        "only HTTP servers take headers",
                    ));
                }
                let args = raw
                    .args
                    .iter()
                    .enumerate()
                    .map(|(i, a)| expand(a, &format!("{at}.args[{i}]"), env))
                    .collect::<Result<Vec<_>>>()?;
                let vars = raw
                    .env
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), expand(v, &format!("{at}.env.{k}"), env)?)))
                    .collect::<Result<_>>()?;
                let command = expand(command, &format!("{at}.command"), env)?;
                if command.trim().is_empty() {
                    return Err(ConfigError::invalid(
                        format!("{at}.command"),
                        "must not be empty",
                    ));
                }
                self.refuse_self(at, &command, &args)?;
                let cwd = raw
                    .cwd
                    .as_deref()
                    .map(|c| expand(c, &format!("{at}.cwd"), env))
                    .transpose()?;
                Transport::Stdio {
                    command,
                    args,
                    env: vars,
                    cwd: cwd.map(PathBuf::from),
                }
            }
            (None | Some("http") | Some("streamable-http") | Some("sse"), None, Some(url)) => {
                if raw.kind.as_deref() == Some("sse") {
                    return Err(ConfigError::invalid(
                        format!("{at}.type"),
                        "the deprecated HTTP+SSE transport is not supported; use \"http\" (Streamable HTTP)",
                    ));
                }
                if !raw.args.is_empty() || !raw.env.is_empty() || raw.cwd.is_some() {
                    return Err(ConfigError::invalid(
                        at,
                        "an HTTP server takes url and headers, not args/env/cwd",
                    ));
                }
                let url = expand(url, &format!("{at}.url"), env)?;
                check_url(&format!("{at}.url"), &url)?;
                let headers = raw
                    .headers
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), expand(v, &format!("{at}.headers.{k}"), env)?)))
                    .collect::<Result<_>>()?;
                Transport::Http { url, headers }
            }
            (Some(kind @ ("stdio" | "http" | "streamable-http")), _, _) => {
                let need = if kind == "stdio" {
                    "command (and no url)"
                } else {
                    "url (and no command)"
                };
                return Err(ConfigError::invalid(
                    at,
                    format!("a {kind:?} server needs {need}"),
                ));
            }
            (Some(kind), _, _) => {
                return Err(ConfigError::invalid(
                    format!("{at}.type"),
                    format!("{kind:?} is not one of \"stdio\", \"http\""),
                ))
            }
            (None, Some(_), Some(_)) => {
                return Err(ConfigError::invalid(
                    at,
                    "give either command (stdio) or url (http), not both",
                ))
            }
            (None, None, None) => {
                return Err(ConfigError::invalid(
                    at,
                    "needs command (stdio) or url (http)",
                ))
            }
        };
        let kind = match raw.kind_of_server.as_deref() {
            None => recognise_kind(&transport),
            Some("filesystem") => ServerKind::Filesystem,
            Some("git") => ServerKind::Git,
            Some("fetch") => ServerKind::Fetch,
            Some("generic") => ServerKind::Generic,
            Some(other) => {
                return Err(ConfigError::invalid(
                    format!("{at}.kind"),
                    format!(
                        "{other:?} is not one of \"filesystem\", \"git\", \"fetch\", \"generic\""
                    ),
                ))
            }
        };
        let request_timeout = match raw.request_timeout_seconds {
            Some(v) => {
                check_range(&format!("{at}.requestTimeoutSeconds"), v, 1, 86_400)?;
                Some(Duration::from_secs(v))
            }
            None => None,
        };
        Ok(ServerConfig {
            name,
            transport,
            protocol,
            kind,
            request_timeout,
        })
    }

    /// Refuses an upstream that would start toolgate itself: each copy would start the next.
    fn refuse_self(&self, at: &str, command: &str, args: &[String]) -> Result<()> {
        if args.first().map(String::as_str) == Some(FIXTURE_SUBCOMMAND) {
            return Ok(());
        }
        let base = Path::new(command)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or(command);
        let same_binary = match (&self.overrides.self_exe, resolve_command(command, self.env)) {
            (Some(me), Some(it)) => std::fs::canonicalize(it).is_ok_and(|it| &it == me),
            _ => false,
        };
        if base == "toolgate" || same_binary {
            return Err(ConfigError::invalid(
                format!("{at}.command"),
                "this upstream is toolgate itself; refusing to start it (each copy would start the next)",
            ));
        }
        Ok(())
    }
}

/// Well-known servers are recognised by the package their command runs (`npx -y @modelcontextprotocol/server-filesystem
/// …`, `uvx mcp-server-git`), never by the names of the tools they list: a hostile server must not borrow a
/// filesystem rule by naming its tool `read_file`.
fn recognise_kind(transport: &Transport) -> ServerKind {
    let Transport::Stdio { command, args, .. } = transport else {
        return ServerKind::Generic;
    };
    let argv: Vec<String> = std::iter::once(command).chain(args).cloned().collect();
    match policy::ServerKind::from_launch_command(&argv) {
        Some(policy::ServerKind::Filesystem) => ServerKind::Filesystem,
        Some(policy::ServerKind::Git) => ServerKind::Git,
        Some(policy::ServerKind::Fetch) => ServerKind::Fetch,
        Some(policy::ServerKind::Toolgate) | None => ServerKind::Generic,
    }
}

/// `sandbox.limits` over the finite defaults. Zero is refused rather than read as "no limit": a limit may be
/// raised, never switched off.
fn sandbox_limits(raw: Option<RawSandboxLimits>) -> Result<SandboxLimits> {
    let mut limits = SandboxLimits::default();
    let Some(raw) = raw else {
        return Ok(limits);
    };
    for (key, value, slot) in [
        ("cpuSeconds", raw.cpu_seconds, &mut limits.cpu_seconds),
        (
            "addressSpaceBytes",
            raw.address_space_bytes,
            &mut limits.address_space_bytes,
        ),
        (
            "fileSizeBytes",
            raw.file_size_bytes,
            &mut limits.file_size_bytes,
        ),
        ("processes", raw.processes, &mut limits.processes),
        ("openFiles", raw.open_files, &mut limits.open_files),
    ] {
        match value {
            Some(0) => {
                return Err(ConfigError::invalid(
                    format!("sandbox.limits.{key}"),
                    "must be a positive number (limits cannot be switched off)",
                ))
            }
            Some(v) => *slot = v,
            None => {}
        }
    }
    Ok(limits)
}

fn section<T: serde::de::DeserializeOwned>(value: Value, at: &str) -> Result<T> {
    serde_json::from_value(value).map_err(|e| {
        let msg = e.to_string();
        match msg
            .strip_prefix("unknown field `")
            .and_then(|r| r.split_once('`'))
        {
            Some((field, rest)) => ConfigError::UnknownKey {
                key: format!("{at}.{field}"),
                hint: format!(" ({})", rest.trim_start_matches(", ")),
            },
            None => ConfigError::invalid(at, msg),
        }
    })
}

fn check_range<T: PartialOrd + std::fmt::Display>(key: &str, v: T, lo: T, hi: T) -> Result<()> {
    if v < lo || v > hi {
        return Err(ConfigError::invalid(
            key,
            format!("{v} is outside {lo}..={hi}"),
        ));
    }
    Ok(())
}

/// Letters and digits, with single `-` or `_` between them: `files`, `my-git`, `jira_cloud`.
fn check_server_name(at: &str, name: &str) -> Result<()> {
    let mut prev_sep = true;
    let mut ok = !name.is_empty() && name.len() <= 48;
    for c in name.chars() {
        let sep = c == '-' || c == '_';
        ok &= c.is_ascii_alphanumeric() || (sep && !prev_sep);
        prev_sep = sep;
    }
    if !ok || prev_sep {
        return Err(ConfigError::invalid(
            at,
            "a server name is 1-48 letters and digits with single '-' or '_' between them",
        ));
    }
    Ok(())
}

fn check_url(at: &str, url: &str) -> Result<()> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    let host = rest.map(|r| r.split(['/', '?', '#']).next().unwrap_or(""));
    match host {
        Some(h) if !h.is_empty() && !h.contains(char::is_whitespace) => Ok(()),
        _ => Err(ConfigError::invalid(
            at,
            "must be an http:// or https:// URL with a host",
        )),
    }
}

/// Finds `command` the way `execvp` would, on the `PATH` toolgate sees.
fn resolve_command(command: &str, env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    if command.contains('/') {
        return Some(PathBuf::from(command));
    }
    let path = env("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(command))
        .find(|p| p.is_file())
}

#[cfg(test)]
#[path = "load_tests.rs"]
mod tests;
