//! The sections of a config file that are more than a setting or two: the separator, `sandbox`, `approvals`,
//! `hooks` and `limits`, each validated into the typed `Config` with where each value came from.

use super::{check_range, section, Validator};
use crate::error::{ConfigError, Result};
use crate::expand::expand;
use crate::model::{
    HookCommand, HookStage, Provenance, Sandbox, SandboxLimits, Setting, DEFAULT_HOOK_TIMEOUT,
    SANDBOX_LAYERS,
};
use crate::raw::{RawApprovals, RawHook, RawHooks, RawLimits, RawSandbox, RawSandboxLimits};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

impl Validator<'_> {
    pub(super) fn separator(&mut self, value: Value) -> Result<()> {
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

    pub(super) fn sandbox(&mut self, value: Value) -> Result<()> {
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
        self.code_sandbox(raw.timeout_seconds, raw.node)?;
        let limits = sandbox_limits(raw.limits)?;
        self.config.sandbox = Sandbox {
            require: raw.require,
            network: raw.network,
            limits,
        };
        Ok(())
    }

    pub(super) fn approvals(&mut self, value: Value) -> Result<()> {
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

    pub(super) fn hooks(&mut self, value: Value) -> Result<()> {
        let raw: RawHooks = section(value, "hooks")?;
        let pre = self.hook_list(HookStage::Pre, raw.pre)?;
        let post = self.hook_list(HookStage::Post, raw.post)?;
        self.config.hooks = crate::model::Hooks { pre, post };
        Ok(())
    }

    pub(super) fn hook_list(&self, stage: HookStage, raw: Vec<Value>) -> Result<Vec<HookCommand>> {
        let list = match stage {
            HookStage::Pre => "pre",
            HookStage::Post => "post",
        };
        raw.into_iter()
            .enumerate()
            .map(|(index, h)| {
                let at = format!("hooks.{list}[{index}]");
                let h: RawHook = section(h, &at)?;
                let vars = self.vars();
                let command = expand(&h.command, &format!("{at}.command"), &vars)?;
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
                    .map(|(i, a)| expand(a, &format!("{at}.args[{i}]"), &vars))
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
                let writable = h
                    .writable
                    .iter()
                    .enumerate()
                    .map(|(i, w)| {
                        let key = format!("{at}.writable[{i}]");
                        let w = expand(w, &key, &vars)?;
                        if !Path::new(&w).is_absolute() {
                            return Err(ConfigError::invalid(&key, "must be an absolute path"));
                        }
                        Ok(PathBuf::from(w))
                    })
                    .collect::<Result<Vec<_>>>()?;
                Ok(HookCommand {
                    stage,
                    index,
                    command,
                    args,
                    timeout,
                    tools,
                    arguments: h.arguments,
                    writable,
                    network: h.network.unwrap_or(true),
                    from: self.provenance(&at),
                })
            })
            .collect()
    }

    pub(super) fn limits(&mut self, value: Value) -> Result<()> {
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
