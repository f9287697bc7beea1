//! One server entry, as any client writes it: Claude Desktop and Claude Code (`mcpServers`), Cursor (`envFile`,
//! `${env:…}`), VS Code (`servers`, `inputs`, `${workspaceFolder}`) and Codex (`[mcp_servers.NAME]` with its
//! timeouts, tool lists and HTTP header variables).
//!
//! Each documented key is honoured where toolgate can (timeouts, enabled, tool filters, env files) and otherwise
//! accepted and kept as a note for `doctor`, so a file that loads in its client loads here. A key no client
//! documents is refused when it looks like a misspelling of one, and reported otherwise. This module does not
//! start anything.

use crate::error::{ConfigError, Result};
use crate::expand::expand;
use crate::keys::{Verdict, SERVER};
use crate::load::{check_range, section, Validator};
use crate::model::{
    DisabledServer, Protocol, ServerConfig, ServerKind, ServerSandbox, ToolFilter, Transport,
    FIXTURE_SUBCOMMAND, SANDBOX_LAYERS,
};
use crate::raw::{RawServer, RawServerSandbox};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

mod transport;

impl Validator<'_> {
    pub(crate) fn servers(&mut self, key: &str, value: Value) -> Result<()> {
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
            if raw.disabled || raw.enabled == Some(false) {
                let key = if raw.disabled {
                    "\"disabled\": true"
                } else {
                    "enabled = false"
                };
                self.not_started(&at, name, format!("disabled in the config ({key})"));
                continue;
            }
            match self.server(&at, name.clone(), raw) {
                Ok(server) => self.config.servers.push(server),
                // Only the client could answer this reference: the server is left out, loudly, never started
                // with a guessed value.
                Err(e @ ConfigError::Unresolvable { .. }) => {
                    self.not_started(&at, name, e.to_string())
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn not_started(&mut self, at: &str, name: String, reason: String) {
        self.config
            .warnings
            .push(format!("{at} is not started: {reason}"));
        self.config.disabled.push(DisabledServer { name, reason });
    }

    fn server(&mut self, at: &str, name: String, raw: RawServer) -> Result<ServerConfig> {
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
        let mut notes = self.client_only_keys(at, &raw.other)?;
        let transport = self.transport(at, &raw, &mut notes)?;
        let sandbox = self.server_sandbox(at, raw.sandbox.clone(), &transport)?;
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
        let request_timeout = match (raw.request_timeout_seconds, raw.tool_timeout_sec) {
            (Some(_), Some(_)) => {
                return Err(ConfigError::invalid(
                    at,
                    "give either requestTimeoutSeconds or tool_timeout_sec, not both",
                ))
            }
            (Some(v), None) => Some(seconds(
                &format!("{at}.requestTimeoutSeconds"),
                v as f64,
                86_400,
            )?),
            (None, Some(v)) => Some(seconds(&format!("{at}.tool_timeout_sec"), v, 86_400)?),
            (None, None) => None,
        };
        let startup_timeout = match (raw.startup_timeout_sec, raw.startup_timeout_ms) {
            (Some(_), Some(_)) => {
                return Err(ConfigError::invalid(
                    at,
                    "give either startup_timeout_sec or startup_timeout_ms, not both",
                ))
            }
            (Some(v), None) => Some(seconds(&format!("{at}.startup_timeout_sec"), v, 3_600)?),
            (None, Some(ms)) => Some(seconds(
                &format!("{at}.startup_timeout_ms"),
                ms as f64 / 1000.0,
                3_600,
            )?),
            (None, None) => None,
        };
        let tools = ToolFilter {
            enabled: raw.enabled_tools.clone(),
            disabled: raw.disabled_tools.clone(),
        };
        let listed = tools.enabled.iter().flatten().chain(&tools.disabled);
        if listed.into_iter().any(|t| t.trim().is_empty()) {
            return Err(ConfigError::invalid(
                at,
                "enabled_tools and disabled_tools take tool names, not empty strings",
            ));
        }
        Ok(ServerConfig {
            name,
            transport,
            protocol,
            kind,
            request_timeout,
            startup_timeout,
            tools,
            notes,
            sandbox,
        })
    }

    /// The entry's `"sandbox"`: containment is on unless it says `"enabled": false`. A layer it requires must
    /// be one the section asks for, so that no requirement is silently void.
    fn server_sandbox(
        &self,
        at: &str,
        value: Option<Value>,
        transport: &Transport,
    ) -> Result<ServerSandbox> {
        let key = format!("{at}.sandbox");
        let Transport::Stdio { command, .. } = transport else {
            return match value {
                Some(_) => Err(ConfigError::invalid(
                    key,
                    "an HTTP server is not a process toolgate starts: there is nothing to contain",
                )),
                None => Ok(ServerSandbox::default()),
            };
        };
        let raw: RawServerSandbox = match value {
            Some(v) => section(v, &key)?,
            None => section(Value::Object(Default::default()), &key)?,
        };
        let enabled = raw.enabled.unwrap_or(true);
        let network = raw.network.unwrap_or(true);
        // The docker and podman clients talk to their daemon over its unix socket.
        let base = Path::new(command).file_name().and_then(|n| n.to_str());
        let container_client = matches!(base, Some("docker" | "podman"));
        let unix_sockets = raw.unix_sockets.unwrap_or(container_client);
        if let Some(bad) = raw
            .require
            .iter()
            .find(|l| !SANDBOX_LAYERS.contains(&l.as_str()))
        {
            return Err(ConfigError::invalid(
                format!("{key}.require"),
                format!("{bad:?} is not one of {}", SANDBOX_LAYERS.join(", ")),
            ));
        }
        let contradiction = raw.require.iter().find(|l| match l.as_str() {
            _ if !enabled => true,
            "no_network" => network,
            "socket_filter" => unix_sockets,
            _ => false,
        });
        if let Some(layer) = contradiction {
            let why = if !enabled {
                "\"enabled\": false".to_owned()
            } else if layer == "no_network" {
                "\"network\": true (the default)".to_owned()
            } else {
                "\"unixSockets\": true".to_owned()
            };
            return Err(ConfigError::invalid(
                key,
                format!("{why} contradicts requiring {layer}"),
            ));
        }
        let vars = self.vars();
        let base_dir = self.origin.parent().unwrap_or(Path::new(""));
        let writable = raw
            .writable
            .iter()
            .enumerate()
            .map(|(i, w)| {
                let path = PathBuf::from(expand(w, &format!("{key}.writable[{i}]"), &vars)?);
                Ok(if path.is_absolute() {
                    path
                } else {
                    base_dir.join(path)
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(ServerSandbox {
            enabled,
            network,
            unix_sockets,
            writable,
            require: raw.require,
        })
    }

    /// Other clients' keys become notes; a near miss of a key toolgate reads is refused, so a misspelt
    /// `disabled_tool` cannot quietly leave a tool on.
    fn client_only_keys(
        &mut self,
        at: &str,
        other: &BTreeMap<String, Value>,
    ) -> Result<Vec<String>> {
        let mut notes = Vec::new();
        for key in other.keys() {
            match SERVER.judge(key) {
                Verdict::Foreign { why, .. } => notes.push(format!("{key}: {why}")),
                Verdict::Misspelt(near) => {
                    return Err(ConfigError::UnknownKey {
                        key: format!("{at}.{key}"),
                        hint: format!(" (did you mean {near}?)"),
                    })
                }
                Verdict::Read | Verdict::Unknown => {
                    notes.push(format!(
                        "{key}: not a key toolgate or a known client reads; ignored"
                    ));
                    self.config.warnings.push(format!(
                        "ignoring {at}.{key}: not a key toolgate or a known client reads"
                    ));
                }
            }
        }
        Ok(notes)
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
        if SELF_NAMES.contains(&base) || same_binary {
            return Err(ConfigError::invalid(
                format!("{at}.command"),
                "this upstream is toolgate itself; refusing to start it (each copy would start the next)",
            ));
        }
        // toolscript-mcp's own config names toolscript-mcp under a runner (`node …/toolscript-mcp/dist/host/
        // main.js`, `npx -y toolscript-mcp`); read by toolgate, that entry would start another code-mode server
        // from the same file, which would start the next.
        if let Some(arg) = args.iter().take(4).find(|a| runs_toolscript(a)) {
            return Err(ConfigError::invalid(
                format!("{at}.args"),
                format!(
                    "{arg:?} starts toolscript-mcp, which this file configures; refusing to start it from its \
                     own config (each copy would start the next)"
                ),
            ));
        }
        Ok(())
    }
}

/// The names toolgate answers to: its own and the products' it speaks as when installed or linked under theirs.
const SELF_NAMES: &[&str] = &[
    "toolgate",
    "toolfence",
    "mcp-toolhub",
    "mcp-toolhub-admin",
    "mcp-unified-gateway",
    "toolscript-mcp",
];

/// Whether a runner's argument is toolscript-mcp: its package (`toolscript-mcp`, `toolscript-mcp@0.1`) or a script
/// inside a checkout or install of it (`…/toolscript-mcp/dist/host/main.js`).
fn runs_toolscript(arg: &str) -> bool {
    let unversioned = match arg.strip_prefix('@') {
        Some(scoped) => scoped.split('@').next(),
        None => arg.split('@').next(),
    };
    if unversioned.and_then(|p| p.rsplit('/').next()) == Some("toolscript-mcp") {
        return true;
    }
    let path = Path::new(arg);
    let script = path
        .extension()
        .is_some_and(|e| e == "js" || e == "mjs" || e == "cjs");
    script && path.components().any(|c| c.as_os_str() == "toolscript-mcp")
}

/// A timeout in (possibly fractional) seconds, within 1 ms..=`max_secs`.
fn seconds(key: &str, v: f64, max_secs: u64) -> Result<Duration> {
    if !v.is_finite() || v < 0.001 {
        return Err(ConfigError::invalid(
            key,
            "must be a positive number of seconds",
        ));
    }
    check_range(key, v, 0.001, max_secs as f64)?;
    Ok(Duration::from_secs_f64(v))
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
#[path = "server_tests.rs"]
mod tests;
